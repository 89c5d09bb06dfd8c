// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// clock_test.cc: tests of include/timingwheel/clock.h and of how the library
// sleeps on a clock (lib/base/clock_wake_up.h). ManualClock: starts at zero,
// Advance adds, a zero or negative Advance is ignored, an infinite or
// overflowing one saturates at the largest representable time; a waiter whose
// deadline has passed returns at once; Advance wakes a waiter, every waiter,
// and a waiter with no deadline, with no lost wake-up when the waiter's check
// and Advance race (1000 rounds). SteadyClock: one shared, monotonic instance.
// The default Clock::RealTimeUntil is the deadline minus now, and a waiter on a
// custom real-time clock returns once a short deadline has passed or when
// notified (the only real-clock tests here, named *RealClock). Clocks written
// by a user against the public API only: NotifyTimeChanged wakes a waiter, a
// real-speed clock that jumps wakes a waiter an hour away, and a simulated
// clock drives a TimingWheel without sleeping, and one that steps backwards
// (against the contract) never makes a timer early. A wake-up removed from its
// clock is never called again, also while the clock keeps moving.
//
// A waiter here sleeps the way the delay queue's poller does (Waiter below).
// Every wait in a test is bounded, so a lost wake-up fails instead of hanging.

#include "timingwheel/clock.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <limits>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/clock_wake_up.h"
#include "base/mutex.h"
#include "gtest/gtest.h"
#include "test_util.h"
#include "timingwheel/timingwheel.h"

namespace timingwheel {
namespace {

using internal::ClockWakeUp;
using internal::CondVar;
using internal::LockRank;
using internal::Mutex;
using internal::MutexLock;

constexpr auto kTimeout = std::chrono::seconds(10);
// A mutex registered with a ClockWakeUp stands in for the release alarm's, and
// ranks as it does: NotifyTimeChanged takes it under the clock's list lock.
constexpr LockRank kSleeperRank = LockRank::kAlarm;

TEST(ManualClockTest, StartsAtZero) {
  ManualClock clock;
  EXPECT_EQ(clock.Now(), absl::ZeroDuration());
}

TEST(ManualClockTest, AdvanceAdds) {
  ManualClock clock;
  clock.Advance(absl::Milliseconds(3));
  EXPECT_EQ(clock.Now(), absl::Milliseconds(3));
  clock.Advance(absl::Nanoseconds(1));
  EXPECT_EQ(clock.Now(), absl::Milliseconds(3) + absl::Nanoseconds(1));
  clock.Advance(absl::Hours(24 * 365));
  EXPECT_EQ(clock.Now(), absl::Hours(24 * 365) + absl::Milliseconds(3) +
                             absl::Nanoseconds(1));
}

TEST(ManualClockTest, ZeroAndNegativeAdvanceAreIgnored) {
  ManualClock clock;
  clock.Advance(absl::Seconds(1));
  clock.Advance(absl::ZeroDuration());
  EXPECT_EQ(clock.Now(), absl::Seconds(1));
  clock.Advance(absl::Nanoseconds(-1));
  EXPECT_EQ(clock.Now(), absl::Seconds(1));
  clock.Advance(absl::Seconds(-2));
  EXPECT_EQ(clock.Now(), absl::Seconds(1));
  clock.Advance(-absl::InfiniteDuration());
  EXPECT_EQ(clock.Now(), absl::Seconds(1));
}

TEST(ManualClockTest, InfiniteAdvanceSaturatesAtInt64MaxNanoseconds) {
  const absl::Duration kMax =
      absl::Nanoseconds(std::numeric_limits<int64_t>::max());
  ManualClock clock;
  clock.Advance(absl::Seconds(5));
  clock.Advance(absl::InfiniteDuration());
  EXPECT_EQ(clock.Now(), kMax);
  clock.Advance(absl::Nanoseconds(1));  // stays there
  EXPECT_EQ(clock.Now(), kMax);
  clock.Advance(absl::InfiniteDuration());
  EXPECT_EQ(clock.Now(), kMax);
}

TEST(ManualClockTest, OverflowingAdvanceSaturates) {
  const int64_t kMaxNs = std::numeric_limits<int64_t>::max();
  const absl::Duration kMax = absl::Nanoseconds(kMaxNs);
  ManualClock clock;
  clock.Advance(absl::Nanoseconds(kMaxNs - 10));
  EXPECT_EQ(clock.Now(), absl::Nanoseconds(kMaxNs - 10));
  clock.Advance(absl::Nanoseconds(10));  // exactly to the top
  EXPECT_EQ(clock.Now(), kMax);

  ManualClock other;
  other.Advance(absl::Nanoseconds(kMaxNs - 10));
  other.Advance(absl::Nanoseconds(11));  // one past
  EXPECT_EQ(other.Now(), kMax);

  ManualClock huge;  // a finite duration beyond int64 nanoseconds
  huge.Advance(absl::Hours(24 * 365 * 1000));
  EXPECT_EQ(huge.Now(), kMax);
}

// Waits on `clock` until `deadline` in another thread, the way the delay queue
// does: registered with the clock once, up front, then under its mutex
// "while Now() < deadline, sleep RealTimeUntil(deadline)". `WaitDone()` says
// whether it returned.
class Waiter {
 public:
  Waiter(Clock* clock, absl::Duration deadline)
      : wake_up_(clock, &mu_, &cv_),
        done_future_(done_.get_future()),
        thread_([this, clock, deadline] {
          MutexLock lock(&mu_);
          started_.store(true);
          while (clock->Now() < deadline) {
            cv_.WaitFor(&mu_, clock->RealTimeUntil(deadline));
          }
          done_.set_value();
        }) {}
  ~Waiter() { thread_.join(); }

