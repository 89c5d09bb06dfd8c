// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// clock_wake_up.h: how a thread of the library sleeps on a Clock.
//
// A `ClockWakeUp` registers a (Mutex, CondVar) pair with a clock for as long
// as it lives: every `Clock::NotifyTimeChanged()` then locks the mutex and
// notifies every waiter on the condition variable. The sleeper waits with
// the clock's own estimate of how long it may sleep:
//
//   MutexLock lock(&mu);
//   while (clock->Now() < deadline) {          // checked under `mu`
//     cv.WaitFor(&mu, clock->RealTimeUntil(deadline));
//   }
//
// No wake-up is lost: the clock stores its new time before it notifies, and
// it notifies with `mu` held. So either the sleeper's check under `mu` comes
// after the notification and reads the new time (the mutex orders the two),
// or it comes before, and then the sleeper is already waiting on `cv` (a
// wait releases `mu` atomically) when the notification arrives. That needs
// the registration to be in place before the first check: register once, up
// front (the release alarm does it in its constructor), not per wait.
//
// Removal cannot race a wake-up in progress: `NotifyTimeChanged` calls every
// registered wake-up with the clock's list lock held, and the destructor
// removes the registration under that same lock. Once the destructor has
// returned, no wake-up is running or will run, so the mutex and condition
// variable may go right after (no use after free).
//
// Threads and locks: thread-safe. Lock order: the clock's list lock
// (kClockWakeUps in the lock table of lib/base/mutex.h), then the registered
// `mu`, which must rank after it (the release alarm's, kAlarm). Never the
// reverse: construct and destroy a ClockWakeUp without holding `mu`, else a
// concurrent NotifyTimeChanged (list lock, waiting for `mu`) and this thread
// (`mu`, waiting for the list lock) deadlock.

#ifndef TIMINGWHEEL_LIB_BASE_CLOCK_WAKE_UP_H_
#define TIMINGWHEEL_LIB_BASE_CLOCK_WAKE_UP_H_

#include "absl/base/thread_annotations.h"
#include "base/mutex.h"
#include "timingwheel/clock.h"

namespace timingwheel::internal {

class ClockWakeUp {
 public:
  // Registers with `clock`, which must outlive this object. `mu` and `cv`
  // must outlive it too.
  ClockWakeUp(Clock* clock, Mutex* mu, CondVar* cv) ABSL_LOCKS_EXCLUDED(mu);
  // Unregisters; when it returns no wake-up is running or will run.
  ~ClockWakeUp() ABSL_LOCKS_EXCLUDED(mu_);

  ClockWakeUp(const ClockWakeUp&) = delete;
  ClockWakeUp& operator=(const ClockWakeUp&) = delete;

 private:
  friend class ClockWakeUpList;
  // Locks `mu_`, notifies all on `cv_`. Called with the list lock held.
  void Wake() ABSL_LOCKS_EXCLUDED(mu_);

  ClockWakeUpList* const list_;
  Mutex* const mu_;
  CondVar* const cv_;
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_BASE_CLOCK_WAKE_UP_H_
