// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// loop_engine.h: the machine behind a LoopWheel (a face: the event-loop
// wheel). It drives the single-owner core (lib/core/wheel_core.h) from the
// caller's thread: the caller is the core's owner, so nothing here is
// atomic or locked, and the core's Advance runs inside RunDue. RunDue runs
// the due callbacks first, then a share of the cascades the core spreads
// over the ticks before they are needed (WheelCore::CascadeSome), so a
// bucket of 400,000 timers cascading delays no callback.
//
// A timer is a LoopNode (loop_node.h): the core's links and expiration tick
// (CoreNode), the deadline, a state and the callable inline; a periodic
// timer's node also holds its scheduler. Where a pending node is: linked in the
// core (not due yet), or in `due_`, the list of due timers RunDue works through
// (Advance appends to it; so do arms made due by a callback, which therefore
// run in the same RunDue, after it, never recursively).
//
// A turn that moves the wheel also takes the next tick's bucket out of the
// core ahead of its release (`staged_`, WheelCore::TakeNextBucket) and moves
// each of its timers to `due_` once the turn's time reaches its deadline:
// so a timer due early in the next tick runs in the turn that finds it due,
// not at the tick's end, and never before its deadline.
//
//   state           what it means                       pending (API)
//   kPending        in the core, `due_` or `staged_`    yes
//   kRunning        its callback runs, no re-arm        no
//   kRunningArmed   its callback runs, re-armed after   yes
//                   (periodic, or Reset during the run)
//   kDone, kStopped ran, or stopped; Reset arms again   no
//   kCancelled      the wheel is gone                   no
//
// Lifetime: a node is counted (`refs`): one per LoopTimer handle, one while
// the wheel holds it (pending or running); the last release destroys it and
// gives its memory back to the engine's pools (loop_node.h). A timer held
// by id (LoopTimerId) has only the wheel's hold: its node goes as soon as
// the timer ends (a Stop, its run, the close), and an id is found again
// through Find, which checks it against the engine's chunk table and the
// node's generation (loop_node.h) before it trusts the node. The
// engine is counted too: one for the LoopWheel, one per live node a handle
// may hold (not those held by id: none outlives the close) and one for a
// RunDue in progress, so a callback may destroy the LoopWheel (Close
// cancels every pending timer; RunDue returns after that callback) and a
// handle may outlive the wheel.
//
// The hot path (AfterFunc or At, then Stop, from one loop turn) divides by
// no instruction (deadlines become ticks through a precomputed reciprocal,
// core/divider.h), calls nothing virtual and allocates nothing but a block
// from a free list.
//
// Thread-safety: thread-compatible: one thread, the loop's, for everything
// (CheckThread verifies it in debug builds).

#ifndef TIMINGWHEEL_LIB_FACES_LOOP_ENGINE_H_
#define TIMINGWHEEL_LIB_FACES_LOOP_ENGINE_H_

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/time_base.h"
#include "core/bucket.h"
#include "core/divider.h"
#include "core/wheel_core.h"
#include "faces/loop_node.h"
#include "timingwheel/loop_wheel.h"
#include "timingwheel/scheduler.h"

namespace timingwheel::internal {

class LoopEngine {
 public:
  static absl::StatusOr<LoopEngine*> Create(LoopOptions options);
  LoopEngine(const LoopEngine&) = delete;
  LoopEngine& operator=(const LoopEngine&) = delete;

  // The LoopWheel goes: cancels every pending timer, then lets go.
  void CloseAndRelease();