  bool WaitDone(std::chrono::milliseconds timeout) {
    return done_future_.wait_for(timeout) == std::future_status::ready;
  }
  bool started() const { return started_.load(); }

 private:
  Mutex mu_{kSleeperRank};
  CondVar cv_;
  ClockWakeUp wake_up_;
  std::atomic<bool> started_{false};
  std::promise<void> done_;
  std::future<void> done_future_;
  std::thread thread_;
};

TEST(ManualClockTest, WaiterWithPassedDeadlineReturnsAtOnce) {
  ManualClock clock;
  clock.Advance(absl::Seconds(2));
  for (absl::Duration deadline :
       {-absl::InfiniteDuration(), absl::ZeroDuration(), absl::Seconds(1),
        absl::Seconds(2)}) {
    Waiter waiter(&clock, deadline);  // would hang if it waited
    EXPECT_TRUE(waiter.WaitDone(kTimeout)) << deadline;
  }
}

TEST(ManualClockTest, RealTimeUntilIsInfinite) {
  // Time does not pass by itself: a waiter sleeps until Advance wakes it.
  ManualClock clock;
  clock.Advance(absl::Seconds(2));
  for (absl::Duration deadline :
       {-absl::InfiniteDuration(), absl::ZeroDuration(), absl::Seconds(3),
        absl::InfiniteDuration()}) {
    EXPECT_EQ(clock.RealTimeUntil(deadline), absl::InfiniteDuration())
        << deadline;
  }
}

TEST(ManualClockTest, AdvanceWakesAWaiter) {
  ManualClock clock;
  Waiter waiter(&clock, absl::Seconds(10));
  while (!waiter.started()) std::this_thread::yield();
  // Not yet: it must still be waiting after an Advance short of the deadline.
  clock.Advance(absl::Seconds(9));
  EXPECT_FALSE(waiter.WaitDone(std::chrono::milliseconds(50)));
  clock.Advance(absl::Seconds(1));
  const bool woke = waiter.WaitDone(kTimeout);
  EXPECT_TRUE(woke) << "Advance did not wake the waiter";
  if (!woke) clock.Advance(absl::InfiniteDuration());
}

TEST(ManualClockTest, AdvanceWakesAnInfiniteWaiterToReCheck) {
  // deadline == InfiniteDuration waits for a notify only; Advance notifies.
  ManualClock clock;
  Mutex mu{kSleeperRank};
  CondVar cv;
  ClockWakeUp wake_up(&clock, &mu, &cv);
  std::atomic<bool> in_wait{false};
  std::promise<void> returned;
  std::future<void> returned_future = returned.get_future();
  std::thread thread([&] {
    MutexLock lock(&mu);
    in_wait.store(true);
    cv.WaitFor(&mu, clock.RealTimeUntil(absl::InfiniteDuration()));
    returned.set_value();
  });
  while (!in_wait.load()) std::this_thread::yield();
  // Until it returns, keep advancing: a wake-up that lands before the thread
  // waits is not lost on a later one.
  bool done = false;
  for (int i = 0; i < 1000 && !done; ++i) {
    clock.Advance(absl::Nanoseconds(1));
    done = returned_future.wait_for(std::chrono::milliseconds(10)) ==
           std::future_status::ready;
  }
  EXPECT_TRUE(done);
  if (!done) {
    MutexLock lock(&mu);
    cv.NotifyAll();
  }
  thread.join();
}

TEST(ManualClockTest, AdvanceWakesEveryWaiter) {
  ManualClock clock;
  {
    Waiter a(&clock, absl::Seconds(1));
    Waiter b(&clock, absl::Seconds(1));
    Waiter c(&clock, absl::Seconds(1));
    while (!a.started() || !b.started() || !c.started()) {
      std::this_thread::yield();
    }
    clock.Advance(absl::Seconds(1));
    const bool all =
        a.WaitDone(kTimeout) && b.WaitDone(kTimeout) && c.WaitDone(kTimeout);
    EXPECT_TRUE(all);
    if (!all) clock.Advance(absl::InfiniteDuration());
  }
}

TEST(ManualClockTest, NoLostWakeUpWhenCheckAndAdvanceRace) {
  // The waiter starts waiting for round i exactly when the advancer is told to
  // advance to it, so its check of Now() and Advance race every round. A lost
  // wake-up leaves the waiter blocked with nobody left to wake it.
  constexpr int kRounds = 1000;
  ManualClock clock;
  Mutex mu{kSleeperRank};
  CondVar cv;
  ClockWakeUp wake_up(&clock, &mu, &cv);
  std::atomic<int> round{0};  // the round the waiter is waiting for
  std::atomic<bool> give_up{false};
  std::promise<void> finished;
  std::future<void> finished_future = finished.get_future();

  std::thread waiter([&] {
    for (int i = 1; i <= kRounds && !give_up.load(); ++i) {
      const absl::Duration deadline = absl::Nanoseconds(i);
      MutexLock lock(&mu);
      round.store(i);
      while (clock.Now() < deadline && !give_up.load()) {
        cv.WaitFor(&mu, clock.RealTimeUntil(deadline));
      }
    }
    finished.set_value();
  });
  std::thread advancer([&] {
    for (int i = 1; i <= kRounds; ++i) {
      while (round.load() < i) {
        if (give_up.load()) return;
        std::this_thread::yield();
      }
      clock.Advance(absl::Nanoseconds(1));
    }
  });

  const bool ok = finished_future.wait_for(std::chrono::seconds(20)) ==
                  std::future_status::ready;
  EXPECT_TRUE(ok) << "lost wake-up: waiter stuck in round " << round.load()
                  << " at " << clock.Now();
  if (!ok) {
    give_up.store(true);
    clock.Advance(absl::InfiniteDuration());
  }
  waiter.join();
  advancer.join();
  EXPECT_EQ(clock.Now(), absl::Nanoseconds(kRounds)) << "ok=" << ok;
}

TEST(ManualClockTest, ConcurrentAdvancesAllCount) {
  ManualClock clock;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&clock] {
      for (int i = 0; i < 1000; ++i) clock.Advance(absl::Nanoseconds(1));
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(clock.Now(), absl::Nanoseconds(4000));
}

TEST(SteadyClockTest, IsSharedByEveryCaller) {
  std::shared_ptr<Clock> a = SteadyClock();
  std::shared_ptr<Clock> b = SteadyClock();
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a.get(), b.get());
}

TEST(SteadyClockTest, IsMonotonic) {
  std::shared_ptr<Clock> clock = SteadyClock();
  absl::Duration last = clock->Now();
  for (int i = 0; i < 100000; ++i) {
    const absl::Duration now = clock->Now();
    ASSERT_GE(now, last) << "at sample " << i;
    last = now;
  }
}

TEST(SteadyClockTest, AdvancesWithRealClock) {
  std::shared_ptr<Clock> clock = SteadyClock();
  const absl::Duration start = clock->Now();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const absl::Duration elapsed = clock->Now() - start;
  EXPECT_GE(elapsed, absl::Milliseconds(20));
  EXPECT_LT(elapsed, absl::Seconds(10));
}

// A clock that follows real time and keeps the default RealTimeUntil.
class RealTimeClock : public Clock {
 public:
  absl::Duration Now() const override {
    return absl::Now() - absl::UnixEpoch();
  }
};

// A clock that stands still at a time the test sets (without notifying).
class FixedClock : public Clock {
 public:
  explicit FixedClock(absl::Duration now) : now_(now) {}
  absl::Duration Now() const override { return now_; }

