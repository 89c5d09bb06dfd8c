// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// wheel_test.cc: tests of Wheel (lib/wheel.h), the lanes of levels on one
// delay queue, without an engine or any thread: Arm links a future timer and
// offers its bucket, or dispatches a due one into the batch; a Stop that wins
// while a node is being linked gets it unlinked again (kDropped); Unlink
// tells linked, in transit and not linked apart; a released bucket's timers,
// armed again after AdvanceTo, cascade or come due; Close refuses later arms
// and hands back every linked node; far timers create the upper levels
// lazily; a node's home is the calling thread's lane.

#include "wheel.h"

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "test_util.h"
#include "timingwheel/clock.h"

namespace timingwheel::internal {
namespace {

constexpr int64_t kMs = 1'000'000;

class WheelTest : public ::testing::Test {
 protected:
  // The lanes' owner: a plain lifetime, deleted with the last lane.
  class Owner : public RefCounted {};

  ~WheelTest() override {
    std::vector<TimerNode*> linked;
    wheel_.Close(&linked);
    for (TimerNode* node : linked) node->Unref();
    for (const DueTimer& due : batch_) due.node->Unref();
    for (TimerNode* node : handles_) node->Unref();
    wheel_.ReleaseOwner();
  }

  // A new node with two references, the test's handle and the wheel's.
  TimerNode* NewNode() {
    TimerNode* node = TimerNode::New(
        wheel_.HomeOfThisThread(), [] {}, nullptr, 2);
    handles_.push_back(node);
    return node;
  }
  Wheel::ArmResult Arm(TimerNode* node, int64_t deadline_ns, uint64_t gen) {
    SpinLockHolder lock(&node->mu);
    return wheel_.Arm(node, deadline_ns, time_.NowNs(), gen, &batch_);
  }
  // The buckets due by the clock now.
  std::vector<DelayQueue::Entry> Due() {
    std::vector<DelayQueue::Entry> due;
    if (wheel_.queue().IsIdle()) return due;
    EXPECT_TRUE(wheel_.queue().Poll(&due));
    return due;
  }

  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>();
  TimeBase time_{clock_, absl::Milliseconds(1)};
  NodePool pool_{sizeof(TimerNode), alignof(TimerNode), kMaxSpareTimers,
                 NodePool::Tail::kOwnerCalls};
  Owner* owner_ = new Owner;
  Wheel wheel_{&time_, 4, &pool_, owner_, nullptr};
  std::vector<DueTimer> batch_;
  std::vector<TimerNode*> handles_;
};

TEST_F(WheelTest, ArmLinksAFutureTimerAndOffersItsBucket) {
  TimerNode* node = NewNode();
  EXPECT_EQ(wheel_.ArmNew(node, 3 * kMs, 0, &batch_), Wheel::ArmResult::kArmed);
  EXPECT_TRUE(batch_.empty());
  EXPECT_NE(node->bucket.load(), nullptr);
  EXPECT_EQ(wheel_.queue().size(), 1);
  EXPECT_EQ(node->LoadState(), MakeStateWord(0, State::kPending));
}

TEST_F(WheelTest, ArmDispatchesADueTimerIntoTheBatch) {
  clock_->Advance(absl::Milliseconds(5));
  TimerNode* node = NewNode();
  EXPECT_EQ(Arm(node, 5 * kMs, 0), Wheel::ArmResult::kArmed);
  ASSERT_EQ(batch_.size(), 1u);
  EXPECT_EQ(batch_[0].node, node);
  EXPECT_EQ(batch_[0].generation, 0u);
  EXPECT_EQ(batch_[0].deadline_ns, 5 * kMs);
  EXPECT_EQ(node->LoadState(), MakeStateWord(0, State::kDispatched));
  EXPECT_EQ(wheel_.queue().size(), 0);
}

TEST_F(WheelTest, ArmOfANodeStoppedMeanwhileUnlinksItAgain) {
  // A Stop that won before the linker confirmed: the linker takes the node
  // out again and keeps its reference (kDropped).
  TimerNode* node = NewNode();
  uint64_t word = MakeStateWord(0, State::kPending);
  ASSERT_TRUE(node->CasState(word, MakeStateWord(0, State::kStopped)));
  EXPECT_EQ(Arm(node, 3 * kMs, 0), Wheel::ArmResult::kDropped);
  EXPECT_EQ(wheel_.Unlink(node, kAnyGeneration),
            Wheel::UnlinkResult::kNotLinked);
  node->Unref();  // the wheel's reference came back
}

TEST_F(WheelTest, UnlinkTakesOutOnlyTheLinkedGeneration) {
  TimerNode* node = NewNode();
  ASSERT_EQ(wheel_.ArmNew(node, 3 * kMs, 0, &batch_), Wheel::ArmResult::kArmed);
  EXPECT_NE(wheel_.Unlink(node, 7), Wheel::UnlinkResult::kUnlinked);
  EXPECT_EQ(wheel_.Unlink(node, 0), Wheel::UnlinkResult::kUnlinked);
  EXPECT_EQ(wheel_.Unlink(node, 0), Wheel::UnlinkResult::kNotLinked);
  node->Unref();  // the bucket's reference
}

TEST_F(WheelTest, ReleasedBucketCascadesThenComesDue) {
  // wheel_size 4, tick 1 ms: 9 ms goes to level 1 (4 ms buckets), bucket @8,
  // released at 7 (placement.h); armed again then, it lands in level 0 @9.
  TimerNode* node = NewNode();
  ASSERT_EQ(wheel_.ArmNew(node, 9 * kMs, 0, &batch_), Wheel::ArmResult::kArmed);
  clock_->Advance(absl::Milliseconds(6));
  EXPECT_TRUE(Due().empty());
  clock_->Advance(absl::Milliseconds(1));
  std::vector<DelayQueue::Entry> due = Due();
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].release_tick, 7);
  EXPECT_EQ(Wheel::ExpirationOf(due[0]), 8);
  wheel_.AdvanceTo(due[0].release_tick);
  NodeArray detached;
  Wheel::Detach(due[0], &detached);
  ASSERT_EQ(detached.size(), 1u);
  {
    SpinLockHolder lock(&node->mu);
    EXPECT_EQ(wheel_.Unlink(node, kAnyGeneration),
              Wheel::UnlinkResult::kInTransit);
  }
  EXPECT_EQ(Arm(node, 9 * kMs, 0), Wheel::ArmResult::kArmed);  // cascades
  EXPECT_TRUE(batch_.empty());
  wheel_.queue().Done(1);
  clock_->Advance(absl::Milliseconds(2));
  due = Due();
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].release_tick, 9);
  wheel_.AdvanceTo(9);
  detached.clear();  // Detach wants an empty array: it swaps it in
  Wheel::Detach(due[0], &detached);
  EXPECT_EQ(Arm(node, 9 * kMs, 0), Wheel::ArmResult::kArmed);
  ASSERT_EQ(batch_.size(), 1u);  // due now
  wheel_.queue().Done(1);
}

