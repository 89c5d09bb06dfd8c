// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// release_alarm.h: the poller's half of the delay queue. The queue of
// buckets itself (ReleaseQueue, in the core) belongs to the advancer, which
// owns the core; after each round the advancer sets this alarm to the tick
// of the core's next release, and the poller thread sleeps until the clock
// reaches it (Wait), then wakes the advancer. No thread wakes for an empty
// tick: the alarm is one tick, however far away, or none.
//
// Sleeping on the clock: Wait sleeps on `cv_` for as long as the clock's
// RealTimeUntil(the alarm's time) says (forever on a ManualClock; a clock
// that says "no wait" twice for a time its reading does not show reached, a
// coarse Now(), gets sleeps of one tick, at least 50 us, instead of a spin).
// The alarm registers `wake_up_` with the clock once, when it is built, so
// that the clock's NotifyTimeChanged wakes the poller. Why no wake-up is
// lost and none runs after the alarm is gone: lib/base/clock_wake_up.h. The
// time is read through TimeBase::NowNs, the reading the advancer takes too, so
// an alarm that went off finds its release due when the advancer looks.
//
// Thread-safety: thread-safe. `mu_` is a leaf (kAlarm in the lock table of
// lib/base/mutex.h), taken under the clock's list lock (NotifyTimeChanged): the
// alarm registers and unregisters in its constructor and destructor, never
// under `mu_`.

#ifndef TIMINGWHEEL_LIB_THREADS_RELEASE_ALARM_H_
#define TIMINGWHEEL_LIB_THREADS_RELEASE_ALARM_H_

#include <cstdint>
#include <limits>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "base/clock_wake_up.h"
#include "base/mutex.h"
#include "base/time_base.h"

namespace timingwheel::internal {

class ReleaseAlarm {
 public:
  // No alarm.
  static constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

  // Registers with the clock of `time`, to be woken when its time changes,
  // until destroyed.
  explicit ReleaseAlarm(const TimeBase* time);

  // The advancer: the next release is at `release_tick` (kNever: none).
  // Wakes the poller if that is sooner than what it waits for.
  void Set(int64_t release_tick) ABSL_LOCKS_EXCLUDED(mu_);

  // The poller: blocks until the clock reaches the alarm's tick, then clears
  // the alarm and returns true. Returns false once closed.
  bool Wait() ABSL_LOCKS_EXCLUDED(mu_);

  // Wakes Wait and makes it return false from now on.
  void Close() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  bool Due() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return tick_ != kNever && time_->NowNs() >= ReleaseNs(tick_);
  }
  // The nanosecond at which `release_tick` begins (saturated: a tick past
  // the range is never reached).
  int64_t ReleaseNs(int64_t release_tick) const {
    return release_tick > kNever / time_->tick_ns()
               ? kNever
               : release_tick * time_->tick_ns();
  }

  // The shortest sleep of a Wait whose clock keeps saying "no wait" for a
  // time its reading does not show reached: one tick, at least this.
  static constexpr absl::Duration kMinWaitFloor = absl::Microseconds(50);

  const TimeBase* const time_;
  const absl::Duration min_wait_;

  Mutex mu_{LockRank::kAlarm};
  CondVar cv_;
  int64_t tick_ ABSL_GUARDED_BY(mu_) = kNever;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  // Last: registered once `mu_` and `cv_` exist, unregistered before they go.
  ClockWakeUp wake_up_;
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_THREADS_RELEASE_ALARM_H_
