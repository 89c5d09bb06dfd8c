// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// bucket_test.cc: tests of Bucket (lib/bucket.h), one slot of a wheel level:
// the array of nodes (Add appends, Remove takes out the first, a middle or
// the last entry and moves the last one into its place, each node's `slot`
// stays its index, size follows), the `bucket` / `link_epoch` bookkeeping in
// the nodes, the expiration (SetExpiration returns true only when it was
// unset), and Detach / Flush, which empty the bucket, hand the nodes back,
// mark them in transit and clear the expiration in the same step (DESIGN.md,
// traps 1 and 2).
//
// The nodes are real TimerNodes from a TestNodes home (no engine, nothing
// ever runs); the bucket only touches their bookkeeping.

#include "bucket.h"

#include <cstdint>
#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util.h"
#include "timer_state.h"

namespace timingwheel::internal {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::IsEmpty;

class BucketTest : public ::testing::Test {
 protected:
  // A fresh node, released at the end of the test.
  TimerNode* NewNode() { return nodes_.NewNode(); }

  std::vector<TimerNode*> NewNodes(int n) {
    std::vector<TimerNode*> nodes;
    for (int i = 0; i < n; ++i) nodes.push_back(NewNode());
    return nodes;
  }

  // The bucket's array, read back through the nodes it holds: each node's
  // `slot` is its index, and the slots are 0 .. size - 1 with no gap.
  static std::vector<TimerNode*> Contents(const std::vector<TimerNode*>& all,
                                          const Bucket& bucket) {
    std::vector<TimerNode*> out(bucket.size(), nullptr);
    for (TimerNode* node : all) {
      if (!bucket.Holds(node)) continue;
      EXPECT_LT(node->slot, out.size());
      if (node->slot >= out.size()) continue;
      EXPECT_EQ(out[node->slot], nullptr) << "two nodes in slot " << node->slot;
      out[node->slot] = node;
    }
    for (size_t i = 0; i < out.size(); ++i) {
      EXPECT_NE(out[i], nullptr) << "no node in slot " << i;
    }
    return out;
  }

