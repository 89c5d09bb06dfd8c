// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// runner.h: running due timers: the worker pool (or the user's executor),
// one callback run, and what follows it: the next run of a periodic timer,
// or the re-arm a Reset made while the callback ran.
//
// A due timer arrives as a DueTimer (node, generation, deadline) in a batch
// from the advancer or from an arm that found it due (Submit). The pool
// (worker_pool.h) queues it; with Options::executor, the pool registers it and
// the runner hands the executor a HandedOffTask, a closure that runs it or,
// destroyed unrun, stops it.
//
// One run (Run): kDispatched -> kRunning (one-shot) or kRunningArmed
// (periodic) by CAS; a task whose arm was stopped, reset or cancelled since it
// was dispatched fails the CAS and does nothing. The callback runs with no
// lock held; an exception is caught, counted and reported. Then:
//   * a one-shot timer that no Reset re-armed: kRunning -> kDone, one CAS;
//   * otherwise, under the node's lock, Rearm: the deadline a Reset left, or
//     the scheduler's next (asked with no lock held, and only if no Stop or
//     Reset during the run decided it), armed as generation + 1; once the
//     lock is released, the arm goes to the wheel's owner as a submission
//     (lib/handoff/inbox.h), or, due at once, to the pool (an inline
//     executor may run it).
//     A run whose re-arm a Stop or a cancel took ends in kStopped or
//     kCancelled (then the callback is destroyed, with no lock held), one
//     whose schedule ended in kEnded.
// So runs of one timer never overlap: the next arm exists only once the
// callback returned. The task's reference on the node is released when the
// pool is done with the task (WorkerPool, "Taken tasks"), after the re-arm.
//
// Current(): the timer whose callback this thread runs, in thread-locals that
// each run sets and restores (RAII), so a callback run inside another (an
// inline executor) gives the outer run's back when it returns.
//
// Thread-safety: thread-safe. The runner holds no lock of its own; the pool
// has its own, the node lock is taken only to re-arm (lock table: mutex.h).
// A worker thread, and a task handed to the executor, each hold a reference
// on the engine (`owner`) while they live.

#ifndef TIMINGWHEEL_LIB_THREADS_RUNNER_H_
#define TIMINGWHEEL_LIB_THREADS_RUNNER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "base/failure_report.h"
#include "base/ref_counted.h"
#include "base/stats.h"
#include "base/time_base.h"
#include "handles/timer_state.h"
#include "handoff/inbox.h"
#include "threads/worker_pool.h"

namespace timingwheel::internal {

class Runner {
 public:
  using Executor = absl::AnyInvocable<void(absl::AnyInvocable<void()>) const>;

  Runner(Inbox* inbox, const TimeBase* time, TimerCounts* counts,
         const FailureReporter* failures, NodePools* nodes, RefCounted* owner);
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  // Starts `workers` threads, each first calling `on_worker_start(index)`,
  // or, with an `executor`, none: each due timer goes to the executor. When
  // the system refuses a thread, the pool's error (WorkerPool::Start), with
  // the threads started joined again.
  absl::Status Start(int workers, const Executor* executor,
                     std::function<void(int worker)> on_worker_start);

  // Hands the due timers of `batch` (emptied) to the workers; once the pool
  // is closed, cancels them instead (they count as cancelled by Shutdown).
  // Call with no lock held: an executor may run them inline.
  void Submit(std::vector<DueTimer>* batch);
  // Submit for a caller that holds a lock of its own (the advancer): runs no
  // user code. The executor's ids go to `hand_offs`, for HandOff; the nodes
  // of the tasks cancelled because the pool is closed go to `released`,
  // whose references the caller releases; both once it has let go.
  void Queue(std::vector<DueTimer>* batch, std::vector<uint64_t>* hand_offs,
             std::vector<TimerNode*>* released);
  // Hands the ids Queue left in `ids` (emptied) to the executor.
  void HandOff(std::vector<uint64_t>* ids) {
    pool_->HandOff(std::move(*ids));
    ids->clear();
  }
  // Hands them to the workers as Submit does, but once the pool is closed
  // returns false and leaves them to the caller.
  bool TrySubmit(std::vector<DueTimer>* batch) { return pool_->Submit(batch); }

