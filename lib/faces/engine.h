// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// engine.h: the machine behind a TimingWheel: the operations on timers
// (schedule, stop, reset), shutdown, statistics and the engine's lifetime.
// The machine's parts, one folder of lib/ each. The faces use the threads,
// the threads drive the core and take from the hand-off, the core includes
// nothing of the others, and every part may use base:
//
//   handles/    timer_state: one timer's node and the state word that
//               decides each race; node_pool, node_arena: the nodes' memory;
//               callback_numbers: a callable's operations by number
//   handoff/    inbox: callers' submissions (arms, stops) to the wheel's
//               owner, a single-producer ring per thread, wake-ups;
//               asymmetric_fence: the store-then-load pair of a wake-up
//   core/       levels, buckets, placement, the one release queue of
//               buckets, advance-and-flush, a node's 32-bit name; one owner,
//               no locks, and nothing of the other parts
//   threads/    advancer: the poller (release_alarm) and the advancer, which
//               owns the core; runner: the worker pool (worker_pool,
//               task_queue) or the user's executor; thread_starter: the
//               system's refusal as a Status; reentry
//   faces/      this engine and timingwheel.cc (TimingWheel, Timer); the
//               event-loop wheel on the same core (loop_wheel.cc,
//               loop_engine, loop_node); metrics_text, options_check
//   base/       what every part may use: mutex (the locks and their order),
//               no_sanitize (reads AddressSanitizer would refuse),
//               clock, clock_wake_up (the clocks, and how a thread sleeps
//               on one), time_base (the origin, durations -> deadlines,
//               rounded up), scheduler (periodic schedules), stats,
//               failure_report, ref_counted
//
// One timer's path: AfterFunc -> Engine::Schedule: TimeBase turns the
// duration into a deadline; a TimerNode is made (a handle counts itself in
// its thread's lane, NodeHome) and handed to the advancer through the
// caller's ring as a kArm submission (or, due at
// once, straight to the runner). While the advancer polls (at high rates,
// advancer.h), AfterFunc reads no clock: the node holds its delay and goes
// as a kArmUnstamped, whose deadline the advancer stamps when it takes it
// (NewUnstamped; handoff/inbox.h). The advancer links it into the core; when
// its bucket comes due the core cascades it down or hands it back due, and
// the advancer moves it kPending -> kDispatched and queues it on the runner.
// The worker runs the callback (Runner::Run) and finishes or re-arms it.
//
// A timer by id (ScheduleId, TimerId) has no handle: its node's count is
// the wheel's holders' alone, its id (IdWordOf) sits in the top half of the
// state word, and the node goes when the timer ends. StopId on the thread
// that made it, before the advancer took it, takes its first arm back from
// its ring by name (Retract reads no node) and then holds the submission's
// reference, usually the node's only one: then one compare-and-swap stops
// and frees it (TimerNode::StopIfSole); every other operation by id first
// checks that the id names a block of this engine's pools
// (NodePool::HoldsBlock), then takes a reference only if the block holds a live
// node of that id (TimerNode::TryRefId), and then works as for a handle.
//
// Operations here: Stop moves the state word out of kPending (or
// kDispatched, kRunningArmed), then takes its kArm back out of this thread's
// ring if the advancer has not taken it yet (Inbox::Retract: the pair never
// leaves the caller's core), else sends a kUnlink so that the advancer
// unlinks it; Reset re-arms with a new generation under the node lock and
// sends the new arm; Shutdown closes the wheel, stops the threads and
// cancels every pending timer; CancelAll cancels every pending timer and
// leaves the wheel running.
//
// CancelAll looks for the pending timers where they can be: in the inbox
// and the core, queued for the workers or taken by one (running, or about
// to), in a Reset's hands. It must not miss one that moves from a place it
// has not looked at yet to one it has looked at. So it looks from the
// advancer's thread, between two rounds (Advancer::RunOnOwner), so that the
// advancer moves nothing meanwhile, and in this order
// (Advancer::CancelEverything): the pool as a whole under its lock
// (WorkerPool::ForEachTask), then the inbox (applied into the core), then
// the core. Resets wait (those in flight finish first), and a worker hands
// on a re-arm only for a timer whose task the pool named as taken, before
// it lets go of the task. Each timer found is cancelled by a
// compare-and-swap on its state word, as Stop would: the core's and
// queues' at once, the taken ones' once the look is over (kRunningArmed ->
// kRunningCancelled: the run goes on, the re-arm does not).
//
// Thread-safety: every public member is thread-safe. Shutdown and Reset
// agree through `closed_` and `resets_in_flight_` (both seq_cst): either
// Shutdown sees a Reset in flight and waits for it, or the Reset sees the
// wheel closed; so Shutdown cancels and counts every timer a Reset armed.
// CancelAll and Reset agree the same way through `cancel_alls_` and
// `resets_in_flight_`: a Reset that sees a CancelAll under way steps back and
// waits on `cancel_all_cv_` until it is over. `shutdown_mu_` guards the
// shutdown flags. Lock order: the table in mutex.h.
//
// Lifetime: reference counted (RefCounted). The TimingWheel holds one
// reference, each thread one while it runs, each task handed to an executor
// one, and, once the TimingWheel has let go (ReleaseOwner), each lane whose
// nodes still have handles one (NodeHome). The last Unref deletes the engine,
// possibly from a worker thread after the TimingWheel is gone.

