// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// release_alarm_test.cc: tests of ReleaseAlarm (lib/threads/release_alarm.h),
// the poller's wait for the core's next release. Wait blocks until the clock
// reaches origin + tick * the alarm's tick, then clears the alarm; with no
// alarm it waits for one; a sooner Set wakes a waiting Wait, a later one
// moves its time; ManualClock::Advance wakes it; Close wakes it and makes it
// (and every later Wait) return false; the last tick of the range does not
// overflow. On the real clock, Close and a due Set end a wait an hour long;
// on a clock of a user's own (real speed plus jumps, public API only), a
// jump does; a clock whose RealTimeUntil keeps saying "no wait" for a time
// its Now() does not show reached makes Wait sleep, not spin. An alarm
// registers with its clock and leaves it when destroyed, also while other
// threads keep advancing the clock and other alarms come and go (run these
// under ASan and TSan).
//
// Wait runs in its own thread and every wait for it is bounded, so a missed
// wake-up fails the test instead of hanging it.

#include "threads/release_alarm.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <limits>
#include <memory>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/time_base.h"
#include "gtest/gtest.h"
#include "test_util.h"
#include "timingwheel/clock.h"

namespace timingwheel::internal {
namespace {

constexpr auto kTimeout = std::chrono::seconds(10);
// How long a Wait that must keep blocking is watched.
constexpr auto kStillBlocked = std::chrono::milliseconds(50);
constexpr int64_t kHourOfMs = 3600 * 1000;

// One Wait in its own thread.
class AsyncWait {
 public:
  explicit AsyncWait(ReleaseAlarm* alarm)
      : alarm_(alarm), future_(std::async(std::launch::async, [alarm] {
          return alarm->Wait();
        })) {}
  // Never hangs: a Wait that did not return is unblocked by Close.
  ~AsyncWait() {
    if (future_.valid() && future_.wait_for(std::chrono::seconds(0)) !=
                               std::future_status::ready) {
      alarm_->Close();
    }
  }

  bool ReturnsWithin(std::chrono::milliseconds timeout) {
    return future_.wait_for(timeout) == std::future_status::ready;
  }
  // Waits for the Wait to return (bounded); closes the alarm if it does not.
  bool Get() {
    if (future_.wait_for(kTimeout) != std::future_status::ready) {
      ADD_FAILURE() << "Wait did not return";
      alarm_->Close();
    }
    return future_.get();
  }

