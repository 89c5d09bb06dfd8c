// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// uptime_test.cc: a wheel that has been up for a long time. The clock is
// advanced (in one step: the delay queue jumps, nothing walks tick by tick)
// to just before 2^31 and 2^32 ticks and to about 2^62 ns (146 years), and
// timers that cross those points must still fire exactly on their tick:
// 64-bit tick arithmetic has no wrap-around. A deadline beyond the supported
// range is an error, never a timer that fires early or never.
// Also: the worker backlog is visible in GetStats while the pool is saturated.

#include <atomic>
#include <cstdint>
#include <future>
#include <memory>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util.h"
#include "timingwheel/timingwheel.h"

namespace timingwheel {
namespace {

using ::testing::HasSubstr;

class UptimeTest : public ManualWheelTest</*kWorkers=*/1,
                                          ::testing::TestWithParam<int64_t>> {};

// Just before `ticks` (1 ms each), timers 1..20 ms and 1 s out cross it and
// each fires on its own tick, not one earlier.
TEST_P(UptimeTest, TimersCrossingATickPowerOfTwoFireOnTime) {
  const int64_t ticks = GetParam();
  // A timer set long ago keeps the levels busy across the jump.
  std::atomic<int> old_runs{0};
  ASSERT_TRUE(
      wheel_->AfterFunc(absl::Milliseconds(ticks + 7), [&] { ++old_runs; })
          .ok());
  Advance(absl::Milliseconds(ticks - 5));
  EXPECT_EQ(old_runs, 0);

  constexpr int kDelays[] = {1, 5, 6, 19, 20, 1000};
  std::atomic<int> runs[6] = {};
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(wheel_
                    ->AfterFunc(absl::Milliseconds(kDelays[i]),
                                [&runs, i] { ++runs[i]; })
                    .ok());
  }
  for (int ms = 1; ms <= 1000; ++ms) {
    Advance(absl::Milliseconds(1));
    for (int i = 0; i < 6; ++i) {
      ASSERT_EQ(runs[i].load(), ms >= kDelays[i] ? 1 : 0)
          << "delay " << kDelays[i] << " ms at +" << ms << " ms past "
          << ticks - 5 << " ticks";
    }
    ASSERT_EQ(old_runs.load(), ms >= 12 ? 1 : 0) << "+" << ms << " ms";
  }
  EXPECT_EQ(wheel_->Pending(), 0);
}

INSTANTIATE_TEST_SUITE_P(PowersOfTwo, UptimeTest,
                         ::testing::Values(int64_t{1} << 31, int64_t{1} << 32));

TEST(UptimeLimitTest, At146YearsTimersStillFireAndTheRangeEndIsAnError) {
  auto clock = std::make_shared<ManualClock>();
  auto wheel = OneWorkerWheel(clock);
  // About 146 years, rounded down to the tick so that the deadlines below
  // are tick-aligned and fire exactly when the clock reaches them.
  constexpr int64_t kTickNs = 1000000;
  clock->Advance(absl::Nanoseconds((int64_t{1} << 62) / kTickNs * kTickNs));
  wheel->WaitIdle();

  std::atomic<int> second{0};
  std::atomic<int> century{0};
  ASSERT_TRUE(wheel->AfterFunc(absl::Seconds(1), [&] { ++second; }).ok());
  const absl::Duration kCentury = absl::Hours(24 * 365 * 100);
  ASSERT_TRUE(wheel->AfterFunc(kCentury, [&] { ++century; }).ok());

  clock->Advance(absl::Milliseconds(999));
  wheel->WaitIdle();
  EXPECT_EQ(second, 0);
  clock->Advance(absl::Milliseconds(1));
  wheel->WaitIdle();
  EXPECT_EQ(second, 1);

  clock->Advance(kCentury - absl::Seconds(1) - absl::Milliseconds(1));
  wheel->WaitIdle();
  EXPECT_EQ(century, 0);
  clock->Advance(absl::Milliseconds(1));
  wheel->WaitIdle();
  EXPECT_EQ(century, 1);

  // 146 + 246 years is past int64 nanoseconds (292 years): an error.
  absl::StatusOr<Timer> too_far =
      wheel->AfterFunc(absl::Hours(24 * 365 * 150), [] {});
  EXPECT_TRUE(absl::IsInvalidArgument(too_far.status()));
  EXPECT_THAT(too_far.status().message(), HasSubstr("out of range"));
  EXPECT_EQ(wheel->Pending(), 0);
}

TEST(BacklogTest, ASaturatedPoolLosesNothingAndShowsItsBacklogInStats) {
  auto clock = std::make_shared<ManualClock>();
  auto wheel = OneWorkerWheel(clock);

  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> blocking{false};
  ASSERT_TRUE(wheel
                  ->AfterFunc(absl::Milliseconds(1),
                              [&] {
                                blocking = true;
                                released.wait();
                              })
                  .ok());
  std::atomic<int> runs{0};
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(wheel->AfterFunc(absl::Milliseconds(2), [&] { ++runs; }).ok());
  }
  clock->Advance(absl::Milliseconds(2));
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  while ((!blocking || wheel->GetStats().worker_queue_depth < 10) &&
         absl::Now() < give_up) {
    std::this_thread::yield();
  }
  Stats stats = wheel->GetStats();
  EXPECT_EQ(stats.worker_queue_depth, 10);
  EXPECT_EQ(stats.fired, 1);
  EXPECT_EQ(runs, 0);
  release.set_value();
  wheel->WaitIdle();
  stats = wheel->GetStats();
  EXPECT_EQ(runs, 10);
  EXPECT_EQ(stats.fired, 11);
  EXPECT_EQ(stats.worker_queue_depth, 0);
  EXPECT_EQ(stats.pending, 0);
}

}  // namespace
}  // namespace timingwheel
