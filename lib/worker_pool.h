// Copyright 2026 The timingwheel Authors.
//
// worker_pool.h: the bounded pool of threads that run due callbacks.
//
// Kafka runs expired tasks on one executor thread and the Go port starts a
// goroutine per due timer; this pool is in between: `workers` threads, named
// `tw-worker-N`, take tasks from one FIFO queue. The advancer submits all the
// due timers of a bucket as one batch (one lock round trip); a worker takes
// one task at a time, so a slow callback holds back no task that another,
// free worker could run.
//
// With an executor of the user's (Options::executor) the pool starts no
// threads: Submit registers each task under an id and hands the id to
// `hand_off`, which gives the user's executor a closure that calls RunHandedOff
// (or DropHandedOff, when the executor destroys the closure unrun). Close takes
// back the tasks not started, as for the queue, and Join waits until no task
// runs.
//
// A task names a timer node and the generation it was dispatched with; the
// pool only calls `run` with it. Whether the callback really starts (it may
// have been stopped or reset since) is decided by the runner.
//
// Thread-safety: thread-safe. `mu_` is a leaf lock, never held while a task
// runs. Close hands back the tasks not started; Join waits for the threads
// (all but the calling one, when a callback shuts its own wheel down).

#ifndef TIMINGWHEEL_LIB_WORKER_POOL_H_
#define TIMINGWHEEL_LIB_WORKER_POOL_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "mutex.h"

namespace timingwheel::internal {

class TimerNode;

class WorkerPool {
 public:
  struct Task {
    TimerNode* node;
    uint64_t generation;
    int64_t deadline_ns;  // of the arm it was dispatched for, for lateness
  };
  // Runs one task on worker number `worker` (0 .. workers - 1).
  using RunFn = absl::AnyInvocable<void(const Task&, int worker)>;

  // Starts `workers` (>= 1) threads that call `run` for each task.
  // `on_thread_exit` runs as the last act of each thread.
  WorkerPool(int workers, RunFn run, std::function<void()> on_thread_exit);
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;
  // Starts no threads: each task is handed to `hand_off` (see above).
  WorkerPool(RunFn run, absl::AnyInvocable<void(uint64_t id)> hand_off);
  ~WorkerPool();  // Precondition: Join() was called.

  // Executor mode: runs the task registered under `id`, if Close did not take
  // it back; on the calling thread, as worker 0.
  void RunHandedOff(uint64_t id) ABSL_LOCKS_EXCLUDED(mu_);
  // Executor mode: the closure for `id` is destroyed unrun. Returns the task if
  // it was still registered (the caller cancels it).
  std::optional<Task> DropHandedOff(uint64_t id) ABSL_LOCKS_EXCLUDED(mu_);

  // Queues `tasks` (emptied). Returns false, leaving `tasks` as they were,
  // once the pool is closed.
  bool Submit(std::vector<Task>* tasks) ABSL_LOCKS_EXCLUDED(mu_);
  bool Submit(Task task) ABSL_LOCKS_EXCLUDED(mu_);

  // Refuses further tasks, lets the threads exit after their current task,
  // and returns the tasks that were queued but not started.
  std::vector<Task> Close() ABSL_LOCKS_EXCLUDED(mu_);

  // Joins every thread except the calling one, which is detached instead.
  // Executor mode: waits until no task runs (but the caller's own).
  void Join() ABSL_LOCKS_EXCLUDED(mu_);

  // Waits until no task runs but the caller's own (when it runs one).
  void WaitNoneRunning() ABSL_LOCKS_EXCLUDED(mu_);

  // Tasks queued or running.
  int64_t Outstanding() const ABSL_LOCKS_EXCLUDED(mu_);
  // Tasks queued, not yet taken by a worker.
  int64_t QueueDepth() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Loop(int index);

  RunFn run_;
  const std::function<void()> on_thread_exit_;
  // Executor mode when set.
  absl::AnyInvocable<void(uint64_t id)> hand_off_;

  mutable Mutex mu_;
  CondVar cv_;       // a task was queued, or the pool closed
  CondVar idle_cv_;  // running_ went down
  std::deque<Task> queue_ ABSL_GUARDED_BY(mu_);
  int64_t running_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  // Executor mode: tasks handed off and not started, by id.
  std::unordered_map<uint64_t, Task> handed_off_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;

  std::vector<std::thread> threads_;
};

// Names the calling thread (at most 15 characters show).
void SetCurrentThreadName(const char* name);

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_WORKER_POOL_H_
