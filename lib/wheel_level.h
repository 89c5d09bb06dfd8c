// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// wheel_level.h: one level of the hierarchical timing wheel, which creates its
// overflow level the first time a timer does not fit.
//
// A level is `wheel_size` buckets (bucket.h) and a current tick. Where a
// timer goes, which bucket, and when a bucket is offered to the delay queue
// (early, above level 0) are pure functions in placement.h, whose top comment
// explains them with the level table for the defaults and a worked example;
// this class applies them under its lock, checks that the one bucket past
// the span is free, links the node and offers the bucket.
//
// Thread-safety: thread-safe. `mu_`, the level's lock (a SpinLock), guards
// the buckets, the links of the nodes in them, `closed_` and writes of
// `current_tick_`; `current_tick_` is also read without it (acquire) to pick
// a level, and the pick is checked again under `mu_`. Lock order: kLevel in
// the lock table of lib/mutex.h (Offer is called under `mu_` so a bucket's
// expiration and its queue entry change together).

#ifndef TIMINGWHEEL_LIB_WHEEL_LEVEL_H_
#define TIMINGWHEEL_LIB_WHEEL_LEVEL_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "bucket.h"
#include "core/placement.h"
#include "delay_queue.h"
#include "mutex.h"
#include "timer_state.h"

namespace timingwheel::internal {

class WheelLevel {
 public:
  enum class AddResult {
    kAdded,   // linked into a bucket of this level
    kDue,     // expiration <= current of level 0: run it
    kRetry,   // fits a lower level now: start again from level 0
    kTooFar,  // past this level: try the overflow level (GetOrCreateOverflow)
    kClosed,  // the wheel is shut down
  };

  // A level whose buckets are `tick_width` level-0 ticks wide, starting at
  // `current_tick` (rounded down to a multiple of `tick_width`).
  WheelLevel(int64_t tick_width, int wheel_size, int64_t current_tick,
             DelayQueue* queue, bool closed);
  WheelLevel(const WheelLevel&) = delete;
  WheelLevel& operator=(const WheelLevel&) = delete;
  ~WheelLevel();  // Deletes the overflow levels too.

  const LevelGeometry& geometry() const { return geometry_; }
  int64_t tick_width() const { return geometry_.tick_width; }
  int64_t span() const { return geometry_.span; }
  // How long before its expiration a bucket of this level is released.
  int64_t release_offset() const { return geometry_.release_offset; }
  int wheel_size() const { return geometry_.wheel_size; }
  int64_t current_tick() const {
    return current_tick_.load(std::memory_order_acquire);
  }
  // The overflow level, or nullptr if it was not needed yet.
  WheelLevel* overflow() const {
    return overflow_.load(std::memory_order_acquire);
  }

  // The lowest level from this one up whose span, or the one bucket past it,
  // covers `expiration_tick` (by an unlocked read of each current tick),
  // creating overflow levels as needed. Never null.
  WheelLevel* Locate(int64_t expiration_tick) ABSL_LOCKS_EXCLUDED(mu_);
  // The overflow level, created if it was not needed yet.
  WheelLevel* GetOrCreateOverflow() ABSL_LOCKS_EXCLUDED(mu_);

  // Links `node` into the bucket of `expiration_tick`, offering the bucket to
  // the delay queue at its release tick if it was empty, unless PlaceInLevel
  // (or the slot of the bucket past the span being taken) says otherwise.
  // Precondition: the caller holds node->mu (or the node is new, seen by no
  // other thread) and the node is in no bucket.
  AddResult Add(TimerNode* node, int64_t expiration_tick)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Takes `node` out if it is still in `bucket` (a bucket of this level; not
  // detached by a flush) and its generation is still `gen` (any, for
  // kAnyGeneration). Returns whether it did; the caller then owns the
  // reference the bucket held.
  // Why the node's generation: every linker holds the node lock and links
  // the current generation, and a generation changes only under that lock,
  // by a Reset (or re-arm) that then unlinks the node before linking it
  // anew. So a node still of generation `gen` is linked either for `gen`, or
  // for the arm before while the Reset that made `gen` has not unlinked it
  // yet: a Stop of `gen` takes that link and its reference, and the Reset,
  // finding the node unlinked, arms `gen` with a reference of its own. A Stop
  // of an older arm takes nothing: the node's generation has moved on.
  bool Remove(TimerNode* node, Bucket* bucket, uint64_t gen)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Moves the current tick of this level and every overflow level forward
  // to `now_tick` (rounded down to each level's tick width); never
  // backwards.
  void Advance(int64_t now_tick) ABSL_LOCKS_EXCLUDED(mu_);

  // Empties `bucket` (of this level) in O(1) into `out` (empty), whose nodes
  // are now in transit; see Bucket::Detach.
  void Detach(Bucket* bucket, NodeArray* out) ABSL_LOCKS_EXCLUDED(mu_);

  // Refuses every later Add (kClosed), here and in overflow levels created
  // from now on, and empties every bucket of this level into `out`.
  void Close(std::vector<TimerNode*>* out) ABSL_LOCKS_EXCLUDED(mu_);
  // Bucket::RemoveIf on every bucket of this level, under its lock: `take`
  // must take no lock.
  void RemoveIf(absl::FunctionRef<bool(TimerNode*)> take,
                std::vector<TimerNode*>* out) ABSL_LOCKS_EXCLUDED(mu_);

  // Timers linked in this level's buckets.
  int64_t CountTimers() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  friend class WheelLevelTestPeer;

  const LevelGeometry geometry_;
  DelayQueue* const queue_;

  // The level's lock, a spin lock: held for a few instructions per add or
  // stop (a flush holds it for one pass over the bucket), and its unlock is
  // a plain store.
  mutable SpinLock mu_ ABSL_ACQUIRED_AFTER(TimerNode::mu){LockRank::kLevel};
  std::atomic<int64_t> current_tick_;  // written under mu_
  std::vector<Bucket> buckets_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_);
  std::atomic<WheelLevel*> overflow_{nullptr};  // set once, under mu_
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_WHEEL_LEVEL_H_
