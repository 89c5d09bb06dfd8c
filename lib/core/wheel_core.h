// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// wheel_core.h: the hierarchical timing wheel as a single-threaded data
// structure: levels created lazily, their buckets, the one release queue of
// buckets shared by every level, and Kafka's advance-and-flush (addOrRun).
//
// Ground rules (DESIGN.md, section 5: "one owner"):
//   * ONE owner calls every member, from one thread at a time: the caller
//     of an event-loop wheel, or a wheel's own thread. No locks, no
//     synchronization (a node's expiration is an atomic only because the
//     threaded wheel's callers may write it: bucket.h), no clock: the wheel's
//     time comes in as ticks of level 0 counted from an origin, and a timer's
//     expiration in the owner's unit (a tick is `unit` of them: the owner's
//     nanoseconds), which the core rounds up to a tick, so that "due" below
//     means never early.
//   * The core links and unlinks only the CoreNode part of a timer. What a
//     timer is beyond that (its callback, its state, its handles) belongs to
//     the owner, which hands nodes in (Add), takes them out (Remove) and
//     gets the due ones back (Advance).
//   * No user code runs inside the core, so no member is ever re-entered.
//
// Placement follows core/placement.h (its top comment has the level table
// for the defaults and the worked example, which wheel_core_test.cc drives
// through this class): a timer goes to the lowest level whose span, or the
// one bucket past it, covers its expiration; a bucket of level k >= 1 is
// released one level-(k-1) tick early, so its timers cascade down before
// any of them is due. A timer is due when its expiration tick is at or
// before the wheel's tick: only then does it leave the wheel.
//
// Cascades, spread out (Advance with Cascades::kSpread, for an owner that
// runs the due callbacks itself: the event-loop wheel). A released bucket of
// level k >= 1 is not placed again at once: its timers wait, still linked
// (Remove takes them out in O(1)), until CascadeSome places a share of them,
// or until the levels are about to move to the tick `cascade_by` = the
// bucket's expiration minus level k-1's release offset, the earliest release
// of any bucket they can land in (placement.h). Until then, placing one gives
// what it would at the release: the level below has not moved (its current tick
// is the bucket's expiration minus its tick width), and a lower level takes a
// timer only where it would fit anyway. So a level-2 bucket of the defaults,
// released 20 ticks early with 400,000 timers, can be placed again over 19
// ticks while each tick's due timers run on time, instead of all in one tick,
// delaying those. A timer waiting is never due (cascade_by is at most its
// expiration), and NextRelease is at most cascade_by while any waits.
//
// Costs: Add is O(levels) to find the level, O(log buckets) when it queues a
// bucket, and divides by no instruction (core/divider.h); an Add into the
// bucket of the Add before it (the same timeout, made within the bucket's
// width) is two comparisons and a link (LastBucket); Remove is O(1);
// Advance is O(buckets released * log) plus O(1) per timer moved, and moves
// timers by walking 16 strands of each bucket at once (core/bucket.h says
// why). NextRelease
// tells the owner when to call Advance next: never for a tick in which no
// bucket is due.
//
// Thread-safety: thread-compatible; the owner's alone.

#ifndef TIMINGWHEEL_LIB_CORE_WHEEL_CORE_H_
#define TIMINGWHEEL_LIB_CORE_WHEEL_CORE_H_

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "core/bucket.h"
#include "core/divider.h"
#include "core/placement.h"
#include "core/release_queue.h"

namespace timingwheel::internal {

class WheelCore {
 public:
  // A wheel of `wheel_size` buckets per level (2 or more) at tick 0, whose
  // tick is `unit` of the owner's units of time (1 or more).
  explicit WheelCore(int wheel_size, int64_t unit = 1);
  WheelCore(const WheelCore&) = delete;
  WheelCore& operator=(const WheelCore&) = delete;

  // The tick the wheel has advanced to: a timer expiring at or before it
  // is due.
  int64_t now_tick() const { return now_tick_; }
  // Timers linked in the wheel.
  int64_t size() const { return size_; }
  // Levels created so far (1 until a timer needs an overflow level).
  int levels() const { return static_cast<int>(levels_.size()); }

