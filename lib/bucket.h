// Copyright 2026 The timingwheel Authors.
//
// bucket.h: one slot of a wheel level: an intrusive list of timers and the
// bucket's expiration.
//
// Add and Remove are O(1) pointer updates on links stored in the TimerNode,
// so scheduling and stopping never allocate. The expiration is the start of
// the bucket's time range, in ticks; it is set when the first timer goes in
// (SetExpiration returns true exactly then, and the caller offers the bucket
// to the delay queue) and cleared by Detach in the same critical section that
// empties the list. That is what keeps a timer added concurrently with a flush
// from landing in a bucket that is never offered again (DESIGN.md, trap 1).
// Detach hands the whole list over before anything is re-inserted anywhere,
// so re-inserting never re-enters the bucket being flushed (trap 2).
//
// Detach is O(1): it takes the list and bumps the bucket's epoch. A node
// records the epoch it was linked in, so a node whose `where` still names
// this bucket but whose epoch is older is in transit (owned by the advancer,
// which walks the detached list once): Holds() tells the two apart without
// touching every node under the level's lock.
//
// Thread-safety: thread-compatible. The WheelLevel that owns the bucket guards
// it, and the links of the nodes in it, with its mutex.

#ifndef TIMINGWHEEL_LIB_BUCKET_H_
#define TIMINGWHEEL_LIB_BUCKET_H_

#include <cstdint>
#include <vector>

#include "timer_state.h"

namespace timingwheel::internal {

class WheelLevel;

class Bucket {
 public:
  static constexpr int64_t kNoExpiration = -1;

  explicit Bucket(WheelLevel* level) : level_(level) {}
  Bucket(const Bucket&) = delete;
  Bucket& operator=(const Bucket&) = delete;
  Bucket(Bucket&&) = default;

  WheelLevel* level() const { return level_; }

  // Appends `node`, links it with generation `gen` and this epoch, and points
  // its `where` here. Precondition: the node is in no bucket's list.
  void Add(TimerNode* node, uint64_t gen);
  // Unlinks `node` and clears its `where`. Precondition: Holds(node).
  void Remove(TimerNode* node);
  // Whether `node` is in this bucket's list (not detached from it). Called
  // under this bucket's level mutex, possibly while another level's Add
  // links the node elsewhere: Add stores `where`, then `link_epoch`
  // (release); this loads `link_epoch` (acquire), then `where`. So a caller
  // that still sees `where` == this also sees the epoch the node had here.
  bool Holds(const TimerNode* node) const {
    const uint32_t epoch = node->link_epoch.load(std::memory_order_acquire);
    return node->where.load(std::memory_order_acquire) == this &&
           epoch == epoch_;
  }

  // Sets the expiration if none is set. Returns true if it was unset, which is
  // when the caller must offer the bucket to the delay queue.
  bool SetExpiration(int64_t expiration_tick);
  int64_t expiration() const { return expiration_tick_; }

  // Empties the bucket in O(1): returns its list (linked by `next`, in
  // insertion order; nullptr if empty), clears the expiration and starts a
  // new epoch, so that the nodes of the list are in transit. Their `where`
  // still names this bucket until they are placed again.
  TimerNode* Detach();
  // Detach, then the list's nodes appended to `out`.
  void Flush(std::vector<TimerNode*>* out);

  bool empty() const { return head_ == nullptr; }
  int64_t size() const { return size_; }

 private:
  WheelLevel* const level_;
  TimerNode* head_ = nullptr;
  TimerNode* tail_ = nullptr;
  int64_t size_ = 0;
  int64_t expiration_tick_ = kNoExpiration;
  uint32_t epoch_ = 0;  // bumped by Detach; wraps harmlessly
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_BUCKET_H_
