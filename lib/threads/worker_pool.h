// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// worker_pool.h: the bounded pool of threads that run due callbacks.
//
// Kafka runs expired tasks on one executor thread and the Go port starts a
// goroutine per due timer; this pool is in between: `workers` threads (the
// engine names them `tw-worker-N`) run the tasks of one shared FIFO queue.
// The advancer submits all the due timers of a bucket as one batch (one lock
// round trip).
//
// The queue is a TaskQueue (lib/threads/task_queue.h): chunks of 4096 tasks
// that it recycles, so that queueing and taking tasks allocate nothing once it
// has had its peak size, where a deque's blocks were malloc'd by the advancer
// and freed by the workers, contending on glibc's arena lock. When it drains
// empty after a burst, it releases its spare chunks beyond 64Ki tasks; they
// are freed after `mu_` is unlocked.
//
// Batches and stashes. So that a burst of short callbacks does not cost one
// round trip on the shared lock per task, each worker keeps a stash of tasks
// of its own, and takes the shared lock once per batch:
//   - it runs the task at the front of its stash, under the stash's SpinLock
//     only;
//   - when its stash is empty it locks `mu_`. If the queue is not empty it
//     takes k = min(kMaxBatch = 32, ceil(queue size / workers)) tasks from
//     its front: it runs the first and stashes the others. If the queue is
//     empty it steals from the stash of another worker: half of it, rounded
//     up, from the back; it runs the first of those and stashes the others.
//     Only when the queue and every stash are empty does it wait for Submit.
// A task stashed behind a slow callback therefore waits only while every
// other worker is busy too: a free worker finds the queue empty and steals
// it. So a slow callback holds back no task that another, free worker could
// run, as when workers took one task at a time. One worker runs the tasks in
// submission order; several start them in no particular order.
//
// With an executor of the user's (Options::executor) the pool starts no
// threads and has no stashes: Submit registers each task under an id and
// hands the id to `hand_off`, which gives the user's executor a closure that
// calls RunHandedOff (or DropHandedOff, when the executor destroys the closure
// unrun). Close takes back the tasks not started, as for the queue, and Join
// waits until no task runs.
//
// Re-entrant hand-offs. An executor may run a task inline, inside
// `hand_off`; that task's callback (or its re-arm) may submit again. A Submit
// made on a thread that is already inside a `hand_off` of this pool does not
// call `hand_off` itself: it queues its ids on that outer hand-off, which
// hands them on, in order, once its own `hand_off` call returned. So a
// callback that keeps re-arming itself due, under an inline executor, runs
// in a loop on one stack frame, not one frame deeper per run.
//
// A task names a timer node and the generation it was dispatched with; the
// pool only calls `run` with it. Whether the callback really starts (it may
// have been stopped or reset since) is decided by the runner.
//
// Taken tasks. A task a worker takes stays named by the pool, as its stash's
// `current` (or, with an executor, in `running_handed_off_`), from the moment
// it leaves the queue or stash, in the same critical section, until after
// `run` returned; then the pool calls `done` with it, with no lock held.
// Whatever the task holds (the runner's reference on the node) is released
// there, so ForEachTask, which sees every task queued, stashed, handed off
// or taken, under the locks that move them, may take a reference on any of
// their nodes (CancelAll). A worker lets go of its task when it next looks
// at its stash, before it takes another or waits.
//
// Counting. A worker is active from the moment it takes tasks under `mu_`
// until it comes back to `mu_` and finds none to take: while it runs a task,
// between two tasks of its stash, and on its way back. A worker with a
// non-empty stash is always active. `running_` counts the active workers (and
// the handed-off tasks running), so Outstanding() (queued + stashed + handed
// off + `running_`) counts a worker between two tasks as one task more than
// run: it is 0 only when no task is queued, stashed or running, and it becomes
// 0 once that holds and every worker is back at `mu_`.
//
// Locking. `mu_` guards the queue, `running_`, `closed_` and the handed-off
// tasks; it is never held while a task runs, nor while the queue's spare
// chunks are freed (200 MB after a burst of 10M timers). A stash is guarded by
// its own SpinLock, held for a few instructions (a pop, or a copy of at most
// kMaxBatch tasks). Tasks enter a stash only with `mu_` held (kPool, then
// kStash, in the lock table of lib/base/mutex.h; only a thread holding `mu_`
// holds two stash locks, when it steals), so a worker that found everything
// empty under `mu_` cannot miss a task in transit: only a Submit makes new
// work, and it wakes a waiting worker (all of them for a batch of several
// tasks). The owner of a stash pops from it without `mu_`; others only take
// from it under `mu_` (stealing, Close).
//
// Thread-locals. A thread records each task it is running (of any pool) in
// a chain of frames that each run pushes and pops (RAII), so a task run
// inside another (an inline executor) restores the outer run's frame when it
// returns, and WaitNoneRunning knows how many of the runs still going are the
// caller's own.
//
// Thread-safety: thread-safe. Close hands back the tasks not started (the
// stashes' and the queue's); Join waits for the threads (all but the calling
// one, when a callback shuts its own wheel down).