 private:
  const absl::Duration now_;
};

TEST(ClockTest, DefaultRealTimeUntilIsDeadlineMinusNow) {
  FixedClock clock(absl::Seconds(5));
  EXPECT_EQ(clock.RealTimeUntil(absl::Seconds(7)), absl::Seconds(2));
  EXPECT_EQ(clock.RealTimeUntil(absl::Seconds(5)), absl::ZeroDuration());
  EXPECT_EQ(clock.RealTimeUntil(absl::Seconds(3)), absl::Seconds(-2));
  EXPECT_EQ(clock.RealTimeUntil(absl::InfiniteDuration()),
            absl::InfiniteDuration());
  EXPECT_LE(clock.RealTimeUntil(-absl::InfiniteDuration()),
            absl::ZeroDuration());
}

TEST(ClockTest, DefaultRealTimeUntilSleepsUntilAShortDeadlineRealClock) {
  RealTimeClock clock;
  Mutex mu{LockRank::kOutsideLibrary};
  CondVar cv;
  MutexLock lock(&mu);
  const absl::Duration start = clock.Now();
  const absl::Duration deadline = start + absl::Milliseconds(50);
  int calls = 0;
  while (clock.Now() < deadline && calls < 1000) {
    cv.WaitFor(&mu, clock.RealTimeUntil(deadline));
    ++calls;
  }
  const absl::Duration elapsed = clock.Now() - start;
  EXPECT_GE(elapsed, absl::Milliseconds(50));
  EXPECT_LT(elapsed, absl::Seconds(5));
  EXPECT_LT(calls, 1000) << "the wait returned without waiting";
}

TEST(ClockTest, DefaultRealTimeUntilPassedDeadlineReturnsAtOnceRealClock) {
  RealTimeClock clock;
  Mutex mu{LockRank::kOutsideLibrary};
  CondVar cv;
  MutexLock lock(&mu);
  const absl::Time start = absl::Now();
  cv.WaitFor(&mu, clock.RealTimeUntil(clock.Now() - absl::Seconds(1)));
  cv.WaitFor(&mu, clock.RealTimeUntil(-absl::InfiniteDuration()));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST(ClockTest, DefaultRealTimeUntilWakesOnNotifyRealClock) {
  // A far deadline (an hour) still returns promptly when notified.
  RealTimeClock clock;
  Mutex mu{LockRank::kOutsideLibrary};
  CondVar cv;
  bool flag = false;
  std::thread notifier([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    MutexLock lock(&mu);
    flag = true;
    cv.NotifyAll();
  });
  const absl::Time start = absl::Now();
  {
    MutexLock lock(&mu);
    const absl::Duration deadline = clock.Now() + absl::Hours(1);
    while (!flag) cv.WaitFor(&mu, clock.RealTimeUntil(deadline));
  }
  notifier.join();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST(CustomClockTest, NotifyTimeChangedWakesAWaiter) {
  SteppingClock clock;
  Waiter waiter(&clock, absl::Seconds(10));
  while (!waiter.started()) std::this_thread::yield();
  clock.Set(absl::Seconds(9));
  EXPECT_FALSE(waiter.WaitDone(std::chrono::milliseconds(50)));
  clock.Set(absl::Seconds(10));
  const bool woke = waiter.WaitDone(kTimeout);
  EXPECT_TRUE(woke) << "NotifyTimeChanged did not wake the waiter";
  if (!woke) clock.Set(absl::Seconds(10));
}

TEST(CustomClockTest, JumpWakesAWaiterAnHourAwayRealClock) {
  JumpingClock clock;
  Waiter waiter(&clock, clock.Now() + absl::Hours(1));
  while (!waiter.started()) std::this_thread::yield();
  const absl::Time start = absl::Now();
  clock.Jump(absl::Hours(1));
  const bool woke = waiter.WaitDone(kTimeout);
  EXPECT_TRUE(woke) << "the jump did not wake the waiter";
  if (!woke) clock.Jump(absl::Hours(1));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST(CustomClockTest, SimulatedClockDrivesATimingWheelWithoutSleeping) {
  auto clock = std::make_shared<SteppingClock>();
  std::unique_ptr<TimingWheel> wheel = OneWorkerWheel(clock);
  std::atomic<int> runs{0};
  std::atomic<int64_t> ran_at_ns{-1};
  ASSERT_TRUE(wheel
                  ->AfterFunc(absl::Seconds(5),
                              [&] {
                                ran_at_ns.store(
                                    absl::ToInt64Nanoseconds(clock->Now()));
                                runs.fetch_add(1);
                              })
                  .ok());
  clock->Set(absl::Seconds(5) - absl::Nanoseconds(1));
  wheel->WaitIdle();
  EXPECT_EQ(runs.load(), 0) << "ran before its deadline";
  clock->Set(absl::Seconds(5));
  wheel->WaitIdle();
  EXPECT_EQ(runs.load(), 1);
  EXPECT_EQ(ran_at_ns.load(), absl::ToInt64Nanoseconds(absl::Seconds(5)));
}

TEST(CustomClockTest, ClockSteppingBackwardsNeverMakesATimerEarly) {
  // Against the contract, as a simulator's clock may: the wheel keeps the
  // latest reading as now, so a timer made after the step back is due d
  // after that reading, never before the clock's own reading + d.
  auto clock = std::make_shared<SteppingClock>();
  std::unique_ptr<TimingWheel> wheel = OneWorkerWheel(clock);
  // The wheel reads 100 ms (and its levels move there) when this one runs.
  std::atomic<bool> first_ran{false};
  ASSERT_TRUE(
      wheel->AfterFunc(absl::Milliseconds(100), [&] { first_ran = true; })
          .ok());
  clock->Set(absl::Milliseconds(100));
  wheel->WaitIdle();
  ASSERT_TRUE(first_ran.load());
  clock->Set(absl::Milliseconds(50));
  std::atomic<int64_t> ran_at_ns{-1};
  ASSERT_TRUE(
      wheel
          ->AfterFunc(
              absl::Milliseconds(10),
              [&] { ran_at_ns.store(absl::ToInt64Nanoseconds(clock->Now())); })
          .ok());
  wheel->WaitIdle();
  EXPECT_EQ(ran_at_ns.load(), -1) << "ran at once, 10 ms early";
  clock->Set(absl::Milliseconds(60));
  wheel->WaitIdle();
  EXPECT_EQ(ran_at_ns.load(), -1) << "ran at the latest reading + d";
  clock->Set(absl::Milliseconds(110));
  wheel->WaitIdle();
  EXPECT_EQ(ran_at_ns.load(),
            absl::ToInt64Nanoseconds(absl::Milliseconds(110)));
}

TEST(ClockWakeUpTest, RemovedWakeUpIsNeverCalledAgain) {
  // Wake-ups come and go while the clock keeps moving; each one's mutex and
  // condition variable die with it, so a call after removal is a
  // use-after-free (AddressSanitizer) or a race (ThreadSanitizer). Sixteen
  // live at a time keep each NotifyTimeChanged busy for a while.
  struct Sleeper {
    explicit Sleeper(Clock* clock) : wake_up(clock, &mu, &cv) {}
    Mutex mu{kSleeperRank};
    CondVar cv;
    ClockWakeUp wake_up;
  };
  ManualClock clock;
  std::vector<std::unique_ptr<Sleeper>> sleepers(16);
  std::atomic<bool> stop{false};
  std::thread advancer([&] {
    while (!stop.load()) clock.Advance(absl::Nanoseconds(1));
  });
  for (int i = 0; i < 5000; ++i) {
    sleepers[i % sleepers.size()] = std::make_unique<Sleeper>(&clock);
  }
  sleepers.clear();
  stop.store(true);
  advancer.join();
}

}  // namespace
}  // namespace timingwheel
