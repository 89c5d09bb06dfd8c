// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// inbox.h: the hand-off. Callers give the thread that owns the wheel's core
// (the advancer: lib/threads/advancer.h) their new arms and their stops as
// submissions, and never touch a level or a bucket (DESIGN.md, section 5).
//
// A submission names a node, an arm of it (the generation of its state
// word) and what to do:
//   kArm     link the node for arm `gen`, at the node's deadline (written
//            before the push, which the ring's release store publishes);
//            `call_ns` is the reading of the wheel's clock that the call
//            making the arm took (its deadline counts from it), so that the
//            owner can measure how long the arm waited (Stats::handoff_*);
//   kUnlink  arm `gen` ended (a Stop): take the node out of its bucket if it
//            is still linked for that arm, so that a stopped far timer does
//            not keep its memory until its bucket comes due.
// The owner checks the arm against the node's state word when it takes the
// submission; one that a later Stop or Reset made stale does nothing. Each
// submission holds one reference on its node for the owner (or a bucket)
// to release.
//
// Rings: one per thread, single producer, single consumer (the owner). A
// thread's ring is the one of its number: the lowest number below
// kSharedRing that no other live thread of the process holds, taken on first
// use and given back when the thread exits (the next thread to take it
// inherits the ring, with what it holds: the number's release and claim order
// the two). Threads beyond those numbers, and a thread in its exit after it
// gave its number back, push to the shared ring, under its producer lock.
// A ring is created at its thread's first push (so an engine has as many as
// threads used it, up to kRings). It is a chain of chunks of
// RingChunk::kCapacity slots; the producer writes a slot and publishes it with
// one release store of its count (`published`), and allocates a chunk once
// per kCapacity pushes (taken back from the owner when it has one spare). The
// owner reads the slots below the count it marked (below), copies them into
// chunks of its own (Taken) and gives back each ring chunk it has passed. So
// a push costs the caller no locked instruction (see Wake-ups for the one
// exception), and a take costs the owner one per ring, not per submission.
//
// Stop before take: a Stop on the thread that made the timer, before the
// owner took it, takes the arm back (Retract) if it is still the ring's
// latest slot, so that an AfterFunc + Stop pair never leaves the caller's
// core. The ring's count word carries a mark (bit 0): the owner sets it
// (fetch_or) before it reads the slots below the count, and a push clears it
// (its store writes the new count alone). The latest slot, while the mark is
// clear, is taken out of the ring by one compare-and-swap of the count back
// by one, and the next push reuses it: the owner never sees the pair. The
// rewound count stays marked: the slot below it may have been marked (and be
// read) before that push, so only a slot pushed after the owner's latest mark
// is ever taken back. Hence every slot below a count the owner marked is
// written once and for all, the owner reads slots with plain loads, and the
// producer never looks into a chunk before its tail. A Stop that finds its
// arm taken, or not the latest, goes the way of any Stop (a kUnlink).
//
// Wake-ups: no syscall per call, no thread spinning. The owner publishes
// the tick at which it will run anyway (its next release, kNever with
// nothing linked; kAwake while it works; kPolling while it polls). A push
// wakes it only when the submission is due before that tick, or when its ring
// has reached kWakeAt submissions the owner has not taken. Before it sleeps,
// the owner publishes its tick and then looks at the rings (Idle): a
// store-then-load pair against the pusher's (its slot, then the tick), so
// that one of the two sees the other's store. For an *urgent* push, due
// within kHorizonNs of its call, both sides are seq_cst (the pusher's
// release store is then an exchange: a locked instruction). A push due later
// is published with a plain release store: if the owner misses it, no harm
// is done, because the owner never sleeps beyond kHorizonNs after its
// clock reading without the heavy side of an AsymmetricFence
// (asymmetric_fence.h) between its store and its look, which makes every
// such push visible (a push whose call read the clock more than kHorizonNs
// before the owner's reading may be late by that much; with a clock that
// does not run at real speed, a ManualClock, every push is urgent). The
// advancer wakes at least every 100 ms while submissions come, so at a
// steady rate it never pays that fence; it pays it when it goes quiet for
// longer. The owner's look in Idle reads the slots not taken yet: an arm
// keeps it awake (a slot holds no deadline, and an arm it sees may be due
// before its tick: the pusher may have read the tick before it was
// published), unless it polls (then only kWakeAt of them); a kUnlink waits
// for the tick it published.
//
// Deadlines stamped by the owner (#23's "no clock read at the call"): while
// callers push at a high rate, the owner polls (it looks at the rings at
// least every Advancer's poll period, and publishes kPolling instead of a
// tick). A new timer's first arm may then go in unstamped (kArmUnstamped,
// PushUnstamped): its node holds only its delay, and its deadline is stamped
// later, by the owner, from a clock reading taken after it has the
// submission in hand, so after the call: never early, and late by the
// hand-off wait, which the polling bounds. An owner about to be busy for
// long (a cascade of many slices, the user's executor running inline, a
// request), or that stops polling, first publishes kAwake, fences (Heavy)
// and takes every slot the rings hold, stamping the unstamped arms with a
// reading taken after it (StopPolling); it hands them on at its next Take.
// A pusher of an unstamped arm looks at the published word after its slot is
// in (Light): if the owner no longer polls, it takes the slot back and stamps
// the arm itself; if it cannot, the owner has it.
//
// Shutdown: Close publishes that the inbox is closed, fences (Heavy), and
// hands back what the rings hold; a push that sees it closed after its slot
// went in takes the slot back and fails (the caller keeps its reference),
// or, if Close took it first, succeeds (Close handed it back).
//
// Thread-safety: thread-safe, with one consumer. Push, PushUnstamped and
// Retract run on any thread, each in its own ring (the shared ring's under
// its SpinLock, kRing, a leaf). Take, StopPolling, Recycle, Idle, Sleep and
// SleepFor are the owner's (one thread at a time; Close, too, once the owner
// has stopped); the owner's fields are marked so. Sleep and Wake take
// `sleep_mu_` (kOwnerSleep, a leaf).

