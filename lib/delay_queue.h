// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// delay_queue.h: the one priority queue of buckets, shared by every level,
// ordered by the tick at which each is released: its expiration, or for
// levels above 0 its expiration minus one lower-level tick (see "Early
// release" in wheel_level.h).
//
// This is what makes the wheel sleep through empty ticks: the poller thread
// blocks in Poll until the head bucket is due by the clock, however far away
// that is, and nothing else wakes it except an earlier bucket being offered,
// the clock saying its time changed (ManualClock::Advance does) or Close. A
// bucket is in the queue at most once (it is offered only when its expiration
// goes from unset to set, and that is cleared only by the flush after Poll
// released it), so the queue holds at most wheel_size buckets per level: a
// few hundred entries, and its O(log n) never matters.
//
// Poll hands out every due bucket at once and counts them as outstanding until
// the advancer calls Done; IsIdle is true when nothing is due and nothing
// handed out is unfinished, which is how tests know the wheel is quiescent.
//
// Sleeping on the clock: Poll sleeps on `cv_` for as long as the clock's
// RealTimeUntil(head's deadline) says (forever on a ManualClock; a clock that
// says "no wait" twice for a head its Now() does not show due, a coarse
// Now(), gets sleeps of one tick, at least 50 us, instead of a spin), and the
// queue registers `wake_up_` with the clock once, when it is built, so that
// the clock's NotifyTimeChanged wakes the poller. Why no wake-up is lost and
// none runs after the queue is gone: lib/clock_wake_up.h.
//
// Thread-safety: thread-safe. `mu_` is a leaf (kDelayQueue in the lock table
// of lib/mutex.h), taken under the clock's list lock (NotifyTimeChanged): the
// queue registers and unregisters in its constructor and destructor, never
// under `mu_`.

#ifndef TIMINGWHEEL_LIB_DELAY_QUEUE_H_
#define TIMINGWHEEL_LIB_DELAY_QUEUE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "clock_wake_up.h"
#include "mutex.h"
#include "timingwheel/clock.h"

namespace timingwheel::internal {

class Bucket;

class DelayQueue {
 public:
  struct Entry {
    int64_t release_tick;
    Bucket* bucket;
  };

  // A bucket with release tick `r` is due once
  // `clock->Now() >= origin + r * tick_ns`.
  // Registers with `clock`, to be woken when its time changes, until
  // destroyed.
  DelayQueue(std::shared_ptr<Clock> clock, absl::Duration origin,
             int64_t tick_ns);

  // Adds `bucket`, due at `release_tick`; wakes the poller if it becomes
  // the head.
  void Offer(Bucket* bucket, int64_t release_tick) ABSL_LOCKS_EXCLUDED(mu_);

  // Blocks until at least one bucket is due, then moves every due bucket to
  // `out` in release order and returns true. Returns false once closed.
  bool Poll(std::vector<Entry>* out) ABSL_LOCKS_EXCLUDED(mu_);

  // The advancer has finished `n` buckets handed out by Poll.
  void Done(int64_t n) ABSL_LOCKS_EXCLUDED(mu_);

  // No bucket is due and every bucket handed out is done.
  bool IsIdle() const ABSL_LOCKS_EXCLUDED(mu_);

  // Wakes Poll and makes it return false from now on.
  void Close() ABSL_LOCKS_EXCLUDED(mu_);

  int64_t size() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  bool HeadDue() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Duration DeadlineOf(int64_t release_tick) const {
    return origin_ + absl::Nanoseconds(release_tick * tick_ns_);
  }

  // The shortest sleep of a Poll whose clock keeps saying "no wait" for a
  // head that its Now() does not show due: one tick, at least this.
  static constexpr absl::Duration kMinWaitFloor = absl::Microseconds(50);

  const std::shared_ptr<Clock> clock_;
  const absl::Duration origin_;
  const int64_t tick_ns_;
  const absl::Duration min_wait_;

  mutable Mutex mu_{LockRank::kDelayQueue};
  CondVar cv_;
  std::vector<Entry> heap_ ABSL_GUARDED_BY(mu_);  // min-heap on release_tick
  int64_t outstanding_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  // Last: registered once `mu_` and `cv_` exist, unregistered before they go.
  ClockWakeUp wake_up_;
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_DELAY_QUEUE_H_