  TestNodes nodes_;
};

TEST_F(BucketTest, StartsEmptyWithNoExpiration) {
  Bucket bucket(nullptr);
  EXPECT_TRUE(bucket.empty());
  EXPECT_EQ(bucket.size(), 0);
  EXPECT_EQ(bucket.expiration(), Bucket::kNoExpiration);
  EXPECT_EQ(bucket.level(), nullptr);
}

TEST_F(BucketTest, AddAppendsAndCountsSize) {
  Bucket bucket(nullptr);
  std::vector<TimerNode*> nodes = NewNodes(5);
  for (int i = 0; i < 5; ++i) {
    bucket.Add(nodes[i]);
    EXPECT_EQ(bucket.size(), i + 1);
    EXPECT_FALSE(bucket.empty());
    EXPECT_EQ(nodes[i]->bucket.load(), &bucket);
  }
  EXPECT_THAT(Contents(nodes, bucket), ElementsAreArray(nodes));
}

TEST_F(BucketTest, AddDoesNotSetTheExpiration) {
  Bucket bucket(nullptr);
  bucket.Add(NewNode());
  EXPECT_EQ(bucket.expiration(), Bucket::kNoExpiration);
}

TEST_F(BucketTest, RemoveFirstMovesTheLastIntoItsPlace) {
  Bucket bucket(nullptr);
  std::vector<TimerNode*> nodes = NewNodes(3);
  for (TimerNode* node : nodes) bucket.Add(node);
  bucket.Remove(nodes[0]);
  EXPECT_EQ(bucket.size(), 2);
  EXPECT_EQ(nodes[0]->bucket.load(), nullptr);
  EXPECT_FALSE(bucket.Holds(nodes[0]));
  EXPECT_THAT(Contents(nodes, bucket), ElementsAre(nodes[2], nodes[1]));
}

TEST_F(BucketTest, RemoveMiddleMovesTheLastIntoItsPlace) {
  Bucket bucket(nullptr);
  std::vector<TimerNode*> nodes = NewNodes(3);
  for (TimerNode* node : nodes) bucket.Add(node);
  bucket.Remove(nodes[1]);
  EXPECT_EQ(bucket.size(), 2);
  EXPECT_EQ(nodes[1]->bucket.load(), nullptr);
  EXPECT_THAT(Contents(nodes, bucket), ElementsAre(nodes[0], nodes[2]));
}

TEST_F(BucketTest, RemoveLastKeepsTheRestAndAppendsAfterThem) {
  Bucket bucket(nullptr);
  std::vector<TimerNode*> nodes = NewNodes(4);
  for (int i = 0; i < 3; ++i) bucket.Add(nodes[i]);
  bucket.Remove(nodes[2]);
  EXPECT_EQ(bucket.size(), 2);
  EXPECT_EQ(nodes[2]->bucket.load(), nullptr);
  EXPECT_THAT(Contents(nodes, bucket), ElementsAre(nodes[0], nodes[1]));
  bucket.Add(nodes[3]);
  EXPECT_THAT(Contents(nodes, bucket),
              ElementsAre(nodes[0], nodes[1], nodes[3]));
}

TEST_F(BucketTest, RemoveOnlyNodeEmptiesAndAcceptsNewNodes) {
  Bucket bucket(nullptr);
  TimerNode* a = NewNode();
  TimerNode* b = NewNode();
  bucket.Add(a);
  bucket.Remove(a);
  EXPECT_TRUE(bucket.empty());
  EXPECT_EQ(bucket.size(), 0);
  bucket.Add(b);
  EXPECT_EQ(bucket.size(), 1);
  EXPECT_EQ(b->slot, 0u);
  std::vector<TimerNode*> out;
  bucket.Flush(&out);
  EXPECT_THAT(out, ElementsAre(b));
}

TEST_F(BucketTest, RemoveInAnyOrderEmpties) {
  Bucket bucket(nullptr);
  std::vector<TimerNode*> nodes = NewNodes(6);
  for (TimerNode* node : nodes) bucket.Add(node);
  for (int i : {3, 0, 5, 1, 4, 2}) bucket.Remove(nodes[i]);
  EXPECT_TRUE(bucket.empty());
  EXPECT_EQ(bucket.size(), 0);
  std::vector<TimerNode*> out;
  bucket.Flush(&out);
  EXPECT_THAT(out, IsEmpty());
}

TEST_F(BucketTest, ReAddAfterRemoveGoesToTheEnd) {
  Bucket bucket(nullptr);
  std::vector<TimerNode*> nodes = NewNodes(3);
  for (TimerNode* node : nodes) bucket.Add(node);
  bucket.Remove(nodes[0]);
  bucket.Add(nodes[0]);
  EXPECT_THAT(Contents(nodes, bucket),
              ElementsAre(nodes[2], nodes[1], nodes[0]));
}

TEST_F(BucketTest, RandomAddsAndRemovesKeepEverySlotRight) {
  Bucket bucket(nullptr);
  std::vector<TimerNode*> nodes = NewNodes(64);
  std::vector<bool> in(nodes.size(), false);
  uint64_t x = 12345;
  for (int step = 0; step < 5000; ++step) {
    x = x * 6364136223846793005u + 1442695040888963407u;
    const size_t i = (x >> 33) % nodes.size();
    if (in[i]) {
      bucket.Remove(nodes[i]);
    } else {
      bucket.Add(nodes[i]);
    }
    in[i] = !in[i];
  }
  std::vector<TimerNode*> expected;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (in[i]) expected.push_back(nodes[i]);
  }
  EXPECT_THAT(Contents(nodes, bucket),
              ::testing::UnorderedElementsAreArray(expected));
}

TEST_F(BucketTest, SetExpirationReturnsTrueOnlyWhenUnset) {
  Bucket bucket(nullptr);
  EXPECT_TRUE(bucket.SetExpiration(40));
  EXPECT_EQ(bucket.expiration(), 40);
  EXPECT_FALSE(bucket.SetExpiration(40));
  EXPECT_FALSE(bucket.SetExpiration(80));
  EXPECT_FALSE(bucket.SetExpiration(0));
  EXPECT_EQ(bucket.expiration(), 40);  // unchanged by the refused calls
}

TEST_F(BucketTest, SetExpirationAcceptsZero) {
  Bucket bucket(nullptr);
  EXPECT_TRUE(bucket.SetExpiration(0));
  EXPECT_EQ(bucket.expiration(), 0);
  EXPECT_FALSE(bucket.SetExpiration(0));
}

TEST_F(BucketTest, RemoveDoesNotClearTheExpiration) {
  Bucket bucket(nullptr);
  TimerNode* node = NewNode();
  bucket.Add(node);
  ASSERT_TRUE(bucket.SetExpiration(7));
  bucket.Remove(node);
  // The bucket is still in the delay queue; only a flush clears it.
  EXPECT_EQ(bucket.expiration(), 7);
  EXPECT_FALSE(bucket.SetExpiration(7));
}

