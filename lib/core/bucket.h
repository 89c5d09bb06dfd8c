// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// bucket.h: what the single-owner core knows of a timer (CoreNode: its
// expiration tick and its place) and where it keeps timers (NodeVector: a
// vector of node pointers; CoreBucket: one slot of a level).
//
// Part of the core (lib/core/): the levels, buckets, placement and release
// order that ONE owner drives, with no atomics and no locks (DESIGN.md,
// section 5). The parts around the core embed a CoreNode in their own timer
// node and hand it over; no other thread reads its fields.
//
// Why vectors and not intrusive lists. A flush walks every timer of a
// bucket. Through a list, each step waits for the previous node's `next`:
// one dependent cache miss per timer, 175-360 ns each with millions of
// timers (measured on the threaded wheel's advancer). A vector of pointers
// lets the walk fetch the nodes many steps ahead, so their misses overlap:
// 21-32 ns per timer flushed in the same measurement. It costs 8 bytes a
// timer in the vector (plus its spare capacity, bounded below) and saves the
// 16 bytes of two links in the node.
//
// A node knows its place: `holder`, the id of the NodeVector that holds it
// (the core keeps a table from id to vector), and `index`, its position
// there. So taking a timer out is O(1) from the node alone: the last pointer
// of the vector moves into its place. When a bucket is released, its vector
// trades ids with an empty one (a flush, or a batch waiting to cascade):
// the nodes keep their holder id, which now names the vector they went to,
// and none of them is touched until the walk gets to it.
//
// Thread-safety: thread-compatible; the owner's alone.

#ifndef TIMINGWHEEL_LIB_CORE_BUCKET_H_
#define TIMINGWHEEL_LIB_CORE_BUCKET_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>

namespace timingwheel::internal {

// The core's part of a timer node. Its owner embeds it (as a base or a
// member) and keeps the rest (callback, state) to itself.
struct CoreNode {
  static constexpr uint32_t kNoHolder = std::numeric_limits<uint32_t>::max();

  // The tick (of level 0, from the origin) at which the timer is due.
  int64_t expiration_tick = 0;
  // The id of the NodeVector that holds it, or kNoHolder: in no bucket.
  uint32_t holder = kNoHolder;
  // Its position in that vector. Out of the core, in a due list Advance
  // filled, its position there (the owner may use it to drop it in O(1)).
  uint32_t index = 0;

  bool linked() const { return holder != kNoHolder; }
};

// Timers, taken out first in, first out unless a Remove moved the last
// into the hole. Each knows its holder id and index (set by the core, which
// owns the ids). The nodes held are those from `front_` to `end_`: PopFront
// moves `front_` on, and the vector is reset once `front_` reaches the end.
//
// Memory: the room grows by doubling; an emptied vector keeps at most
// kKeepCapacity, and one not being popped that falls to a quarter of its
// room gives room back (a copy of what it holds, never a walk of the
// nodes). Room of kMapBytes or more is mapped from the system, not taken
// from malloc, and grows and shrinks in place (mremap: no copy), so that it
// goes back to the system as soon as it is given back: glibc keeps freed
// heap memory, which after a spike of millions of timers was most of what
// a wheel kept. No call gives back more than kStepBytes of mapped room (the
// kernel's work is per page: 1 MiB is some tens of microseconds): a shrink
// cuts at most that off the end, and a vector being popped gives back each
// kStepBytes of popped room as it goes, so that what is left when it
// empties is small.
class NodeVector {
 public:
  static constexpr size_t kKeepCapacity = 256;
  static constexpr size_t kMapBytes = size_t{256} * 1024;
  static constexpr size_t kStepBytes = size_t{1024} * 1024;

  explicit NodeVector(uint32_t id = CoreNode::kNoHolder) : id_(id) {}
  NodeVector(const NodeVector&) = delete;
  NodeVector& operator=(const NodeVector&) = delete;
  ~NodeVector() { Free(); }

  uint32_t id() const { return id_; }
  // Names the vector: the core registers each once, while it is empty.
  void set_id(uint32_t id) { id_ = id; }
  bool empty() const { return front_ == end_; }
  size_t size() const { return end_ - front_; }
  // The room reserved, in nodes.
  size_t capacity() const { return capacity_; }

  // Appends `node`, which is in no vector. Throws std::bad_alloc when there
  // is no memory for more room.
  void Push(CoreNode* node) {
    if (end_ == capacity_) Resize(capacity_ < 16 ? 16 : capacity_ * 2);
    node->holder = id_;
    node->index = static_cast<uint32_t>(end_);
    data_[end_++] = node;
  }
  // Takes out `node`, which this vector holds, in O(1): the last node takes
  // its place.
  void Erase(CoreNode* node) {
    CoreNode* const last = data_[end_ - 1];
    data_[node->index] = last;
    last->index = node->index;
    --end_;
    node->holder = CoreNode::kNoHolder;
    if (empty()) {
      Clear();
    } else if (front_ == 0 && capacity_ > kKeepCapacity &&
               end_ < capacity_ / 4) {
      Shrink();
    }
  }
  // Takes out the first node. Precondition: !empty().
  CoreNode* PopFront() {
    CoreNode* const node = data_[front_++];
    node->holder = CoreNode::kNoHolder;
    if (empty()) {
      Clear();
    } else if (front_ % kStepNodes == 0 && Mapped(capacity_)) {
      ReleasePopped();
    }
    return node;
  }
  // The node `ahead` places after the first, or null: what PopFront will
  // return later, to fetch early.
  CoreNode* Ahead(size_t ahead) const {
    return front_ + ahead < end_ ? data_[front_ + ahead] : nullptr;
  }
  // Forgets every node (the caller took them or will not look at them
  // again), and gives back room beyond kKeepCapacity.
  void Clear() {
    front_ = end_ = 0;
    if (capacity_ > kKeepCapacity) Free();
  }
  // Moves the nodes of `from` here, which is empty, without touching them:
  // the two trade contents and ids (the core's table must follow).
  void TakeOver(NodeVector* from) {
    std::swap(data_, from->data_);
    std::swap(front_, from->front_);
    std::swap(end_, from->end_);
    std::swap(capacity_, from->capacity_);
    std::swap(id_, from->id_);
  }

 private:
  // The bytes of one entry: a pointer to a node.
  static constexpr size_t kSlotBytes = sizeof(void*);
  static constexpr size_t kStepNodes = kStepBytes / kSlotBytes;
  static bool Mapped(size_t capacity) {
    return capacity * kSlotBytes >= kMapBytes;
  }
  // Gives back half the room, or kStepBytes of it if less.
  void Shrink();
  // Gives back the kStepNodes popped last (their pages).
  void ReleasePopped();
  // Moves the room to `capacity` (at least end_) nodes, keeping the first
  // end_ entries.
  void Resize(size_t capacity);
  void Free();

  CoreNode** data_ = nullptr;
  size_t front_ = 0;
  size_t end_ = 0;
  size_t capacity_ = 0;
  uint32_t id_;
};

// One slot of a level.
struct CoreBucket {
  // Not in the release queue (ReleaseQueue).
  static constexpr int64_t kNotQueued = std::numeric_limits<int64_t>::min();

  NodeVector timers;
  // The id of the bucket's range (expiration tick / level tick width) while
  // it holds timers; meaningless when empty.
  int64_t id = 0;
  // The release tick it was queued under in the ReleaseQueue, or kNotQueued.
  // A queue entry whose tick differs, or whose bucket is empty, is stale.
  int64_t queued_release = kNotQueued;
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_CORE_BUCKET_H_
