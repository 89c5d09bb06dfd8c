// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// bucket.h: what the single-owner core knows of a timer (CoreNode: its
// expiration and its links) and where it keeps timers (NodeList:
// intrusive lists of nodes; CoreBucket: one slot of a level).
//
// Part of the core (lib/core/): the levels, buckets, placement and release
// order that ONE owner drives, with no locks and no synchronization
// (DESIGN.md, section 5). The parts around the core embed a CoreNode in
// their own timer node and hand it over; no other thread reads its links.
// Its expiration alone is an atomic (a plain load and store on x86-64):
// the threaded wheel's callers write a new arm's there (CoreNode below).
//
// Links of 32 bits. Every node lives in the node arena (node_arena.h), so a
// node is named by its 32-bit offset there: two links cost 8 bytes of the
// node, and a bucket holds nothing per timer (a vector of pointers cost 8
// bytes a timer and its spare room, 9-10 bytes in all).
//
// Strands: why a bucket is 16 lists, not one. A flush walks every timer of a
// bucket. Through one list, each step waits for the previous node's `next`:
// one dependent cache miss per timer, 136-267 ns each with 1M-10M timers on
// this project's machine. A NodeList deals its timers round robin to
// kStrands lists (strands) and its walk takes one from each in turn,
// fetching each strand's next node as it takes one: 16 misses overlap, and
// the walk costs 10-26 ns a timer, as fast as a vector of pointers fetched
// ahead (13-27 ns, measured side by side by the same prototype).
//
// A node knows its place: its links are the nodes before and after it in
// its strand, and at the strand's ends its tag (kTagBit, the list's id and
// the strand), which names the list through the core's table of lists by
// id. So taking a timer out is O(1) from the node alone. When a bucket is
// released, its list trades ids with an empty one (a flush, or a batch
// waiting to cascade): the tags at its strands' ends, which now name the
// list they went to, are right without touching a node.
//
// Thread-safety: thread-compatible; the owner's alone.

#ifndef TIMINGWHEEL_LIB_CORE_BUCKET_H_
#define TIMINGWHEEL_LIB_CORE_BUCKET_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>

#include "core/node_link.h"

namespace timingwheel::internal {

// The core's part of a timer node. Its owner embeds it (as a base or a
// member, at a multiple of NodeLink::kUnit in a node of the arena) and
// keeps the rest (callback, state) to itself.
struct CoreNode {
  // The node before it in its strand, or, for the first, the strand's tag
  // (NodeList::kTagBit set); 0 in no list.
  uint32_t prev = 0;
  // In a list: the node after it, or, for the last, the strand's tag. Out of
  // the core, in a due list Advance filled: its position there (the owner
  // may use it to drop it in O(1)).
  uint32_t next = 0;

  bool linked() const { return prev != 0; }
  uint32_t due_index() const { return next; }

  // When the timer is due, in the owner's unit of time from the origin
  // (nanoseconds for both wheels): its tick (of level 0) is this divided by
  // the core's `unit`, rounded up (WheelCore::TickOf). The one field of the
  // core that another thread may write: the threaded wheel's callers set a
  // new arm's deadline here while the owner may still hold a link of an
  // older one (lib/handles/timer_state.h, Locking). Hence an atomic, released
  // and acquired, which costs a plain load or store on x86-64 and ARMv8's
  // ldar/stlr. An owner that lets other threads write it uses Add, Remove,
  // AdvanceSome and TakeAll only: AdvanceSome reads it afresh at each
  // placement and hands a node out as due if what it reads is due, assuming
  // nothing of its earlier value (Advance's spread cascades, the event-loop
  // wheel's, assume it unchanged while a node waits to be placed again).
  int64_t expiration() const {
    return expiration_.load(std::memory_order_acquire);
  }
  void set_expiration(int64_t expiration) {
    expiration_.store(expiration, std::memory_order_release);
  }
  // For a value that more than one thread may be first to decide (the
  // threaded wheel's unstamped deadline, lib/handles/timer_state.h): acq_rel.
  bool CasExpiration(int64_t& expected, int64_t desired) {
    return expiration_.compare_exchange_strong(expected, desired,
                                               std::memory_order_acq_rel,
                                               std::memory_order_acquire);
  }

 private:
  std::atomic<int64_t> expiration_{0};
};

// Timers in kStrands intrusive lists (strands), first in, first out: a push
// goes to the strands in turn, and so does a take, so that timers come out
// in the order they went in, unless an Erase took some out between. Each
// node knows its place: its links, and in a strand's first and last nodes
// the strand's tag (the list's id and the strand).
class NodeList {
 public:
  static constexpr int kStrands = 16;
  // A tag: the top bit, then the list's id and the strand.
  static constexpr uint32_t kTagBit = uint32_t{1} << 31;
  static constexpr int kStrandBits = 4;
  static_assert(kStrands == 1 << kStrandBits);
  // Ids of lists fit below the tag bit with the strand.
  static constexpr uint32_t kMaxId = (kTagBit >> kStrandBits) - 1;

  explicit NodeList(uint32_t id = 0) : id_(id) {}
  NodeList(const NodeList&) = delete;
  NodeList& operator=(const NodeList&) = delete;

  uint32_t id() const { return id_; }
  // Names the list: the core registers each once, while it is empty.
  void set_id(uint32_t id) { id_ = id; }
  bool empty() const { return held_ == 0; }
  // How many nodes it holds, or more: an Erase of a node that is neither
  // first nor last of its strand cannot tell its list, and does not count
  // down.
  size_t size_bound() const { return held_; }

