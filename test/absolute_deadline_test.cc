// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// absolute_deadline_test.cc: TimingWheel::At and AtClockTime (timingwheel.h),
// timers at a point in time rather than after a delay. Under a ManualClock:
// a point fires exactly at its tick and never a nanosecond before, also when
// the clock was far from zero when the wheel started; a point between ticks
// fires at the next one; a passed point runs at once on a worker; the
// deadline is the point itself, also a passed one (before the wheel's start
// too), and the lateness counts from it. The errors: a steady_clock point given
// to a wheel on another clock, infinite and out-of-range points, an empty
// callback, after Shutdown, max_pending. On real time (steady_clock): never
// before the point.

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util.h"
#include "timingwheel/timingwheel.h"

namespace timingwheel {
namespace {

using ::testing::HasSubstr;

constexpr absl::Duration kTick = absl::Milliseconds(1);
constexpr int kSlowdown = kSanitized ? 10 : 1;

class AtClockTimeTest : public ManualWheelTest<2> {
 protected:
  // AtClockTime(when) recording into `log_`; the test fails if refused.
  Timer AtLogged(absl::Duration when) {
    absl::StatusOr<Timer> timer =
        wheel_->AtClockTime(when, RunLog::Callback(log_));
    EXPECT_TRUE(timer.ok()) << timer.status();
    return timer.ok() ? *timer : Timer();
  }

