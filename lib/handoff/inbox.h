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
//            before the push, which the lane's lock publishes); `call_ns`
//            is the reading of the wheel's clock that the call making the
//            arm took (its deadline counts from it), so that the owner can
//            measure how long the arm waited (Stats::handoff_*);
//   kUnlink  arm `gen` ended (a Stop): take the node out of its bucket if it
//            is still linked for that arm, so that a stopped far timer does
//            not keep its memory until its bucket comes due.
// The owner checks the arm against the node's state word when it takes the
// submission; one that a later Stop or Reset made stale does nothing. Each
// submission holds one reference on its node for the owner (or a bucket)
// to release.
//
// Lanes: four per hardware thread, rounded up to a power of two (at least
// 4, at most kMaxLanes), each on cache lines of its own: a spin lock and a
// chain of chunks of submissions. A thread pushes to the lane of its number:
// the lowest number no other live thread of the process holds, taken on first
// use and given back when the thread exits (beyond kMaxLanes live threads,
// numbers go round robin). So threads share a lane only when more of them are
// alive than there are lanes: more lanes than cores, because a lane shared by
// two threads on two cores costs each call its lock and its cache lines
// crossing between the cores (two threads on one lane ran 7 times slower than
// one thread alone), and callers may outnumber the cores. The owner takes a
// lane's whole chain at once, and looks only at the lanes marked active (a
// bit each in `active_`, set by a lane's first push after a take), so a
// round costs the lanes in use, not all of them. The lane's index also
// picks where the thread's nodes live (NodeHome).
//
// Chunks: a lane keeps its submissions in chunks of SubmissionChunk::kCapacity
// (about a page), not in one growing array, so that a push never copies what
// came before it: when the owner falls behind, an array doubles under the
// lane's lock, copying the whole backlog while the pusher (and the owner's
// next take) waits. A push that fills its chunk starts a new one (one malloc
// per kCapacity pushes). The owner, done with what it took (Recycle), keeps up
// to kSpareChunks of the chunks and hands one to each lane it takes, so a lane
// at a steady rate reuses the same few; the rest go back to malloc, so a
// backlog's memory does not stay.
//
// Wake-ups: no syscall per call, no thread spinning. The owner publishes
// the tick at which it will run anyway (its next release, kNever with
// nothing linked; kAwake while it works). A push wakes it only when the
// submission is due before that tick, or when its lane has reached
// kWakeAt submissions (which bounds what waits, e.g. the stops of far
// timers). While submissions keep coming (Take says whether any came since
// the last take, retracted ones too), the owner runs at least every
// ~100 ms anyway (lib/threads/advancer.h), so that a thread making far timers
// and stopping them at a low rate does not wake it for each one. No wake-up is
// lost: a pusher reads the published tick under its lane's lock, after the
// lane's active bit is set, and the owner, after publishing the tick, looks
// at every active lane under its lock before it sleeps (Idle): either it
// sees the push, or the pusher sees the new tick.
//
// Memory ordering: the lane locks order the pushes with the owner's looks.
// The active bits and the published tick are a store-then-load pair on each
// side (a pusher sets the bit, then loads the tick; the owner stores the
// tick, then loads the bits), so both sides use seq_cst: either the owner's
// load sees the bit, or the pusher's load comes after the owner's store in
// the single order of seq_cst operations and sees the new tick. On x86 the
// pusher's bit is a locked `or` (once per lane per round) and its load a
// plain load.
//
// Deadlines stamped by the owner (#23's "no clock read at the call"): while
// callers push at a high rate, the owner polls (it looks at the lanes at
// least every Advancer's poll period, and publishes kPolling instead of a
// tick). A new timer's first arm may then go in unstamped
// (kArmUnstamped, PushUnstamped): its node holds only its delay, and its
// deadline is stamped later, by the owner, from a clock reading taken after
// it has the submission in hand, so after the call: never early, and late
// by the hand-off wait, which the polling bounds. Whoever needs a deadline
// first stamps it (TimerNode::StampDeadline). An owner about to be busy for
// long (a cascade of many slices, the user's executor running inline, a
// request) stops polling first (StopPolling): it publishes kAwake and stamps,
// in place, what its lanes hold unstamped, so that no submission waits for
// its deadline beyond that; from then on callers stamp their own. No arm
// stays unstamped unseen: a pusher decides under its lane's lock, after its
// submission is in the lane and its active bit set, by loading the published
// word (seq_cst); an owner that stops polling stores it (seq_cst) before it
// looks at the active lanes (StopPolling, Idle), so either the pusher sees
// the change and stamps its own, or the owner sees the submission.
//
// Stop before take: a Stop on the thread that made the timer, before the
// owner took it, takes the kArm back out of the lane (Retract), so that an
// AfterFunc + Stop pair never leaves the caller's core.
//
// Shutdown: Close makes every later Push fail (the caller keeps its
// reference and the node stays unarmed) and hands back what the lanes hold.
//
// Thread-safety: thread-safe. Push, Retract and the owner's Take and Idle
// take one lane's lock at a time (kLane, a leaf); Sleep and Wake take
// `sleep_mu_` (kOwnerSleep, a leaf), never under a lane lock. The spare
// chunks (`spare_`) are the owner's: only Take and Recycle touch them, and
// only the owner calls those.

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
  // pushes of its lane (the clock read just before the push), else
  // kNoCallTime; kUnlink: 0.
  int64_t call_ns;
};