  // The timer whose callback runs on this thread, or nullptr; and the
  // owner of its runner (the engine), or nullptr.
  static TimerNode* Current();
  static RefCounted* CurrentOwner();
  // When this thread runs a periodic (or Reset) timer of this runner's that
  // is armed to run again: cancels that re-arm (kRunningCancelled), counts it
  // retired and returns true. For a Shutdown made from the callback.
  bool CancelOwnRearm();

  // WorkerPool::ForEachTask: every task not started (`taken` false) and every
  // task a worker or the executor has taken and not let go of (true).
  void ForEachTask(
      absl::FunctionRef<void(const DueTimer& task, bool taken)> visit) {
    pool_->ForEachTask(visit);
  }

  // Refuses further tasks and returns those not started.
  std::vector<DueTimer> Close() { return pool_->Close(); }
  // Waits for the workers (all but the calling thread; see WorkerPool).
  void Join() { pool_->Join(); }
  void WaitNoneRunning() { pool_->WaitNoneRunning(); }
  int64_t Outstanding() const { return pool_->Outstanding(); }
  int64_t QueueDepth() const { return pool_->QueueDepth(); }
  // Whether the due timers go to the pool's own workers (not an executor).
  bool OwnWorkers() const { return pool_->started() > 0; }
  // The lateness (start - deadline) of every callback started so far into
  // `all`, and of those started since WindowedHistogram::RecentStart(now_ns)
  // into `recent`.
  void MergeLateness(int64_t now_ns, LatencyHistogram* all,
                     LatencyHistogram* recent) const;

 private:
  class HandedOffTask;

  void Run(const DueTimer& task, int worker);
  // The pool is done with a task Run was called with: its reference goes.
  void Release(const DueTimer& task) { task.node->Unref(nodes_); }
  // The deadline of a periodic timer's next run after the run for
  // `deadline_ns`, by its scheduler (called with no lock held); nullopt when
  // the schedule ends, leaves the supported range or throws.
  std::optional<int64_t> NextRun(TimerNode* node, int64_t deadline_ns);
  // Whether a periodic timer's scheduler is asked for the next run: not
  // when a Stop or a Reset made during the run decided it.
  static bool AsksScheduler(TimerNode* node) ABSL_LOCKS_EXCLUDED(node->mu);
  // After the callback returned: re-arm or finish. The worker's reference
  // stays with the worker (a re-arm takes a new one).
  void AfterRun(TimerNode* node, uint64_t gen, std::optional<int64_t> next_ns);
  // AfterRun's work under the node lock. Returns the state the run ended
  // in, or kPending when it armed the node again: then `*rearm_ns` is the
  // new arm's deadline, for AfterRun to hand on once the lock is released.
  State Rearm(TimerNode* node, uint64_t gen, std::optional<int64_t> next_ns,
              int64_t* rearm_ns) ABSL_EXCLUSIVE_LOCKS_REQUIRED(node->mu);
  void HandOff(uint64_t id);
  // The executor destroyed the task of `id` unrun: it counts as stopped.
  void Drop(uint64_t id);

  Inbox* const inbox_;
  const TimeBase* const time_;
  TimerCounts* const counts_;
  const FailureReporter* const failures_;
  NodePools* const nodes_;  // where the nodes' memory goes back
  RefCounted* const owner_;
  const Executor* executor_ = nullptr;
  // One per worker, written by that worker only (Writers::kOne); or one for
  // the executor, which any of its threads may write.
  std::vector<std::unique_ptr<WindowedHistogram>> lateness_;
  std::unique_ptr<WorkerPool> pool_;
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_THREADS_RUNNER_H_