#ifndef TIMINGWHEEL_LIB_THREADS_WORKER_POOL_H_
#define TIMINGWHEEL_LIB_THREADS_WORKER_POOL_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "base/mutex.h"
#include "handles/timer_state.h"
#include "threads/task_queue.h"

namespace timingwheel::internal {

class WorkerPool {
 public:
  using Task = DueTimer;
  // Runs one task on worker number `worker` (0 .. workers - 1).
  using RunFn = absl::AnyInvocable<void(const Task&, int worker)>;
  // A task `run` was called with is no longer named by the pool (see "Taken
  // tasks"); called with no lock held, on the thread that ran it.
  using DoneFn = absl::AnyInvocable<void(const Task&)>;

  // A pool of `workers` (>= 1) threads that call `run` for each task, once
  // Start has started them, and `done` (if set) after. `on_thread_start`, if
  // set, runs as the first act of each thread, with its worker number (the
  // engine names the thread there); `on_thread_exit` runs as the last act of
  // each thread.
  WorkerPool(int workers, RunFn run, std::function<void()> on_thread_exit,
             std::function<void(int worker)> on_thread_start = nullptr,
             DoneFn done = nullptr);
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;
  // Starts no threads: each task is handed to `hand_off` (see above).
  WorkerPool(RunFn run, absl::AnyInvocable<void(uint64_t id)> hand_off,
             DoneFn done = nullptr);
  // Precondition: Join() was called, or Start failed, or never ran.
  ~WorkerPool();

  // Starts the threads; call once, first (not in executor mode). When the
  // system refuses one (ThreadStarter), closes the pool, joins the threads
  // already started and returns ResourceExhausted naming the worker, e.g.
  // "worker 12 of 1024: Resource temporarily unavailable (errno 11)".
  absl::Status Start() ABSL_LOCKS_EXCLUDED(mu_);
  // The threads started: all the workers once Start succeeded, the ones it
  // joined again when it failed.
  int started() const { return static_cast<int>(threads_.size()); }

  // Executor mode: runs the task registered under `id`, if Close did not take
  // it back; on the calling thread, as worker 0.
  void RunHandedOff(uint64_t id) ABSL_LOCKS_EXCLUDED(mu_);
  // Executor mode: the closure for `id` is destroyed unrun. Returns the task if
  // it was still registered (the caller cancels it).
  std::optional<Task> DropHandedOff(uint64_t id) ABSL_LOCKS_EXCLUDED(mu_);

  // Queues `tasks` (emptied) and wakes the workers (one for a single task).
  // Returns false, leaving `tasks` as they were, once the pool is closed.
  // Executor mode: registers them and hands them off, or, with `hand_offs`,
  // appends their ids there for the caller to hand off later (HandOff), so
  // that a caller holding a lock of its own need not call the executor.
  bool Submit(std::vector<Task>* tasks,
              std::vector<uint64_t>* hand_offs = nullptr)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Executor mode: hands the registered tasks `ids` to `hand_off`, or queues
  // them on this thread's hand-off of this pool in progress (see "Re-entrant
  // hand-offs").
  void HandOff(std::vector<uint64_t> ids) ABSL_LOCKS_EXCLUDED(mu_);