  // Links `node` to expire at `expiration` (in the owner's unit: its tick
  // is TickOf(expiration)). Returns false, linking nothing, when it is due
  // already (its tick <= now_tick()): the owner runs it. Precondition:
  // `node` is not linked.
  bool Add(CoreNode* node, int64_t expiration) {
    node->set_expiration(expiration);
    return AddExpiring(node, expiration);
  }
  // The same at the expiration the node holds (set by whoever armed it).
  bool Add(CoreNode* node) { return AddExpiring(node, node->expiration()); }

  // The tick in which an expiration falls due: the first tick boundary at
  // or after it.
  int64_t TickOf(int64_t expiration) const {
    // For a negative one, C++'s division rounds up (towards zero).
    return expiration >= 0 ? by_unit_.Ceil(expiration) : expiration / unit_;
  }

  // Takes a linked timer out. O(1). Precondition: `node` is linked in this
  // wheel (not in a list of due timers Advance handed out).
  void Remove(CoreNode* node) {
    NodeList::Erase(node, holders_.data());
    --size_;
  }

  // True if no bucket is released by `tick`; false when one may be. O(1).
  bool NoneReleasedBy(int64_t tick) const { return queue_.NoneBy(tick); }

  // The tick at which Advance next has work (a bucket's release), or
  // nullopt when no timer is linked.
  std::optional<int64_t> NextRelease() {
    if (depth_ > 0) return now_tick_;  // a flush of AdvanceSome under way
    std::optional<int64_t> next = queue_.NextRelease();
    if (AnyWaiting() && (!next.has_value() || *next > cascade_by_)) {
      next = cascade_by_;
    }
    return next;
  }

  // When Advance places again the timers of a released bucket above level
  // 0: at once, or spread out by CascadeSome (see "Cascades" above).
  enum class Cascades { kNow, kSpread };

  // Moves the wheel to `now_tick` (never back): releases every bucket due
  // by then, in release order, appending the due timers to `due`, in
  // expiration order (each node's due_index() its position there, in no
  // list), and cascading the others down a level or more, now
  // or (kSpread) later: the timers that wait are not due by `now_tick`.
  // Returns how many it appended.
  int64_t Advance(int64_t now_tick, std::vector<CoreNode*>* due,
                  Cascades cascades = Cascades::kNow) {
    // An event loop's turn with nothing due: the queue's head says no
    // bucket is, no waiting timer must be placed before the levels move
    // (kNow would place every one: then none may wait), and the levels move
    // on, or stay, without the walk.
    if (queue_.NoneBy(now_tick) &&
        std::max(now_tick, now_tick_) < cascade_by_ &&
        (cascades == Cascades::kSpread || cascade_by_ == kMaxTick)) {
      MoveTo(now_tick);
      return 0;
    }
    return AdvanceReleasing(now_tick, due, cascades);
  }

  // Places again a share of the timers waiting to cascade: as many as
  // spreads them evenly over the ticks left before they must be placed, or
  // all of them when no bucket is released before then (so waiting never
  // makes NextRelease earlier). Returns how many it placed. The owner calls
  // it after running what Advance(kSpread) made due, so that a big cascade
  // neither delays those nor happens in one tick. None is ever due, so it
  // returns no timer.
  int64_t CascadeSome() {
    // Most turns: no batch waits (an emptied one is dropped by AnyWaiting).
    return waiting_front_ == waiting_end_ ? 0 : CascadeShare();
  }