  // A new one-shot timer running `f` after `d` (due now for d <= 0), or at
  // the steady_clock time `steady_ns`: its node, with a reference for a
  // LoopTimer, or null when refused (RefuseAfter and RefuseSteady say why);
  // the ...Id ones hold it by id and return the id's value, 0 when refused.
  // Inline with the arm they make, and no status on the way: a loop's
  // AfterFunc, or At with its cached time, is its hot path (At's is at the
  // end of this header, AfterFunc's in loop_wheel.cc). Always inline: left
  // to g++, the At path stayed a call in the user's loop, about 1 ns more a
  // pair.
  ABSL_ATTRIBUTE_ALWAYS_INLINE
  LoopNode* TryAfter(absl::Duration d, CallbackRef f) {
    int64_t deadline_ns;
    if (!AdmitAfter(d, f, &deadline_ns)) return nullptr;
    return ArmNew(NewOneShotNode(f), f, deadline_ns, 2);
  }
  ABSL_ATTRIBUTE_ALWAYS_INLINE
  uint64_t TryAfterId(absl::Duration d, CallbackRef f) {
    int64_t deadline_ns;
    if (!AdmitAfter(d, f, &deadline_ns)) return 0;
    return NewOneShotId(f, deadline_ns).value();
  }
  ABSL_ATTRIBUTE_ALWAYS_INLINE
  LoopNode* TrySteady(int64_t steady_ns, CallbackRef f) {
    int64_t deadline_ns;
    if (!AdmitSteady(steady_ns, f, &deadline_ns)) return nullptr;
    return ArmNew(NewOneShotNode(f), f, deadline_ns, 2);
  }
  ABSL_ATTRIBUTE_ALWAYS_INLINE
  uint64_t TrySteadyId(int64_t steady_ns, CallbackRef f) {
    int64_t deadline_ns;
    if (!AdmitSteady(steady_ns, f, &deadline_ns)) return 0;
    return NewOneShotId(f, deadline_ns).value();
  }
  // Why TryAfter (TryAfterId) refused a timer after `d` running `f`;
  // `caller` names the member.
  absl::Status RefuseAfter(absl::Duration d, CallbackRef f,
                           const char* caller) const;
  // Why TrySteady (TrySteadyId) refused a timer at `steady_ns` running `f`.
  absl::Status RefuseSteady(int64_t steady_ns, CallbackRef f) const;
  // A new timer at the clock time `when`, or when `scheduler` says, held by
  // a LoopTimer or (ScheduleAtId) by id; `caller` names the member in
  // errors.
  absl::StatusOr<LoopTimer> ScheduleAt(absl::Duration when, CallbackRef f,
                                       const char* caller);
  absl::StatusOr<LoopTimerId> ScheduleAtId(absl::Duration when, CallbackRef f,
                                           const char* caller);
  absl::StatusOr<LoopTimer> SchedulePeriodic(
      std::unique_ptr<Scheduler> scheduler, CallbackRef f, const char* caller);

  std::optional<absl::Duration> TimeUntilNext();
  int64_t RunDue(std::optional<absl::Duration> now);
  int64_t Pending() const { return pending_; }
  bool steady() const { return time_.steady(); }

  // The operations of a LoopTimer on `node`, one of this engine's; Stop's
  // kHeld says how the node is held (a LoopTimer's node is never held by
  // id), where the caller knows.
  enum class Held { kByHandle, kById, kEither };
  template <Held kHeld = Held::kEither>
  bool Stop(LoopNode* node) {
    using State = LoopNode::State;
    if (closed_) return false;  // every pending timer was cancelled
    switch (node->state) {
      case State::kPending:
        Unlink(node);
        --pending_;
        // A handle keeps the node; one held by id goes.
        if constexpr (kHeld == Held::kByHandle) {
          node->state = State::kStopped;
          Unref(node);
        } else if constexpr (kHeld == Held::kById) {
          DropById(node);
        } else {
          node->state = State::kStopped;
          Drop(node);
        }
        return true;
      case State::kRunningArmed:
        node->state = State::kRunning;
        node->has_rearm = false;
        --pending_;
        return true;
      default:
        return false;
    }
  }
  bool Reset(LoopNode* node, absl::Duration d);
  std::optional<absl::Duration> Deadline(const LoopNode* node) const;
  absl::Duration Now() const { return time_.clock().Now(); }

