// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// wheel_level_test.cc: tests of WheelLevel (lib/wheel_level.h), one level of
// the hierarchical wheel under its lock. The placement arithmetic itself
// (which level, slot, bucket and release tick; the level table and the worked
// example) is tested without a level in placement_test.cc; here:
//   * Locate and Add place as placement.h says (LevelFor, PlaceInLevel), for
//     small wheels from several current ticks, for every expiration tick over
//     3-4 levels: the level Locate picks, the slot, the bucket expiration and
//     the release tick offered to the delay queue;
//   * Add called on each level directly: kTooFar past the span and the one
//     bucket after it (or in that bucket while its slot holds another id),
//     kRetry above when the timer is less than one tick width of that level
//     ahead, kDue at level 0;
//   * Advance rounds each level down to its tick width and never goes
//     backwards;
//   * overflow levels are created lazily (tick width = lower span, start =
//     lower current tick rounded down); the level whose span would overflow
//     int64 spans everything;
//   * Remove with matching / non-matching generation (the node's, not the
//     arm's it was linked for) or bucket; Close refuses
//     later Adds, also in overflow levels created after it;
//   * no timer runs early or late on bare levels with a hand-driven advancer
//     (timingwheel_test.cc checks through a TimingWheel that a Reset takes a
//     timer out of its bucket).
//
// Internals are reached through WheelLevelTestPeer (a friend of WheelLevel).
// The nodes are real TimerNodes (of TestNodes, no engine); nothing runs
// them.

#include "wheel_level.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "bucket.h"
#include "core/placement.h"
#include "delay_queue.h"
#include "engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "mutex.h"
#include "test_util.h"
#include "timer_state.h"
#include "timingwheel/clock.h"
#include "timingwheel/timingwheel.h"

namespace timingwheel::internal {

class WheelLevelTestPeer {
 public:
  // The slot of `bucket` in `level`, or -1 if it is not one of its buckets.
  static int SlotOf(WheelLevel& level, const Bucket* bucket) {
    SpinLockHolder lock(&level.mu_);
    for (size_t i = 0; i < level.buckets_.size(); ++i) {
      if (&level.buckets_[i] == bucket) return static_cast<int>(i);
    }
    return -1;
  }
  static int64_t BucketSize(WheelLevel& level, int slot) {
    SpinLockHolder lock(&level.mu_);
    return level.buckets_[slot].size();
  }
  static int64_t BucketExpiration(WheelLevel& level, int slot) {
    SpinLockHolder lock(&level.mu_);
    return level.buckets_[slot].expiration();
  }
  static int NumBuckets(WheelLevel& level) {
    SpinLockHolder lock(&level.mu_);
    return static_cast<int>(level.buckets_.size());
  }
  static bool IsClosed(WheelLevel& level) {
    SpinLockHolder lock(&level.mu_);
    return level.closed_;
  }
};

namespace {

// The nodes of `bucket`, detached by `level` as a flush does.
std::vector<TimerNode*> DetachAll(WheelLevel& level, Bucket* bucket) {
  NodeArray nodes;
  level.Detach(bucket, &nodes);
  return Elements(nodes);
}

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using AddResult = WheelLevel::AddResult;
using Peer = WheelLevelTestPeer;

std::string ResultName(AddResult result) {
  switch (result) {
    case AddResult::kAdded:
      return "kAdded";
    case AddResult::kDue:
      return "kDue";
    case AddResult::kRetry:
      return "kRetry";
    case AddResult::kTooFar:
      return "kTooFar";
    case AddResult::kClosed:
      return "kClosed";
  }
  return "?";
}

// ---------------------------------------------------------------------------
// Shared fixture: TestNodes for the nodes (no engine) and a clock for the
// queues.

class WheelLevelTest : public ::testing::Test {
 public:
  // Public: the free helpers below take the fixture.
  void SetUp() override {
    // Every bucket of the queues below is due at once: Poll never blocks.
    due_clock_->Advance(absl::InfiniteDuration());
  }

  TimerNode* NewNode() { return nodes_.NewNode(); }

  // Add with the node lock held, as its precondition asks, for the node's
  // arm `gen`, as a linker does: the node is (gen, kPending).
  static AddResult AddLocked(WheelLevel* level, TimerNode* node, int64_t e,
                             uint64_t gen = 0) {
    SpinLockHolder lock(&node->mu);
    node->state.store(MakeStateWord(gen, State::kPending));
    return level->Add(node, e);
  }

  // A queue whose every bucket is due (tick 1 ns, clock at the end of time).
  std::unique_ptr<DelayQueue> NewDueQueue() {
    return std::make_unique<DelayQueue>(due_clock_, absl::ZeroDuration(), 1);
  }

  // Drains a queue made by NewDueQueue.
  static std::vector<DelayQueue::Entry> Drain(DelayQueue* queue) {
    std::vector<DelayQueue::Entry> out;
    if (queue->size() > 0) {
      EXPECT_TRUE(queue->Poll(&out));
    }
    queue->Done(static_cast<int64_t>(out.size()));
    return out;
  }