#ifndef TIMINGWHEEL_LIB_HANDOFF_INBOX_H_
#define TIMINGWHEEL_LIB_HANDOFF_INBOX_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/time/time.h"
#include "base/mutex.h"

namespace timingwheel::internal {

class TimerNode;

struct Submission {
  // kArmUnstamped: a kArm whose deadline the owner stamps (see the top).
  enum class Kind : uint8_t { kArm, kUnlink, kArmUnstamped };
  // A call_ns that was not read (an unstamped arm not sampled).
  static constexpr int64_t kNoCallTime = -1;
  bool arm() const { return kind != Kind::kUnlink; }

  TimerNode* node;
  uint64_t gen;
  Kind kind;
  // kArm: the call's clock reading; kArmUnstamped: one every kSampleEvery
  // pushes of its ring (the clock read just before the push), else
  // kNoCallTime; kUnlink: 0.
  int64_t call_ns;
};

// A run of the submissions the owner took.
struct SubmissionChunk {
  // 16 bytes of link and count, then 127 submissions of 32: 4,080 bytes, a
  // page with malloc's header.
  static constexpr size_t kCapacity = 127;
  SubmissionChunk* next = nullptr;
  size_t count = 0;
  Submission items[kCapacity];
};

// A run of a ring's slots (see the top). Written by its producer before it
// publishes them, read by the owner after it marked them: plain fields.
struct RingChunk {
  struct Slot {
    TimerNode* node;
    uint64_t gen;
    Submission::Kind kind;
    int64_t call_ns;
  };
  // 16 bytes of link and first index, then 255 slots of 32: 8,176 bytes,
  // two pages with malloc's header.
  static constexpr size_t kCapacity = 255;
  // The next chunk: written by the producer before it publishes the first
  // slot there.
  std::atomic<RingChunk*> next{nullptr};
  // The ring index of items[0].
  uint64_t first = 0;
  Slot items[kCapacity];
};

class Inbox {
 public:
  // The published tick of an owner that works now, and of one with nothing
  // linked.
  static constexpr int64_t kAwake = std::numeric_limits<int64_t>::min();
  static constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
  // The published word of an owner that polls (see the top): it works, or
  // sleeps for at most its poll period.
  static constexpr int64_t kPolling = kAwake + 1;
  // One unstamped push in this many reads the clock for Stats::handoff_*.
  static constexpr uint32_t kSampleEvery = 64;
  // A ring that holds this many submissions not taken wakes the owner.
  static constexpr size_t kWakeAt = 4096;
  // The chunks the owner keeps for the rings: 32 KiB at most.
  static constexpr size_t kSpareChunks = 8;
  // Rings: one per thread number below kSharedRing, and the shared one.
  static constexpr int kRings = 64;
  static constexpr int kSharedRing = kRings - 1;

