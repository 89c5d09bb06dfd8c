// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// scoped_timer_test.cc: ScopedTimer (scoped_timer.h), under a ManualClock.
// Leaving the scope stops a pending timer (also by an exception), Release
// keeps it running, a move hands the timer over without stopping it, a move
// assignment stops the timer it replaces but not the one it takes over again
// (the same timer, or itself), a guard of a timer that already fired or of
// none does nothing, and get() and -> reach the timer held.

#include "timingwheel/scoped_timer.h"

#include <atomic>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "test_util.h"
#include "timingwheel/timingwheel.h"

namespace timingwheel {
namespace {

static_assert(!std::is_copy_constructible_v<ScopedTimer>);
static_assert(!std::is_copy_assignable_v<ScopedTimer>);
static_assert(std::is_nothrow_move_constructible_v<ScopedTimer>);
static_assert(std::is_nothrow_move_assignable_v<ScopedTimer>);

constexpr absl::Duration kDeadline = absl::Milliseconds(10);

class ScopedTimerTest : public ManualWheelTest<2> {
 protected:
  // A timer that counts its runs in `runs_`.
  Timer Counting(absl::Duration d = kDeadline) {
    return wheel_->AfterFunc(d, [this] { ++runs_; }).value();
  }

  std::atomic<int> runs_{0};
};

TEST_F(ScopedTimerTest, LeavingTheScopeStopsThePendingTimer) {
  Timer handle;
  {
    ScopedTimer deadline(Counting());
    handle = deadline.get();
    EXPECT_TRUE(handle.Pending());
  }
  EXPECT_FALSE(handle.Pending());
  EXPECT_FALSE(handle.Stop());  // the guard's Stop was the one that won
  Advance(kDeadline * 2);
  EXPECT_EQ(runs_.load(), 0);
  EXPECT_EQ(wheel_->GetStats().stopped, 1);
  EXPECT_EQ(wheel_->Pending(), 0);
}

TEST_F(ScopedTimerTest, AnExceptionLeavingTheScopeStopsTheTimer) {
  Timer handle;
  try {
    ScopedTimer deadline(Counting());
    handle = deadline.get();
    throw std::runtime_error("request failed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_FALSE(handle.Pending());
  Advance(kDeadline * 2);
  EXPECT_EQ(runs_.load(), 0);
}

TEST_F(ScopedTimerTest, ReleaseKeepsTheTimerRunning) {
  Timer released;
  {
    ScopedTimer deadline(Counting());
    released = deadline.Release();
    EXPECT_FALSE(deadline);
    EXPECT_FALSE(deadline.get());
  }
  EXPECT_TRUE(released.Pending());
  Advance(kDeadline);
  EXPECT_EQ(runs_.load(), 1);
}

TEST_F(ScopedTimerTest, MoveHandsTheTimerOverWithoutStoppingIt) {
  ScopedTimer outer;
  EXPECT_FALSE(outer);
  {
    ScopedTimer inner(Counting());
    outer = std::move(inner);
    EXPECT_FALSE(inner);  // NOLINT(bugprone-use-after-move): moved-from state
  }
  ASSERT_TRUE(outer);
  EXPECT_TRUE(outer->Pending());
  ScopedTimer moved(std::move(outer));
  EXPECT_TRUE(moved->Pending());
  Advance(kDeadline);
  EXPECT_EQ(runs_.load(), 1);
}

TEST_F(ScopedTimerTest, MoveAssignmentStopsTheTimerItReplaces) {
  ScopedTimer deadline(Counting(kDeadline));
  const Timer first = deadline.get();
  deadline = ScopedTimer(Counting(kDeadline * 2));
  EXPECT_FALSE(first.Pending());
  EXPECT_TRUE(deadline->Pending());
  Advance(kDeadline * 2);
  EXPECT_EQ(runs_.load(), 1);  // only the second
}

TEST_F(ScopedTimerTest, MoveAssignmentOfTheTimerItHoldsKeepsItArmed) {
  const Timer timer = Counting();
  {
    ScopedTimer a(timer);
    ScopedTimer b(timer);
    a = std::move(b);
    EXPECT_TRUE(timer.Pending());
    EXPECT_EQ(a.get(), timer);
    EXPECT_FALSE(b);  // NOLINT(bugprone-use-after-move): moved-from state
  }
  // The guard that took it over stops it when it goes.
  EXPECT_FALSE(timer.Pending());
  EXPECT_EQ(wheel_->GetStats().stopped, 1);
  Advance(kDeadline);
  EXPECT_EQ(runs_.load(), 0);
}

TEST_F(ScopedTimerTest, SelfMoveAssignmentKeepsTheTimerArmed) {
  ScopedTimer deadline(Counting());
  ScopedTimer& self = deadline;
  deadline = std::move(self);
  ASSERT_TRUE(deadline);
  EXPECT_TRUE(deadline->Pending());
  Advance(kDeadline);
  EXPECT_EQ(runs_.load(), 1);
  EXPECT_EQ(wheel_->GetStats().stopped, 0);
}

TEST_F(ScopedTimerTest, GuardOfAFiredTimerStopsNothing) {
  {
    ScopedTimer deadline(Counting());
    Advance(kDeadline);
    EXPECT_EQ(runs_.load(), 1);
  }
  EXPECT_EQ(wheel_->GetStats().stopped, 0);
  ScopedTimer empty;  // holds none: its destructor does nothing
}

TEST_F(ScopedTimerTest, GetAndArrowReachTheTimerHeld) {
  const Timer timer = Counting();
  ScopedTimer deadline(timer);
  EXPECT_EQ(deadline.get(), timer);
  const ScopedTimer& view = deadline;
  EXPECT_EQ(view.get(), timer);
  EXPECT_EQ(view->TimeLeft(), kDeadline);
  // Activity pushes the deadline out through the guard.
  Advance(kDeadline / 2);
  EXPECT_TRUE(deadline->Reset(kDeadline));
  EXPECT_EQ(deadline.get().Deadline(), kDeadline * 3 / 2);
  Advance(kDeadline * 3 / 4);
  EXPECT_EQ(runs_.load(), 0);
}

}  // namespace
}  // namespace timingwheel