  // Appends `node`, which is in no list.
  void Push(CoreNode* node) {
    const int strand = push_strand_;
    push_strand_ = (push_strand_ + 1) & (kStrands - 1);
    const uint32_t link = NodeLink::Of(node);
    const uint32_t last = tails_[strand];
    node->next = Tag(strand);
    if (last != 0) {
      node->prev = last;
      At(last)->next = link;
    } else {
      node->prev = Tag(strand);
      heads_[strand] = link;
    }
    tails_[strand] = link;
    ++held_;
  }
  // Takes out the node that has been in it longest, the strands in turn.
  // Precondition: !empty().
  CoreNode* PopFront() { return Pop</*kTag=*/true>(); }
  // PopFront for a walk that no Erase comes into until RetagHeads (a
  // flush's slice): the node that becomes first in its strand keeps its old
  // prev instead of the strand's tag. So the walk writes no node ahead of
  // the one it takes: that store would wait for the miss the prefetch has
  // just begun, and every later store behind it (the timers due at the
  // start of a level-1 bucket, which wait for its flush, ran later with
  // it: README, Performance). Precondition: !empty().
  CoreNode* PopFrontUntagged() { return Pop</*kTag=*/false>(); }
  // Writes the tag of each strand into its first node, which
  // PopFrontUntagged left without one: call it before anything may Erase.
  void RetagHeads() {
    for (int strand = 0; strand < kStrands; ++strand) {
      if (heads_[strand] != 0) At(heads_[strand])->prev = Tag(strand);
    }
  }
  // Takes out every node, in PopFront's order, and hands each to `take`
  // (the node in no list): a walk that, unlike PopFront, writes no node but
  // the one it hands on, since no Erase can come between.
  template <class Take>
  void Drain(Take&& take) {
    uint32_t cursor[kStrands];
    int live = 0;
    for (int i = 0; i < kStrands; ++i) {
      // In the order PopFront would take the strands.
      const int strand = (pop_strand_ + i) & (kStrands - 1);
      cursor[i] = heads_[strand];
      if (cursor[i] != 0) ++live;
      heads_[strand] = tails_[strand] = 0;
    }
    while (live > 0) {
      for (uint32_t& link : cursor) {
        if (link == 0) continue;
        CoreNode* const node = At(link);
        const uint32_t next = node->next;
        if (IsTag(next)) {
          link = 0;
          --live;
        } else {
          link = next;
          __builtin_prefetch(At(next), 1);  // see PopFront
        }
        node->prev = node->next = 0;
        take(node);
      }
    }
    Emptied();
  }
  // Takes `node` out of the list that holds it, in O(1); `lists` is the
  // core's table of lists by id, for a node at an end of its strand.
  static void Erase(CoreNode* node, NodeList* const* lists) {
    const uint32_t prev = node->prev;
    const uint32_t next = node->next;
    node->prev = node->next = 0;
    NodeList* list = nullptr;
    if (IsTag(prev)) {
      list = lists[ListOf(prev)];
      list->heads_[StrandOf(prev)] = IsTag(next) ? 0 : next;
    } else {
      At(prev)->next = next;
    }
    if (IsTag(next)) {
      list = lists[ListOf(next)];
      list->tails_[StrandOf(next)] = IsTag(prev) ? 0 : prev;
    } else {
      At(next)->prev = prev;
    }
    if (list != nullptr && (--list->held_ == 0 || list->AllEmpty())) {
      list->Emptied();
    }
  }
  // Moves the nodes of `from` here, which is empty, without touching them:
  // the two trade contents and ids (the core's table must follow).
  void TakeOver(NodeList* from) {
    std::swap(heads_, from->heads_);
    std::swap(tails_, from->tails_);
    std::swap(held_, from->held_);
    std::swap(push_strand_, from->push_strand_);
    std::swap(pop_strand_, from->pop_strand_);
    std::swap(id_, from->id_);
  }

 private:
  friend class WheelCoreTestPeer;

  static bool IsTag(uint32_t link) { return (link & kTagBit) != 0; }

  template <bool kTag>
  CoreNode* Pop() {
    int strand = pop_strand_;
    while (heads_[strand] == 0) strand = (strand + 1) & (kStrands - 1);
    pop_strand_ = (strand + 1) & (kStrands - 1);
    CoreNode* const node = At(heads_[strand]);
    const uint32_t next = node->next;
    if (IsTag(next)) {
      heads_[strand] = tails_[strand] = 0;
    } else {
      heads_[strand] = next;
      CoreNode* const after = At(next);
      // Its miss overlaps the next kStrands - 1 takes (see the top).
      __builtin_prefetch(after, 1);
      if (kTag) after->prev = Tag(strand);
    }
    node->prev = node->next = 0;
    if (--held_ == 0 || (IsTag(next) && AllEmpty())) Emptied();
    return node;
  }

  static uint32_t ListOf(uint32_t tag) {
    return (tag & ~kTagBit) >> kStrandBits;
  }
  static int StrandOf(uint32_t tag) {
    return static_cast<int>(tag & (kStrands - 1));
  }
  static CoreNode* At(uint32_t link) {
    return static_cast<CoreNode*>(NodeLink::At(link));
  }
  uint32_t Tag(int strand) const {
    return kTagBit | id_ << kStrandBits | static_cast<uint32_t>(strand);
  }
  bool AllEmpty() const {
    for (uint32_t head : heads_) {
      if (head != 0) return false;
    }
    return true;
  }
  void Emptied() {
    held_ = 0;
    push_strand_ = pop_strand_ = 0;
  }

  uint32_t heads_[kStrands] = {};
  uint32_t tails_[kStrands] = {};
  size_t held_ = 0;
  int push_strand_ = 0;
  int pop_strand_ = 0;
  uint32_t id_;
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
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_CORE_BUCKET_H_
