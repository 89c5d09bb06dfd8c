// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// timer_state.h: one timer's node and the atomic state machine that decides
// every race on it.
//
// A `TimerNode` is what a `Timer` handle points to. It holds the callback, the
// deadline, its place in the bucket it sits in, and one atomic state
// word. The state word, not bucket membership, is the truth: the thread whose
// compare-and-swap moves a timer out of kPending (or kDispatched) decides
// whether it is stopped or runs. Membership only follows, which is why a
// Stop can win against a timer that is in transit between buckets or queued
// for a worker (DESIGN.md section 3, traps 4 and 5).
//
// The state word is `generation << 8 | linked bit | State` (the linked
// bit: kLinkedBit below). Every re-arm (Reset, the next
// run of a periodic timer) bumps the generation, so a worker task or a Stop
// that refers to an older arm can tell and does nothing.
//
//   from              event                          to
//   kPending          a bucket is flushed, it is due kDispatched (worker queue)
//   kPending          Stop / Shutdown, CancelAll     kStopped / kCancelled
//   kDispatched       a worker starts it             kRunning (one-shot) or
//                                                    kRunningArmed (periodic)
//   kDispatched       Stop / Shutdown, CancelAll     kStopped / kCancelled
//   kRunningArmed     Stop / Shutdown, CancelAll     kRunningStopped /
//                                                    kRunningCancelled
//   kRunning, kRunningStopped  Reset                 kRunningArmed
//   kRunningArmed     the callback returns           kPending, generation + 1,
//                                                    or kEnded when the
//                                                    schedule ends
//   kRunning          the callback returns           kDone
//   kRunningStopped   the callback returns           kStopped
//   kRunningCancelled the callback returns           kCancelled
//   kPending, kDispatched, kDone, kStopped, kEnded  Reset
//                                                    kPending, generation + 1
//   kCancelled is final (Shutdown or CancelAll), and so is kRunningCancelled
//   until it becomes kCancelled: the callback is destroyed, nothing re-arms.
//
// "Pending" in the API's sense (Pending(), Stop()'s true) is kPending,
// kDispatched and kRunningArmed. The three running states are one in the
// API (TimerState::kRunning); the state a run ends in remembers why it is not
// armed again: it ran (kDone), a Stop (kStopped), its schedule ended (kEnded),
// or a cancel (kCancelled).
//
// Locking:
//   * `state`, `refs` and `deadline_ns` are atomics, touched without locks.
//   * `mu` (the node lock, a SpinLock) serializes the threads that arm the
//     node anew and set its deadline: Reset, and the worker re-arming it
//     after a run. It guards `has_rearm`. The wheel's owner never takes it.
//     Its place among the locks: kNode in the lock table of lib/mutex.h.
//   * The CoreNode part (expiration, links in the core) belongs to the
//     thread that owns the wheel's core (the advancer, or Shutdown once it
//     has stopped): callers hand it arms and stops through the inbox
//     (lib/handoff/inbox.h) and never read it. The owner alone sets the
//     linked bit of the state word (by compare-and-swap, as every move).
//   * The callable: run by the thread that moved the node to a running
//     state; destroyed by the thread that cancelled it for good, or by the
//     last Unref.
//
// Lifetime: intrusive reference count. Each Timer handle holds one reference
// (and counts itself in the node's home, which keeps the engine alive; see
// NodeHome); whichever part of the wheel holds the node (a submission in the
// inbox, a bucket, a worker task) holds one more. The last release destroys
// the node and hands its memory back to the engine's pool, which the
// releasing thread names (a periodic node's to the heap). Nothing here calls
// the engine.
//
// No write after hand-on (DESIGN.md, trap 12): a thread that hands a node on
// (pushes a submission, links it, queues its task) does so with a reference
// of its own making and touches the node no more through that reference.

#ifndef TIMINGWHEEL_LIB_TIMER_STATE_H_
#define TIMINGWHEEL_LIB_TIMER_STATE_H_

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "core/bucket.h"
#include "mutex.h"
#include "node_pool.h"
#include "ref_counted.h"
#include "timingwheel/callback.h"
#include "timingwheel/scheduler.h"
#include "timingwheel/timingwheel.h"

