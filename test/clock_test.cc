// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// clock_test.cc: tests of include/timingwheel/clock.h. ManualClock: starts at
// zero, Advance adds, a zero or negative Advance is ignored, an infinite or
// overflowing one saturates at the largest representable time; WaitUntil
// returns at once when the deadline has passed and holds the lock on return;
// Advance wakes a waiter, with no lost wake-up when registering and advancing
// race (1000 rounds). SteadyClock: one shared, monotonic instance. The
// default Clock::WaitUntil of a custom real-time clock returns once a short
// deadline has passed (the only real-clock tests here, named *RealClock).
//
// Every wait in a test is bounded, so a lost wake-up fails instead of hanging.

#include "timingwheel/clock.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <future>
#include <limits>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace timingwheel {
namespace {

constexpr auto kTimeout = std::chrono::seconds(10);

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

TEST(ManualClockTest, WaitUntilPassedDeadlineReturnsAtOnceHoldingTheLock) {
  ManualClock clock;
  clock.Advance(absl::Seconds(2));
  std::mutex mu;
  std::condition_variable cv;
  std::unique_lock<std::mutex> lock(mu);
  for (absl::Duration deadline :
       {-absl::InfiniteDuration(), absl::ZeroDuration(), absl::Seconds(1),
        absl::Seconds(2)}) {
    clock.WaitUntil(deadline, lock, cv);  // would hang if it waited
    EXPECT_TRUE(lock.owns_lock());
  }
}

// Waits on `clock` until `deadline` in another thread, the way the delay queue
// does: re-check in a loop. `Done()` says whether it returned.
class Waiter {
 public:
  Waiter(const Clock* clock, absl::Duration deadline)
      : done_future_(done_.get_future()), thread_([this, clock, deadline] {
          std::unique_lock<std::mutex> lock(mu_);
          started_.store(true);
          while (clock->Now() < deadline) clock->WaitUntil(deadline, lock, cv_);
          done_.set_value();
        }) {}
  ~Waiter() { thread_.join(); }

  bool WaitDone(std::chrono::milliseconds timeout) {
    return done_future_.wait_for(timeout) == std::future_status::ready;
  }
  bool started() const { return started_.load(); }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<bool> started_{false};
  std::promise<void> done_;
  std::future<void> done_future_;
  std::thread thread_;
};

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
  std::mutex mu;
  std::condition_variable cv;
  std::atomic<bool> in_wait{false};
  std::promise<void> returned;
  std::future<void> returned_future = returned.get_future();
  std::thread thread([&] {
    std::unique_lock<std::mutex> lock(mu);
    in_wait.store(true);
    clock.WaitUntil(absl::InfiniteDuration(), lock, cv);
    EXPECT_TRUE(lock.owns_lock());
    returned.set_value();
  });
  while (!in_wait.load()) std::this_thread::yield();
  // Until it returns, keep advancing: a wake-up that lands before the thread
  // registered is not lost on a later one.
  bool done = false;
  for (int i = 0; i < 1000 && !done; ++i) {
    clock.Advance(absl::Nanoseconds(1));
    done = returned_future.wait_for(std::chrono::milliseconds(10)) ==
           std::future_status::ready;
  }
  EXPECT_TRUE(done);
  if (!done) {
    std::lock_guard<std::mutex> lock(mu);
    cv.notify_all();
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

TEST(ManualClockTest, NoLostWakeUpWhenRegisterAndAdvanceRace) {
  // The waiter starts waiting for round i exactly when the advancer is told to
  // advance to it, so registration and Advance race every round. A lost
  // wake-up leaves the waiter blocked with nobody left to wake it.
  constexpr int kRounds = 1000;
  ManualClock clock;
  std::mutex mu;
  std::condition_variable cv;
  std::atomic<int> round{0};  // the round the waiter is waiting for
  std::atomic<bool> give_up{false};
  std::promise<void> finished;
  std::future<void> finished_future = finished.get_future();

  std::thread waiter([&] {
    for (int i = 1; i <= kRounds && !give_up.load(); ++i) {
      const absl::Duration deadline = absl::Nanoseconds(i);
      std::unique_lock<std::mutex> lock(mu);
      round.store(i);
      while (clock.Now() < deadline && !give_up.load()) {
        clock.WaitUntil(deadline, lock, cv);
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

// A clock that follows real time and keeps the default WaitUntil.
class RealTimeClock : public Clock {
 public:
  absl::Duration Now() const override {
    return absl::Now() - absl::UnixEpoch();
  }
};

TEST(ClockTest, DefaultWaitUntilReturnsAfterShortDeadlineRealClock) {
  RealTimeClock clock;
  std::mutex mu;
  std::condition_variable cv;
  std::unique_lock<std::mutex> lock(mu);
  const absl::Duration start = clock.Now();
  const absl::Duration deadline = start + absl::Milliseconds(50);
  int calls = 0;
  while (clock.Now() < deadline && calls < 1000) {
    clock.WaitUntil(deadline, lock, cv);
    EXPECT_TRUE(lock.owns_lock());
    ++calls;
  }
  const absl::Duration elapsed = clock.Now() - start;
  EXPECT_GE(elapsed, absl::Milliseconds(50));
  EXPECT_LT(elapsed, absl::Seconds(5));
  EXPECT_LT(calls, 1000) << "WaitUntil returned without waiting";
}

TEST(ClockTest, DefaultWaitUntilPassedDeadlineReturnsAtOnceRealClock) {
  RealTimeClock clock;
  std::mutex mu;
  std::condition_variable cv;
  std::unique_lock<std::mutex> lock(mu);
  const absl::Time start = absl::Now();
  clock.WaitUntil(clock.Now() - absl::Seconds(1), lock, cv);
  clock.WaitUntil(-absl::InfiniteDuration(), lock, cv);
  EXPECT_TRUE(lock.owns_lock());
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST(ClockTest, DefaultWaitUntilWakesOnNotifyRealClock) {
  // A far deadline (an hour) still returns promptly when notified.
  RealTimeClock clock;
  std::mutex mu;
  std::condition_variable cv;
  bool flag = false;
  std::thread notifier([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::lock_guard<std::mutex> lock(mu);
    flag = true;
    cv.notify_all();
  });
  const absl::Time start = absl::Now();
  {
    std::unique_lock<std::mutex> lock(mu);
    const absl::Duration deadline = clock.Now() + absl::Hours(1);
    while (!flag) clock.WaitUntil(deadline, lock, cv);
  }
  notifier.join();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

}  // namespace
}  // namespace timingwheel