  // What the owner took: chunks, each ring's in the order pushed. Frees its
  // chunks when destroyed (the owner recycles them instead).
  class Taken {
   public:
    Taken() = default;
    Taken(const Taken&) = delete;
    Taken& operator=(const Taken&) = delete;
    ~Taken();

    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    // Calls `f(items, count)` for each chunk, in order.
    template <class F>
    void ForEachChunk(F&& f) const {
      for (const SubmissionChunk* c = head_; c != nullptr; c = c->next) {
        f(c->items, c->count);
      }
    }

   private:
    friend class Inbox;
    // Appends `s`, with a chunk from `spare` (a chain; null: malloc).
    void Append(const Submission& s, SubmissionChunk** spare);
    // Moves what `other` holds to the end of this.
    void Splice(Taken* other);

    SubmissionChunk* head_ = nullptr;
    SubmissionChunk* tail_ = nullptr;
    size_t size_ = 0;
  };

  // A push due this long after its call or later is not urgent, and the
  // owner fences before a sleep beyond it (see the top): the advancer's
  // longest sleep while submissions come (lib/threads/advancer.h).
  static constexpr int64_t kHorizonNs = 100'000'000;

  // `tick_ns`: the length of a tick, the unit of the published word;
  // `real_time`: whether the clock runs at real speed (else every push is
  // urgent, see the top).
  explicit Inbox(int64_t tick_ns = 1, bool real_time = true);
  Inbox(const Inbox&) = delete;
  Inbox& operator=(const Inbox&) = delete;
  ~Inbox();

  // Lanes: thread numbers modulo lanes() pick where a thread's handles count
  // (the engine's NodeHome of that lane). Four per hardware thread, rounded
  // up to a power of two (at least 4, at most kRings).
  int lanes() const { return lane_mask_ + 1; }
  int LaneOfThisThread() const { return ThreadNumber() & lane_mask_; }

  // Hands arm or unlink `gen` of `node` to the owner, with one reference on
  // the node; `tick` is the tick by which the owner must have taken it
  // (kNever: no hurry), `call_ns` the call's clock reading (0 for a
  // kUnlink). False once closed: then the caller keeps the reference.
  bool Push(TimerNode* node, uint64_t gen, Submission::Kind kind,
            int64_t call_ns, int64_t tick);
  bool Push(const Submission& s, int64_t tick) {
    return Push(s.node, s.gen, s.kind, s.call_ns, tick);
  }
  // What PushUnstamped did.
  enum class Unstamped {
    kPushed,      // handed on, with the node's reference
    kStampFirst,  // not handed on: the owner does not poll; stamp and Push
    kClosed,      // not handed on: closed (the caller keeps the reference)
  };
  // Hint: whether the owner polls now, so that PushUnstamped may succeed.
  bool Polling() const {
    return wake_tick_.load(std::memory_order_relaxed) == kPolling;
  }
  // Hands on arm `gen` of `node` as a kArmUnstamped, if the owner polls
  // (looked at after the slot is in, see the top); `clock` is read for a
  // sampled call_ns.
  Unstamped PushUnstamped(TimerNode* node, uint64_t gen,
                          absl::FunctionRef<int64_t()> clock);
  // Takes back the arm (kArm or kArmUnstamped) `gen` of `node` if it is the
  // latest submission of this thread's ring and the owner has not marked it;
  // the caller then owns its reference, and the owner never sees the node.
  // Reads no node.
  bool Retract(const TimerNode* node, uint64_t gen);