namespace timingwheel::internal {

class Engine;

// Matches every generation where a generation is asked for.
inline constexpr uint64_t kAnyGeneration = ~uint64_t{0};

// Where a handle counts itself: one lane of an engine (engine.h). A handle
// (Timer) keeps the home of the thread that made it, and counts itself
// there while it lives (a copy in the same home). While the engine's owner
// holds it, the count carries a bias of 1, so a handle's birth and death write
// only this count, never the engine's; when the owner lets go (ReleaseBias),
// the bias becomes the home's reference on the engine, held until its last
// handle goes.
//
// Why handles and not nodes: every other holder of a node holds the engine
// too. A bucket or the advancer holds it through the owner (Shutdown, before
// the owner lets go, empties every bucket) or the advancer's thread
// reference; a worker through its thread's; a task handed to an executor
// through its own; Shutdown through its caller, the owner. Only a handle can
// outlive all of those. So the engine, and the pool with it, outlives every
// node; and a worker that finishes a callback writes no count that other
// workers write too. A handle releases its node first, then its count, so a
// node destroyed by its last handle (with its callback, which may hold other
// handles) is freed while the engine still lives.
// Thread-safe; the count is on a cache line of its own.
class NodeHome {
 public:
  // `engine` is only handed on (to a Timer); `owner` is the same engine's
  // lifetime; `pool` is where its nodes' memory goes back.
  NodeHome(NodePool* pool, RefCounted* owner, Engine* engine, int lane)
      : pool_(pool), owner_(owner), engine_(engine), lane_(lane) {}
  NodeHome(const NodeHome&) = delete;
  NodeHome& operator=(const NodeHome&) = delete;

  Engine* engine() const { return engine_; }
  NodePool* pool() const { return pool_; }
  int lane() const { return lane_; }
  void AddHandle() { handles_.fetch_add(1, std::memory_order_relaxed); }
  // Memory ordering: acq_rel, as for any reference count.
  void RemoveHandle() {
    if (handles_.fetch_sub(1, std::memory_order_acq_rel) == 1) owner_->Unref();
  }
  // The owner lets go. Precondition: it holds a reference on `owner` for
  // this home, which this home releases with its last handle (now, if none).
  void ReleaseBias() { RemoveHandle(); }

 private:
  NodePool* const pool_;
  RefCounted* const owner_;
  Engine* const engine_;
  const int lane_;
  alignas(64) std::atomic<int64_t> handles_{1};  // live handles, + 1 if owned
};

enum class State : uint8_t {
  kPending = 1,
  kDispatched = 2,
  kRunning = 3,
  kRunningArmed = 4,
  kDone = 5,
  kStopped = 6,
  kCancelled = 7,
  kRunningStopped = 8,
  kRunningCancelled = 9,
  kEnded = 10,
};

// Packs and unpacks the state word. Every word MakeStateWord makes has the
// linked bit clear: any move of the state ends the link's claim.
constexpr uint64_t MakeStateWord(uint64_t generation, State state) {
  return (generation << 8) | static_cast<uint64_t>(state);
}
constexpr State StateOf(uint64_t word) {
  return static_cast<State>(word & 0x7f);
}
// The linked bit: set by the owner alone, on (gen, kPending) once it has
// linked the node for arm `gen` in the core; cleared by every later move
// of the state (a Stop, a Reset, a dispatch, a cancel). So a node in a
// bucket whose word lacks it sits there for an arm that ended (a stale
// link the owner drops when it meets it), and the owner needs no copy of
// the generation it linked.
inline constexpr uint64_t kLinkedBit = 0x80;
constexpr bool IsLinkedPending(uint64_t word) {
  return (word & 0xff) == (kLinkedBit | static_cast<uint64_t>(State::kPending));
}
constexpr uint64_t GenerationOf(uint64_t word) { return word >> 8; }
// Whether the word is of generation `gen` (of any, for kAnyGeneration).
constexpr bool OfGeneration(uint64_t word, uint64_t gen) {
  return gen == kAnyGeneration || GenerationOf(word) == gen;
}

// True for the states in which Stop() returns true.
constexpr bool IsPending(State s) {
  return s == State::kPending || s == State::kDispatched ||
         s == State::kRunningArmed;
}

// True while the callback runs.
constexpr bool IsRunning(State s) {
  return s == State::kRunning || s == State::kRunningArmed ||
         s == State::kRunningStopped || s == State::kRunningCancelled;
}

// The state a run that is not armed again ends in: kRunning -> kDone,
// kRunningStopped -> kStopped, kRunningCancelled -> kCancelled.
constexpr State EndOfRun(State running) {
  switch (running) {
    case State::kRunningStopped:
      return State::kStopped;
    case State::kRunningCancelled:
      return State::kCancelled;
    default:
      return State::kDone;
  }
}

// The node, byte by byte (x86-64, release build; a debug build's lock
// carries its rank, so the node is bigger there):
//
//   offset size  field
//    0      8    expiration       \  CoreNode: the core's part, the owner's
//    8      4    prev              > alone (the linked arm's deadline, and
//   12      4    next             /  the node's links in its bucket)
//   16      8    state            generation << 8 | linked bit | State
//   24      8    deadline_ns      the arm's deadline (callers write it)
//   32      8    ops              the callable's operations; null once
//                                 destroyed
//   40      4    refs
//   44      1    mu               the node lock (Reset, re-arm)
//   45      1    has_rearm
//   46      1    storage          where the callable is: the room, a second
//                                 block, or a periodic timer's state
//   47      1    (padding)
//   48     16    room             the callable (kRoom bytes), or a pointer
//                                 to where it is
//
// 64 bytes, one cache line: the pool's block. A callable of at most kRoom
// bytes (a lambda capturing two pointers, `[this, id]`) lives in the room;
// one of at most kWheelBlockCallable (an absl::AnyInvocable, a lambda capturing
// up to eight pointers) in a second block of the same pool, taken from the
// same thread cache; a bigger one was boxed on the heap by the call site
// (callback.h). Nothing a periodic timer alone needs is in a one-shot node:
// a periodic timer's node (from the same pool) points to its
// PeriodicState on the heap, which holds its scheduler, its run count and
// its callable. Every node is in the node arena (node_arena.h), so the
// core may name it by 32 bits.
//
// Which node a handle's engine is: no node says. A Timer keeps its node's
// home (NodeHome) itself, and every other holder of a node knows its engine
// and hands its pool to Unref.
class TimerNode : public CoreNode {
 public:
  // The callable kept in the node itself.
  static constexpr size_t kRoom = 16;
  // A new node from `pool` (periodic when `scheduler` is not null), in
  // kPending, generation 0, with `refs` references for the caller, holding
  // the callable of `f` (not empty). Throws std::bad_alloc, having moved
  // nothing, when there is no memory.
  static TimerNode* New(NodePool* pool, CallbackRef f,
                        std::unique_ptr<Scheduler> scheduler = nullptr,
                        int32_t refs = 1);
  TimerNode(const TimerNode&) = delete;
  TimerNode& operator=(const TimerNode&) = delete;