  std::shared_ptr<RunLog> log_ = std::make_shared<RunLog>(clock_);
};

TEST_F(AtClockTimeTest, FiresExactlyAtAnAlignedPointAndNeverBefore) {
  Advance(absl::Microseconds(300));  // now is between ticks
  const absl::Duration when = absl::Milliseconds(7);
  const Timer timer = AtLogged(when);
  EXPECT_EQ(timer.Deadline(), when);
  Advance(when - clock_->Now() - absl::Nanoseconds(1));
  EXPECT_EQ(log_->count(), 0);
  Advance(absl::Nanoseconds(1));
  ASSERT_EQ(log_->count(), 1);
  EXPECT_EQ(log_->runs()[0], when);
}

TEST_F(AtClockTimeTest, PointBetweenTicksFiresAtTheNextTick) {
  const absl::Duration when = absl::Microseconds(4200);
  const Timer timer = AtLogged(when);
  EXPECT_EQ(timer.Deadline(), when);  // as given, not rounded
  Advance(when);
  EXPECT_EQ(log_->count(), 0);
  EXPECT_EQ(timer.TimeLeft(), absl::ZeroDuration());
  Advance(absl::Milliseconds(5) - when - absl::Nanoseconds(1));
  EXPECT_EQ(log_->count(), 0);
  Advance(absl::Nanoseconds(1));
  ASSERT_EQ(log_->count(), 1);
  EXPECT_EQ(log_->runs()[0], absl::Milliseconds(5));
}

TEST_F(AtClockTimeTest, SubNanosecondPointIsRoundedUp) {
  const Timer timer =
      AtLogged(absl::Milliseconds(3) + absl::Nanoseconds(1) / 4);
  EXPECT_EQ(timer.Deadline(), absl::Milliseconds(3) + absl::Nanoseconds(1));
  Advance(absl::Milliseconds(3));
  EXPECT_EQ(log_->count(), 0);
  Advance(kTick);
  EXPECT_EQ(log_->count(), 1);
}

TEST_F(AtClockTimeTest, PassedPointRunsAtOnceOnAWorker) {
  Advance(absl::Seconds(2));
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<bool> inline_run{false};
  ASSERT_TRUE(wheel_
                  ->AtClockTime(absl::Seconds(1),
                                [&] {
                                  inline_run =
                                      std::this_thread::get_id() == caller;
                                  log_->Record();
                                })
                  .ok());
  Advance(absl::ZeroDuration());
  ASSERT_EQ(log_->count(), 1);
  EXPECT_EQ(log_->runs()[0], absl::Seconds(2));
  EXPECT_FALSE(inline_run.load());
}

TEST_F(AtClockTimeTest, PassedPointIsTheDeadlineAndLatenessCountsFromIt) {
  Options options;
  options.workers = 1;
  Start(std::move(options));
  Advance(absl::Seconds(2));
  // The one worker is busy: the passed point waits for it, pending.
  Gate gate;
  Event busy;
  ASSERT_TRUE(wheel_
                  ->AfterFunc(absl::ZeroDuration(),
                              [&] {
                                busy.Notify();
                                gate.Pass();
                              })
                  .ok());
  ASSERT_TRUE(busy.Wait());
  const Timer timer = AtLogged(absl::Seconds(1));
  EXPECT_TRUE(timer.Pending());
  EXPECT_EQ(timer.Deadline(), absl::Seconds(1));
  EXPECT_EQ(timer.TimeLeft(), absl::ZeroDuration());
  gate.Open();
  WaitIdle();
  ASSERT_EQ(log_->count(), 1);
  EXPECT_EQ(log_->runs()[0], absl::Seconds(2));  // at once, never early
  EXPECT_EQ(wheel_->GetStats().lateness_max, absl::Seconds(1));
}

TEST_F(AtClockTimeTest, PointBeforeTheWheelsStartIsTheDeadlineToo) {
  Options options;
  options.workers = 1;
  Start(std::move(options));
  Gate gate;
  Event busy;
  ASSERT_TRUE(wheel_
                  ->AfterFunc(absl::ZeroDuration(),
                              [&] {
                                busy.Notify();
                                gate.Pass();
                              })
                  .ok());
  ASSERT_TRUE(busy.Wait());
  const Timer timer = AtLogged(-absl::Milliseconds(3));
  EXPECT_EQ(timer.Deadline(), -absl::Milliseconds(3));
  // Long before: saturated at about 292 years before the wheel's start.
  const Timer ancient = AtLogged(-absl::Hours(24 * 365 * 300));
  ASSERT_TRUE(ancient.Deadline().has_value());
  EXPECT_LT(*ancient.Deadline(), -absl::Hours(24 * 365 * 292));
  gate.Open();
  WaitIdle();
  EXPECT_EQ(log_->count(), 2);
  EXPECT_GT(wheel_->GetStats().lateness_max, absl::Hours(24 * 365 * 292));
}

TEST_F(AtClockTimeTest, PointFarAheadCascadesAndFiresAtItsTick) {
  const absl::Duration when = absl::Hours(30) + absl::Milliseconds(17);
  AtLogged(when);
  Advance(when - absl::Nanoseconds(1));
  EXPECT_EQ(log_->count(), 0);
  Advance(absl::Nanoseconds(1));
  ASSERT_EQ(log_->count(), 1);
  EXPECT_EQ(log_->runs()[0], when);
}

TEST(AtClockTimeOriginTest, PointIsTheClocksTimeNotTheWheelsAge) {
  // The wheel starts when its clock reads one hour: a point is a reading of
  // that clock, not a time since the wheel's start.
  auto clock = std::make_shared<ManualClock>();
  clock->Advance(absl::Hours(1));
  auto wheel = OneWorkerWheel(clock);
  auto log = std::make_shared<RunLog>(clock);
  const absl::Duration when = absl::Hours(1) + absl::Milliseconds(5);
  const Timer timer = wheel->AtClockTime(when, RunLog::Callback(log)).value();
  EXPECT_EQ(timer.Deadline(), when);
  EXPECT_EQ(timer.TimeLeft(), absl::Milliseconds(5));
  clock->Advance(absl::Milliseconds(5) - absl::Nanoseconds(1));
  wheel->WaitIdle();
  EXPECT_EQ(log->count(), 0);
  clock->Advance(absl::Nanoseconds(1));
  wheel->WaitIdle();
  ASSERT_EQ(log->count(), 1);
  EXPECT_EQ(log->runs()[0], when);
}

TEST_F(AtClockTimeTest, BadPointsAreInvalidArgumentSayingWhy) {
  struct Case {
    absl::Duration when;
    const char* says;
  } cases[] = {
      {absl::InfiniteDuration(), "must be finite"},
      {-absl::InfiniteDuration(), "must be finite"},
      {absl::Hours(24 * 365 * 300), "out of range"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Timer> timer = wheel_->AtClockTime(c.when, [] {});
    EXPECT_EQ(timer.status().code(), absl::StatusCode::kInvalidArgument)
        << c.when;
    EXPECT_THAT(timer.status().message(), HasSubstr("AtClockTime"));
    EXPECT_THAT(timer.status().message(), HasSubstr(c.says));
  }
  absl::StatusOr<Timer> empty = wheel_->AtClockTime(absl::Seconds(1), nullptr);
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(empty.status().message(), HasSubstr("callback is empty"));
  // An empty std::function too (an AnyInvocable made from it is not empty).
  EXPECT_EQ(wheel_->AtClockTime(absl::Seconds(1), std::function<void()>())
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  // The range ends about 292 years after the wheel's start, inclusive of
  // 100 years.
  EXPECT_TRUE(wheel_->AtClockTime(absl::Hours(24 * 365 * 100), [] {}).ok());
  EXPECT_EQ(wheel_->Pending(), 1);
}

TEST_F(AtClockTimeTest, AfterShutdownIsFailedPrecondition) {
  wheel_->Shutdown();
  EXPECT_EQ(wheel_->AtClockTime(absl::Seconds(1), [] {}).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(AtClockTimeLimitTest, CountsAgainstMaxPending) {
  Options options;
  options.clock = std::make_shared<ManualClock>();
  options.workers = 1;
  options.max_pending = 1;
  auto wheel = TimingWheel::Create(std::move(options)).value();
  ASSERT_TRUE(wheel->AtClockTime(absl::Seconds(1), [] {}).ok());
  EXPECT_EQ(wheel->AtClockTime(absl::Seconds(2), [] {}).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(wheel->Pending(), 1);
}

TEST_F(AtClockTimeTest, SteadyClockPointOnAManualClockIsInvalidArgument) {
  absl::StatusOr<Timer> timer = wheel_->At(
      std::chrono::steady_clock::now() + std::chrono::seconds(1), [] {});
  EXPECT_EQ(timer.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(timer.status().message(), HasSubstr("SteadyClock()"));
  EXPECT_THAT(timer.status().message(), HasSubstr("AtClockTime"));
  EXPECT_EQ(wheel_->Pending(), 0);
}

// ---------------------------------------------------------------------------
// steady_clock time points, on real time.

TEST(AtSteadyTest, NeverRunsBeforeTheSteadyClockPointRealClock) {
  Options options;
  options.workers = 2;
  auto wheel = TimingWheel::Create(std::move(options)).value();
  constexpr int kTimers = 20;
  std::mutex mu;
  std::vector<std::chrono::nanoseconds> early_by;
  std::atomic<int> runs{0};
  const auto base = std::chrono::steady_clock::now();
  for (int i = 0; i < kTimers; ++i) {
    // Points on and between ticks, up to 20 ms ahead.
    const auto when = base + std::chrono::microseconds(1000 * i + 137 * i);
    ASSERT_TRUE(wheel
                    ->At(when,
                         [&, when] {
                           const auto now = std::chrono::steady_clock::now();
                           if (now < when) {
                             std::lock_guard<std::mutex> lock(mu);
                             early_by.push_back(when - now);
                           }
                           ++runs;
                         })
                    .ok());
  }
  const absl::Time give_up = absl::Now() + absl::Seconds(10) * kSlowdown;
  while (runs.load() < kTimers && absl::Now() < give_up) {
    std::this_thread::yield();
  }
  EXPECT_EQ(runs.load(), kTimers);
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_TRUE(early_by.empty()) << early_by.size() << " ran early";
}

TEST(AtSteadyTest, DeadlineIsTheSteadyClockPointRealClock) {
  auto wheel = TimingWheel::Create().value();
  const auto when =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
  const Timer timer = wheel->At(when, [] {}).value();
  ASSERT_TRUE(timer.Deadline().has_value());
  EXPECT_EQ(std::chrono::steady_clock::time_point(
                absl::ToChronoNanoseconds(*timer.Deadline())),
            when);
  const std::optional<absl::Duration> left = timer.TimeLeft();
  ASSERT_TRUE(left.has_value());
  EXPECT_LE(*left, absl::Milliseconds(1500));
  EXPECT_GT(*left, absl::ZeroDuration());
}

TEST(AtSteadyTest, EmptyCallbackIsInvalidArgument) {
  auto wheel = TimingWheel::Create().value();
  const auto when = std::chrono::steady_clock::now() + std::chrono::hours(1);
  EXPECT_EQ(wheel->At(when, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(wheel->At(when, std::function<void()>()).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(wheel->Pending(), 0);
}

TEST(AtSteadyTest, PassedSteadyClockPointRunsAtOnceRealClock) {
  auto wheel = TimingWheel::Create().value();
  std::atomic<bool> ran{false};
  ASSERT_TRUE(
      wheel
          ->At(std::chrono::steady_clock::now() - std::chrono::seconds(5),
               [&] { ran = true; })
          .ok());
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  while (!ran.load() && absl::Now() < give_up) std::this_thread::yield();
  EXPECT_TRUE(ran.load());
}

}  // namespace
}  // namespace timingwheel
