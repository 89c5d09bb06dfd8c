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
#include <vector>

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
// owns the ids). The nodes held are those from `front_` to the end: PopFront
// moves `front_` on, and the vector is reset once `front_` reaches the end.
class NodeVector {
 public:
  // An emptied vector keeps at most this much capacity (2 KiB of pointers),
  // and one that shrank to a quarter of its capacity gives half of it back:
  // a spike of timers leaves no memory behind once they are gone.
  static constexpr size_t kKeepCapacity = 256;

  explicit NodeVector(uint32_t id = CoreNode::kNoHolder) : id_(id) {}
  NodeVector(const NodeVector&) = delete;
  NodeVector& operator=(const NodeVector&) = delete;

  uint32_t id() const { return id_; }
  // Names the vector: the core registers each once, while it is empty.
  void set_id(uint32_t id) { id_ = id; }
  bool empty() const { return front_ == nodes_.size(); }
  size_t size() const { return nodes_.size() - front_; }
  // The room reserved, in nodes.
  size_t capacity() const { return nodes_.capacity(); }

  // Appends `node`, which is in no vector.
  void Push(CoreNode* node) {
    node->holder = id_;
    node->index = static_cast<uint32_t>(nodes_.size());
    nodes_.push_back(node);
  }
  // Takes out `node`, which this vector holds, in O(1): the last node takes
  // its place.
  void Erase(CoreNode* node) {
    CoreNode* const last = nodes_.back();
    nodes_[node->index] = last;
    last->index = node->index;
    nodes_.pop_back();
    node->holder = CoreNode::kNoHolder;
    if (empty()) {
      Clear();
    } else if (nodes_.capacity() > kKeepCapacity &&
               size() < nodes_.capacity() / 4) {
      Shrink();
    }
  }
  // Takes out the first node. Precondition: !empty().
  CoreNode* PopFront() {
    CoreNode* const node = nodes_[front_++];
    node->holder = CoreNode::kNoHolder;
    if (empty()) Clear();
    return node;
  }
  // The node `ahead` places after the first, or null: what PopFront will
  // return later, to fetch early.
  CoreNode* Ahead(size_t ahead) const {
    return front_ + ahead < nodes_.size() ? nodes_[front_ + ahead] : nullptr;
  }
  // Forgets every node (the caller took them or will not look at them
  // again), and gives back spare capacity beyond kKeepCapacity.
  void Clear() {
    nodes_.clear();
    front_ = 0;
    if (nodes_.capacity() > kKeepCapacity) {
      std::vector<CoreNode*>().swap(nodes_);
    }
  }
  // Moves the nodes of `from` here, which is empty, without touching them:
  // the two trade contents and ids (the core's table must follow).
  void TakeOver(NodeVector* from) {
    nodes_.swap(from->nodes_);
    std::swap(front_, from->front_);
    std::swap(id_, from->id_);
  }

 private:
  // Moves the nodes held to a vector of twice their number (each node's
  // index changes when some were popped: a walk of them, at most once per
  // three quarters of the capacity taken out).
  void Shrink() {
    std::vector<CoreNode*> smaller;
    smaller.reserve(size() * 2);
    smaller.assign(nodes_.begin() + static_cast<std::ptrdiff_t>(front_),
                   nodes_.end());
    if (front_ > 0) {
      for (size_t i = 0; i < smaller.size(); ++i) {
        smaller[i]->index = static_cast<uint32_t>(i);
      }
    }
    nodes_.swap(smaller);
    front_ = 0;
  }

  std::vector<CoreNode*> nodes_;
  size_t front_ = 0;
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