#ifndef TIMINGWHEEL_LIB_FACES_ENGINE_H_
#define TIMINGWHEEL_LIB_FACES_ENGINE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/failure_report.h"
#include "base/mutex.h"
#include "base/ref_counted.h"
#include "base/stats.h"
#include "base/time_base.h"
#include "handles/node_pool.h"
#include "handles/timer_state.h"
#include "handoff/inbox.h"
#include "threads/advancer.h"
#include "threads/runner.h"
#include "timingwheel/callback.h"
#include "timingwheel/options.h"
#include "timingwheel/scheduler.h"

namespace timingwheel {
class EngineTestPeer;
}  // namespace timingwheel

namespace timingwheel::internal {

class Engine : public RefCounted {
 public:
  // Validates `options` (InvalidArgument naming the option) and starts the
  // threads (ResourceExhausted, with no thread left running, when the system
  // refuses one). The caller owns the result, and gives it up with
  // ReleaseOwner.
  static absl::StatusOr<Engine*> Create(Options options);

  // The owner (the TimingWheel) lets go: from now on each lane that still
  // has nodes holds one engine reference, until its last node goes.
  void ReleaseOwner();

  // Arms a new one-shot timer `d` from now. On success the node has one
  // reference for the caller's handle. `caller` names the API function in
  // error messages.
  absl::StatusOr<TimerNode*> Schedule(absl::Duration d, CallbackRef f,
                                      const char* caller);
  // Arms a new periodic timer: `scheduler` is asked now for the delay until
  // the first run, and after each run for the next (Runner). Every is this
  // with a FixedRate. As above otherwise.
  absl::StatusOr<TimerNode*> Schedule(std::unique_ptr<Scheduler> scheduler,
                                      CallbackRef f, const char* caller);
  // Arms a new one-shot timer at `when`, a reading of the clock (Now()): the
  // deadline is `when` itself, rounded up to the nanosecond; one already
  // passed runs as soon as possible. Errors as Schedule.
  // Held by `id_word` (IdWordOf), or (0) by a handle.
  absl::StatusOr<TimerNode*> ScheduleAt(absl::Duration when, CallbackRef f,
                                        const char* caller,
                                        uint32_t id_word = 0);