  TestNodes nodes_;
  std::shared_ptr<ManualClock> due_clock_ = std::make_shared<ManualClock>();
};

// The index of `level` above `level0` (0 for level0 itself), or -1.
int IndexOf(const WheelLevel* level0, const WheelLevel* level) {
  int i = 0;
  for (const WheelLevel* l = level0; l != nullptr; l = l->overflow(), ++i) {
    if (l == level) return i;
  }
  return -1;
}

// How many levels exist from `level0` up.
int NumLevels(const WheelLevel* level0) {
  int n = 0;
  for (const WheelLevel* l = level0; l != nullptr; l = l->overflow()) ++n;
  return n;
}

WheelLevel* LevelAt(WheelLevel* level0, int k) {
  WheelLevel* l = level0;
  for (int i = 0; i < k && l != nullptr; ++i) l = l->overflow();
  return l;
}

// Creates overflow levels until there are `n` levels from `level0` up.
void EnsureLevels(WheelLevel* level0, int n) {
  WheelLevel* top = level0;
  for (int k = 1; k < n; ++k) {
    // Past this level's span and the one bucket after it: always exactly one
    // level up.
    top = top->Locate(top->current_tick() + top->span() + top->tick_width());
  }
}

// Places `e` in a fresh wheel (wheel_size `w`, level 0 at `current`) the way
// the engine does, and checks the level Locate picks, Add's result, the
// slot, the bucket expiration and what the delay queue was offered against
// placement.h: a fresh wheel's levels are at `current` rounded down to their
// tick widths, and every slot is free. Records the (level, slot) it hit.
void CheckFreshPlacement(WheelLevelTest* test, TimerNode* node, int w,
                         int64_t current, int64_t e,
                         std::set<std::pair<int, int>>* hit) {
  SCOPED_TRACE(
      absl::StrCat("wheel_size ", w, " current ", current, " expiration ", e));
  const int want_level = LevelFor(w, current, e);
  const LevelGeometry geometry = GeometryOfLevel(w, want_level);
  const LevelPlacement want =
      PlaceInLevel(geometry, geometry.CurrentAt(current), e);
  std::unique_ptr<DelayQueue> queue = test->NewDueQueue();
  WheelLevel level0(1, w, current, queue.get(), /*closed=*/false);
  WheelLevel* level = level0.Locate(e);
  ASSERT_NE(level, nullptr);
  const int k = IndexOf(&level0, level);
  EXPECT_EQ(k, want_level);
  // Locate created exactly the levels up to the one it picked.
  EXPECT_EQ(NumLevels(&level0), want_level + 1);
  EXPECT_EQ(level->current_tick(), geometry.CurrentAt(current));

  const AddResult result = WheelLevelTest::AddLocked(level, node, e, 7);
  if (want.fit == Fit::kDue) {
    EXPECT_EQ(ResultName(result), "kDue");
    EXPECT_EQ(node->bucket.load(), nullptr);
    EXPECT_EQ(queue->size(), 0);
    return;
  }
  ASSERT_EQ(ResultName(result), "kAdded");
  Bucket* bucket = node->bucket.load();
  ASSERT_NE(bucket, nullptr);
  EXPECT_EQ(bucket->level(), level);
  EXPECT_EQ(Peer::SlotOf(*level, bucket), want.slot);
  EXPECT_EQ(bucket->expiration(), want.bucket_tick);
  EXPECT_EQ(level->CountTimers(), 1);
  // The bucket went to the queue once, at its release tick.
  std::vector<DelayQueue::Entry> offered = WheelLevelTest::Drain(queue.get());
  ASSERT_EQ(offered.size(), 1u);
  EXPECT_EQ(offered[0].bucket, bucket);
  EXPECT_EQ(offered[0].release_tick, want.release_tick);
  hit->emplace(k, want.slot);
  EXPECT_TRUE(level->Remove(node, bucket, 7));
}

void CheckPlacementExhaustively(WheelLevelTest* test, int w, int levels) {
  int64_t span = 1;  // w^levels: what `levels` levels cover
  for (int i = 0; i < levels; ++i) span *= w;
  const int64_t w2 = int64_t{w} * w;
  const int64_t w3 = w2 * w;
  // Currents with every digit (base w) pattern that matters: zero, one
  // tick in, the last tick of a turn, turn boundaries, and a mix of digits
  // so that every slot of every level is in use by some current.
  int64_t all_ones = 0;  // digit 1 at every level below the top
  for (int64_t p = 1; p < span; p *= w) all_ones += p;
  const std::set<int64_t> currents = {
      0,        1,        w - 1,          w,      w + 1,
      w2 - 1,   w2,       w2 + w + 1,     w3 - 1, w3 + w2 + w + 1,
      all_ones, span - 1, span + all_ones};
  TimerNode* node = test->NewNode();
  std::set<std::pair<int, int>> hit;
  for (int64_t current : currents) {
    for (int64_t e = current - 2; e <= current + span + 2; ++e) {
      CheckFreshPlacement(test, node, w, current, e, &hit);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  // Every slot of every level below the top one reached.
  for (int k = 0; k < levels; ++k) {
    for (int slot = 0; slot < w; ++slot) {
      EXPECT_TRUE(hit.count({k, slot})) << "level " << k << " slot " << slot;
    }
  }
}

TEST_F(WheelLevelTest, LocateAndAddPlaceAsPlacementSaysForWheelSize2) {
  CheckPlacementExhaustively(this, 2, 5);
}
TEST_F(WheelLevelTest, LocateAndAddPlaceAsPlacementSaysForWheelSize3) {
  CheckPlacementExhaustively(this, 3, 4);
}
TEST_F(WheelLevelTest, LocateAndAddPlaceAsPlacementSaysForWheelSize4) {
  CheckPlacementExhaustively(this, 4, 4);
}
TEST_F(WheelLevelTest, LocateAndAddPlaceAsPlacementSaysForWheelSize5) {
  CheckPlacementExhaustively(this, 5, 4);
}
TEST_F(WheelLevelTest, LocateAndAddPlaceAsPlacementSaysForWheelSize20) {
  CheckPlacementExhaustively(this, 20, 3);
}

// Add called directly on each level (not the one Locate picks) follows the
// rules of placement.h: kTooFar when past the level's turn and the one
// bucket after it, or in that bucket when its slot holds another bucket id;
// kRetry above level 0 when less than one tick of that level ahead; kDue at
// level 0 when e <= current.
void CheckAddOnEveryLevel(WheelLevelTest* test, int w, int64_t current,
                          int levels) {
  std::unique_ptr<DelayQueue> queue = test->NewDueQueue();
  WheelLevel level0(1, w, current, queue.get(), /*closed=*/false);
  int64_t span = 1;
  for (int i = 0; i < levels; ++i) span *= w;
  EnsureLevels(&level0, levels);
  ASSERT_EQ(NumLevels(&level0), levels);
  TimerNode* node = test->NewNode();
  for (int64_t e = current - 2; e <= current + span + 2; ++e) {
    for (int j = 0; j < levels; ++j) {
      WheelLevel* level = LevelAt(&level0, j);
      const int64_t width = level->tick_width();
      const int64_t ahead = e - level->current_tick();
      std::string want;
      if (ahead - width >= level->span()) {
        want = "kTooFar";
      } else if (ahead >= level->span()) {
        // Removing a timer leaves its bucket's expiration set (it is still
        // in the queue), so the slot may hold another id.
        const int64_t id = e / width;
        const int64_t held =
            Peer::BucketExpiration(*level, static_cast<int>(id % w));
        want = held == Bucket::kNoExpiration || held == id * width ? "kAdded"
                                                                   : "kTooFar";
      } else if (j == 0) {
        want = ahead <= 0 ? "kDue" : "kAdded";
      } else {
        want = ahead < width ? "kRetry" : "kAdded";
      }
      const AddResult result = WheelLevelTest::AddLocked(level, node, e, 1);
      ASSERT_EQ(ResultName(result), want)
          << "wheel_size " << w << " current " << current << " e " << e
          << " level " << j;
      if (result == AddResult::kAdded) {
        Bucket* bucket = node->bucket.load();
        EXPECT_EQ(Peer::SlotOf(*level, bucket), (e / width) % w);
        EXPECT_TRUE(level->Remove(node, bucket, 1));
      } else {
        EXPECT_EQ(node->bucket.load(), nullptr);
      }
    }
  }
}

TEST_F(WheelLevelTest, AddOnEachLevelReturnsTooFarRetryDueOrAdded) {
  for (int w : {2, 3, 4, 5, 20}) {
    const int levels = w == 20 ? 3 : 4;
    for (int64_t current : {0, 1, w - 1, w + 1, 3 * w * w + 2 * w + 1}) {
      CheckAddOnEveryLevel(this, w, current, levels);
      if (HasFatalFailure()) return;
    }
  }
}

TEST_F(WheelLevelTest, HigherLevelRetriesTimerThatFitsLower) {
  // wheel_size 4, all at 0: a timer 3 ticks out belongs to level 0.
  std::unique_ptr<DelayQueue> queue = NewDueQueue();
  WheelLevel level0(1, 4, 0, queue.get(), false);
  level0.Locate(255);
  WheelLevel* level1 = LevelAt(&level0, 1);
  WheelLevel* level2 = LevelAt(&level0, 2);
  TimerNode* node = NewNode();
  EXPECT_EQ(AddLocked(level1, node, 3), AddResult::kRetry);
  EXPECT_EQ(AddLocked(level1, node, 0), AddResult::kRetry);   // due
  EXPECT_EQ(AddLocked(level1, node, -5), AddResult::kRetry);  // past
  EXPECT_EQ(AddLocked(level2, node, 15), AddResult::kRetry);
  EXPECT_EQ(AddLocked(level2, node, 3), AddResult::kRetry);
  EXPECT_EQ(node->bucket.load(), nullptr);
  EXPECT_EQ(queue->size(), 0);
  // One tick of the level ahead is accepted.
  EXPECT_EQ(AddLocked(level1, node, 4), AddResult::kAdded);
}

TEST_F(WheelLevelTest, HigherLevelTakesATimerOneOfItsTicksAheadEvenIfItFits) {
  // The rule is "less than one tick of this level ahead: retry", not "fits a
  // lower level": with level 0 at 6 and level 1 at 4, e = 9 fits level 0
  // (bucket @9), but level 1, asked directly (e.g. after a stale Locate),
  // takes it into bucket @8, released at 7, from which it cascades to level 0
  // @9. Never early, never in a wrong rotation.
  std::unique_ptr<DelayQueue> queue = NewDueQueue();
  WheelLevel level0(1, 4, 6, queue.get(), false);
  WheelLevel* level1 = level0.Locate(11);
  ASSERT_EQ(level1->current_tick(), 4);
  EXPECT_EQ(level0.Locate(9), &level0);
  TimerNode* node = NewNode();
  ASSERT_EQ(AddLocked(level1, node, 9), AddResult::kAdded);
  EXPECT_EQ(node->bucket.load()->expiration(), 8);
  EXPECT_EQ(ResultName(AddLocked(level1, NewNode(), 7)), "kRetry");
  std::vector<TimerNode*> out;
  level1->Close(&out);
}

TEST_F(WheelLevelTest, TheBucketPastTheSpanTakesOnlyAFreeSlot) {
  // wheel_size 4 from 0: bucket @4 is the one past level 0's span, in the
  // slot of @0. Once level 0 is at 4, @8 would share that slot with @4,
  // which is due but not flushed yet: too far, until the flush frees it.
  std::unique_ptr<DelayQueue> queue = NewDueQueue();
  WheelLevel level0(1, 4, 0, queue.get(), false);
  TimerNode* a = NewNode();
  ASSERT_EQ(AddLocked(&level0, a, 4), AddResult::kAdded);
  Bucket* at4 = a->bucket.load();
  EXPECT_EQ(Peer::SlotOf(level0, at4), 0);
  level0.Advance(4);
  TimerNode* b = NewNode();
  EXPECT_EQ(AddLocked(&level0, b, 8), AddResult::kTooFar);
  EXPECT_EQ(b->bucket.load(), nullptr);
  NodeArray detached;
  level0.Detach(at4, &detached);
  EXPECT_THAT(Elements(detached), ElementsAre(a));
  ASSERT_EQ(AddLocked(&level0, b, 8), AddResult::kAdded);
  EXPECT_EQ(b->bucket.load(), at4);
  EXPECT_EQ(at4->expiration(), 8);
  std::vector<TimerNode*> out;
  level0.Close(&out);
}

TEST_F(WheelLevelTest, HigherLevelBucketsAreReleasedOneLowerTickEarly) {
  // wheel_size 4: level k's buckets go to the queue tick_{k-1} before their
  // expiration; level 0's at it.
  std::unique_ptr<DelayQueue> queue = NewDueQueue();
  WheelLevel level0(1, 4, 0, queue.get(), false);
  EnsureLevels(&level0, 4);
  const int64_t offsets[] = {0, 1, 4, 16};
  const int64_t es[] = {3, 9, 40, 200};
  std::vector<TimerNode*> nodes;
  for (int k = 0; k < 4; ++k) {
    WheelLevel* level = LevelAt(&level0, k);
    EXPECT_EQ(level->release_offset(), offsets[k]);
    nodes.push_back(NewNode());
    ASSERT_EQ(AddLocked(level, nodes.back(), es[k]), AddResult::kAdded);
    const std::vector<DelayQueue::Entry> offered = Drain(queue.get());
    ASSERT_EQ(offered.size(), 1u);
    EXPECT_EQ(offered[0].release_tick,
              nodes.back()->bucket.load()->expiration() - offsets[k])
        << "level " << k;
  }
  std::vector<TimerNode*> out;
  for (int k = 0; k < 4; ++k) LevelAt(&level0, k)->Close(&out);
}

// ---------------------------------------------------------------------------
// Advance

TEST_F(WheelLevelTest, AdvanceRoundsEachLevelDownToItsTick) {
  std::unique_ptr<DelayQueue> queue = NewDueQueue();
  WheelLevel level0(1, 4, 0, queue.get(), false);
  level0.Locate(1000);  // levels 0..4
  ASSERT_EQ(NumLevels(&level0), 5);
  for (int64_t t = 0; t <= 1100; ++t) {
    level0.Advance(t);
    int64_t width = 1;
    for (int k = 0; k < 5; ++k, width *= 4) {
      ASSERT_EQ(LevelAt(&level0, k)->current_tick(), t / width * width)
          << "t " << t << " level " << k;
    }
  }
}

TEST_F(WheelLevelTest, AdvanceNeverGoesBackwards) {
  std::unique_ptr<DelayQueue> queue = NewDueQueue();
  WheelLevel level0(1, 4, 0, queue.get(), false);
  level0.Locate(200);
  level0.Advance(37);
  EXPECT_EQ(level0.current_tick(), 37);
  EXPECT_EQ(LevelAt(&level0, 1)->current_tick(), 36);
  EXPECT_EQ(LevelAt(&level0, 2)->current_tick(), 32);
  EXPECT_EQ(LevelAt(&level0, 3)->current_tick(), 0);
  for (int64_t t : {36, 20, 0, -1, -100}) {
    level0.Advance(t);
    EXPECT_EQ(level0.current_tick(), 37) << t;
    EXPECT_EQ(LevelAt(&level0, 1)->current_tick(), 36) << t;
    EXPECT_EQ(LevelAt(&level0, 2)->current_tick(), 32) << t;
  }
  level0.Advance(38);  // level 0 moves, level 1 stays at 36
  EXPECT_EQ(level0.current_tick(), 38);
  EXPECT_EQ(LevelAt(&level0, 1)->current_tick(), 36);
}

TEST_F(WheelLevelTest, AdvanceOfAHigherLevelLeavesLowerLevelsAlone) {
  std::unique_ptr<DelayQueue> queue = NewDueQueue();
  WheelLevel level0(1, 4, 0, queue.get(), false);
  level0.Locate(200);
  LevelAt(&level0, 1)->Advance(50);
  EXPECT_EQ(level0.current_tick(), 0);
  EXPECT_EQ(LevelAt(&level0, 1)->current_tick(), 48);
  EXPECT_EQ(LevelAt(&level0, 2)->current_tick(), 48);
  EXPECT_EQ(LevelAt(&level0, 3)->current_tick(), 0);
}

TEST_F(WheelLevelTest, ConstructorRoundsCurrentDownToTheTick) {
  std::unique_ptr<DelayQueue> queue = NewDueQueue();
  WheelLevel level(16, 4, 47, queue.get(), false);
  EXPECT_EQ(level.current_tick(), 32);
  EXPECT_EQ(level.tick_width(), 16);
  EXPECT_EQ(level.span(), 64);
  EXPECT_EQ(level.wheel_size(), 4);
  EXPECT_EQ(Peer::NumBuckets(level), 4);
  WheelLevel exact(16, 4, 48, queue.get(), false);
  EXPECT_EQ(exact.current_tick(), 48);
}

// ---------------------------------------------------------------------------
// Overflow levels

TEST_F(WheelLevelTest, NoOverflowLevelUntilATimerNeedsOne) {
  std::unique_ptr<DelayQueue> queue = NewDueQueue();
  WheelLevel level0(1, 4, 0, queue.get(), false);
  EXPECT_EQ(level0.overflow(), nullptr);
  TimerNode* node = NewNode();
  for (int64_t e = -3; e <= 4; ++e) {
    EXPECT_EQ(level0.Locate(e), &level0) << e;
    EXPECT_EQ(level0.overflow(), nullptr) << e;
  }
  ASSERT_EQ(AddLocked(&level0, node, 4), AddResult::kAdded);
  EXPECT_EQ(level0.overflow(), nullptr);
  // Add itself never creates levels: too far is the caller's to handle.
  TimerNode* far = NewNode();
  EXPECT_EQ(AddLocked(&level0, far, 5), AddResult::kTooFar);
  EXPECT_EQ(level0.overflow(), nullptr);

  WheelLevel* level1 = level0.Locate(5);
  ASSERT_NE(level1, &level0);
  EXPECT_EQ(level0.overflow(), level1);
  EXPECT_EQ(level1->overflow(), nullptr);
  EXPECT_EQ(level0.Locate(19), level1);
  EXPECT_EQ(level1->overflow(), nullptr);
  WheelLevel* level2 = level0.Locate(20);
  EXPECT_EQ(level1->overflow(), level2);
  EXPECT_EQ(level2->overflow(), nullptr);
  EXPECT_EQ(NumLevels(&level0), 3);
  // Asking again creates nothing new.
  EXPECT_EQ(level0.Locate(20), level2);
  EXPECT_EQ(level0.Locate(5), level1);
  EXPECT_EQ(NumLevels(&level0), 3);
}

TEST_F(WheelLevelTest, OverflowTickWidthIsTheLowerSpanAndStartIsRoundedDown) {
  for (int w : {2, 3, 4, 5, 20}) {
    for (int64_t current : {0, 1, 37, 1000, 123457}) {
      std::unique_ptr<DelayQueue> queue = NewDueQueue();
      WheelLevel level0(1, w, 0, queue.get(), false);
      level0.Advance(current);
      ASSERT_EQ(level0.current_tick(), current);
      EnsureLevels(&level0, 6);
      ASSERT_EQ(NumLevels(&level0), 6) << w << " " << current;
      const WheelLevel* lower = &level0;
      for (const WheelLevel* l = level0.overflow(); l != nullptr;
           lower = l, l = l->overflow()) {
        EXPECT_EQ(l->tick_width(), lower->span());
        EXPECT_EQ(l->span(), l->tick_width() * w);
        EXPECT_EQ(l->wheel_size(), w);
        EXPECT_EQ(
            l->current_tick(),
            FloorDiv(lower->current_tick(), l->tick_width()) * l->tick_width())
            << "wheel_size " << w << " current " << current;
        EXPECT_EQ(l->current_tick() % l->tick_width(), 0);
      }
    }
  }
}

TEST_F(WheelLevelTest, OverflowCreatedLaterStartsAtTheLowerCurrent) {
  // Level 1 exists and has moved; level 2 is created from level 1's current,
  // not from zero.
  std::unique_ptr<DelayQueue> queue = NewDueQueue();
  WheelLevel level0(1, 4, 0, queue.get(), false);
  level0.Locate(10);  // level 1
  level0.Advance(53);
  EXPECT_EQ(LevelAt(&level0, 1)->current_tick(), 52);
  WheelLevel* level2 = level0.Locate(52 + 20);
  EXPECT_EQ(IndexOf(&level0, level2), 2);
  EXPECT_EQ(level2->current_tick(), 48);
}

// The levels of a wheel up to the one that spans everything.
void CheckTopLevel(WheelLevelTest* test, int w) {
  SCOPED_TRACE(absl::StrCat("wheel_size ", w));
  std::unique_ptr<DelayQueue> queue = test->NewDueQueue();
  WheelLevel level0(1, w, 0, queue.get(), false);
  WheelLevel* top = level0.Locate(kMaxTick);
  ASSERT_NE(top, nullptr);
  EXPECT_EQ(top->span(), kMaxTick);
  EXPECT_EQ(top->overflow(), nullptr);
  // Every level below has an exact span, tick width * wheel_size; the top one
  // is the first whose tick width * wheel_size would overflow.
  int64_t width = 1;
  int k = 0;
  for (const WheelLevel* l = &level0; l != top; l = l->overflow(), ++k) {
    ASSERT_EQ(l->tick_width(), width) << "level " << k;
    ASSERT_LE(width, kMaxTick / w) << "level " << k;
    ASSERT_EQ(l->span(), width * w) << "level " << k;
    width *= w;
  }
  EXPECT_EQ(top->tick_width(), width);
  EXPECT_GT(top->tick_width(), kMaxTick / w);
  // Nothing more is ever created.
  EXPECT_EQ(level0.Locate(kMaxTick), top);
  EXPECT_EQ(top->Locate(kMaxTick), top);
  EXPECT_EQ(top->overflow(), nullptr);

  // The whole range fits its buckets without two rotations in one slot.
  std::set<int> slots;
  const int64_t last_id = kMaxTick / top->tick_width();
  EXPECT_LT(last_id, w);
  std::vector<int64_t> ids;
  if (last_id <= 64) {
    for (int64_t id = 1; id <= last_id; ++id) ids.push_back(id);
  } else {  // wheel_size 65536: a sample
    ids = {1, 2, 3, last_id / 2, last_id - 1, last_id};
  }
  // The level below takes its span and one bucket more.
  const WheelLevel* below = &level0;
  while (below->overflow() != top) below = below->overflow();
  for (int64_t id : ids) {
    const int64_t first =
        id == 1 ? below->span() + below->tick_width() : id * top->tick_width();
    for (int64_t e :
         {first, id == last_id ? kMaxTick : (id + 1) * top->tick_width() - 1}) {
      TimerNode* node = test->NewNode();
      ASSERT_EQ(level0.Locate(e), top) << e;
      ASSERT_EQ(ResultName(WheelLevelTest::AddLocked(top, node, e)), "kAdded")
          << e;
      Bucket* bucket = node->bucket.load();
      EXPECT_EQ(bucket->expiration(), id * top->tick_width()) << e;
      slots.insert(Peer::SlotOf(*top, bucket));
    }
  }
  EXPECT_EQ(slots.size(), ids.size());
  // Below one tick width of the top level: retry lower.
  TimerNode* node = test->NewNode();
  EXPECT_EQ(WheelLevelTest::AddLocked(top, node, top->tick_width() - 1),
            AddResult::kRetry);
  std::vector<TimerNode*> out;
  top->Close(&out);  // unlink before the nodes go
  EXPECT_EQ(out.size(), 2 * ids.size());
}

TEST_F(WheelLevelTest, TopLevelWhoseSpanWouldOverflowSpansEverything) {
  for (int w : {2, 3, 4, 5, 20, 1000, 65536}) {
    CheckTopLevel(this, w);
    if (HasFatalFailure()) return;
  }
}

TEST_F(WheelLevelTest, TopLevelFromALateCurrent) {
  std::unique_ptr<DelayQueue> queue = NewDueQueue();
  WheelLevel level0(1, 2, 0, queue.get(), false);
  level0.Advance(kMaxTick - 5);
  TimerNode* node = NewNode();
  // 5 ticks ahead at the very end of the range: level 1 (ticks 1, 2), in
  // the bucket past its span.
  WheelLevel* level = level0.Locate(kMaxTick);
  EXPECT_EQ(IndexOf(&level0, level), 1);
  EXPECT_EQ(level->current_tick(), (kMaxTick - 5) / 2 * 2);
  ASSERT_EQ(AddLocked(level, node, kMaxTick), AddResult::kAdded);
  EXPECT_EQ(node->bucket.load()->expiration(), kMaxTick / 2 * 2);
  std::vector<TimerNode*> out;
  level->Close(&out);
}

// ---------------------------------------------------------------------------
// Remove, CountTimers, Flush, Close

TEST_F(WheelLevelTest, RemoveWithMatchingGenerationUnlinks) {
  std::unique_ptr<DelayQueue> queue = NewDueQueue();
  WheelLevel level0(1, 4, 0, queue.get(), false);
  TimerNode* a = NewNode();
  TimerNode* b = NewNode();
  ASSERT_EQ(AddLocked(&level0, a, 2, /*gen=*/5), AddResult::kAdded);
  ASSERT_EQ(AddLocked(&level0, b, 2, /*gen=*/6), AddResult::kAdded);
  Bucket* bucket = a->bucket.load();
  EXPECT_EQ(level0.CountTimers(), 2);
  EXPECT_TRUE(level0.Remove(a, bucket, 5));
  EXPECT_EQ(a->bucket.load(), nullptr);
  EXPECT_EQ(level0.CountTimers(), 1);
  EXPECT_FALSE(level0.Remove(a, bucket, 5));  // already out
  // The bucket stays offered until flushed.
  EXPECT_EQ(bucket->expiration(), 2);
  EXPECT_EQ(queue->size(), 1);
  EXPECT_TRUE(level0.Remove(b, bucket, 6));
  EXPECT_EQ(level0.CountTimers(), 0);
}

TEST_F(WheelLevelTest, RemoveWithOtherGenerationOrBucketDoesNothing) {
  std::unique_ptr<DelayQueue> queue = NewDueQueue();
  WheelLevel level0(1, 4, 0, queue.get(), false);
  TimerNode* node = NewNode();
  ASSERT_EQ(AddLocked(&level0, node, 3, /*gen=*/5), AddResult::kAdded);
  Bucket* bucket = node->bucket.load();
  EXPECT_FALSE(level0.Remove(node, bucket, 4));
  EXPECT_FALSE(level0.Remove(node, bucket, 6));
  EXPECT_EQ(node->bucket.load(), bucket);
  EXPECT_EQ(level0.CountTimers(), 1);
  // Another bucket of the same level.
  TimerNode* other = NewNode();
  ASSERT_EQ(AddLocked(&level0, other, 1, 5), AddResult::kAdded);
  EXPECT_FALSE(level0.Remove(node, other->bucket.load(), 5));
  EXPECT_EQ(level0.CountTimers(), 2);
  EXPECT_TRUE(level0.Remove(node, bucket, 5));
  EXPECT_EQ(level0.CountTimers(), 1);
  // What Remove matches is the node's generation now, not the arm it was
  // linked for: a Reset that made arm 6 has not unlinked arm 5's link yet
  // when a Stop of arm 6 takes it (Stop then owns the bucket's reference, and
  // the Reset, finding the node unlinked, arms 6 with one of its own); a Stop
  // of arm 5, come too late, takes nothing.
  other->state.store(MakeStateWord(6, State::kStopped));  // Reset, then Stop
  EXPECT_FALSE(level0.Remove(other, other->bucket.load(), 5));
  EXPECT_EQ(level0.CountTimers(), 1);
  EXPECT_TRUE(level0.Remove(other, other->bucket.load(), 6));
  EXPECT_EQ(other->bucket.load(), nullptr);
  EXPECT_EQ(level0.CountTimers(), 0);
}

TEST_F(WheelLevelTest, RemoveOfAFlushedNodeDoesNothing) {
  std::unique_ptr<DelayQueue> queue = NewDueQueue();
  WheelLevel level0(1, 4, 0, queue.get(), false);
  TimerNode* node = NewNode();
  ASSERT_EQ(AddLocked(&level0, node, 3, 1), AddResult::kAdded);
  Bucket* bucket = node->bucket.load();
  EXPECT_THAT(DetachAll(level0, bucket), ElementsAre(node));
  EXPECT_FALSE(bucket->Holds(node));  // in transit
  EXPECT_EQ(bucket->expiration(), Bucket::kNoExpiration);
  EXPECT_FALSE(level0.Remove(node, bucket, 1));
  EXPECT_EQ(node->bucket.load(), bucket);  // untouched: the advancer owns it
}

TEST_F(WheelLevelTest, BucketIsOfferedOncePerFillAndAgainAfterFlush) {
  std::unique_ptr<DelayQueue> queue = NewDueQueue();
  WheelLevel level0(1, 4, 0, queue.get(), false);
  TimerNode* a = NewNode();
  TimerNode* b = NewNode();
  ASSERT_EQ(AddLocked(&level0, a, 2), AddResult::kAdded);
  ASSERT_EQ(AddLocked(&level0, b, 2), AddResult::kAdded);
  EXPECT_EQ(queue->size(), 1);
  Bucket* bucket = a->bucket.load();
  EXPECT_THAT(DetachAll(level0, bucket), ElementsAre(a, b));
  EXPECT_EQ(Drain(queue.get()).size(), 1u);
  ASSERT_EQ(AddLocked(&level0, a, 2), AddResult::kAdded);
  std::vector<DelayQueue::Entry> offered = Drain(queue.get());
  ASSERT_EQ(offered.size(), 1u);
  EXPECT_EQ(offered[0].bucket, bucket);
  EXPECT_EQ(offered[0].release_tick, 2);
  DetachAll(level0, bucket);
}

TEST_F(WheelLevelTest, CountTimersCountsEveryBucketOfTheLevelOnly) {
  std::unique_ptr<DelayQueue> queue = NewDueQueue();
  WheelLevel level0(1, 4, 0, queue.get(), false);
  for (int64_t e : {1, 2, 2, 3, 3, 3}) {
    ASSERT_EQ(AddLocked(&level0, NewNode(), e), AddResult::kAdded);
  }
  WheelLevel* level1 = level0.Locate(9);
  ASSERT_EQ(AddLocked(level1, NewNode(), 9), AddResult::kAdded);
  EXPECT_EQ(level0.CountTimers(), 6);
  EXPECT_EQ(level1->CountTimers(), 1);
  EXPECT_EQ(Peer::BucketSize(level0, 0), 0);
  EXPECT_EQ(Peer::BucketSize(level0, 1), 1);
  EXPECT_EQ(Peer::BucketSize(level0, 2), 2);
  EXPECT_EQ(Peer::BucketSize(level0, 3), 3);
  std::vector<TimerNode*> out;
  level0.Close(&out);
  level1->Close(&out);
  EXPECT_EQ(out.size(), 7u);
}

TEST_F(WheelLevelTest, CloseEmptiesTheLevelAndRefusesLaterAdds) {
  std::unique_ptr<DelayQueue> queue = NewDueQueue();
  WheelLevel level0(1, 4, 0, queue.get(), false);
  std::vector<TimerNode*> added;
  for (int64_t e : {1, 3, 2, 3}) {
    added.push_back(NewNode());
    ASSERT_EQ(AddLocked(&level0, added.back(), e), AddResult::kAdded);
  }
  std::vector<TimerNode*> out;
  level0.Close(&out);
  EXPECT_TRUE(Peer::IsClosed(level0));
  // By slot, each in insertion order.
  EXPECT_THAT(out, ElementsAre(added[0], added[2], added[1], added[3]));
  for (TimerNode* node : out) {
    Bucket* bucket = node->bucket.load();
    ASSERT_NE(bucket, nullptr);
    EXPECT_FALSE(bucket->Holds(node));  // detached: in transit
  }
  EXPECT_EQ(level0.CountTimers(), 0);
  for (int slot = 0; slot < 4; ++slot) {
    EXPECT_EQ(Peer::BucketExpiration(level0, slot), Bucket::kNoExpiration);
  }
  TimerNode* late = NewNode();
  // Refused whatever the placement would be: due, in range, too far.
  for (int64_t e : {-1, 0, 1, 3, 4, 1000}) {
    EXPECT_EQ(ResultName(AddLocked(&level0, late, e)), "kClosed") << e;
  }
  EXPECT_EQ(late->bucket.load(), nullptr);
  EXPECT_EQ(level0.CountTimers(), 0);
  out.clear();
  level0.Close(&out);  // again: nothing
  EXPECT_THAT(out, IsEmpty());
}

TEST_F(WheelLevelTest, CloseReachesOverflowLevelsCreatedAfterIt) {
  std::unique_ptr<DelayQueue> queue = NewDueQueue();
  WheelLevel level0(1, 4, 0, queue.get(), false);
  std::vector<TimerNode*> out;
  level0.Close(&out);
  // Created after the Close: closed from birth, however high.
  TimerNode* node = NewNode();
  for (int64_t e : {8, 20, 100, 1000}) {
    WheelLevel* level = level0.Locate(e);
    ASSERT_NE(level, &level0);
    EXPECT_TRUE(Peer::IsClosed(*level)) << e;
    EXPECT_EQ(ResultName(AddLocked(level, node, e)), "kClosed") << e;
  }
  EXPECT_EQ(NumLevels(&level0), 5);
  EXPECT_EQ(node->bucket.load(), nullptr);
}

TEST_F(WheelLevelTest, CloseBottomUpReachesEveryLevelOldOrNew) {
  // What Shutdown does: close each existing level from level 0 up. Levels
  // that existed are closed by their own Close; levels created later inherit
  // it from the level below.
  std::unique_ptr<DelayQueue> queue = NewDueQueue();
  WheelLevel level0(1, 4, 0, queue.get(), false);
  EnsureLevels(&level0, 3);
  TimerNode* in_level2 = NewNode();
  ASSERT_EQ(AddLocked(LevelAt(&level0, 2), in_level2, 40), AddResult::kAdded);
  std::vector<TimerNode*> out;
  for (WheelLevel* l = &level0; l != nullptr; l = l->overflow()) l->Close(&out);
  EXPECT_THAT(out, ElementsAre(in_level2));
  TimerNode* node = NewNode();
  for (int64_t e : {2, 8, 40, 100, 1000}) {
    WheelLevel* level = level0.Locate(e);
    EXPECT_TRUE(Peer::IsClosed(*level)) << e;
    EXPECT_EQ(ResultName(AddLocked(level, node, e)), "kClosed") << e;
  }
  EXPECT_EQ(node->bucket.load(), nullptr);
}

TEST_F(WheelLevelTest, CloseOfOneLevelLeavesExistingLevelsAboveOpen) {
  // Close is per level: a level that already exists above is not closed by
  // the Close below it (the engine closes every level itself), and neither
  // are the levels it creates later.
  std::unique_ptr<DelayQueue> queue = NewDueQueue();
  WheelLevel level0(1, 4, 0, queue.get(), false);
  WheelLevel* level1 = level0.Locate(8);
  std::vector<TimerNode*> out;
  level0.Close(&out);
  EXPECT_FALSE(Peer::IsClosed(*level1));
  TimerNode* node = NewNode();
  EXPECT_EQ(ResultName(AddLocked(level1, node, 8)), "kAdded");
  level1->Close(&out);
  EXPECT_THAT(out, ElementsAre(node));
  EXPECT_EQ(ResultName(AddLocked(level1, node, 8)), "kClosed");
}

TEST_F(WheelLevelTest, LevelBornClosedRefusesAdds) {
  std::unique_ptr<DelayQueue> queue = NewDueQueue();
  WheelLevel level0(1, 4, 0, queue.get(), /*closed=*/true);
  TimerNode* node = NewNode();
  EXPECT_EQ(ResultName(AddLocked(&level0, node, 2)), "kClosed");
  EXPECT_EQ(ResultName(AddLocked(level0.Locate(50), node, 50)), "kClosed");
}

// ---------------------------------------------------------------------------
// Bare levels with a hand-driven advancer (what Engine::AdvancerLoop does,
// without threads).

class Simulation {
 public:
  explicit Simulation(WheelLevelTest* test)
      : clock_(std::make_shared<ManualClock>()),
        queue_(clock_, absl::ZeroDuration(), /*tick_ns=*/1),
        level0_(1, 4, 0, &queue_, false),
        test_(test) {}

  ~Simulation() {
    std::vector<TimerNode*> out;
    for (WheelLevel* l = &level0_; l != nullptr; l = l->overflow()) {
      l->Close(&out);
    }
  }

  // Schedules a timer expiring at tick `e`; returns its node.
  TimerNode* Schedule(int64_t e) {
    TimerNode* node = test_->NewNode();
    expiration_[node] = e;
    Place(node);
    return node;
  }

  // Moves the clock one tick and processes every bucket that became due.
  void Step() {
    clock_->Advance(absl::Nanoseconds(1));
    while (!queue_.IsIdle()) {
      std::vector<DelayQueue::Entry> entries;
      ASSERT_TRUE(queue_.Poll(&entries));
      for (const DelayQueue::Entry& entry : entries) {
        level0_.Advance(entry.release_tick);
        for (TimerNode* node :
             DetachAll(*entry.bucket->level(), entry.bucket)) {
          Place(node);
        }
      }
      queue_.Done(static_cast<int64_t>(entries.size()));
    }
  }

  int64_t now() const { return absl::ToInt64Nanoseconds(clock_->Now()); }
  WheelLevel& level0() { return level0_; }
  // (node, tick) of every timer that ran.
  const std::vector<std::pair<TimerNode*, int64_t>>& ran() const {
    return ran_;
  }
  int64_t CountAt(int k) {
    WheelLevel* l = LevelAt(&level0_, k);
    return l == nullptr ? 0 : l->CountTimers();
  }

 private:
  void Place(TimerNode* node) {
    const int64_t e = expiration_[node];
    WheelLevel* level = &level0_;
    for (;;) {
      level = level->Locate(e);
      switch (WheelLevelTest::AddLocked(level, node, e)) {
        case AddResult::kAdded:
          return;
        case AddResult::kDue:
          ran_.emplace_back(node, now());
          return;
        case AddResult::kRetry:
          level = &level0_;
          break;
        case AddResult::kTooFar:
          level = level->GetOrCreateOverflow();
          break;
        case AddResult::kClosed:
          ADD_FAILURE() << "closed";
          return;
      }
    }
  }

  std::shared_ptr<ManualClock> clock_;
  DelayQueue queue_;
  WheelLevel level0_;
  WheelLevelTest* test_;
  std::map<TimerNode*, int64_t> expiration_;
  std::vector<std::pair<TimerNode*, int64_t>> ran_;
};

TEST_F(WheelLevelTest, NoTimerRunsEarlyOrLateInASimulatedWheel) {
  // Every expiration over 4 levels of a wheel_size-4 wheel, scheduled at
  // several times: each timer runs exactly at its expiration tick.
  for (int64_t start : {0, 1, 5, 17, 63}) {
    Simulation sim(this);
    while (sim.now() < start) sim.Step();
    std::map<TimerNode*, int64_t> want;
    for (int64_t e = start + 1; e <= start + 300; ++e) {
      want[sim.Schedule(e)] = e;
    }
    while (sim.now() < start + 301) sim.Step();
    ASSERT_EQ(sim.ran().size(), want.size()) << "start " << start;
    for (const auto& [node, tick] : sim.ran()) {
      EXPECT_EQ(tick, want[node]) << "start " << start;
    }
    for (int k = 0; k < NumLevels(&sim.level0()); ++k) {
      EXPECT_EQ(sim.CountAt(k), 0);
    }
  }
}

}  // namespace
}  // namespace timingwheel::internal
