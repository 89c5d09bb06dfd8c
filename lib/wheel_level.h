// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// wheel_level.h: one level of the hierarchical timing wheel, which creates its
// overflow level the first time a timer does not fit.
//
// All arithmetic is in whole ticks of level 0 (`Options::tick`), counted from
// the engine's origin, in int64: about 292 years at 1 ns, far more at the 1 us
// minimum tick. Level k has `wheel_size` buckets of `tick_k = wheel_size^k`
// ticks and spans `interval_k = tick_k * wheel_size`; a level whose interval
// would overflow int64 spans everything and never needs an overflow level.
// Each level keeps `current`, a multiple of its tick that only grows.
//
// Placement (Kafka's `add`, with "due" meaning expiration <= current, which
// together with deadlines rounded UP to a tick means never early):
//   level 0: e <= current            -> due: run it now
//            e <  current + interval  -> bucket e
//   level k: current + tick_k <= e < current + interval_k
//                                    -> bucket e / tick_k, expiring at
//                                       (e / tick_k) * tick_k
//            e <  current + tick_k    -> it fits a lower level: retry there
//   any:     e in the one bucket past the span (id current/tick_k +
//            wheel_size), if its slot is free, i.e. the bucket of id
//            current/tick_k was flushed -> that bucket
//            otherwise                -> the overflow level
// Under the level's mutex a slot holds one bucket id at a time: the ids in
// use are current/tick_k + 1 .. current/tick_k + wheel_size, and the last
// one only in a slot whose bucket has no expiration set (checked).
//
// Early release: a bucket of level k >= 1 is offered to the delay queue at
// its expiration minus `lead` = tick_{k-1}, the tick of the level below, not
// at its expiration. Released then, the advancer moves `current` to that
// time, and every timer of the bucket fits the level below (its span plus the
// one bucket past it covers exactly this bucket's range). So a big bucket
// cascades one lower tick before its timers can be due, not while they
// already are: a million timers over a second land in 400 ms buckets of
// 400,000 at the defaults, which then cascade 20 ms ahead. Never early still
// holds: only level 0 runs timers, and only those at or before `current`.
//
// Levels for the defaults (tick 1 ms, wheel_size 20):
//   level  tick        spans        level  tick        spans
//   0      1 ms        20 ms        5      53.3 min    17.8 h
//   1      20 ms       400 ms       6      17.8 h      14.8 days
//   2      400 ms      8 s          7      14.8 days   296 days
//   3      8 s         2 min 40 s   8      296 days    16.2 years
//   4      2 min 40 s  53.3 min     9      16.2 years  325 years
//
// Worked example (tick 1 ms, wheel_size 4; WheelLevelTest.DesignWorkedExample):
// AfterFunc(3 ms) goes to level 0, bucket @3. AfterFunc(9 ms) to level 1
// (tick 4), bucket @8, released at 7 (lead 1). AfterFunc(40 ms) to level 2
// (tick 16), bucket @32, released at 28 (lead 4). At t=3 bucket @3 is
// released and its timer runs. At t=7 bucket @8 is released and the 9 ms
// timer cascades to level 0, bucket @9, where it runs at t=9. At t=28 the
// 40 ms timer cascades to level 1, bucket @40 (released at 39), at t=39 to
// level 0, bucket @40, and runs at t=40.
//
// Thread-safety: thread-safe. `mu_` guards the buckets, the links of the nodes
// in them, `closed_` and writes of `current_`; `current_` is also read without
// it (acquire) to pick a level, and the pick is checked again under `mu_`.
// Lock order: a node lock, then `mu_`, then the delay queue's mutex (Offer is
// called under `mu_` so a bucket's expiration and its queue entry change
// together). A level never holds two level mutexes at once.

#ifndef TIMINGWHEEL_LIB_WHEEL_LEVEL_H_
#define TIMINGWHEEL_LIB_WHEEL_LEVEL_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "bucket.h"
#include "delay_queue.h"
#include "mutex.h"
#include "timer_state.h"