  // The node `id` names, if it names a live timer of this wheel; else null.
  LoopNode* Find(LoopTimerId id) const {
    const uint64_t value = id.value();
    const auto link = static_cast<uint32_t>(value >> kIdLinkShift);
    const auto tag = static_cast<uint8_t>((value >> kIdTagShift) & 3);
    void* const address = NodeLink::At(link);
    // A chunk of this engine's pool of that block size (so mapped, and
    // `link` on a block's start), then the block's generation.
    if (tag == 0 || chunks_.TagAt(link) != tag ||
        ReadIdWord(address) !=
            static_cast<int32_t>(LoopNode::kByIdBit |
                                 (value & kIdGenerationMask))) {
      return nullptr;
    }
    return static_cast<LoopNode*>(address);
  }

  // Node references, for the handles.
  static void Ref(LoopNode* node) { ++node->refs; }
  void Unref(LoopNode* node) {
    if (--node->refs == 0) Destroy(node);
  }

  // In a debug build, aborts with a message unless the calling thread is
  // the wheel's (the first to call a member); `what` names the member.
  void CheckThread(const char* what) {
#ifndef NDEBUG
    CheckThreadSlow(what);
#else
    (void)what;
#endif
  }

 private:
  explicit LoopEngine(LoopOptions options);
  ~LoopEngine() = default;

  void RefEngine() { ++refs_; }
  void UnrefEngine() {
    if (--refs_ == 0) delete this;
  }
  void CheckThreadSlow(const char* what);