 private:
  ReleaseAlarm* const alarm_;
  std::future<bool> future_;
};

// An alarm on a ManualClock with 1 ms ticks from 0.
class ReleaseAlarmTest : public ::testing::Test {
 protected:
  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>();
  TimeBase time_{clock_, absl::Milliseconds(1)};
  ReleaseAlarm alarm_{&time_};
};

TEST_F(ReleaseAlarmTest, WaitReturnsOnceTheClockReachesTheTick) {
  alarm_.Set(5);
  AsyncWait wait(&alarm_);
  clock_->Advance(absl::Milliseconds(5) - absl::Nanoseconds(1));
  EXPECT_FALSE(wait.ReturnsWithin(kStillBlocked)) << "1 ns early";
  clock_->Advance(absl::Nanoseconds(1));
  EXPECT_TRUE(wait.Get());
}

TEST_F(ReleaseAlarmTest, AnAlarmThatWentOffIsCleared) {
  alarm_.Set(0);
  EXPECT_TRUE(alarm_.Wait());  // due at once
  AsyncWait wait(&alarm_);
  clock_->Advance(absl::Hours(1));
  EXPECT_FALSE(wait.ReturnsWithin(kStillBlocked)) << "went off twice";
  alarm_.Set(kHourOfMs);
  EXPECT_TRUE(wait.Get());
}

TEST_F(ReleaseAlarmTest, WaitWithNoAlarmWaitsForASet) {
  AsyncWait wait(&alarm_);
  clock_->Advance(absl::Hours(24));
  EXPECT_FALSE(wait.ReturnsWithin(kStillBlocked));
  alarm_.Set(3);  // passed long ago: due at once
  EXPECT_TRUE(wait.Get());
}

TEST_F(ReleaseAlarmTest, ASoonerSetWakesAWaitForALaterTick) {
  alarm_.Set(100);
  AsyncWait wait(&alarm_);
  clock_->Advance(absl::Milliseconds(10));
  EXPECT_FALSE(wait.ReturnsWithin(kStillBlocked));
  alarm_.Set(10);
  EXPECT_TRUE(wait.Get());
}

TEST_F(ReleaseAlarmTest, ALaterSetMovesTheWait) {
  alarm_.Set(10);
  AsyncWait wait(&alarm_);
  alarm_.Set(20);
  clock_->Advance(absl::Milliseconds(10));
  EXPECT_FALSE(wait.ReturnsWithin(kStillBlocked)) << "the old tick went off";
  clock_->Advance(absl::Milliseconds(10));
  EXPECT_TRUE(wait.Get());
}

TEST_F(ReleaseAlarmTest, CloseWakesWaitAndEveryLaterWaitReturnsFalse) {
  alarm_.Set(1000);
  AsyncWait wait(&alarm_);
  EXPECT_FALSE(wait.ReturnsWithin(kStillBlocked));
  alarm_.Close();
  EXPECT_FALSE(wait.Get());
  alarm_.Set(0);
  EXPECT_FALSE(alarm_.Wait()) << "closed, even with a due alarm";
}

TEST(ReleaseAlarmOriginTest, DueAtOriginPlusTickTimesTickWidth) {
  auto clock = std::make_shared<ManualClock>();
  clock->Advance(absl::Seconds(1));
  // Origin 1 s (the clock's time when the TimeBase is made), tick 1 us:
  // tick 7 is due at 1.000007 s.
  TimeBase time(clock, absl::Microseconds(1));
  ReleaseAlarm alarm(&time);
  alarm.Set(7);
  AsyncWait wait(&alarm);
  clock->Advance(absl::Nanoseconds(6999));
  EXPECT_FALSE(wait.ReturnsWithin(kStillBlocked));
  clock->Advance(absl::Nanoseconds(1));
  EXPECT_TRUE(wait.Get());
}

TEST(ReleaseAlarmOriginTest, TheLastTickOfTheRangeDoesNotOverflow) {
  // About 292 years of 1 ns ticks: the largest release the core makes.
  auto clock = std::make_shared<ManualClock>();
  TimeBase time(clock, absl::Nanoseconds(1));
  ReleaseAlarm alarm(&time);
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  alarm.Set(kMax - 1);
  AsyncWait wait(&alarm);
  clock->Advance(absl::Nanoseconds(kMax - 2));
  EXPECT_FALSE(wait.ReturnsWithin(kStillBlocked));
  clock->Advance(absl::Nanoseconds(1));
  EXPECT_TRUE(wait.Get());
}

// Waits for a release an hour away on `time`'s clock in another thread,
// checks that the wait blocks, ends it with `end(alarm)`, and returns what
// the wait returned (checking that it returned within 5 s).
template <class End>
bool EndAWaitAnHourAway(TimeBase* time, End end) {
  ReleaseAlarm alarm(time);
  alarm.Set(kHourOfMs);
  AsyncWait wait(&alarm);
  EXPECT_FALSE(wait.ReturnsWithin(kStillBlocked));
  const absl::Time start = absl::Now();
  end(alarm);
  const bool woke = wait.Get();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  return woke;
}

// With the real clock, nothing but a notify ends a wait for a release an
// hour away.
TEST(ReleaseAlarmSteadyClockTest, CloseWakesAWaitAnHourAwayRealClock) {
  TimeBase time(SteadyClock(), absl::Milliseconds(1));
  EXPECT_FALSE(EndAWaitAnHourAway(&time, [](ReleaseAlarm& alarm) {
    alarm.Close();
  })) << "closed: Wait says stop";
}

TEST(ReleaseAlarmSteadyClockTest, ADueSetWakesAWaitAnHourAwayRealClock) {
  TimeBase time(SteadyClock(), absl::Milliseconds(1));
  EXPECT_TRUE(EndAWaitAnHourAway(&time, [](ReleaseAlarm& alarm) {
    alarm.Set(0);  // due since the origin
  }));
}

TEST(ReleaseAlarmCustomClockTest, AJumpWakesAWaitAnHourAwayRealClock) {
  auto clock = std::make_shared<JumpingClock>();
  TimeBase time(clock, absl::Milliseconds(1));
  EXPECT_TRUE(EndAWaitAnHourAway(
      &time, [&clock](ReleaseAlarm&) { clock->Jump(absl::Hours(1)); }));
}

// A clock whose Now() is a manual time and whose RealTimeUntil always says
// "no wait" (a coarse Now() beside a fine sleep, as a user's clock may
// have): it counts the readings of Now().
class DisagreeingClock : public Clock {
 public:
  absl::Duration Now() const override {
    reads_.fetch_add(1, std::memory_order_relaxed);
    return absl::Nanoseconds(now_ns_.load(std::memory_order_acquire));
  }
  absl::Duration RealTimeUntil(absl::Duration) const override {
    return absl::ZeroDuration();
  }
  void Set(absl::Duration now) {
    now_ns_.store(absl::ToInt64Nanoseconds(now), std::memory_order_release);
  }
  int64_t reads() const { return reads_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> now_ns_{0};
  mutable std::atomic<int64_t> reads_{0};
};

TEST(ReleaseAlarmCustomClockTest, AClockThatNeverSaysWaitDoesNotMakeWaitSpin) {
  auto clock = std::make_shared<DisagreeingClock>();
  TimeBase time(clock, absl::Milliseconds(1));
  ReleaseAlarm alarm(&time);
  alarm.Set(10);  // 10 ms of the clock away
  AsyncWait wait(&alarm);
  EXPECT_FALSE(wait.ReturnsWithin(std::chrono::milliseconds(200)));
  // Spinning, the poller read the clock millions of times in 200 ms; with
  // sleeps of 1 ms (a tick) it reads it about twice each.
  EXPECT_LT(clock->reads(), 5000);
  clock->Set(absl::Milliseconds(10));
  EXPECT_TRUE(wait.Get());
}

// Builds an alarm on `clock` set an hour away with a Wait sleeping on it,
// then closes and destroys it, `rounds` times.
void MakeWaitAndDestroyAlarms(const std::shared_ptr<ManualClock>& clock,
                              int rounds) {
  for (int i = 0; i < rounds; ++i) {
    auto time = std::make_unique<TimeBase>(clock, absl::Milliseconds(1));
    auto alarm = std::make_unique<ReleaseAlarm>(time.get());
    alarm->Set(kHourOfMs);
    {
      AsyncWait wait(alarm.get());
      if (i % 2 == 0) std::this_thread::yield();  // sometimes let it sleep
      alarm->Close();
      EXPECT_FALSE(wait.Get());
    }
    alarm.reset();  // while the clock keeps moving
  }
}

TEST(ReleaseAlarmLifetimeTest, DestroyedWhileAnotherThreadAdvancesTheClock) {
  // A wake-up that outlived its alarm would lock a destroyed mutex: a
  // use-after-free under ASan, a race under TSan.
  auto clock = std::make_shared<ManualClock>();
  std::atomic<bool> stop{false};
  std::thread advancer([&] {
    while (!stop.load()) clock->Advance(absl::Nanoseconds(1));
  });
  MakeWaitAndDestroyAlarms(clock, 300);
  stop.store(true);
  advancer.join();
}

TEST(ReleaseAlarmLifetimeTest, AdvanceRacesManyAlarmsComingAndGoing) {
  // Alarms register and unregister on one clock from several threads while
  // it advances; afterwards a new alarm on it is still woken by Advance.
  auto clock = std::make_shared<ManualClock>();
  std::atomic<bool> stop{false};
  std::thread advancer([&] {
    while (!stop.load()) clock->Advance(absl::Nanoseconds(1));
  });
  std::vector<std::thread> builders;
  for (int t = 0; t < 3; ++t) {
    builders.emplace_back([&clock] { MakeWaitAndDestroyAlarms(clock, 100); });
  }
  for (std::thread& builder : builders) builder.join();
  stop.store(true);
  advancer.join();

  TimeBase time(clock, absl::Milliseconds(1));
  ReleaseAlarm alarm(&time);
  alarm.Set(5);
  AsyncWait wait(&alarm);
  EXPECT_FALSE(wait.ReturnsWithin(kStillBlocked));
  clock->Advance(absl::Milliseconds(5));
  EXPECT_TRUE(wait.Get());
}

}  // namespace
}  // namespace timingwheel::internal
