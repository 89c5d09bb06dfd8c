// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// wheel.h: the wheel proper: the lanes of levels, the delay queue they share,
// and arming a timer: linking it into the bucket of its deadline, or handing
// it on as due.
//
// Arm: a deadline at or before now is due: the node goes kPending ->
// kDispatched and into the caller's batch of DueTimers, which the caller
// submits to the runner once it holds no lock. Otherwise the node goes into
// the bucket of its expiration tick (TimeBase::TickOf) in the lowest level
// that spans it (WheelLevel::Locate, Add; placement.h has the rules), and a
// bucket that was empty is offered to the delay queue.
//
// Adds racing the advance (DESIGN.md, trap 3): Kafka makes adds share a read
// lock that the advance takes exclusively. Here an add needs no lock but the
// level's own: a level's `current` only grows, it is written under the level's
// lock, and WheelLevel::Add checks the placement again under that lock and
// answers kRetry when the timer now fits a lower level. So a bucket never
// takes a timer of another rotation, and a timer is never placed in a bucket
// whose time has passed without that bucket being offered to the queue
// again.
//
// Lanes: the levels are replicated, one set per hardware thread (at most
// kMaxLanes), all on the one delay queue. A timer lives in the lane of the
// thread that created it, for every arm (cascades, Reset and re-arms too), so
// two threads creating timers at the same delay share no level lock and no
// bucket tail. Each lane is also the NodeHome of its timers (timer_state.h).
// The advancer moves every lane's `current` on each released bucket
// (AdvanceTo), so all lanes keep one time, as the levels of one lane do.
//
// Confirming a link: a node whose handle is out may be stopped while it is
// being linked. After linking, Arm (with `recheck`) confirms the arm with a
// read-modify-write on the state word and unlinks the node again if it ended
// meanwhile (ConfirmLinked argues why one of the two always unlinks).
//
// Thread-safety: thread-safe. Arm requires the node's lock (a linker), except
// ArmNew, for a node no other thread can see yet. The levels and the queue
// lock themselves; the lane vector never changes after construction. Locks:
// see the lock table in mutex.h.

#ifndef TIMINGWHEEL_LIB_WHEEL_H_
#define TIMINGWHEEL_LIB_WHEEL_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "delay_queue.h"
#include "node_pool.h"
#include "ref_counted.h"
#include "time_base.h"
#include "timer_state.h"
#include "wheel_level.h"

namespace timingwheel {
class EngineTestPeer;
}  // namespace timingwheel

namespace timingwheel::internal {

class Wheel {
 public:
  enum class ArmResult {
    kArmed,    // linked into a bucket, or due and in the batch
    kDropped,  // stopped meanwhile: the caller keeps its reference
    kClosed,   // shut down: the node is unarmed, still (gen, kPending)
  };
  enum class UnlinkResult {
    kUnlinked,   // taken out of its bucket: the caller owns its reference
    kInTransit,  // detached by a flush: the advancer places it again
    kNotLinked,  // in no bucket (due, running, stopped and unlinked, ...)
  };

  // `owner` is the lifetime the handles of the lanes' nodes keep alive,
  // `engine` what they call (timer_state.h, NodeHome).
  Wheel(const TimeBase* time, int wheel_size, NodePool* pool, RefCounted* owner,
        Engine* engine);
  Wheel(const Wheel&) = delete;
  Wheel& operator=(const Wheel&) = delete;

  DelayQueue& queue() { return queue_; }
  const DelayQueue& queue() const { return queue_; }
  // The lane of the calling thread: threads are numbered round-robin on
  // first use.
  NodeHome* HomeOfThisThread() {
    int index = tls_lane_index;
    if (index < 0) index = tls_lane_index = NextLaneIndex();
    return &lanes_[index % lanes_.size()]->home;
  }

