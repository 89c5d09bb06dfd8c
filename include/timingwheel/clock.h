// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// clock.h: the time source of a TimingWheel.
//
// The wheel reads time only through a `Clock`. That single seam makes every
// behaviour of the wheel testable without sleeping: `ManualClock` moves only
// when a test calls `Advance`, and `Advance` wakes every wheel on it.
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
//   auto wheel = timingwheel::TimingWheel::Create(std::move(options)).value();
//   bool fired = false;
//   auto timer =
//       wheel->AfterFunc(absl::Seconds(5), [&fired] { fired = true; });
//   clock->Advance(absl::Seconds(5));  // the callback is now due
//   wheel->WaitIdle();                 // and has run: `fired` is true
//
// Writing a clock of your own. A clock that runs at real speed (an offset or
// a different source of the same time) implements `Now()` and nothing else.
// A clock that runs otherwise (simulated time, replay, a clock paused in a
// debugger) also tells the wheel two things:
//   * how long a wheel waiting for a deadline may sleep, in real time, before
//     it reads `Now()` again: override `RealTimeUntil`. `InfiniteDuration()`
//     means "until I say the time changed".
//   * that the time changed: call `NotifyTimeChanged()` after moving. Every
//     wheel sleeping on the clock wakes and reads `Now()` again.
// `ManualClock` is exactly that: `RealTimeUntil` is infinite and `Advance`
// stores the new time, then calls `NotifyTimeChanged()`.
//
// Why this shape: a wheel's poller thread sleeps until the earliest bucket is
// due. It cannot ask the clock to do the sleeping (that would make the
// poller's mutex and condition variable the user's business), so it asks
// the clock the one thing only the clock knows (how fast it runs), sleeps on
// its own, and keeps its own lock protocol; the clock only has to say when it
// moved. Who is waiting is recorded inside the base class, so a clock of your
// own needs no lists, locks or condition variables.
//
// Threads and locks: every member of every clock here is thread-safe. The
// library calls `Now()` and `RealTimeUntil()` with its own locks held: they
// must not block or call `NotifyTimeChanged()`. `NotifyTimeChanged()` takes
// the library's locks (the clock's list of sleepers, then each sleeping
// wheel's queue mutex, briefly): call it holding no lock that `Now()` or
// `RealTimeUntil()` takes, or a wheel reading `Now()` and your thread
// notifying would each wait for the other.

#ifndef TIMINGWHEEL_CLOCK_H_
#define TIMINGWHEEL_CLOCK_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/time/time.h"
#include "timingwheel/export.h"

namespace timingwheel {
namespace internal {
class ClockWakeUp;
class ClockWakeUpList;
}  // namespace internal

// A monotonic time source. Implementations must be thread-safe and must never
// go backwards.
class TIMINGWHEEL_EXPORT Clock {
 public:
  Clock();
  virtual ~Clock();
  Clock(const Clock&) = delete;
  Clock& operator=(const Clock&) = delete;

  // The time since an arbitrary fixed origin. It must never go backwards.
  // A clock that does anyway (a simulator rewinding) breaks no promise of
  // the wheel's: the wheel takes the latest reading it has seen as "now",
  // so a timer made after a step back is due `d` after that latest reading
  // (later than the clock's own reading + `d`, never earlier), and buckets
  // are released when the clock's readings reach them again. Nothing runs
  // early by the clock's later readings; some runs come late.
  virtual absl::Duration Now() const = 0;

  // How long, in real time, a thread waiting until `Now() >= deadline` may
  // sleep before it reads `Now()` again; it also wakes on
  // `NotifyTimeChanged()`, whichever comes first. Zero or less: the deadline
  // has passed, do not sleep. `InfiniteDuration()`: sleep until notified.
  //
  // The default, `deadline - Now()`, is right for a clock that runs at real
  // speed. A clock that runs faster must return less; a clock that moves only
  // when something moves it, and then calls `NotifyTimeChanged()`, returns
  // `InfiniteDuration()`. A clock that sometimes does both (real speed, with
  // jumps) keeps the default and notifies after each jump.
  virtual absl::Duration RealTimeUntil(absl::Duration deadline) const;

 protected:
  // Wakes every wheel sleeping on this clock, which then reads `Now()` again.
  // Call it after the time moved in a way `RealTimeUntil` did not foretell:
  // store the new time first, so that a woken wheel sees it.
  void NotifyTimeChanged();

 private:
  // The library's sleepers register themselves here
  // (lib/base/clock_wake_up.h).
  friend class internal::ClockWakeUp;
  const std::unique_ptr<internal::ClockWakeUpList> wake_ups_;
};

// The process-wide `std::chrono::steady_clock`, shared by every caller.
TIMINGWHEEL_EXPORT std::shared_ptr<Clock> SteadyClock();

// A deterministic clock for tests: time moves only when `Advance` is called,
// and then every wheel sleeping on it wakes and re-checks.
//
// Thread-safe. Memory ordering: `Advance` publishes the new time with release
// ordering and `Now` reads it with acquire, so whatever a thread wrote before
// advancing is visible to a thread that observes the new time.
class TIMINGWHEEL_EXPORT ManualClock : public Clock {
 public:
  ManualClock();  // Now() starts at absl::ZeroDuration().

  absl::Duration Now() const override;

  // Always `InfiniteDuration()`: time does not pass until `Advance`.
  absl::Duration RealTimeUntil(absl::Duration deadline) const override;

  // Moves time forward by `d` and wakes every waiter. `d <= 0` leaves the time
  // unchanged (a clock never goes backwards); an infinite or overflowing `d`
  // saturates at the largest representable time (about 292 years).
  void Advance(absl::Duration d);

 private:
  std::atomic<int64_t> now_ns_{0};
};

}  // namespace timingwheel

#endif  // TIMINGWHEEL_CLOCK_H_