TEST_F(WheelTest, CloseRefusesLaterArmsAndHandsBackEveryLinkedNode) {
  TimerNode* near = NewNode();
  TimerNode* far = NewNode();
  ASSERT_EQ(wheel_.ArmNew(near, 2 * kMs, 0, &batch_), Wheel::ArmResult::kArmed);
  ASSERT_EQ(wheel_.ArmNew(far, 60'000 * kMs, 0, &batch_),
            Wheel::ArmResult::kArmed);
  std::vector<TimerNode*> out;
  wheel_.Close(&out);
  EXPECT_EQ(out.size(), 2u);
  for (TimerNode* node : out) node->Unref();
  TimerNode* late = NewNode();
  EXPECT_EQ(Arm(late, 3 * kMs, 0), Wheel::ArmResult::kClosed);
  late->Unref();  // never linked: the wheel's reference stays the caller's
}

TEST_F(WheelTest, FarTimersCreateTheUpperLevelsLazily) {
  EXPECT_EQ(EngineTestPeer::Levels(wheel_), 1);
  TimerNode* node = NewNode();
  // wheel_size 4: levels span 4, 16, 64, 256, 1024 ms; 1 s needs level 4.
  ASSERT_EQ(wheel_.ArmNew(node, 1000 * kMs, 0, &batch_),
            Wheel::ArmResult::kArmed);
  EXPECT_EQ(EngineTestPeer::Levels(wheel_), 5);
}

TEST_F(WheelTest, ANodesHomeIsTheCallingThreadsLane) {
  TimerNode* node = NewNode();
  EXPECT_EQ(node->home, wheel_.HomeOfThisThread());
  EXPECT_EQ(node->home->lane(), wheel_.HomeOfThisThread()->lane());
  EXPECT_LT(node->home->lane(), wheel_.lanes());
  node->Unref();  // never armed: the wheel's reference stays the test's
}

}  // namespace
}  // namespace timingwheel::internal
