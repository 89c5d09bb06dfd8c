// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// Tests of core/bucket.h: a NodeList gives its nodes back first in, first
// out across its strands (each strand in order once an Erase came between);
// Erase takes out a node at either end of its strand or inside it, in O(1) from
// the node alone (its list found through the table of lists by id); TakeOver
// moves timers without touching them; and under random churn every node stays
// findable and none is lost.

#include "core/bucket.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <list>
#include <memory>
#include <random>
#include <vector>

#include "arena_nodes.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace timingwheel::internal {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

struct TestNode : CoreNode, InArena {
  int id = 0;
};

// `n` nodes named 0 to n - 1.
std::vector<TestNode*> NewNodes(int n) {
  std::vector<TestNode*> nodes;
  for (int i = 0; i < n; ++i) {
    nodes.push_back(new TestNode);
    nodes.back()->id = i;
  }
  return nodes;
}

std::vector<int> PopAll(NodeList* list) {
  std::vector<int> ids;
  while (!list->empty()) {
    CoreNode* node = list->PopFront();
    EXPECT_FALSE(node->linked());
    ids.push_back(static_cast<TestNode*>(node)->id);
  }
  return ids;
}

int PopOne(NodeList* list) {
  return static_cast<TestNode*>(list->PopFront())->id;
}

// A core's table of lists by id, for Erase.
struct Lists {
  explicit Lists(int n) : lists(static_cast<size_t>(n)) {
    for (int i = 0; i < n; ++i) {
      owned.push_back(std::make_unique<NodeList>(static_cast<uint32_t>(i)));
      lists[static_cast<size_t>(i)] = owned.back().get();
    }
  }
  NodeList& operator[](int i) { return *lists[static_cast<size_t>(i)]; }
  std::vector<std::unique_ptr<NodeList>> owned;
  std::vector<NodeList*> lists;
};

TEST(NodeListTest, FirstInFirstOutAcrossTheStrands) {
  Lists lists(1);
  std::vector<TestNode*> nodes = NewNodes(40);  // more than the strands
  for (TestNode* node : nodes) {
    lists[0].Push(node);
    EXPECT_TRUE(node->linked());
  }
  EXPECT_EQ(lists[0].size_bound(), 40u);
  std::vector<int> expected(40);
  for (int i = 0; i < 40; ++i) expected[static_cast<size_t>(i)] = i;
  EXPECT_THAT(PopAll(&lists[0]), ElementsAreArray(expected));
  EXPECT_EQ(lists[0].size_bound(), 0u);
}

TEST(NodeListTest, DrainHandsOnEveryNodeInPopFrontsOrder) {
  Lists lists(1);
  std::vector<TestNode*> nodes = NewNodes(37);
  for (TestNode* node : nodes) lists[0].Push(node);
  // Some taken first, so that the drain starts in the middle of a turn.
  EXPECT_THAT(std::vector<int>({PopOne(&lists[0]), PopOne(&lists[0])}),
              ElementsAre(0, 1));
  std::vector<int> drained;
  lists[0].Drain([&](CoreNode* node) {
    EXPECT_FALSE(node->linked());
    drained.push_back(static_cast<TestNode*>(node)->id);
  });
  std::vector<int> expected;
  for (int i = 2; i < 37; ++i) expected.push_back(i);
  EXPECT_EQ(drained, expected);
  EXPECT_TRUE(lists[0].empty());
  // Usable again, in order.
  for (TestNode* node : NewNodes(2)) lists[0].Push(node);
  EXPECT_THAT(PopAll(&lists[0]), ElementsAre(0, 1));
}

TEST(NodeListTest, EraseTakesOutFirstLastAndInnerNodesOfAStrand) {
  Lists lists(2);
  // 48 nodes: three to a strand. Node i is in strand i % 16, at position
  // i / 16 of it: first (0-15), inner (16-31), last (32-47).
  std::vector<TestNode*> nodes = NewNodes(48);
  for (TestNode* node : nodes) lists[1].Push(node);
  for (int i : {0, 17, 34, 35, 19, 2, 47}) {
    NodeList::Erase(nodes[static_cast<size_t>(i)], lists.lists.data());
    EXPECT_FALSE(nodes[static_cast<size_t>(i)]->linked());
  }
  std::vector<int> left = PopAll(&lists[1]);
  EXPECT_EQ(left.size(), 41u);
  for (int gone : {0, 17, 34, 35, 19, 2, 47}) {
    EXPECT_EQ(std::count(left.begin(), left.end(), gone), 0) << gone;
  }
  // Each strand keeps its order of arrival (node i + 16 after node i).
  for (size_t i = 0; i < left.size(); ++i) {
    for (size_t j = i + 1; j < left.size(); ++j) {
      if (left[i] % 16 == left[j] % 16) {
        EXPECT_LT(left[i], left[j]);
      }
    }
  }
  EXPECT_TRUE(lists[1].empty());
}

