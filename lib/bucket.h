// Copyright 2026 The timingwheel Authors.
//
// bucket.h: one slot of a wheel level: an intrusive list of timers and the
// bucket's expiration.
//
// Add and Remove are O(1) pointer updates on links stored in the TimerNode,
// so scheduling and stopping never allocate. The expiration is the start of
// the bucket's time range, in ticks; it is set when the first timer goes in
// (SetExpiration returns true exactly then, and the caller offers the bucket
// to the delay queue) and cleared by Flush in the same critical section that
// empties the list. That is what keeps a timer added concurrently with a flush
// from landing in a bucket that is never offered again (DESIGN.md, trap 1).
// Flush detaches the whole list before anything is re-inserted anywhere, so
// re-inserting never re-enters the bucket being flushed (trap 2).
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

  // The marker stored in TimerNode::where while a flushed node is in transit.
  static Bucket* InTransit();

  WheelLevel* level() const { return level_; }

  // Appends `node`, links it with generation `gen`, and points its `where`
  // here. Precondition: the node is in no bucket.
  void Add(TimerNode* node, uint64_t gen);
  // Unlinks `node` and clears its `where`. Precondition: it is in this bucket.
  void Remove(TimerNode* node);

  // Sets the expiration if none is set. Returns true if it was unset, which is
  // when the caller must offer the bucket to the delay queue.
  bool SetExpiration(int64_t expiration_tick);
  int64_t expiration() const { return expiration_tick_; }

  // Moves every node to `out` in insertion order, marks each in transit, and
  // clears the expiration.
  void Flush(std::vector<TimerNode*>* out);

  bool empty() const { return head_ == nullptr; }
  int64_t size() const { return size_; }

 private:
  WheelLevel* const level_;
  TimerNode* head_ = nullptr;
  TimerNode* tail_ = nullptr;
  int64_t size_ = 0;
  int64_t expiration_tick_ = kNoExpiration;
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_BUCKET_H_
