// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// node_array_test.cc: tests of NodeArray (lib/node_array.h), a bucket's
// array of node pointers in 4 KiB chunks. Elements keep their place (their
// address) however far the array grows, which is what spares a big bucket
// the copy a doubling vector made under its level's lock. push_back and
// pop_back across chunk edges keep the elements in order; a chunk is
// allocated only when the last is full, and at most one is kept beyond the
// tail's, so Add and Stop alternating at an edge do not allocate each time
// and an emptied array keeps two chunks at most; clear keeps the first only;
// swap and move hand the chunks over. A randomized run compares the array, used
// as a bucket uses it (append, remove by swapping in the last), with
// std::vector, and bounds its chunks by its size.
//
// Elements are fake node pointers; the array never dereferences them.

#include "node_array.h"

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util.h"

namespace timingwheel::internal {
namespace {

constexpr size_t kChunk = NodeArray::kChunk;

TimerNode* Fake(size_t i) {
  return reinterpret_cast<TimerNode*>(static_cast<uintptr_t>(i + 1) * 64);
}

TEST(NodeArrayTest, StartsEmptyWithNoChunk) {
  NodeArray array;
  EXPECT_TRUE(array.empty());
  EXPECT_EQ(array.size(), 0u);
  EXPECT_EQ(array.chunks(), 0u);
}

TEST(NodeArrayTest, KeepsOrderAcrossChunkEdges) {
  NodeArray array;
  std::vector<TimerNode*> expected;
  for (size_t i = 0; i < 3 * kChunk + 5; ++i) {
    array.push_back(Fake(i));
    expected.push_back(Fake(i));
  }
  EXPECT_EQ(array.size(), expected.size());
  EXPECT_EQ(array.chunks(), 4u);
  EXPECT_EQ(Elements(array), expected);
  EXPECT_EQ(array.back(), Fake(3 * kChunk + 4));
}

TEST(NodeArrayTest, ElementsStayPutAsItGrows) {
  NodeArray array;
  array.push_back(Fake(0));
  TimerNode** first = &array[0];
  array.push_back(Fake(1));
  TimerNode** last_of_chunk = nullptr;
  for (size_t i = 2; i < 100 * kChunk; ++i) {
    array.push_back(Fake(i));
    if (i == kChunk - 1) last_of_chunk = &array[i];
  }
  // A vector would have moved them, copying every pointer, several times.
  EXPECT_EQ(&array[0], first);
  EXPECT_EQ(&array[kChunk - 1], last_of_chunk);
  EXPECT_EQ(array[0], Fake(0));
}

TEST(NodeArrayTest, AllocatesAChunkOnlyWhenTheLastIsFull) {
  NodeArray array;
  array.push_back(Fake(0));
  EXPECT_EQ(array.chunks(), 1u);
  for (size_t i = 1; i < kChunk; ++i) array.push_back(Fake(i));
  EXPECT_EQ(array.chunks(), 1u);
  array.push_back(Fake(kChunk));
  EXPECT_EQ(array.chunks(), 2u);
}

TEST(NodeArrayTest, AlternatingAtAnEdgeKeepsTheChunks) {
  NodeArray array;
  for (size_t i = 0; i < kChunk; ++i) array.push_back(Fake(i));
  for (int round = 0; round < 10; ++round) {
    array.push_back(Fake(kChunk));  // starts the second chunk
    EXPECT_EQ(array.chunks(), 2u);
    array.pop_back();  // the second chunk is empty, but kept
    EXPECT_EQ(array.chunks(), 2u);
  }
}

TEST(NodeArrayTest, KeepsAtMostOneChunkBeyondTheTails) {
  NodeArray array;
  for (size_t i = 0; i < 3 * kChunk; ++i) array.push_back(Fake(i));
  EXPECT_EQ(array.chunks(), 3u);
  while (array.size() > kChunk) array.pop_back();
  EXPECT_EQ(array.chunks(), 3u);  // the tail is still in the second chunk
  array.pop_back();               // into the first: the third goes
  EXPECT_EQ(array.chunks(), 2u);
  EXPECT_EQ(array.back(), Fake(kChunk - 2));
  while (!array.empty()) array.pop_back();
  EXPECT_EQ(array.chunks(), 2u);  // emptied by Stop: two chunks at most
  array.push_back(Fake(5));
  EXPECT_EQ(Elements(array), std::vector<TimerNode*>{Fake(5)});
}

TEST(NodeArrayTest, ClearKeepsOnlyTheFirstChunk) {
  NodeArray array;
  for (size_t i = 0; i < 2 * kChunk + 1; ++i) array.push_back(Fake(i));
  TimerNode** first = &array[0];
  array.clear();
  EXPECT_TRUE(array.empty());
  EXPECT_EQ(array.chunks(), 1u);
  array.push_back(Fake(7));
  EXPECT_EQ(&array[0], first);  // the kept chunk, not a new one
  EXPECT_EQ(Elements(array), std::vector<TimerNode*>{Fake(7)});
  NodeArray never_grown;
  never_grown.clear();
  EXPECT_EQ(never_grown.chunks(), 0u);
}

TEST(NodeArrayTest, SwapAndMoveHandTheChunksOver) {
  NodeArray a;
  NodeArray b;
  for (size_t i = 0; i < kChunk + 1; ++i) a.push_back(Fake(i));
  TimerNode** element = &a[kChunk];
  b.push_back(Fake(1000));
  a.swap(b);
  EXPECT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0], Fake(1000));
  ASSERT_EQ(b.size(), kChunk + 1);
  EXPECT_EQ(&b[kChunk], element);  // the same chunk, not a copy

  NodeArray moved(std::move(b));
  EXPECT_EQ(moved.size(), kChunk + 1);
  EXPECT_EQ(&moved[kChunk], element);
  EXPECT_TRUE(b.empty());  // NOLINT(bugprone-use-after-move): specified
  a = std::move(moved);
  EXPECT_EQ(a.size(), kChunk + 1);
  EXPECT_EQ(&a[kChunk], element);
}

// As a bucket uses it: Add appends, Remove swaps the last element into the
// removed one's place. An array holds at most two unused chunks' worth.
TEST(NodeArrayTest, RandomAddsAndRemovesMatchAVector) {
  std::mt19937_64 random(42);
  NodeArray array;
  std::vector<TimerNode*> model;
  size_t next = 0;
  for (int step = 0; step < 200000; ++step) {
    // Phases that grow and phases that shrink, across many chunk edges.
    const bool grow = (step / 20000) % 2 == 0;
    const bool add = model.empty() || (random() % 100) < (grow ? 70u : 30u);
    if (add) {
      array.push_back(Fake(next));
      model.push_back(Fake(next));
      ++next;
    } else {
      const size_t i = random() % model.size();
      array[i] = array.back();
      array.pop_back();
      model[i] = model.back();
      model.pop_back();
    }
    ASSERT_EQ(array.size(), model.size());
    const size_t capacity = array.chunks() * kChunk;
    ASSERT_GE(capacity, array.size());
    ASSERT_LE(capacity, array.size() + 2 * kChunk);
    if (!model.empty()) {
      ASSERT_EQ(array.back(), model.back());
    }
  }
  EXPECT_EQ(Elements(array), model);
}

}  // namespace
}  // namespace timingwheel::internal