  // Arms a new one-shot timer `d` from now, held by id (TimerId): no
  // handle, the node freed when the timer ends. Returns the id's value:
  // IdWordOf(a fresh id generation) << 32 | the node's link. Errors as
  // Schedule.
  absl::StatusOr<uint64_t> ScheduleId(absl::Duration d, CallbackRef f,
                                      const char* caller);
  // The same at `when` (ScheduleAt).
  absl::StatusOr<uint64_t> ScheduleAtId(absl::Duration when, CallbackRef f,
                                        const char* caller);

  const TimeBase& time() const { return time_; }

  bool Stop(TimerNode* node);
  // `by_id`: the caller holds the node through an id, which a run that
  // ended or a Stop spent (Reset arms it no more).
  bool Reset(TimerNode* node, absl::Duration d, bool by_id = false);

  // What Stop, Reset, Timer::Pending and PendingDeadlineNs do, for the
  // timer an id names (its value, as ScheduleId returned it). An id that
  // names no timer of this engine, or a spent one: false or nullopt, and
  // nothing read but the word it names in a block of this engine's pools.
  bool StopId(uint64_t id);
  bool ResetId(uint64_t id, absl::Duration d);
  bool PendingId(uint64_t id) const;
  std::optional<int64_t> DeadlineIdNs(uint64_t id);
  // TimingWheel::CancelAll.
  int64_t CancelAll();
  // The timer whose callback runs on this thread, or nullptr; and its
  // engine (nullptr with it).
  static TimerNode* CurrentTimer() { return Runner::Current(); }
  static Engine* Current() {
    return static_cast<Engine*>(Runner::CurrentOwner());
  }
  // Where a handle made on this thread counts itself (its lane's home).
  NodeHome* HomeOfThisThread() const {
    return homes_[inbox_.LaneOfThisThread()].get();
  }

  int64_t Pending() const;
  int64_t Shutdown();
  Stats GetStats() const;

  // Blocks until nothing is due by the clock, every due bucket is flushed and
  // every due callback returned (or the engine is shut down). With a
  // ManualClock this makes "advance, then check" exact.
  void WaitIdle() const;

 private:
  // What Reset did under the node lock.
  struct ResetResult {
    bool was_pending;  // Reset's answer
  };
  // What EndArm found.
  enum class Ended {
    kNotPending,  // nothing to end
    kArm,         // a pending arm: kPending or kDispatched
    kRearm,       // the re-arm of a running callback: kRunningArmed
  };

  friend class timingwheel::EngineTestPeer;

  explicit Engine(Options options);
  ~Engine() override = default;