  // Whether a new timer running `f` may be added; if not, RefuseNew says
  // why.
  bool MayAdd(CallbackRef f) const {
    return f.ops != nullptr && !closed_ &&
           (max_pending_ == 0 || pending_ < max_pending_);
  }
  absl::Status RefuseNew(CallbackRef f, const char* caller) const;
  // Whether a new timer running `f` after `d` (or at the steady_clock time
  // `steady_ns`) is taken, and its deadline in `*deadline_ns`; if not,
  // RefuseAfter (RefuseSteady) says why.
  bool AdmitAfter(absl::Duration d, CallbackRef f, int64_t* deadline_ns) {
    return d != -absl::InfiniteDuration() && MayAdd(f) &&
           time_.TryDeadlineAfter(time_.NowNs(), d, deadline_ns, &delays_);
  }
  bool AdmitSteady(int64_t steady_ns, CallbackRef f, int64_t* deadline_ns) {
    return time_.steady() && MayAdd(f) &&
           SteadyDeadline(steady_ns, deadline_ns);
  }
  // The deadline of a timer at the steady_clock time `steady_ns`, in
  // `*deadline_ns`; false when it is past the supported range.
  bool SteadyDeadline(int64_t steady_ns, int64_t* deadline_ns) const {
    if (__builtin_sub_overflow(steady_ns, origin_ns_, deadline_ns)) {
      // Far in the past: due at once. (Far in the future: out of range.)
      *deadline_ns = steady_ns < 0 ? std::numeric_limits<int64_t>::min()
                                   : std::numeric_limits<int64_t>::max();
    }
    return *deadline_ns <= max_deadline_ns_;
  }
  // The deadline of a new timer running `f` at the clock time `when`, or
  // why it is refused.
  absl::StatusOr<int64_t> AtDeadline(absl::Duration when, CallbackRef f,
                                     const char* caller) const;
  // A new one-shot node running `f`, armed at `deadline_ns`, with a
  // reference for the handle; or held by id.
  LoopTimer NewOneShot(CallbackRef f, int64_t deadline_ns) {
    return LoopTimer(this, ArmNew(NewOneShotNode(f), f, deadline_ns, 2));
  }
  LoopTimerId NewOneShotId(CallbackRef f, int64_t deadline_ns) {
    LoopNode* node = NewOneShotNode(f);
    id_generation_ = (id_generation_ + 1) & kIdGenerationMask;
    const uint64_t tag = static_cast<uint64_t>(node->kind) + 1;  // 1 to 3
    ArmNew(node, f, deadline_ns,
           static_cast<int32_t>(LoopNode::kByIdBit | id_generation_));
    return LoopTimerId(uint64_t{NodeLink::Of(node)} << kIdLinkShift |
                       tag << kIdTagShift | id_generation_);
  }
  // A new one-shot node for `f`, not yet armed.
  LoopNode* NewOneShotNode(CallbackRef f) {
    LoopNode* node;
    if (f.ops->stateless) {
      node =
          new (bare_nodes_.Allocate()) LoopNode(LoopNode::Kind::kBare, f.ops);
    } else if (f.ops->size <= LoopNode::kSmallCallable) {
      node =
          new (small_nodes_.Allocate()) LoopNode(LoopNode::Kind::kSmall, f.ops);
    } else {
      node =
          new (wide_nodes_.Allocate()) LoopNode(LoopNode::Kind::kWide, f.ops);
    }
    return node;
  }
  // A new periodic node, likewise.
  LoopTimer NewPeriodic(CallbackRef f, std::unique_ptr<Scheduler> scheduler,
                        int64_t deadline_ns);
  // Moves `f` into the new `node` and arms it, with `refs` (2: the
  // handle's and the wheel's; or kByIdBit | the id's generation).
  LoopNode* ArmNew(LoopNode* node, CallbackRef f, int64_t deadline_ns,
                   int32_t refs) {
    // A stateless callable is not kept (trivially destructible: the
    // caller's object goes as it is).
    if (node->kind != LoopNode::Kind::kBare) {
      f.ops->move_to(f.callable, node->callable());
    }
    // A node a handle may hold keeps the engine; one held by id goes with
    // the wheel's hold, by the close at the latest.
    if (refs > 0) RefEngine();
    node->refs = refs;
    ++pending_;
    Arm(node, deadline_ns);
    return node;
  }
  // Lets go of the wheel's hold on `node`: its reference, or, held by id,
  // the node.
  void Drop(LoopNode* node) {
    if (node->by_id()) {
      DropById(node);
    } else {
      Unref(node);
    }
  }
  void DropById(LoopNode* node) {
    // Its id is spent from here on, also for the callable's destructor,
    // which may call into the wheel (and so may free other nodes).
    node->refs = 0;
    if (node->ops->destroy != nullptr) node->ops->destroy(node->callable());
    // A one-shot node: its pool by its kind.
    (this->*kOneShotPools[static_cast<int>(node->kind)]).Free(node);
  }
  // Links `node` (the wheel holds it) at `deadline_ns`, into `due_` if due.
  void Arm(LoopNode* node, int64_t deadline_ns) {
    node->state = LoopNode::State::kPending;
    node->has_rearm = false;
    // Sets the deadline (the expiration), linked or due.
    if (core_.Add(node, deadline_ns)) return;
    // Due by the wheel's tick: the next (or this) RunDue.
    AppendDue(node);
  }
  // Appends `node`, pending and out of the core, to `due_`.
  void AppendDue(CoreNode* node) {
    node->next = static_cast<uint32_t>(due_.size());
    due_.push_back(node);
  }
  // The earliest time of the clock in a later tick than the wheel's.
  absl::Duration NextTickAt() const {
    const int64_t next = core_.now_tick() + 1;
    return next > kMaxTick / time_.tick_ns()
               ? absl::InfiniteDuration()
               : time_.ToClock(next * time_.tick_ns());
  }
  // The last whole tick at `now_ns` (0 for a time before the origin).
  int64_t TickAt(int64_t now_ns) const {
    return now_ns > 0 ? by_tick_.Floor(now_ns) : 0;
  }
  // Empties `due_` (each timer in it ran, was stopped or is taken) and
  // gives back its room beyond a burst's worth.
  void ResetDue();
  // Orders the due timers from `due_[first]` on, which Advance appended
  // tick by tick, by deadline within each tick, to a sixteenth of a tick
  // (a counting sort; more than 64Ki timers, a burst, are left as they
  // came). So the timers whose deadlines came earliest in their tick,
  // the latest by the tick's rounding up, run first, and the time it takes
  // to run a tick's timers falls on those that waited least.
  void OrderDue(size_t first);
  // The parts of a tick that OrderDue and Stage order by: the part of tick
  // `tick` a deadline falls in, non-decreasing in the deadline (the
  // deadlines of tick t lie in ((t - 1) * tick_ns, t * tick_ns]).
  static constexpr int kTickParts = 16;
  struct TickParts {
    TickParts(int64_t tick, int64_t tick_ns)
        : start_ns(tick > 0 ? (tick - 1) * tick_ns : 0),
          per_ns(static_cast<double>(kTickParts) /
                 static_cast<double>(tick_ns)) {}
    int operator()(int64_t expiration) const {
      const int64_t into = expiration - 1 - start_ns;
      if (into <= 0) return 0;
      return std::min(kTickParts - 1,
                      static_cast<int>(static_cast<double>(into) * per_ns));
    }
    const int64_t start_ns;
    const double per_ns;
  };
  // Orders `(*list)[begin, end)`, the timers of `tick`, by the part of the
  // tick their deadlines fall in (kTickParts of them) and sets each node's
  // index to its place, with `index_bit`; with `part_ends`, the end of each
  // part's range there (kTickParts of them).
  void OrderTick(std::vector<CoreNode*>* list, size_t begin, size_t end,
                 int64_t tick, uint32_t index_bit, size_t* part_ends);
  // Takes the next tick's bucket out of the core ahead of its release,
  // ordered, into `staged_` (when none is staged and it holds at most a
  // burst's worth), then moves each staged timer due by `now_ns` to `due_`.
  // So a timer whose deadline passed early in the next tick runs in the
  // turn that finds it due, not a tick later: the tick's rounding up no
  // longer adds to the loop's lateness in waking.
  void Stage(int64_t now_ns);
  // Moves every staged timer left to `due_` (the staged tick came).
  void UnstageAll();
  // Takes a kPending node out of the core, `due_` or `staged_`. A pending
  // node out of the core (linked in none of its lists) is in `staged_` if
  // its index has kStagedBit, else in `due_`, whoever put it
  // there: Arm, for one due when armed, or the core's Advance, which hands
  // a bucket's due timers over unlinked, so that a callback may stop or
  // reset a timer due in the same RunDue that has not run yet.
  void Unlink(LoopNode* node) {
    if (node->linked()) {
      core_.Remove(node);
    } else if ((node->due_index() & kStagedBit) != 0) {
      staged_[node->due_index() & ~kStagedBit] = nullptr;
    } else {
      due_[node->due_index()] = nullptr;  // RunDue skips it
    }
  }
  // One run, and what follows it (done, re-arm, the schedule's next run).
  void Run(LoopNode* node);
  void AfterRun(LoopNode* node, int64_t run_deadline_ns);
  // The last reference to a node a handle held went: destroys the
  // callable (unless the close did), frees the node and lets go of the
  // engine.
  void Destroy(LoopNode* node);