  void Ref() { refs_.fetch_add(1, std::memory_order_relaxed); }
  // A handle (Timer) counts itself in its home (NodeHome) while it lives,
  // besides its reference: a copy takes both, and a handle lets go of both,
  // the reference first.
  void RefHandle(NodeHome* home) {
    Ref();
    home->AddHandle();
  }
  void ReleaseHandle(NodeHome* home) {
    Unref(home->pool());
    home->RemoveHandle();
  }
  // Releases one reference; the last one destroys the callable (if still
  // there) and the node, and hands their memory back to `pool`, the pool of
  // the node's engine. Memory ordering: acq_rel, so every write to the node
  // by any holder happens before its deletion.
  void Unref(NodePool* pool);
  // Releases one reference unless it is the last, and says whether it did: a
  // thread that must not destroy the node where it stands (the advancer in
  // the middle of a flush) keeps the last one for a later Unref.
  bool UnrefIfNotLast();

  // Compare-and-swap on the state word: acq_rel on success (a winner sees what
  // the previous owner wrote, and publishes its own writes), acquire on
  // failure.
  bool CasState(uint64_t& expected, uint64_t desired) {
    return state.compare_exchange_strong(expected, desired,
                                         std::memory_order_acq_rel,
                                         std::memory_order_acquire);
  }
  uint64_t LoadState() const { return state.load(std::memory_order_acquire); }

  // (gen, kPending or kDispatched) -> (gen, kCancelled), for any generation
  // with kAnyGeneration: the wheel is shut down, CancelAll found the node, or
  // the wheel could not take this arm. Returns whether this call cancelled
  // it.
  bool Cancel(uint64_t gen);

  // The deadline of the node's pending arm (IsPending), in nanoseconds since
  // the engine's origin; for kRunningArmed the re-arm a Reset left, if any,
  // else the deadline of the run in progress. std::nullopt when not pending.
  // Takes `mu`: every thread that moves the node into kPending with a new
  // deadline, or sets the re-arm, holds it (Reset, Rearm, the advancer), so
  // the state and the deadline read under it belong to the same arm. The
  // moves that need no lock (Stop, a worker starting the callback) change
  // no deadline.
  std::optional<int64_t> PendingDeadlineNs() ABSL_LOCKS_EXCLUDED(mu);