  // The owner: appends what StopPolling took, then every ring's submissions,
  // to `out` (none once closed), and returns how many were pushed since the
  // last Take, taken now or retracted meanwhile. It publishes kPolling while
  // it works if `polling`, else kAwake.
  size_t Take(Taken* out, bool polling = false);
  // The owner, polling, before it is busy for long: publishes kAwake, fences
  // (Heavy), takes what the rings hold and stamps each unstamped arm with
  // `stamp(node, now())` (a reading taken after the take, so after the push),
  // making it a kArm; the next Take hands them on. Does nothing unless the
  // owner polled since its last fence.
  void StopPolling(absl::FunctionRef<int64_t()> now,
                   absl::FunctionRef<void(TimerNode*, int64_t)> stamp);
  // The owner, done with `taken`: empties it, keeping up to kSpareChunks of
  // its chunks for later takes and freeing the others.
  void Recycle(Taken* taken);
  // The owner, before it sleeps: publishes `wake_tick` (when it will run
  // next anyway; kPolling when it polls), fences if it must (see the top:
  // `now_tick` is its latest clock reading, in ticks), and returns whether
  // no ring holds, not taken, kWakeAt submissions or (unless polling) an
  // arm. When false, it should work again.
  bool Idle(int64_t wake_tick, int64_t now_tick);
  // The owner sleeps until woken (Wake, or a push that needs it) or closed,
  // or (SleepFor) `timeout` has passed; then it works (the published tick is
  // kAwake, or still kPolling).
  void Sleep() ABSL_LOCKS_EXCLUDED(sleep_mu_);
  void SleepFor(absl::Duration timeout) ABSL_LOCKS_EXCLUDED(sleep_mu_);
  // Wakes the owner (the poller at a release, a thread that needs a round).
  void Wake() ABSL_LOCKS_EXCLUDED(sleep_mu_);

  // Refuses every later Push, wakes the owner for good, and appends what
  // the rings hold to `out`. Once the owner has stopped taking.
  void Close(std::vector<Submission>* out) ABSL_LOCKS_EXCLUDED(sleep_mu_);

  // The calling thread, exiting, gave its number back: from now on it
  // pushes to the shared ring.
  static void LeaveNumber();

 private:
  struct Ring {
    // The producer's: the thread holding the ring's number (the shared
    // ring's pushers, under `producer_mu`).
    alignas(64) SpinLock producer_mu{LockRank::kRing};
    RingChunk* tail = nullptr;  // where the next push goes
    uint64_t pushed = 0;        // the index of the next slot
    uint32_t samples = 0;       // unstamped pushes, ever
    // Written by the producer, read by the owner: the slots in (the count,
    // shifted left by one: a release store publishes them) and the mark
    // (bit 0: no slot below the count may be taken out of the ring; see the
    // top).
    std::atomic<uint64_t> published{0};
    // Pushes ever, retracted ones too (relaxed), for the owner's rate.
    std::atomic<uint64_t> pushes{0};
    // The owner's: the chunk of its next slot, and that slot's index.
    alignas(64) RingChunk* head = nullptr;
    uint64_t taken = 0;
    uint64_t pushes_seen = 0;  // `pushes` at the owner's last take
    // Written by the owner, read by the producer: `taken` (relaxed), for
    // the producer's kWakeAt count; a chunk given back for the producer's
    // next (null: none).
    alignas(64) std::atomic<uint64_t> taken_mirror{0};
    std::atomic<RingChunk*> spare{nullptr};
  };