  // A LoopTimerId: the node's link, the tag of its pool (bare 1, small 2,
  // wide 3; periodic timers are not held by id) and the generation.
  static constexpr int kIdLinkShift = 33;
  static constexpr int kIdTagShift = 31;
  static constexpr uint32_t kIdGenerationMask = LoopNode::kByIdBit - 1;

  TimeBase time_;
  // time_.origin() in ns: for SteadyClock(), steady_clock's reading at the
  // origin, in ns since its epoch.
  const int64_t origin_ns_;
  const Divider by_tick_;          // divides by time_.tick_ns()
  const int64_t max_deadline_ns_;  // the last whole tick below 2^63 ns
  const int64_t max_pending_;
  CeilNsCache delays_;  // AfterFunc's last delay
  // The last id's generation, masked when used; a new engine's starts
  // where no other engine's did.
  uint32_t id_generation_;
  // Which chunks of the node arena are the pools' below (before them: they
  // mark it).
  LoopChunkTable chunks_;
  // The nodes' memory: neighbours in a bucket were mostly made one after
  // another, so a flush walks memory that is mostly contiguous. Each keeps
  // LoopOptions::spare_timers free blocks and gives back the rest.
  LoopNodePool bare_nodes_;
  LoopNodePool small_nodes_;
  LoopNodePool wide_nodes_;
  LoopNodePool periodic_nodes_;
  // The pools of one-shot nodes, by LoopNode::Kind (their nodes are
  // trivially destructible).
  static constexpr LoopNodePool LoopEngine::*kOneShotPools[] = {
      &LoopEngine::bare_nodes_, &LoopEngine::small_nodes_,
      &LoopEngine::wide_nodes_};
  WheelCore core_;
  absl::Duration next_tick_at_;  // NextTickAt() as of the last Advance
  // The due timers, in order: RunDue runs [due_next_, end) (a null was
  // stopped), Advance and Arm append (each node's `index` its position).
  std::vector<CoreNode*> due_;
  size_t due_next_ = 0;
  std::vector<CoreNode*> ordered_;  // OrderTick's scratch
  // The timers of the tick after the wheel's, taken out of the core ahead of
  // its release (Stage), ordered by part of their tick: [staged_next_, end)
  // not yet due (a null was stopped, or moved to `due_`), the parts before
  // staged_ends_[k] in part k or earlier; those of staged_tick_.
  static constexpr uint32_t kStagedBit = uint32_t{1} << 31;
  std::vector<CoreNode*> staged_;
  size_t staged_next_ = 0;
  size_t staged_ends_[kTickParts] = {};
  int64_t staged_tick_ = 0;
  // No staged timer is due before this (Stage's last look).
  int64_t stage_again_ns_ = 0;
  int64_t pending_ = 0;
  int64_t refs_ = 1;  // the LoopWheel's
  bool closed_ = false;
  // The thread CheckThread found first. Kept in every build: the inline
  // paths of loop_wheel.h check it when the user's code is built without
  // NDEBUG, whatever the library was built with.
  std::thread::id owner_;
};

}  // namespace timingwheel::internal

