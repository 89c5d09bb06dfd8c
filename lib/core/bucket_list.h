// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// bucket_list.h: what the single-owner core knows of a timer (CoreNode: its
// links and its expiration tick) and one bucket of a level (CoreBucket: an
// intrusive list of such nodes, its bucket id and its place in the release
// queue).
//
// Part of the core (lib/core/): the levels, buckets, placement and release
// order that ONE owner drives, with no atomics and no locks (DESIGN.md,
// section 5). A node is linked into at most one bucket; the owner links,
// unlinks and walks it, and no other thread reads the links. The parts
// around the core embed a CoreNode in their own timer node and hand it over
// (the event-loop wheel: its caller is the owner).
//
// A NodeList is a circular doubly linked list through a sentinel, so that
// linking and unlinking are O(1) with no branch and without knowing the
// list: Unlink needs only the node. A node is linked exactly when its `prev`
// is not null. TakeAll detaches the whole list in O(1) (the flush of a
// bucket: Kafka's `flush`), leaving the bucket empty before any of its nodes
// is placed again, so re-placing never re-enters the bucket being flushed
// (DESIGN.md, trap 2). The detached chain is walked with Pop only, and no
// other code may unlink its nodes meanwhile (the walk is inside the core's
// Advance, which runs no user code).
//
// Thread-safety: thread-compatible; the owner's alone.

#ifndef TIMINGWHEEL_LIB_CORE_BUCKET_LIST_H_
#define TIMINGWHEEL_LIB_CORE_BUCKET_LIST_H_

#include <cstdint>
#include <limits>

namespace timingwheel::internal {

// The core's part of a timer node. Its owner embeds it (as a base or a
// member) and keeps the rest (callback, state) to itself.
struct CoreNode {
  CoreNode* prev = nullptr;  // null: in no bucket
  CoreNode* next = nullptr;
  // The tick (of level 0, from the origin) at which the timer is due.
  int64_t expiration_tick = 0;

  bool linked() const { return prev != nullptr; }
};

// Takes `node` out of whatever bucket holds it. Precondition: linked.
inline void Unlink(CoreNode* node) {
  node->prev->next = node->next;
  node->next->prev = node->prev;
  node->prev = nullptr;
  node->next = nullptr;
}

// A detached chain of nodes (TakeAll): walk it with Pop until empty. Each
// node popped is unlinked, free to be placed again.
class NodeChain {
 public:
  NodeChain() = default;
  NodeChain(CoreNode* first, CoreNode* last) : first_(first), last_(last) {}

  bool empty() const { return first_ == nullptr; }
  // The next node, unlinked. Precondition: !empty().
  CoreNode* Pop() {
    CoreNode* node = first_;
    first_ = node == last_ ? nullptr : node->next;
    if (first_ != nullptr) {
      // A flush is a walk of cache misses: fetch the node after next early.
      __builtin_prefetch(first_->next, 1);
    }
    node->prev = nullptr;
    node->next = nullptr;
    return node;
  }

 private:
  CoreNode* first_ = nullptr;
  CoreNode* last_ = nullptr;
};

// An intrusive list of nodes: a bucket's timers, or the due timers an
// Advance hands out. Must not move once used (the sentinel points to
// itself).
class NodeList {
 public:
  NodeList() { head_.prev = head_.next = &head_; }
  NodeList(const NodeList&) = delete;
  NodeList& operator=(const NodeList&) = delete;

  bool empty() const { return head_.next == &head_; }
  // Appends `node`. Precondition: not linked.
  void Push(CoreNode* node) {
    node->prev = head_.prev;
    node->next = &head_;
    head_.prev->next = node;
    head_.prev = node;
  }
  // The first node, or null when empty.
  CoreNode* Front() const { return empty() ? nullptr : head_.next; }
  // Puts `node` first. Precondition: not linked.
  void PushFront(CoreNode* node) {
    node->prev = &head_;
    node->next = head_.next;
    head_.next->prev = node;
    head_.next = node;
  }
  // Takes out the first node, or returns null when empty.
  CoreNode* PopFront() {
    if (empty()) return nullptr;
    CoreNode* node = head_.next;
    Unlink(node);
    return node;
  }
  // Moves every node of `other` to the end of this list, in order, in O(1):
  // only the first and the last node are touched.
  void Splice(NodeList* other) {
    if (other->empty()) return;
    CoreNode* const first = other->head_.next;
    CoreNode* const last = other->head_.prev;
    first->prev = head_.prev;
    head_.prev->next = first;
    last->next = &head_;
    head_.prev = last;
    other->head_.prev = other->head_.next = &other->head_;
  }
  // Empties the list in O(1) and returns its nodes.
  NodeChain TakeAll() {
    if (empty()) return {};
    NodeChain chain(head_.next, head_.prev);
    head_.prev = head_.next = &head_;
    return chain;
  }

 private:
  friend class WheelCoreTestPeer;

  CoreNode head_;  // the sentinel: never a timer
};

// One slot of a level.
struct CoreBucket {
  // Not in the release queue (ReleaseQueue).
  static constexpr int64_t kNotQueued = std::numeric_limits<int64_t>::min();

  NodeList timers;
  // The id of the bucket's range (expiration tick / level tick width) while
  // it holds timers; meaningless when empty.
  int64_t id = 0;
  // The release tick it was queued under in the ReleaseQueue, or kNotQueued.
  // A queue entry whose tick differs, or whose bucket is empty, is stale.
  int64_t queued_release = kNotQueued;
  // Timers pushed since it was last empty: at least as many as it holds
  // (a Remove does not know its bucket, so does not count down).
  int64_t pushed = 0;
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_CORE_BUCKET_LIST_H_