  // Advance (kNow) in slices, for an owner that must not stop for a cascade
  // of millions (the threaded wheel's advancer): moves at most `budget`
  // timers (down a level, or out as due), and returns true once it has
  // reached `now_tick` with no released bucket left, false when the budget
  // ran out first (call again, with the same or a later tick). In one call,
  // or in slices at one tick, due timers come out as Advance hands them
  // out. When a later tick is asked for while a bucket's flush is under way
  // (the clock moved on during a big cascade), a bucket of a lower level
  // due by then is flushed first, and a timer of the flush due by then
  // comes out at once: a cascade of millions holds up no timer due
  // meanwhile, nor its own due timers until its end (they leave out of
  // expiration order). The timers of a flush under way are still linked:
  // Remove and TakeAll take them too. Precondition: no Advance(kSpread)
  // timers wait to cascade (an owner uses one of the two).
  bool AdvanceSome(int64_t now_tick, std::vector<CoreNode*>* due,
                   int64_t budget);

  // Takes out, ahead of its release, the level-0 bucket released at
  // now_tick() + 1 if it is the next to be released and holds at most `most`
  // timers: appends them to `out`, unlinked (each node's due_index() its
  // position there), and returns how many. The levels do not move: none of
  // them is due yet (the owner runs each once the clock reaches its
  // expiration), and a timer added for that tick later goes into the
  // bucket anew. Returns 0, taking nothing, otherwise. For kSpread owners
  // (Advance's), not during AdvanceSome's flushes.
  int64_t TakeNextBucket(int64_t most, std::vector<CoreNode*>* out);

  // Takes every linked timer out into `out`, in no particular order (the
  // owner is shutting down).
  void TakeAll(std::vector<CoreNode*>* out);

 private:
  friend class WheelCoreTestPeer;

  struct Level {
    Level(const LevelGeometry& geometry, int64_t now_tick, int index,
          const Divider& by_size);
    // Moves the level's current tick to the wheel's `now_tick` (never back),
    // and what Place reads of it along.
    void MoveTo(int64_t now_tick, const Divider& by_size);

    LevelGeometry geometry;
    Divider by_width;      // divides by geometry.tick_width
    int64_t current_tick;  // geometry.CurrentAt(the wheel's tick)
    // What Place reads instead of dividing again, kept by MoveTo: the last
    // tick this level takes (NeedsHigherLevel is false up to it: its span
    // and the bucket past it; kMaxTick when that is past the largest tick),
    // and the id and slot of the bucket range `current_tick` is in.
    int64_t last_fit;
    int64_t current_id;
    int64_t current_slot;
    std::unique_ptr<CoreBucket[]> buckets;
    int index;  // 0 for the lowest
  };
  // The slot of a bucket id of `level` (PlaceInLevel's division by
  // wheel_size): counted from the level's current slot for the ids its span
  // and the bucket past it can have, so with no multiplication.
  struct SlotOf {
    const Level& level;
    const Divider& by_size;
    int64_t Remainder(int64_t id) const {
      const uint64_t from_current =
          static_cast<uint64_t>(id - level.current_id);
      const auto wheel_size = static_cast<uint64_t>(level.geometry.wheel_size);
      if (from_current > wheel_size) return by_size.Remainder(id);
      const uint64_t slot =
          static_cast<uint64_t>(level.current_slot) + from_current;
      return static_cast<int64_t>(slot >= wheel_size ? slot - wheel_size
                                                     : slot);
    }
  };