TEST_F(BucketTest, FlushEmptiesAndClearsExpiration) {
  Bucket bucket(nullptr);
  std::vector<TimerNode*> nodes = NewNodes(4);
  for (TimerNode* node : nodes) bucket.Add(node);
  ASSERT_TRUE(bucket.SetExpiration(12));

  std::vector<TimerNode*> out;
  bucket.Flush(&out);

  EXPECT_THAT(out, ElementsAreArray(nodes));  // in slot order
  EXPECT_TRUE(bucket.empty());
  EXPECT_EQ(bucket.size(), 0);
  EXPECT_EQ(bucket.expiration(), Bucket::kNoExpiration);
  // In transit: they still name the bucket, which no longer holds them.
  for (TimerNode* node : nodes) {
    EXPECT_EQ(node->bucket.load(), &bucket);
    EXPECT_FALSE(bucket.Holds(node));
  }
  // Cleared in the same step: the next timer makes it offerable again.
  TimerNode* late = NewNode();
  bucket.Add(late);
  EXPECT_TRUE(bucket.SetExpiration(16));
  EXPECT_EQ(bucket.expiration(), 16);
}

TEST_F(BucketTest, FlushAppendsToOut) {
  Bucket bucket(nullptr);
  std::vector<TimerNode*> nodes = NewNodes(3);
  bucket.Add(nodes[1]);
  bucket.Add(nodes[2]);
  std::vector<TimerNode*> out = {nodes[0]};
  bucket.Flush(&out);
  EXPECT_THAT(out, ElementsAre(nodes[0], nodes[1], nodes[2]));
}

TEST_F(BucketTest, FlushOfEmptyBucketClearsExpiration) {
  Bucket bucket(nullptr);
  ASSERT_TRUE(bucket.SetExpiration(5));
  std::vector<TimerNode*> out;
  bucket.Flush(&out);
  EXPECT_THAT(out, IsEmpty());
  EXPECT_EQ(bucket.expiration(), Bucket::kNoExpiration);
}

TEST_F(BucketTest, FlushedNodesCanBeAddedAgainInAnyBucket) {
  // Trap 2: the array is detached first, so a node may go straight back
  // into the bucket it came from.
  Bucket bucket(nullptr);
  Bucket other(nullptr);
  std::vector<TimerNode*> nodes = NewNodes(3);
  for (TimerNode* node : nodes) bucket.Add(node);
  std::vector<TimerNode*> out;
  bucket.Flush(&out);
  bucket.Add(out[2]);
  other.Add(out[0]);
  bucket.Add(out[1]);
  EXPECT_THAT(Contents(nodes, bucket), ElementsAre(nodes[2], nodes[1]));
  EXPECT_THAT(Contents(nodes, other), ElementsAre(nodes[0]));
  EXPECT_EQ(bucket.size(), 2);
  EXPECT_EQ(other.size(), 1);
}

TEST_F(BucketTest, DetachSwapsTheArrayOutAndClearsTheExpiration) {
  Bucket bucket(nullptr);
  std::vector<TimerNode*> nodes = NewNodes(3);
  for (TimerNode* node : nodes) bucket.Add(node);
  ASSERT_TRUE(bucket.SetExpiration(7));
  NodeArray detached;
  bucket.Detach(&detached);
  EXPECT_THAT(Elements(detached), ElementsAreArray(nodes));
  EXPECT_TRUE(bucket.empty());
  EXPECT_EQ(bucket.expiration(), Bucket::kNoExpiration);
  // The emptied array it got back is reused: no nodes, and a new epoch.
  detached.clear();
  bucket.Detach(&detached);
  EXPECT_TRUE(detached.empty());
}

TEST_F(BucketTest, HoldsOnlyNodesLinkedSinceTheLastDetach) {
  Bucket bucket(nullptr);
  Bucket other(nullptr);
  TimerNode* old = NewNode();
  bucket.Add(old);
  EXPECT_TRUE(bucket.Holds(old));
  EXPECT_FALSE(other.Holds(old));
  NodeArray detached;
  bucket.Detach(&detached);
  EXPECT_FALSE(bucket.Holds(old));  // in transit
  TimerNode* fresh = NewNode();
  bucket.Add(fresh);
  EXPECT_TRUE(bucket.Holds(fresh));
  EXPECT_FALSE(bucket.Holds(old));
  bucket.Add(old);  // placed again, in the new epoch
  EXPECT_TRUE(bucket.Holds(old));
  bucket.Remove(old);
  EXPECT_FALSE(bucket.Holds(old));
  EXPECT_EQ(old->bucket.load(), nullptr);
}

TEST_F(BucketTest, LevelIsTheOneGiven) {
  auto* fake = reinterpret_cast<WheelLevel*>(uintptr_t{0x1000});
  Bucket bucket(fake);
  EXPECT_EQ(bucket.level(), fake);
}

}  // namespace
}  // namespace timingwheel::internal