  // Calls `visit` with every task queued, stashed or handed off and not
  // taken (`taken` false), and every task taken and not done (true; see
  // "Taken tasks"), holding `mu_` throughout and each stash's lock while it
  // visits that stash's tasks: so no task moves between the queue, the
  // stashes and the workers meanwhile. `visit` must take no lock.
  void ForEachTask(absl::FunctionRef<void(const Task& task, bool taken)> visit)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Refuses further tasks, lets the threads exit after their current task,
  // and returns the tasks that were queued or stashed but not started: each
  // worker's stash in order (worker 0 first), then the queue. With one
  // worker that is submission order.
  std::vector<Task> Close() ABSL_LOCKS_EXCLUDED(mu_);

  // Joins every thread except the calling one, which is detached instead.
  // Executor mode: waits until no task runs (but the caller's own).
  void Join() ABSL_LOCKS_EXCLUDED(mu_);

  // Waits until no worker is active (see above) and no handed-off task runs,
  // but the caller's own worker or tasks (when it runs some, nested ones
  // included). Unless the pool is closed, that includes the queued and
  // stashed tasks being run.
  void WaitNoneRunning() ABSL_LOCKS_EXCLUDED(mu_);

  // Tasks queued, stashed or handed off, plus the active workers and the
  // handed-off tasks running (see "Counting" above): 0 only when nothing is
  // queued, stashed or running.
  int64_t Outstanding() const ABSL_LOCKS_EXCLUDED(mu_);
  // Tasks queued, stashed or handed off: not started yet.
  int64_t QueueDepth() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  friend class WorkerPoolTestPeer;

  // A worker's tasks taken but not started: `tasks[head..]`, front first;
  // and the task it runs or ran last (see "Taken tasks").
  // Aligned so that two workers' stashes share no cache line.
  struct alignas(64) Stash {
    SpinLock mu ABSL_ACQUIRED_AFTER(WorkerPool::mu_){LockRank::kStash};
    std::vector<Task> tasks ABSL_GUARDED_BY(mu);
    size_t head ABSL_GUARDED_BY(mu) = 0;
    std::optional<Task> current ABSL_GUARDED_BY(mu);

    size_t size() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
      return tasks.size() - head;
    }
  };

  void Loop(int index) ABSL_LOCKS_EXCLUDED(mu_);
  // Worker `index` lets go of its current task (into `*finished`, if any)
  // and takes the task at the front of its stash into `*task`, as current.
  // Returns false if the stash is empty.
  bool PopStash(int index, Task* task, std::optional<Task>* finished)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Worker `index`, its stash empty, takes a batch from the queue or steals
  // from another stash: the first task into `*task`, as current, the others
  // into its stash. Returns false if the queue and every stash are empty.
  // Chunks the queue released as it drained go to `*released`, for the
  // caller to free after unlocking.
  bool TakeBatch(int index, Task* task, TaskQueue::Chunks* released)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Tasks in all the stashes.
  int64_t StashedLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  RunFn run_;
  DoneFn done_;
  const std::function<void()> on_thread_exit_;
  const std::function<void(int worker)> on_thread_start_;
  // Executor mode when set.
  absl::AnyInvocable<void(uint64_t id)> hand_off_;

  mutable Mutex mu_{LockRank::kPool};
  CondVar cv_;       // a task was queued, or the pool closed
  CondVar idle_cv_;  // running_ went down
  TaskQueue queue_ ABSL_GUARDED_BY(mu_);
  // One per worker (none in executor mode); the vector is not changed after
  // the constructor.
  std::vector<std::unique_ptr<Stash>> stashes_;
  // Active workers (see "Counting" above) plus handed-off tasks running.
  int64_t running_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  // Executor mode: tasks handed off and not started, by id; and those taken
  // by RunHandedOff and not done yet.
  std::unordered_map<uint64_t, Task> handed_off_ ABSL_GUARDED_BY(mu_);
  std::unordered_map<uint64_t, Task> running_handed_off_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;

  std::vector<std::thread> threads_;
};

// Names the calling thread (at most 15 characters show).
void SetCurrentThreadName(const char* name);

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_THREADS_WORKER_POOL_H_