  class ProducerLock;

  // This thread's number (see the top); -1 until first needed:
  // constant-initialized, so reading it costs no thread_local
  // initialization check.
  static inline thread_local int tls_thread_number = -1;
  static int ThreadNumber() {
    int number = tls_thread_number;
    if (number < 0) number = tls_thread_number = ClaimThreadNumber();
    return number;
  }
  // The lowest number below kSharedRing that no live thread holds (the
  // calling thread's until it exits), else kSharedRing.
  static int ClaimThreadNumber();

  // The ring of thread number `number`, created at its first push.
  Ring& RingOf(int number);
  // Writes a slot at the producer's end and publishes it (seq_cst if
  // `urgent` or fences are not asymmetric, else release).
  void Publish(Ring& ring, TimerNode* node, uint64_t gen, Submission::Kind kind,
               bool urgent, int64_t call_ns);
  // The producer: takes its latest slot out of the ring if the owner has
  // not marked it since it was pushed (see the top); false: the owner (or
  // Close) has it, or will take it at its next Take.
  static bool TryRewind(Ring& ring);
  // The owner: the count of slots in `ring` that it may take, marked so
  // that none below it is rewound.
  static uint64_t MarkPublished(Ring& ring, uint64_t taken);
  // The owner: moves the published slots of `ring` to `out`, giving back
  // each chunk it passes; returns how many pushes came since its last take
  // (taken now, or retracted).
  size_t TakeRing(Ring& ring, Taken* out);
  // The owner: calls `f(ring)` for each ring made so far, reading which
  // exist with `order` (seq_cst where that read is the load of a
  // store-then-load pair: Idle, StopPolling, Close).
  template <class F>
  void ForEachRing(std::memory_order order, F&& f) {
    for (uint64_t created = created_.load(order); created != 0;
         created &= created - 1) {
      f(*rings_[__builtin_ctzll(created)].load(std::memory_order_acquire));
    }
  }
  // The owner's look (Idle): whether `ring` holds, not taken, what keeps it
  // awake.
  bool NeedsRound(Ring& ring, bool polling);
  // Whether a push of `tick`, called at `call_ns`, is urgent (see the top).
  bool Urgent(int64_t tick, int64_t call_ns) const {
    return tick != kNever &&
           (!real_time_ || tick - call_ns / tick_ns_ < horizon_ticks_);
  }
  static void FreeChain(SubmissionChunk* head);
  static void FreeRingChain(RingChunk* head);

  const int lane_mask_;  // lanes() - 1
  const int64_t tick_ns_;
  const int64_t horizon_ticks_;
  const bool real_time_;
  // AsymmetricFence::Available(), read once.
  const bool asymmetric_;
  // The rings (null until their thread's first push), and which exist (bit i:
  // ring i), set once by the creator (release), read by the owner.
  std::atomic<Ring*> rings_[kRings] = {};
  std::atomic<uint64_t> created_{0};
  // The owner's published tick: written by the owner, read by pushers.
  std::atomic<int64_t> wake_tick_{kAwake};
  std::atomic<bool> closed_{false};
  // The owner's: whether it published kPolling since its last Heavy fence
  // (a pusher may then have a plain unstamped push it has not seen); what
  // StopPolling took, for the next Take; its spare chunks.
  bool polled_since_fence_ = false;
  Taken held_;
  size_t held_pushes_ = 0;  // the slots StopPolling passed
  SubmissionChunk* spare_ = nullptr;
  size_t spare_count_ = 0;

  Mutex sleep_mu_{LockRank::kOwnerSleep};
  CondVar sleep_cv_;
  bool woken_ ABSL_GUARDED_BY(sleep_mu_) = false;
  bool sleep_closed_ ABSL_GUARDED_BY(sleep_mu_) = false;
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_HANDOFF_INBOX_H_
