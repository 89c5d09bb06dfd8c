// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// Tests of core/bucket.h: a NodeVector's order, its O(1) Erase through the
// node's own index, TakeOver moving timers without touching them, and its
// memory going back once the timers are gone (from malloc, or mapped).

#include "core/bucket.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace timingwheel::internal {
namespace {

using ::testing::ElementsAre;

struct TestNode : CoreNode {
  int id = 0;
};

std::vector<int> PopAll(NodeVector* vector) {
  std::vector<int> ids;
  while (!vector->empty()) {
    CoreNode* node = vector->PopFront();
    EXPECT_FALSE(node->linked());
    ids.push_back(static_cast<TestNode*>(node)->id);
  }
  return ids;
}

TEST(NodeVectorTest, FirstInFirstOutAndEachNodeKnowsItsPlace) {
  NodeVector vector(7);
  std::vector<TestNode> nodes(4);
  for (int i = 0; i < 4; ++i) {
    nodes[i].id = i;
    vector.Push(&nodes[i]);
    EXPECT_EQ(nodes[i].holder, 7u);
    EXPECT_EQ(nodes[i].index, static_cast<uint32_t>(i));
  }
  EXPECT_EQ(vector.size(), 4u);
  EXPECT_THAT(PopAll(&vector), ElementsAre(0, 1, 2, 3));
}

TEST(NodeVectorTest, EraseMovesTheLastIntoTheHoleEvenAfterPops) {
  NodeVector vector(1);
  std::vector<TestNode> nodes(5);
  for (int i = 0; i < 5; ++i) {
    nodes[i].id = i;
    vector.Push(&nodes[i]);
  }
  EXPECT_EQ(static_cast<TestNode*>(vector.PopFront())->id, 0);
  vector.Erase(&nodes[2]);
  EXPECT_FALSE(nodes[2].linked());
  EXPECT_EQ(nodes[4].index, 2u) << "the last took the hole";
  vector.Erase(&nodes[4]);  // the one that moved
  EXPECT_EQ(vector.size(), 2u);
  EXPECT_THAT(PopAll(&vector), ElementsAre(1, 3));
  EXPECT_EQ(vector.Ahead(0), nullptr);
}

TEST(NodeVectorTest, TakeOverTradesTimersAndIdsWithoutTouchingThem) {
  NodeVector bucket(3);
  NodeVector flush(9);
  std::vector<TestNode> nodes(3);
  for (int i = 0; i < 3; ++i) {
    nodes[i].id = i;
    bucket.Push(&nodes[i]);
  }
  bucket.PopFront();
  flush.TakeOver(&bucket);
  EXPECT_TRUE(bucket.empty());
  EXPECT_EQ(bucket.id(), 9u);
  EXPECT_EQ(flush.id(), 3u) << "the nodes' holder id now names the flush";
  EXPECT_EQ(nodes[1].holder, flush.id());
  flush.Erase(&nodes[2]);
  EXPECT_THAT(PopAll(&flush), ElementsAre(1));
}

// Random pushes, pops and erases against a reference set: nothing lost or
// doubled, and every node's index stays where it is, across shrinks.
TEST(NodeVectorTest, RandomChurnKeepsEveryNodeFindable) {
  std::mt19937 rng(5);
  std::vector<TestNode> nodes(5000);
  for (size_t i = 0; i < nodes.size(); ++i) nodes[i].id = static_cast<int>(i);
  NodeVector vector(0);
  std::vector<int> held;
  for (int step = 0; step < 200'000; ++step) {
    const int what = static_cast<int>(rng() % 10);
    TestNode& node = nodes[rng() % nodes.size()];
    if (what < 4 && !node.linked()) {
      vector.Push(&node);
      held.push_back(node.id);
    } else if (what < 8 && node.linked()) {
      vector.Erase(&node);
      held.erase(std::find(held.begin(), held.end(), node.id));
    } else if (what == 8 && !vector.empty()) {
      const int id = static_cast<TestNode*>(vector.PopFront())->id;
      held.erase(std::find(held.begin(), held.end(), id));
    }
    ASSERT_EQ(vector.size(), held.size());
  }
  std::vector<int> left = PopAll(&vector);
  std::sort(left.begin(), left.end());
  std::sort(held.begin(), held.end());
  EXPECT_EQ(left, held);
}

// A spike goes, and its memory with it: by Erase (a quarter left: half the
// room goes) and by the last PopFront (at most kKeepCapacity stays).
TEST(NodeVectorTest, ASpikeLeavesNoRoomBehind) {
  std::vector<TestNode> nodes(100'000);
  NodeVector erased(0);
  NodeVector popped(1);
  for (TestNode& node : nodes) erased.Push(&node);
  for (size_t i = 0; i + 10 < nodes.size(); ++i) erased.Erase(&nodes[i]);
  EXPECT_EQ(erased.size(), 10u);
  EXPECT_LE(erased.capacity(), NodeVector::kKeepCapacity * 4);
  for (size_t i = nodes.size() - 10; i < nodes.size(); ++i) {
    erased.Erase(&nodes[i]);
  }
  EXPECT_TRUE(erased.empty());
  for (TestNode& node : nodes) popped.Push(&node);
  while (!popped.empty()) popped.PopFront();
  EXPECT_LE(popped.capacity(), NodeVector::kKeepCapacity);
}

// Room past kMapBytes is mapped, grows and shrinks in place: the nodes stay
// where they were, popped or not, and a drained vector holds no room.
TEST(NodeVectorTest, MappedRoomKeepsEveryNodeThroughGrowthAndShrinking) {
  constexpr size_t kMany = 4 * NodeVector::kMapBytes / sizeof(void*);
  std::vector<TestNode> nodes(kMany);
  NodeVector vector(2);
  for (size_t i = 0; i < kMany; ++i) {
    nodes[i].id = static_cast<int>(i);
    vector.Push(&nodes[i]);
    if (i == 1000) {
      ASSERT_EQ(static_cast<TestNode*>(vector.PopFront())->id, 0);
    }
  }
  EXPECT_GE(vector.capacity() * sizeof(void*), NodeVector::kMapBytes * 4);
  for (int i = 1; i < 100; ++i) {
    ASSERT_EQ(static_cast<TestNode*>(vector.PopFront())->id, i);
  }
  EXPECT_EQ(vector.size(), kMany - 100);
  NodeVector flush(3);
  flush.TakeOver(&vector);
  EXPECT_EQ(nodes[500].holder, flush.id());
  // A vector not being popped gives room back as it empties.
  NodeVector erased(4);
  while (!flush.empty()) erased.Push(flush.PopFront());
  EXPECT_EQ(flush.capacity(), 0u) << "drained: its room went back";
  for (size_t i = 100; i + 10 < kMany; ++i) erased.Erase(&nodes[i]);
  EXPECT_EQ(erased.size(), 10u);
  EXPECT_LE(erased.capacity(), NodeVector::kKeepCapacity * 4);
  std::vector<int> left = PopAll(&erased);
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left.front(), static_cast<int>(kMany - 10));
  EXPECT_EQ(left.back(), static_cast<int>(kMany - 1));
}

}  // namespace
}  // namespace timingwheel::internal