  // Sets the node's deadline for arm `gen` and links it, or dispatches it
  // into `batch` when due. The node is in state (gen, kPending) and the caller
  // hands over one reference (kArmed), or keeps it (kDropped, kClosed).
  // Precondition: the caller holds one more reference of its own until it
  // has unlocked node->mu, since a linked node may be stopped and let go by
  // other threads at once (timer_state.h, "No write after hand-on").
  ArmResult Arm(TimerNode* node, int64_t deadline_ns, int64_t now_ns,
                uint64_t gen, std::vector<DueTimer>* batch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(node->mu);
  // Arm for a new node (generation 0) that no other thread can see yet: it
  // needs no node lock, since it becomes visible only through the level
  // lock (or pool mutex) that publishes it, and no confirmation.
  ArmResult ArmNew(TimerNode* node, int64_t deadline_ns, int64_t now_ns,
                   std::vector<DueTimer>* batch) ABSL_NO_THREAD_SAFETY_ANALYSIS;

  // Takes the node out of its bucket if it is linked there and its generation
  // is `gen` (kAnyGeneration: any; see WheelLevel::Remove). Otherwise
  // kInTransit when it still names a bucket, which, for a caller that holds the
  // node's lock and asks for kAnyGeneration, means a flush detached it (only
  // linkers, which hold that lock, set `bucket`; a Stop that unlinks clears
  // it).
  UnlinkResult Unlink(TimerNode* node, uint64_t gen) {
    Bucket* bucket = node->bucket.load(std::memory_order_acquire);
    if (bucket == nullptr) return UnlinkResult::kNotLinked;
    if (bucket->level()->Remove(node, bucket, gen)) {
      return UnlinkResult::kUnlinked;
    }
    return node->bucket.load(std::memory_order_acquire) == bucket
               ? UnlinkResult::kInTransit
               : UnlinkResult::kNotLinked;
  }

  // Moves `current` of every level of every lane to `release_tick`.
  void AdvanceTo(int64_t release_tick);
  // Empties the entry's bucket into `out` (empty): its nodes are in transit.
  static void Detach(const DelayQueue::Entry& entry, NodeArray* out);
  // The tick at which the timers of an entry's bucket start to come due
  // (a bucket of level >= 1 is released earlier).
  static int64_t ExpirationOf(const DelayQueue::Entry& entry);

  // Refuses every later arm (kClosed) and empties every bucket into `out`.
  void Close(std::vector<TimerNode*>* out);
  // Takes out of their buckets the nodes for which `take` returns true, into
  // `out` with the buckets' references; one level at a time, under its lock
  // (WheelLevel::RemoveIf). A node that no arm (Reset, the advancer)
  // moves meanwhile is looked at once.
  void RemoveIf(absl::FunctionRef<bool(TimerNode*)> take,
                std::vector<TimerNode*>* out);
  // The owner's own reference goes: from now on each lane whose nodes still
  // have handles holds one reference on the owner, until the last handle
  // goes (see NodeHome). May delete the owner, and this wheel with it.
  void ReleaseOwner();
  int lanes() const { return static_cast<int>(lanes_.size()); }

 private:
  friend class timingwheel::EngineTestPeer;

  // This thread's number for picking a lane; -1 until first needed.
  static inline thread_local int tls_lane_index = -1;
  // The next thread's number, round-robin (never negative).
  static int NextLaneIndex();

  ArmResult Place(TimerNode* node, int64_t expiration_tick, uint64_t gen,
                  bool recheck, std::vector<DueTimer>* batch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(node->mu);
  ArmResult ConfirmLinked(TimerNode* node, uint64_t gen)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(node->mu);
  ArmResult Dispatch(TimerNode* node, uint64_t gen,
                     std::vector<DueTimer>* batch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(node->mu);

  const TimeBase* const time_;
  RefCounted* const owner_;
  DelayQueue queue_;
  // Each on cache lines of its own.
  struct alignas(64) Lane {
    Lane(NodePool* pool, RefCounted* owner, Engine* engine, int index)
        : home(pool, owner, engine, index) {}
    NodeHome home;
    std::unique_ptr<WheelLevel> level0;  // the lane's lowest level
  };
  std::vector<std::unique_ptr<Lane>> lanes_;
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_WHEEL_H_