  // Runs the callable. Only the thread that moved the node to kRunning or
  // kRunningArmed calls it.
  void RunCallback() { ops_->run(Callable()); }
  // Destroys the callable, if not done yet, and gives its second block back
  // to `pool`. Shutdown and CancelAll call it for a node they cancelled,
  // which nobody will run, and the runner for one cancelled while it ran,
  // once the run returned; else the last Unref does.
  void DestroyCallback(NodePool* pool) noexcept;

  std::atomic<uint64_t> state;

  // The deadline of the current arm, in nanoseconds since the engine's
  // origin. While the callback runs (kRunning, kRunningArmed) it is that run's
  // deadline, unless a Reset made during the run set `has_rearm`: then it is
  // where to re-arm when the callback returns. Written under `mu` by the
  // arming thread after its compare-and-swap, and before it pushes the arm's
  // submission; read by the owner without a lock (a value of a later arm
  // belongs to an arm whose linked bit the owner's check then finds
  // cleared).
  std::atomic<int64_t> deadline_ns{0};

 private:
  const CallbackOps* ops_;
  std::atomic<int32_t> refs_;

 public:
  SpinLock mu{LockRank::kNode};
  bool has_rearm ABSL_GUARDED_BY(mu) = false;

  // Made by Every or ScheduleFunc.
  bool periodic() const { return storage_ == Storage::kPeriodic; }
  // The periodic timer's scheduler; called only by the worker that ran the
  // callback. Precondition: periodic().
  Scheduler& scheduler();
  // The runs of a periodic timer started so far, the one in progress
  // included; 0 for a one-shot node. Any thread (relaxed: a count, ordered
  // with nothing).
  int64_t runs() const;
  // A periodic timer's run starts. Only the worker that starts it calls this,
  // so runs of one timer never count at once. Precondition: periodic().
  void CountRun();

  // A periodic timer's state (below).
  struct PeriodicState;

 private:
  // Where the callable is.
  enum class Storage : uint8_t { kRoom, kBlock, kPeriodic };

  // `extra`: the second block (kBlock) or the PeriodicState (kPeriodic).
  TimerNode(CallbackRef f, Storage storage, void* extra, int32_t refs);
  ~TimerNode() = default;

  void* Extra() const {
    void* extra;
    std::memcpy(&extra, room_, sizeof(extra));
    return extra;
  }
  PeriodicState& periodic_state() const {
    return *static_cast<PeriodicState*>(Extra());
  }
  void* Callable();

  const Storage storage_;
  alignas(alignof(void*)) unsigned char room_[kRoom];
};

// What a periodic timer has beyond a one-shot one, on the heap (periodic
// timers are few): its scheduler, its run count and, right after, its
// callable.
struct TimerNode::PeriodicState {
  static constexpr size_t kCallableOffset = 32;

  explicit PeriodicState(std::unique_ptr<Scheduler> scheduler)
      : scheduler(std::move(scheduler)) {}
  void* callable() { return reinterpret_cast<char*>(this) + kCallableOffset; }

  const std::unique_ptr<Scheduler> scheduler;
  std::atomic<int64_t> runs{0};  // written by the worker that runs it
};
static_assert(sizeof(TimerNode::PeriodicState) <=
                  TimerNode::PeriodicState::kCallableOffset,
              "the callable follows the state");

inline void* TimerNode::Callable() {
  switch (storage_) {
    case Storage::kRoom:
      return room_;
    case Storage::kBlock:
      return Extra();
    case Storage::kPeriodic:
      return periodic_state().callable();
  }
  return room_;
}

inline Scheduler& TimerNode::scheduler() { return *periodic_state().scheduler; }

inline int64_t TimerNode::runs() const {
  if (!periodic()) return 0;
  return periodic_state().runs.load(std::memory_order_relaxed);
}

inline void TimerNode::CountRun() {
  std::atomic<int64_t>& runs = periodic_state().runs;
  runs.store(runs.load(std::memory_order_relaxed) + 1,
             std::memory_order_relaxed);
}

static_assert(sizeof(TimerNode) >= kWheelBlockCallable,
              "a callable the call site keeps inline fits a block");

#ifdef NDEBUG
static_assert(sizeof(TimerNode) == 64, "the node, as drawn above");
#endif

// One due arm of a timer, on its way to a worker: the node, the generation it
// was dispatched with (a task of an older arm does nothing) and that arm's
// deadline, for the lateness statistics.
struct DueTimer {
  TimerNode* node;
  uint64_t generation;
  int64_t deadline_ns;
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_TIMER_STATE_H_