namespace timingwheel::internal {

// floor(a / b) and ceil(a / b) for b > 0 and any a.
constexpr int64_t FloorDiv(int64_t a, int64_t b) {
  return a / b - ((a % b != 0) && (a < 0));
}
constexpr int64_t CeilDiv(int64_t a, int64_t b) {
  return a / b + ((a % b != 0) && (a > 0));
}

class WheelLevel {
 public:
  enum class AddResult {
    kAdded,   // linked into a bucket of this level
    kDue,     // expiration <= current of level 0: run it
    kRetry,   // fits a lower level now: start again from level 0
    kTooFar,  // past this level: try the overflow level (GetOrCreateOverflow)
    kClosed,  // the wheel is shut down
  };

  // A level whose buckets are `tick` level-0 ticks wide, starting at
  // `current` (rounded down to a multiple of `tick`).
  WheelLevel(int64_t tick, int wheel_size, int64_t current, DelayQueue* queue,
             bool closed);
  WheelLevel(const WheelLevel&) = delete;
  WheelLevel& operator=(const WheelLevel&) = delete;
  ~WheelLevel();  // Deletes the overflow levels too.

  int64_t tick() const { return tick_; }
  int64_t interval() const { return interval_; }
  int wheel_size() const { return wheel_size_; }
  int64_t current() const { return current_.load(std::memory_order_acquire); }
  // The overflow level, or nullptr if it was not needed yet.
  WheelLevel* overflow() const {
    return overflow_.load(std::memory_order_acquire);
  }

  // The lowest level from this one up whose span, or the one bucket past it,
  // covers `expiration_tick` (by an unlocked read of each `current`),
  // creating overflow levels as needed. Never null.
  WheelLevel* Locate(int64_t expiration_tick) ABSL_LOCKS_EXCLUDED(mu_);
  // The overflow level, created if it was not needed yet.
  WheelLevel* GetOrCreateOverflow() ABSL_LOCKS_EXCLUDED(mu_);
  // How long before its expiration a bucket of this level is released.
  int64_t lead() const { return lead_; }

  // Links `node` (armed with generation `gen`) into the bucket of
  // `expiration_tick`, offering the bucket to the delay queue if it was
  // empty, unless the placement rules above say otherwise.
  // Precondition: the caller holds node->mu and the node is in no bucket.
  AddResult Add(TimerNode* node, int64_t expiration_tick, uint64_t gen)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Matches every generation in Remove.
  static constexpr uint64_t kAnyGeneration = ~uint64_t{0};

  // Takes `node` out if it is still in `bucket` (a bucket of this
  // level; not detached by a flush) and was linked with generation `gen`
  // (any, for kAnyGeneration). Returns whether it
  // did; the caller then owns the reference the bucket held.
  bool Remove(TimerNode* node, Bucket* bucket, uint64_t gen)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Moves `current` of this level and every overflow level forward to
  // `tick` (rounded down to each level's tick); never backwards.
  void Advance(int64_t tick) ABSL_LOCKS_EXCLUDED(mu_);

  // Empties `bucket` (of this level) in O(1) into `out` (empty), whose nodes
  // are now in transit; see Bucket::Detach.
  void Detach(Bucket* bucket, std::vector<TimerNode*>* out)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Refuses every later Add (kClosed), here and in overflow levels created
  // from now on, and empties every bucket of this level into `out`.
  void Close(std::vector<TimerNode*>* out) ABSL_LOCKS_EXCLUDED(mu_);

  // Timers linked in this level's buckets.
  int64_t CountTimers() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  friend class WheelLevelTestPeer;

  const int64_t tick_;
  const int64_t interval_;  // INT64_MAX when tick_ * wheel_size overflows
  const int64_t lead_;      // tick_ / wheel_size, 0 at level 0
  const int wheel_size_;
  DelayQueue* const queue_;

  // A spin lock: held for a few instructions per add or stop (a flush holds
  // it for one pass over the bucket), and its unlock is a plain store.
  mutable SpinLock mu_;
  std::atomic<int64_t> current_;  // written under mu_
  std::vector<Bucket> buckets_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_);
  std::atomic<WheelLevel*> overflow_{nullptr};  // set once, under mu_
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_WHEEL_LEVEL_H_
