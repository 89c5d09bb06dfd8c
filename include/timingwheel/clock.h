// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// clock.h: the time source of a TimingWheel.
//
// The wheel reads time only through a `Clock`, and its poller thread sleeps
// only through `Clock::WaitUntil`. That single seam makes every behaviour of
// the wheel testable without sleeping: `ManualClock` moves only when a test
// calls `Advance`, and `Advance` wakes every thread sleeping on it.
//
// Two clocks ship with the library:
//   * `SteadyClock()`: `std::chrono::steady_clock`, monotonic, never jumps
//     with NTP or a changed wall clock. The default.
//   * `ManualClock`: deterministic; starts at zero.
//
// Example:
//
//   auto clock = std::make_shared<timingwheel::ManualClock>();
//   timingwheel::Options options;
//   options.clock = clock;
//   auto wheel = timingwheel::TimingWheel::Create(options).value();
//   wheel->AfterFunc(absl::Seconds(5), [] { ... });
//   clock->Advance(absl::Seconds(5));  // the callback is now due
//
// Thread-safety: every member of every clock here is thread-safe.

#ifndef TIMINGWHEEL_CLOCK_H_
#define TIMINGWHEEL_CLOCK_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <utility>

#include "absl/time/time.h"

namespace timingwheel {

// A monotonic time source. Implementations must be thread-safe and must never
// go backwards.
class Clock {
 public:
  virtual ~Clock();

  // The time since an arbitrary fixed origin.
  virtual absl::Duration Now() const = 0;

  // Blocks the calling thread until `Now() >= deadline`, until `cv` is
  // notified, or spuriously; callers re-check their condition in a loop.
  // Precondition: `lock` owns the mutex that guards the caller's condition and
  // with which `cv` is notified. It is released while waiting and held again
  // on return. `deadline == absl::InfiniteDuration()` waits for a notify only.
  //
  // The default waits in real time (`deadline - Now()` on `cv`), which is
  // right for any clock that advances with real time. A clock that moves some
  // other way must override it so that moving makes waiters re-check.
  virtual void WaitUntil(absl::Duration deadline,
                         std::unique_lock<std::mutex>& lock,
                         std::condition_variable& cv) const;
};

// The process-wide `std::chrono::steady_clock`, shared by every caller.
std::shared_ptr<Clock> SteadyClock();

// A deterministic clock for tests: time moves only when `Advance` is called,
// and then every thread sleeping in `WaitUntil` wakes and re-checks.
//
// Thread-safe. Memory ordering: `Advance` publishes the new time with release
// ordering and `Now` reads it with acquire, so whatever a thread wrote before
// advancing is visible to a thread that observes the new time.
class ManualClock : public Clock {
 public:
  ManualClock();  // Now() starts at absl::ZeroDuration().

  absl::Duration Now() const override;

  // Moves time forward by `d` and wakes every waiter. `d <= 0` leaves the time
  // unchanged (a clock never goes backwards); an infinite or overflowing `d`
  // saturates at the largest representable time (about 292 years).
  void Advance(absl::Duration d);

  void WaitUntil(absl::Duration deadline, std::unique_lock<std::mutex>& lock,
                 std::condition_variable& cv) const override;

 private:
  using Waiter = std::pair<std::mutex*, std::condition_variable*>;

  std::atomic<int64_t> now_ns_{0};  // written under waiters_mu_
  // Leaf lock; guards the fields below.
  mutable std::mutex waiters_mu_;
  // Threads sleeping in WaitUntil, by the mutex and condition they wait on.
  mutable std::multiset<Waiter> waiters_;
  // Advance calls still notifying waiters; a waiter leaves WaitUntil only
  // when it is zero, so Advance never notifies a waiter that has gone.
  int notifying_ = 0;
  mutable std::condition_variable notify_done_;
};

}  // namespace timingwheel

#endif  // TIMINGWHEEL_CLOCK_H_