// A run of submissions in a lane, or among what the owner took.
struct SubmissionChunk {
  // 16 bytes of link and count, then 127 submissions of 32: 4,080 bytes, a
  // page with malloc's header.
  static constexpr size_t kCapacity = 127;
  SubmissionChunk* next = nullptr;
  size_t count = 0;
  Submission items[kCapacity];
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
  // A lane that holds this many submissions wakes the owner.
  static constexpr size_t kWakeAt = 4096;

  // The chunks the owner keeps for the lanes (Recycle): 32 KiB at most.
  static constexpr size_t kSpareChunks = 8;

  // What the owner took: chunks, each lane's in the order pushed. Frees its
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
    // Appends the chain `head`..`tail` of `count` submissions.
    void Append(SubmissionChunk* head, SubmissionChunk* tail, size_t count);

    SubmissionChunk* head_ = nullptr;
    SubmissionChunk* tail_ = nullptr;
    size_t size_ = 0;
  };

  Inbox();
  Inbox(const Inbox&) = delete;
  Inbox& operator=(const Inbox&) = delete;
  ~Inbox();

  // Lanes beyond this would not fit the bits of `active_`.
  static constexpr int kMaxLanes = 64;

  // A power of two.
  int lanes() const { return lane_mask_ + 1; }
  // The calling thread's lane: its number (see the top of this file), taken
  // on first use, modulo the lanes.
  int LaneOfThisThread() const {
    int number = tls_thread_number;
    if (number < 0) number = tls_thread_number = ClaimThreadNumber();
    return number & lane_mask_;
  }

  // Hands `s` to the owner, with one reference on its node; `tick` is the
  // tick by which the owner must have taken it (kNever: no hurry). False
  // once closed: then the caller keeps the reference.
  bool Push(const Submission& s, int64_t tick) {
    return Push(s.node, s.gen, s.kind, s.call_ns, tick);
  }
  // The same, field by field: a Submission built on the caller's stack and
  // copied whole stalls the copy on its piecewise stores (8 ns of the
  // pair by id, perf).
  bool Push(TimerNode* node, uint64_t gen, Submission::Kind kind,
            int64_t call_ns, int64_t tick);
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
  // (decided under the lane's lock, see the top); `clock` is read for a
  // sampled call_ns.
  Unstamped PushUnstamped(TimerNode* node, uint64_t gen,
                          absl::FunctionRef<int64_t()> clock);
  // Takes back the kArm (or kArmUnstamped) of arm `gen` of `node` if it is
  // still among the latest submissions of this thread's lane; the caller
  // then owns its reference, and the owner never sees the node.
  bool Retract(const TimerNode* node, uint64_t gen);

  // The owner: appends every lane's submissions to `out` (none once
  // closed), and returns how many were pushed since the last Take, taken
  // now or retracted meanwhile. It publishes kPolling while it works if
  // `polling`, else kAwake.
  size_t Take(Taken* out, bool polling = false);
  // The owner, polling, before it is busy for long: publishes kAwake, then
  // stamps each unstamped arm its lanes hold, under the lane's lock, with
  // `stamp(node, now())` (a reading taken under that lock, so after the
  // push), and makes it a kArm. Does nothing unless kPolling is published.
  void StopPolling(absl::FunctionRef<int64_t()> now,
                   absl::FunctionRef<void(TimerNode*, int64_t)> stamp);
  // The owner, done with `taken`: empties it, keeping up to kSpareChunks of
  // its chunks for the lanes and freeing the others.
  void Recycle(Taken* taken);
  // The owner, before it sleeps: publishes `wake_tick` (when it will run
  // next anyway; kPolling when it polls) and returns whether no lane holds a
  // submission that is due before it, nor kWakeAt of them, nor (unless
  // polling) an unstamped arm. When false, it should work again.
  bool Idle(int64_t wake_tick);
  // The owner sleeps until woken (Wake, or a push that needs it) or closed,
  // or (SleepFor) `timeout` has passed; then it works (the published tick is
  // kAwake, or still kPolling).
  void Sleep() ABSL_LOCKS_EXCLUDED(sleep_mu_);
  void SleepFor(absl::Duration timeout) ABSL_LOCKS_EXCLUDED(sleep_mu_);
  // Wakes the owner (the poller at a release, a thread that needs a round).
  void Wake() ABSL_LOCKS_EXCLUDED(sleep_mu_);

  // Refuses every later Push, wakes the owner for good, and appends what
  // the lanes hold to `out`.
  void Close(std::vector<Submission>* out) ABSL_LOCKS_EXCLUDED(sleep_mu_);

 private:
  // Each on cache lines of its own.
  struct alignas(64) Lane {
    SpinLock mu{LockRank::kLane};
    // The chain of chunks, oldest first (null: none); pushes go to `tail`,
    // and `before_tail` is the chunk before it (null: none), which Retract
    // looks into too.
    SubmissionChunk* head ABSL_GUARDED_BY(mu) = nullptr;
    SubmissionChunk* tail ABSL_GUARDED_BY(mu) = nullptr;
    SubmissionChunk* before_tail ABSL_GUARDED_BY(mu) = nullptr;
    size_t count ABSL_GUARDED_BY(mu) = 0;      // submissions in the chain
    size_t unstamped ABSL_GUARDED_BY(mu) = 0;  // kArmUnstamped among them
    size_t pushes ABSL_GUARDED_BY(mu) = 0;     // since the last Take
    uint32_t samples ABSL_GUARDED_BY(mu) = 0;  // unstamped pushes, ever
    // The earliest tick of a submission in `submissions`, or kNever.
    int64_t earliest ABSL_GUARDED_BY(mu) = kNever;
    bool closed ABSL_GUARDED_BY(mu) = false;
  };

  // This thread's number for picking a lane; -1 until first needed:
  // constant-initialized, so reading it costs no thread_local
  // initialization check.
  static inline thread_local int tls_thread_number = -1;
  // The lowest number below kMaxLanes that no live thread holds (the
  // calling thread's until it exits), else the next of a round robin.
  static int ClaimThreadNumber();

  Lane& LaneAt(int index) { return lanes_[static_cast<size_t>(index)]; }
  // Appends a submission to lane `index` (its lock held), and marks the
  // lane active at its first push since the last Take.
  void Append(Lane& lane, int index, TimerNode* node, uint64_t gen,
              Submission::Kind kind, int64_t call_ns)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(lane.mu);
  // Frees the chain that starts at `head`.
  static void FreeChain(SubmissionChunk* head);

  const int lane_mask_;  // lanes() - 1
  std::unique_ptr<Lane[]> lanes_;
  // Bit i: lane i was pushed to since the owner last took it. Set by the
  // lane's first push after a take, under its lock; cleared by Take.
  std::atomic<uint64_t> active_{0};
  // The owner's published tick: written by the owner, read by pushers under
  // their lane's lock.
  std::atomic<int64_t> wake_tick_{kAwake};
  // The owner's spare chunks, a chain of `spare_count_` (see the top).
  SubmissionChunk* spare_ = nullptr;
  size_t spare_count_ = 0;

  Mutex sleep_mu_{LockRank::kOwnerSleep};
  CondVar sleep_cv_;
  bool woken_ ABSL_GUARDED_BY(sleep_mu_) = false;
  bool closed_ ABSL_GUARDED_BY(sleep_mu_) = false;
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_HANDOFF_INBOX_H_