  // Links `node`, expiring in `tick` (TickOf(node->expiration)), in the
  // lowest level that takes it, creating levels as needed; false when it is
  // due.
  // With `remember` (an Add's), the bucket becomes last_ (RememberLast): the
  // cascades of Advance place timers that no Add follows into, and skip it.
  bool Place(CoreNode* node, int64_t tick, bool remember = false);
  bool Place(CoreNode* node) { return Place(node, TickOf(node->expiration())); }
  // Add's part after the expiration: links `node` in the last bucket if
  // that is where Place would put it, else in TickOf(expiration) unless due.
  bool AddExpiring(CoreNode* node, int64_t expiration) {
    if (last_.Takes(expiration)) {
      last_.bucket->timers.Push(node);
    } else {
      const int64_t tick = TickOf(expiration);
      if (tick <= now_tick_) return false;
      Place(node, tick, /*remember=*/true);  // not due: linked
    }
    ++size_;
    return true;
  }
  // Sets last_ after Place linked a timer in `bucket` of `level`, where
  // `place` put it.
  void RememberLast(const Level& level, const Level* lower,
                    const LevelPlacement& place, CoreBucket* bucket);
  // CascadeSome when a batch waits, perhaps emptied.
  int64_t CascadeShare();
  // Advance when a bucket may be due or timers waiting to cascade must be
  // placed first.
  int64_t AdvanceReleasing(int64_t now_tick, std::vector<CoreNode*>* due,
                           Cascades cascades);
  // Moves every level forward to `tick` (never back). Precondition: no
  // timer waits to cascade, or `tick` < cascade_by_.
  void MoveTo(int64_t tick);
  // Places again up to `n` waiting timers, in the order their buckets were
  // released; returns how many it placed.
  int64_t PlaceWaiting(int64_t n);
  // Whether any timer waits to cascade (drops emptied batches in front).
  bool AnyWaiting();
  // Creates the next level up (the first when there is none), its buckets'
  // lists registered.
  void AddLevel(const LevelGeometry& geometry);
  // A new id for `list`, in the table.
  void Register(NodeList* list);
  // Moves the timers of `from` to `to`, which is empty, without touching
  // them: the two trade contents and ids.
  void Move(NodeList* from, NodeList* to);
  // Appends a due timer to `due`.
  void PushDue(CoreNode* node, std::vector<CoreNode*>* due) {
    node->next = static_cast<uint32_t>(due->size());
    due->push_back(node);
    --size_;
  }

  // The bucket an Add's Place linked a timer in last, and the expirations (in
  // the owner's unit, [first, last]) for which Place would pick it again: a
  // tick the lower levels do not take, in the bucket's range. That holds
  // while the levels stay where they are (MoveTo forgets it) and the bucket
  // stays queued under the same release tick (once popped, dropped as
  // stale or cleared by TakeAll, its queued_release changes). Timers with
  // one timeout made within a bucket's width (400 ms at level 2 of the
  // defaults) all land there: Add links them with a comparison instead of
  // a division and a walk over the levels.
  struct LastBucket {
    int64_t first = std::numeric_limits<int64_t>::max();
    int64_t last = std::numeric_limits<int64_t>::min();
    CoreBucket* bucket = nullptr;
    int64_t release_tick = CoreBucket::kNotQueued;
    bool Takes(int64_t expiration) const {
      return expiration >= first && expiration <= last &&
             bucket->queued_release == release_tick;
    }
  };

  const int wheel_size_;
  const Divider by_size_;  // divides by wheel_size_
  const int64_t unit_;
  const Divider by_unit_;  // divides by unit_
  int64_t now_tick_ = 0;
  int64_t size_ = 0;
  LastBucket last_;
  std::vector<Level> levels_;
  ReleaseQueue queue_;
  // Every NodeList of the core, by id: a node's `holder` names one.
  std::vector<NodeList*> holders_;
  // Timers of released buckets above level 0 waiting to be placed again,
  // one batch per bucket in release order ([waiting_front_, waiting_end_)
  // in use), and the tick before which they must be: the levels never move
  // to it while any waits. `waiting_count_` is at least how many wait.
  std::vector<std::unique_ptr<NodeList>> waiting_;
  size_t waiting_front_ = 0;
  size_t waiting_end_ = 0;
  // AdvanceSome: the latest tick asked for (at least now_tick_), and the
  // flushes under way, innermost last (a bucket of a lower level flushed
  // first, at most one per level). `flushes_` only grows; the first
  // `depth_` are under way.
  struct Flush {
    NodeList timers;
    int level = 0;
    int64_t target_tick = 0;  // target_tick_ when the flush began
  };
  int64_t target_tick_ = 0;
  std::vector<std::unique_ptr<Flush>> flushes_;
  size_t depth_ = 0;
  int64_t waiting_count_ = 0;
  int64_t cascade_by_ = kMaxTick;
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_CORE_WHEEL_CORE_H_
