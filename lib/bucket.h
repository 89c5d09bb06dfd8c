// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// bucket.h: one slot of a wheel level: the timers in it, as an array of
// node pointers (node_array.h: it grows by 4 KiB chunks, never by copying),
// and the bucket's expiration.
//
// Add is an append and Remove a swap with the last entry (each node keeps its
// index), so scheduling and stopping are O(1) and never walk the bucket. The
// array, not a linked list, is for the advancer: a flushed bucket may hold
// hundreds of thousands of timers, and walking a list is one cache miss
// after another, each waiting for the last; with the pointers in an array it
// prefetches the nodes well ahead. Timers of one bucket have no order among
// themselves (they are due at the same tick of their level).
//
// The expiration is the start of the bucket's time range, in ticks; it is
// set when the first timer goes in (SetExpiration returns true exactly then,
// and the caller offers the bucket to the delay queue) and cleared by Detach
// in the same critical section that empties the bucket. That is what keeps a
// timer added concurrently with a flush from landing in a bucket that is
// never offered again (DESIGN.md, trap 1). Detach hands the whole array over
// before anything is re-inserted anywhere, so re-inserting never re-enters
// the bucket being flushed (trap 2).
//
// Detach is O(1): it swaps the array out and bumps the bucket's epoch. A
// node records the epoch it was added in, so a node whose `bucket` still names
// this bucket but whose epoch is older is in transit (owned by the advancer,
// which walks the detached array once): Holds() tells the two apart without
// touching every node under the level's lock.
//
// Thread-safety: thread-compatible. The WheelLevel that owns the bucket guards
// it, and the `slot` of the nodes in it, with its lock.

#ifndef TIMINGWHEEL_LIB_BUCKET_H_
#define TIMINGWHEEL_LIB_BUCKET_H_

#include <cstdint>
#include <vector>

#include "absl/functional/function_ref.h"
#include "node_array.h"
#include "timer_state.h"

namespace timingwheel::internal {

class WheelLevel;

class alignas(64) Bucket {
 public:
  static constexpr int64_t kNoExpiration = -1;

  explicit Bucket(WheelLevel* level) : level_(level) {}
  Bucket(const Bucket&) = delete;
  Bucket& operator=(const Bucket&) = delete;
  Bucket(Bucket&&) = default;

  WheelLevel* level() const { return level_; }

  // Appends `node`, links it with this epoch, and points its `bucket` here.
  // Precondition: the node is in no bucket.
  void Add(TimerNode* node);
  // Takes `node` out (the last entry takes its place) and clears its
  // `bucket`. Precondition: Holds(node).
  void Remove(TimerNode* node);
  // Whether `node` is in this bucket (not detached from it). Called under
  // this bucket's level lock, possibly while another level's Add links the
  // node elsewhere: Add stores `bucket`, then `link_epoch` (release); this
  // loads `link_epoch` (acquire), then `bucket`. So a caller that still sees
  // `bucket` == this also sees the epoch the node had here.
  bool Holds(const TimerNode* node) const {
    const uint32_t epoch = node->link_epoch.load(std::memory_order_acquire);
    return node->bucket.load(std::memory_order_acquire) == this &&
           epoch == epoch_;
  }

  // Sets the expiration if none is set. Returns true if it was unset, which is
  // when the caller must offer the bucket to the delay queue.
  bool SetExpiration(int64_t expiration_tick);
  int64_t expiration() const { return expiration_tick_; }

  // Empties the bucket in O(1): swaps its array with `*out` (which must be
  // empty; its kept chunk is reused), clears the expiration and starts a new
  // epoch, so that the nodes in `*out` are in transit. Their `bucket` still
  // names this bucket until they are placed again.
  void Detach(NodeArray* out);
  // Appends the nodes to `out`, then empties the bucket as Detach does.
  void Flush(std::vector<TimerNode*>* out);
  // Takes out (as Remove) each node for which `take` returns true, called
  // once per node, and appends it to `out`. The expiration stays, as after
  // Removes.
  void RemoveIf(absl::FunctionRef<bool(TimerNode*)> take,
                std::vector<TimerNode*>* out);

  bool empty() const { return nodes_.empty(); }
  int64_t size() const { return static_cast<int64_t>(nodes_.size()); }

 private:
  // What Add, Remove and Holds touch first, on the bucket's first cache line
  // (buckets are 64-byte aligned, so no two share one).
  NodeArray nodes_;  // nodes_[i]->slot == i
  int64_t expiration_tick_ = kNoExpiration;
  uint32_t epoch_ = 0;  // bumped by Detach; wraps harmlessly
  WheelLevel* const level_;
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_BUCKET_H_