// The LoopWheel's hot path: the members of loop_wheel.h declared
// TIMINGWHEEL_LOOP_HOT. With a static library they are inline, compiled into
// the user's code through timingwheel/internal/loop_inline.h
// (cmake/loop_inline.cmake), where the call's frame, its StatusOr and the
// engine's checks fold into the caller's loop; with a shared one they are
// compiled once, in loop_wheel.cc (TIMINGWHEEL_DEFINE_LOOP_HOT).
#if TIMINGWHEEL_LOOP_INLINE || defined(TIMINGWHEEL_DEFINE_LOOP_HOT)
namespace timingwheel {

TIMINGWHEEL_LOOP_HOT void LoopTimer::Release() {
  engine_->CheckThread("~LoopTimer");
  engine_->Unref(node_);
}

TIMINGWHEEL_LOOP_HOT bool LoopTimer::Stop() {
  if (node_ == nullptr) return false;
  engine_->CheckThread("LoopTimer::Stop");
  return engine_->Stop<internal::LoopEngine::Held::kByHandle>(node_);
}

TIMINGWHEEL_LOOP_HOT absl::StatusOr<LoopTimer> LoopWheel::ScheduleSteady(
    int64_t steady_ns, internal::CallbackRef f) {
  engine_->CheckThread("LoopWheel::At");
  if (internal::LoopNode* node = engine_->TrySteady(steady_ns, f)) {
    return LoopTimer(engine_, node);
  }
  return engine_->RefuseSteady(steady_ns, f);
}

TIMINGWHEEL_LOOP_HOT absl::StatusOr<LoopTimerId> LoopWheel::ScheduleSteadyId(
    int64_t steady_ns, internal::CallbackRef f) {
  engine_->CheckThread("LoopWheel::AtId");
  if (const uint64_t id = engine_->TrySteadyId(steady_ns, f)) {
    return LoopTimerId(id);
  }
  return engine_->RefuseSteady(steady_ns, f);
}

TIMINGWHEEL_LOOP_HOT bool LoopWheel::Stop(LoopTimerId id) {
  engine_->CheckThread("LoopWheel::Stop");
  internal::LoopNode* node = engine_->Find(id);
  return node != nullptr &&
         engine_->Stop<internal::LoopEngine::Held::kById>(node);
}

}  // namespace timingwheel
#endif

#endif  // TIMINGWHEEL_LIB_FACES_LOOP_ENGINE_H_
