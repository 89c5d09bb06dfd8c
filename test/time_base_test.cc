// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// time_base_test.cc: tests of TimeBase (lib/base/time_base.h), the wheel's
// time: nanoseconds since the origin, read from the clock itself (for
// SteadyClock, never behind a steady_clock read made before it); durations and
// clock times to deadlines, rounded up (a clock time already passed too), with
// the range errors naming the caller; lateness, saturated; the tick a deadline
// falls due in; a periodic timer's next deadline.

#include "base/time_base.h"

#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util.h"
#include "timingwheel/clock.h"
#include "timingwheel/scheduler.h"

namespace timingwheel::internal {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kMs = 1'000'000;

class TimeBaseTest : public ::testing::Test {
 protected:
  // A clock at 5 s when the TimeBase is made: its origin.
  static std::shared_ptr<ManualClock> ClockAtFiveSeconds() {
    auto clock = std::make_shared<ManualClock>();
    clock->Advance(absl::Seconds(5));
    return clock;
  }

  std::shared_ptr<ManualClock> clock_ = ClockAtFiveSeconds();
  TimeBase time_{clock_, absl::Milliseconds(1)};
};

TEST_F(TimeBaseTest, NowCountsNanosecondsFromTheClockAtCreation) {
  EXPECT_EQ(time_.origin(), absl::Seconds(5));
  EXPECT_FALSE(time_.steady());
  EXPECT_EQ(time_.NowNs(), 0);
  clock_->Advance(absl::Milliseconds(3) + absl::Nanoseconds(7));
  EXPECT_EQ(time_.NowNs(), 3 * kMs + 7);
  EXPECT_EQ(time_.ToClock(3 * kMs + 7), clock_->Now());
}

TEST(TimeBaseSteppingTest, NowNeverGoesBackNorBelowTheOrigin) {
  auto clock = std::make_shared<SteppingClock>();
  clock->Set(absl::Seconds(5));
  TimeBase time(clock, absl::Milliseconds(1));
  clock->Set(absl::Seconds(4));  // before the origin
  EXPECT_EQ(time.NowNs(), 0);
  clock->Set(absl::Seconds(7));
  EXPECT_EQ(time.NowNs(), 2000 * kMs);
  clock->Set(absl::Seconds(6));  // back: the latest reading stands
  EXPECT_EQ(time.NowNs(), 2000 * kMs);
  clock->Set(absl::Seconds(7) + absl::Nanoseconds(1));
  EXPECT_EQ(time.NowNs(), 2000 * kMs + 1);
}

TEST(TimeBaseSteadyTest, SteadyClockNowNeverLagsAnEarlierSteadyClockRead) {
  TimeBase time(SteadyClock(), absl::Milliseconds(1));
  EXPECT_TRUE(time.steady());
  const int64_t origin_ns = absl::ToInt64Nanoseconds(time.origin());
  for (int i = 0; i < 1000; ++i) {
    const int64_t before =
        std::chrono::duration_cast<std::chrono::nanoseconds>(
            std::chrono::steady_clock::now().time_since_epoch())
            .count();
    const int64_t now_ns = time.NowNs();
    const int64_t after =
        std::chrono::duration_cast<std::chrono::nanoseconds>(
            std::chrono::steady_clock::now().time_since_epoch())
            .count();
    ASSERT_GE(now_ns, before - origin_ns);
    ASSERT_LE(now_ns, after - origin_ns);
  }
}

TEST_F(TimeBaseTest, DeadlineAfterRoundsUpToTheNanosecond) {
  EXPECT_EQ(*time_.DeadlineAfter(100, absl::Nanoseconds(1) / 4, "AfterFunc"),
            101);
  EXPECT_EQ(*time_.DeadlineAfter(100, absl::Milliseconds(2), "AfterFunc"),
            100 + 2 * kMs);
}

TEST_F(TimeBaseTest, DeadlineAfterANonPositiveDurationIsNow) {
  EXPECT_EQ(*time_.DeadlineAfter(100, absl::ZeroDuration(), "AfterFunc"), 100);
  EXPECT_EQ(*time_.DeadlineAfter(100, -absl::Hours(1), "AfterFunc"), 100);
  EXPECT_EQ(*time_.DeadlineAfter(100, -absl::InfiniteDuration(), "Reset"), 100);
}

TEST_F(TimeBaseTest, DeadlineAfterOutOfRangeIsInvalidArgumentNamingTheCaller) {
  for (absl::Duration d :
       {absl::Hours(24 * 365 * 300), absl::InfiniteDuration()}) {
    absl::StatusOr<int64_t> deadline = time_.DeadlineAfter(0, d, "AfterFunc");
    ASSERT_FALSE(deadline.ok()) << d;
    EXPECT_EQ(deadline.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(deadline.status().message(), HasSubstr("AfterFunc: duration"));
    EXPECT_THAT(deadline.status().message(), HasSubstr("out of range"));
  }
  EXPECT_TRUE(time_.DeadlineAfter(0, absl::Hours(24 * 365 * 100), "x").ok());
}

TEST_F(TimeBaseTest, DeadlineAtIsThePointItselfRoundedUpAlsoWhenPassed) {
  clock_->Advance(absl::Milliseconds(10));
  EXPECT_EQ(*time_.DeadlineAt(absl::Seconds(5) + absl::Milliseconds(20) +
                                  absl::Nanoseconds(1) / 2,
                              "AtClockTime"),
            20 * kMs + 1);
  // Passed: since the origin, and before it.
  EXPECT_EQ(*time_.DeadlineAt(absl::Seconds(5) + absl::Milliseconds(3),
                              "AtClockTime"),
            3 * kMs);
  EXPECT_EQ(*time_.DeadlineAt(absl::Seconds(1) - absl::Nanoseconds(1) / 2,
                              "AtClockTime"),
            -4000 * kMs);
  EXPECT_EQ(*time_.DeadlineAt(-absl::Hours(24 * 365 * 300), "AtClockTime"),
            std::numeric_limits<int64_t>::min());
  absl::StatusOr<int64_t> far =
      time_.DeadlineAt(absl::Hours(24 * 365 * 300), "AtClockTime");
  ASSERT_FALSE(far.ok());
  EXPECT_THAT(far.status().message(), HasSubstr("AtClockTime: time"));
}

TEST(LatenessNsTest, IsStartMinusDeadlineSaturated) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(LatenessNs(5 * kMs, 3 * kMs), 2 * kMs);
  EXPECT_EQ(LatenessNs(5 * kMs, -3 * kMs), 8 * kMs);
  EXPECT_EQ(LatenessNs(0, kMin + 1), kMax);
  EXPECT_EQ(LatenessNs(1, kMin), kMax);
  EXPECT_EQ(LatenessNs(kMax, kMin), kMax);
  EXPECT_EQ(LatenessNs(kMin, kMax), kMin);
}

TEST_F(TimeBaseTest, TickOfIsTheFirstTickBoundaryAtOrAfterTheDeadline) {
  EXPECT_EQ(time_.TickOf(0), 0);
  EXPECT_EQ(time_.TickOf(1), 1);
  EXPECT_EQ(time_.TickOf(kMs), 1);
  EXPECT_EQ(time_.TickOf(kMs + 1), 2);
  EXPECT_EQ(time_.TickOf(-1), 0);  // a deadline before the origin is due
  EXPECT_EQ(time_.TickOf(-kMs - 1), -1);
  // Deadlines >= 0 are divided without a division instruction: the same
  // ticks at every power of two, its neighbours and the ends of the range.
  for (int bit = 0; bit < 63; ++bit) {
    for (int64_t delta : {-1, 0, 1}) {
      const int64_t deadline = (int64_t{1} << bit) + delta;
      if (deadline < 0) continue;
      EXPECT_EQ(time_.TickOf(deadline), deadline / kMs + (deadline % kMs != 0))
          << deadline;
    }
  }
  const int64_t max = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(time_.TickOf(max), max / kMs + 1);
  EXPECT_EQ(time_.TickOf(std::numeric_limits<int64_t>::min()),
            std::numeric_limits<int64_t>::min() / kMs);
}

TEST_F(TimeBaseTest, TryDeadlineAfterAgreesWithDeadlineAfter) {
  for (absl::Duration d :
       {-absl::InfiniteDuration(), absl::Nanoseconds(-5), absl::ZeroDuration(),
        absl::Nanoseconds(1), absl::Nanoseconds(1) / 4, absl::Seconds(1),
        absl::Hours(24 * 365 * 100), absl::Hours(24 * 365 * 300),
        absl::InfiniteDuration()}) {
    for (int64_t now_ns : {int64_t{0}, int64_t{123}, kMs * 1000}) {
      int64_t deadline_ns = -1;
      const bool tried = time_.TryDeadlineAfter(now_ns, d, &deadline_ns);
      absl::StatusOr<int64_t> deadline = time_.DeadlineAfter(now_ns, d, "x");
      ASSERT_EQ(tried, deadline.ok()) << d << " " << now_ns;
      if (tried) {
        EXPECT_EQ(deadline_ns, *deadline) << d << " " << now_ns;
      }
    }
  }
}

TEST(CeilNsCacheTest, GivesCeilNsOfEachDelayAskedInTurn) {
  CeilNsCache cache;
  // Repeats, changes, a change back, zero after others, and the saturated
  // ends: each answer is CeilNs of the delay asked, never the one before.
  for (absl::Duration d :
       {absl::ZeroDuration(), absl::Seconds(1), absl::Seconds(1),
        absl::Nanoseconds(1) / 4, absl::Seconds(1), absl::Nanoseconds(-7),
        absl::ZeroDuration(), absl::Milliseconds(30) + absl::Nanoseconds(1) / 2,
        absl::Milliseconds(30), absl::InfiniteDuration(),
        -absl::InfiniteDuration(), absl::Hours(24 * 365 * 300),
        absl::Hours(24 * 365 * 300), absl::Nanoseconds(5)}) {
    EXPECT_EQ(cache.Get(d), CeilNs(d)) << d;
  }
}

TEST_F(TimeBaseTest, TryDeadlineAfterWithACacheAgreesWithoutOne) {
  CeilNsCache cache;
  for (int pass = 0; pass < 2; ++pass) {
    for (absl::Duration d :
         {absl::Seconds(1), absl::Seconds(1), absl::Nanoseconds(1) / 4,
          absl::Hours(24 * 365 * 100), absl::Hours(24 * 365 * 300),
          absl::InfiniteDuration(), absl::Nanoseconds(-5), absl::Seconds(1)}) {
      for (int64_t now_ns : {int64_t{0}, kMs * 1000}) {
        int64_t cached = -1;
        int64_t plain = -1;
        const bool tried_cached =
            time_.TryDeadlineAfter(now_ns, d, &cached, &cache);
        ASSERT_EQ(tried_cached, time_.TryDeadlineAfter(now_ns, d, &plain))
            << d << " " << now_ns;
        if (tried_cached) {
          EXPECT_EQ(cached, plain) << d << " " << now_ns;
        }
      }
    }
  }
}

// A scheduler that answers `delay` and records the context it was asked in.
class OneAnswer : public Scheduler {
 public:
  explicit OneAnswer(std::optional<absl::Duration> delay) : delay_(delay) {}
  std::optional<absl::Duration> NextDelay(
      const ScheduleContext& context) override {
    asked_ = context;
    return delay_;
  }
  ScheduleContext asked_{};