  // Starts the threads. When the system refuses one, stops and joins those
  // started and returns ResourceExhausted saying which and why.
  absl::Status Start();
  // The first act of each thread the engine starts: names it after the
  // Options::thread_name_prefix and calls Options::on_thread_start.
  void OnThreadStart(ThreadRole role, int index) const;
  // What a new timer needs first: a callback, and a wheel not shut down.
  absl::Status CheckNew(CallbackRef f, const char* caller) const;
  // Why Schedule(d, f) refused a timer, at `now_ns`.
  absl::Status RefuseSchedule(absl::Duration d, CallbackRef f, int64_t now_ns,
                              const char* caller) const;
  // Counts a new timer, within Options::max_pending (else
  // ResourceExhausted, which names `caller`).
  absl::Status CountNew(const char* caller);
  // Schedule(d, f) for a timer held by `id_word` (IdWordOf), or, with 0,
  // by a handle.
  absl::StatusOr<TimerNode*> ScheduleOneShot(absl::Duration d, CallbackRef f,
                                             const char* caller,
                                             uint32_t id_word);
  // Makes a one-shot timer `d` (`d_ns`, 0 < d_ns <= kMaxUnstampedNs) from
  // now, handed to the polling advancer unstamped, or stamped here if it
  // stopped polling meanwhile. Held by `id_word`, or (0) by a handle.
  absl::StatusOr<TimerNode*> NewUnstamped(CallbackRef f, int64_t d_ns,
                                          absl::Duration d, const char* caller,
                                          uint32_t id_word);
  // Makes a timer (one-shot without a `scheduler`) and arms it at
  // `deadline_ns`, within Options::max_pending. Held by `id_word`, or (0) by
  // a handle.
  absl::StatusOr<TimerNode*> NewArmed(CallbackRef f,
                                      std::unique_ptr<Scheduler> scheduler,
                                      int64_t deadline_ns, int64_t now_ns,
                                      const char* caller, uint32_t id_word = 0);
  // The block an id names, if it is one of this engine's pools' (else
  // nullptr), and the id's top half.
  void* BlockOfId(uint64_t id) const;
  // A reference on the node of a live id, or nullptr.
  TimerNode* HoldId(uint64_t id);
  // Reset's work under the node lock: a new arm (`*armed` set to its
  // generation) or the re-arm of a running callback.
  ResetResult ResetLocked(TimerNode* node, int64_t deadline_ns, bool by_id,
                          std::optional<uint64_t>* armed)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(node->mu);
  // Hands a new arm (gen, kPending) at `deadline_ns` on: to the runner if it
  // is due by `now_ns`, else to the advancer. False once shut down (the arm
  // is then cancelled, and counted by whether `was_pending`). The node holds
  // the deadline already: written by whoever armed it (a Reset under the
  // node lock, with its compare-and-swap). HandOn never writes it, or a
  // Reset's HandOn that ran late would put its older deadline back under a
  // newer Reset's arm, which would then run early.
  bool HandOn(TimerNode* node, uint64_t gen, bool was_pending,
              int64_t deadline_ns, int64_t now_ns);
  // After a Stop (or a Reset) ended arm `gen` of a node that may sit in a
  // bucket: takes the arm's submission back, or asks the advancer to unlink
  // the node.
  void Unlink(TimerNode* node, uint64_t gen);
  // Ends the node's pending arm, whatever it is, as Stop does: kPending or
  // kDispatched -> `ended` (Unlink for kPending),
  // kRunningArmed -> `ended_running`. Counts nothing.
  Ended EndArm(TimerNode* node, State ended, State ended_running);
  // Counts a Reset of this engine in flight, once no CancelAll is under way
  // (unless this thread is inside a Reset of this engine already, which the
  // CancelAll waits for).
  void EnterReset() ABSL_LOCKS_EXCLUDED(cancel_all_mu_);
  // Whether this is the first Shutdown; a later one waits for the first.
  bool FirstShutdown() ABSL_LOCKS_EXCLUDED(shutdown_mu_);
  // Once closed and the advancer stopped: cancels what is in the inbox, the
  // core and the worker queue; returns how many.
  int64_t CancelClosed();

  const TimeBase time_;
  const int workers_;
  const Runner::Executor executor_;
  const FailureReporter failures_;
  const std::string thread_name_prefix_;
  const absl::AnyInvocable<void(ThreadRole, int) const> on_thread_start_;

  TimerCounts counts_;
  // The memory of this engine's nodes; it goes with the engine, after the
  // last node.
  NodePools nodes_;
  Inbox inbox_;
  // One per inbox lane: where the handles made by its threads count
  // themselves.
  std::vector<std::unique_ptr<NodeHome>> homes_;
  Runner runner_;
  Advancer advancer_;

  std::atomic<bool> closed_{false};  // set by Shutdown; seq_cst with Reset
  ShardedCounter resets_in_flight_;  // seq_cst; see Reset and Shutdown
  std::atomic<int> cancel_alls_{0};  // under way; seq_cst with Reset

  Mutex cancel_all_mu_{LockRank::kCancelAll};
  CondVar cancel_all_cv_;  // cancel_alls_ went down

  Mutex shutdown_mu_{LockRank::kShutdown};
  CondVar shutdown_cv_;
  bool shutdown_started_ ABSL_GUARDED_BY(shutdown_mu_) = false;
  bool shutdown_done_ ABSL_GUARDED_BY(shutdown_mu_) = false;
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_FACES_ENGINE_H_