TEST(NodeListTest, ErasingEveryNodeEmptiesTheListWhateverTheOrder) {
  Lists lists(1);
  std::vector<TestNode*> nodes = NewNodes(50);
  for (TestNode* node : nodes) lists[0].Push(node);
  std::mt19937 rng(3);
  std::shuffle(nodes.begin(), nodes.end(), rng);
  for (TestNode* node : nodes) {
    EXPECT_FALSE(lists[0].empty());
    NodeList::Erase(node, lists.lists.data());
  }
  EXPECT_TRUE(lists[0].empty());
  EXPECT_EQ(lists[0].size_bound(), 0u);
  // And it serves again, in order.
  for (TestNode* node : NewNodes(3)) lists[0].Push(node);
  EXPECT_THAT(PopAll(&lists[0]), ElementsAre(0, 1, 2));
}

TEST(NodeListTest, TakeOverTradesTimersAndIdsWithoutTouchingThem) {
  Lists lists(2);
  std::vector<TestNode*> nodes = NewNodes(20);
  for (TestNode* node : nodes) lists[0].Push(node);
  // Released: the bucket's list (id 0) trades with an empty one (id 1),
  // and the table follows, as WheelCore::Move does.
  lists[1].TakeOver(&lists[0]);
  std::swap(lists.lists[0], lists.lists[1]);
  EXPECT_EQ(lists[0].id(), 0u);
  EXPECT_TRUE(lists.lists[1]->empty());
  // The nodes at the strands' ends name id 0, which is now the list that
  // holds them: Erase finds it.
  NodeList::Erase(nodes[3], lists.lists.data());   // a strand's first
  NodeList::Erase(nodes[17], lists.lists.data());  // a strand's last
  std::vector<int> left = PopAll(&lists[0]);
  std::sort(left.begin(), left.end());
  EXPECT_THAT(left, ElementsAre(0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
                                15, 16, 18, 19));
}

TEST(NodeListTest, RandomChurnKeepsEveryNodeFindable) {
  // Pushes, pops and erases against a model (a std::list per list): what a
  // list gives back is exactly what the model holds, in its order when no
  // erase came between.
  constexpr int kLists = 3;
  Lists lists(kLists);
  std::vector<std::list<TestNode*>> model(kLists);
  std::vector<TestNode*> pool = NewNodes(600);
  std::vector<TestNode*> free_nodes = pool;
  std::mt19937 rng(11);
  for (int step = 0; step < 20000; ++step) {
    const int l = static_cast<int>(rng() % kLists);
    const unsigned op = rng() % 10;
    if (op < 5 && !free_nodes.empty()) {
      TestNode* node = free_nodes.back();
      free_nodes.pop_back();
      lists[l].Push(node);
      model[static_cast<size_t>(l)].push_back(node);
    } else if (op < 7 && !model[static_cast<size_t>(l)].empty()) {
      CoreNode* node = lists[l].PopFront();
      auto& held = model[static_cast<size_t>(l)];
      auto it = std::find(held.begin(), held.end(), node);
      ASSERT_NE(it, held.end()) << "popped a node the list did not hold";
      held.erase(it);
      free_nodes.push_back(static_cast<TestNode*>(node));
    } else if (!model[static_cast<size_t>(l)].empty()) {
      auto& held = model[static_cast<size_t>(l)];
      auto it = held.begin();
      std::advance(it, rng() % held.size());
      NodeList::Erase(*it, lists.lists.data());
      free_nodes.push_back(*it);
      held.erase(it);
    }
    ASSERT_EQ(lists[l].empty(), model[static_cast<size_t>(l)].empty());
    ASSERT_GE(lists[l].size_bound(), model[static_cast<size_t>(l)].size());
  }
  for (int l = 0; l < kLists; ++l) {
    std::vector<int> got = PopAll(&lists[l]);
    std::vector<int> want;
    for (TestNode* node : model[static_cast<size_t>(l)]) {
      want.push_back(node->id);
    }
    std::sort(got.begin(), got.end());
    std::sort(want.begin(), want.end());
    EXPECT_EQ(got, want) << "list " << l;
  }
}

}  // namespace
}  // namespace timingwheel::internal