 private:
  const std::optional<absl::Duration> delay_;
};

TEST_F(TimeBaseTest, FirstRunDeadlineAsksTheSchedulerAtNow) {
  OneAnswer scheduler(absl::Milliseconds(7));
  absl::StatusOr<int64_t> deadline =
      time_.FirstRunDeadline(scheduler, 3 * kMs, "Every");
  ASSERT_TRUE(deadline.ok()) << deadline.status();
  EXPECT_EQ(*deadline, 10 * kMs);
  // The clock's time (origin 5 s), as both the "previous" and now.
  EXPECT_EQ(scheduler.asked_.now, absl::Seconds(5) + absl::Milliseconds(3));
  EXPECT_EQ(scheduler.asked_.previous_deadline, scheduler.asked_.now);
}

TEST_F(TimeBaseTest, FirstRunDeadlineOfAScheduleThatEndsAtOnceIsAnError) {
  OneAnswer ended(std::nullopt);
  absl::Status status = time_.FirstRunDeadline(ended, 0, "Every").status();
  EXPECT_TRUE(absl::IsInvalidArgument(status));
  EXPECT_THAT(status.message(),
              HasSubstr("Every: the scheduler ended before the first run"));
  OneAnswer too_far(absl::Hours(24 * 365 * 300));
  EXPECT_TRUE(absl::IsInvalidArgument(
      time_.FirstRunDeadline(too_far, 0, "Every").status()));
}

TEST_F(TimeBaseTest, NextRunAfterANonPositiveDelayIsTheNextTickBoundary) {
  EXPECT_EQ(time_.NextRunAfter(2 * kMs + kMs / 2, absl::ZeroDuration()),
            3 * kMs);
  EXPECT_EQ(time_.NextRunAfter(3 * kMs, -absl::Seconds(1)), 4 * kMs);
  EXPECT_EQ(time_.NextRunAfter(3 * kMs, absl::Nanoseconds(1) / 3), 3 * kMs + 1);
}

TEST_F(TimeBaseTest, NextRunAfterOutOfRangeEndsTheSchedule) {
  EXPECT_EQ(time_.NextRunAfter(0, absl::InfiniteDuration()), std::nullopt);
  // The last whole tick of the range has no next tick.
  const int64_t last_tick_ns = std::numeric_limits<int64_t>::max() / kMs * kMs;
  EXPECT_EQ(time_.NextRunAfter(last_tick_ns - kMs, absl::ZeroDuration()),
            last_tick_ns);
  EXPECT_EQ(time_.NextRunAfter(last_tick_ns, absl::ZeroDuration()),
            std::nullopt);
}

}  // namespace
}  // namespace timingwheel::internal
