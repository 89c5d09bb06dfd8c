// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// worker_pool_test.cc: tests of WorkerPool (lib/threads/worker_pool.h), the
// bounded pool that runs due callbacks. Every task is run once with its node
// and generation; N workers really run N tasks at once; one worker runs tasks
// in FIFO order; Submit after Close returns false and leaves the batch alone;
// Close returns the tasks not started, the stashed ones included, each once;
// Join from a task's own thread detaches that thread instead of deadlocking;
// on_thread_exit runs once per thread; a worker thread the system refuses
// (ThreadStarterTestPeer) makes Start close the pool, join the workers it
// started and say which one failed; a slow task does not hold back another
// task while a worker is free (a free worker steals the tasks stashed behind
// it, wherever it sits in a burst); Outstanding and QueueDepth count queued,
// stashed and running tasks, and Outstanding is never 0 while a submitted task
// has not run; randomized submitters get every task run exactly once, or
// returned by a concurrent Close; on_thread_start runs first on each worker
// with its number; the queue gives back its spare chunks beyond
// TaskQueue::kKeptChunks when a burst drains (through WorkerPoolTestPeer, a
// friend of WorkerPool; task_queue_test covers the queue itself);
// ForEachTask sees every task queued, stashed or handed off, and the ones
// taken as taken until `done` is called for them, once each, after their
// run; Submit can leave the executor's hand-offs to its caller.
//
// Tasks carry fake node pointers: the pool never dereferences them, it only
// hands them to the RunFn of the test. Every wait is bounded.

#include "threads/worker_pool.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util.h"

namespace timingwheel::internal {

class WorkerPoolTestPeer {
 public:
  // Chunks allocated for the pool's queue.
  static size_t QueueChunks(const WorkerPool& pool) {
    MutexLock lock(&pool.mu_);
    return pool.queue_.chunks();
  }
};

namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAreArray;

TimerNode* FakeNode(int i) {
  return reinterpret_cast<TimerNode*>(static_cast<uintptr_t>(i + 1) * 64);
}

int IndexOf(const TimerNode* node) {
  return static_cast<int>(reinterpret_cast<uintptr_t>(node) / 64) - 1;
}

WorkerPool::Task MakeTask(int i) {
  return WorkerPool::Task{FakeNode(i), static_cast<uint64_t>(1000 + i),
                          /*deadline_ns=*/2000 + i};
}

// Submits one task, as a batch of one.
bool SubmitOne(WorkerPool* pool, WorkerPool::Task task) {
  std::vector<WorkerPool::Task> one{task};
  return pool->Submit(&one);
}

// Tasks 0 .. n - 1, as one batch.
std::vector<WorkerPool::Task> MakeTasks(int n) {
  std::vector<WorkerPool::Task> tasks;
  for (int i = 0; i < n; ++i) tasks.push_back(MakeTask(i));
  return tasks;
}

// Records what ran, in order.
class Recorder {
 public:
  void Record(const WorkerPool::Task& task) {
    MutexLock lock(&mu_);
    ran_.push_back(IndexOf(task.node));
    deadlines_ok_ =
        deadlines_ok_ && task.deadline_ns == 2000 + IndexOf(task.node);
    generations_.push_back(task.generation);
  }
  std::vector<int> ran() {
    MutexLock lock(&mu_);
    return ran_;
  }
  std::vector<uint64_t> generations() {
    MutexLock lock(&mu_);
    return generations_;
  }
  // Every task came with the deadline it was submitted with.
  bool deadlines_ok() {
    MutexLock lock(&mu_);
    return deadlines_ok_;
  }
  size_t count() {
    MutexLock lock(&mu_);
    return ran_.size();
  }

 private:
  Mutex mu_{LockRank::kOutsideLibrary};
  std::vector<int> ran_ ABSL_GUARDED_BY(mu_);
  std::vector<uint64_t> generations_ ABSL_GUARDED_BY(mu_);
  bool deadlines_ok_ ABSL_GUARDED_BY(mu_) = true;
};

std::vector<int> Range(int n) {
  std::vector<int> out(n);
  for (int i = 0; i < n; ++i) out[i] = i;
  return out;
}

// Closes and joins the pool however the test ends.
class PoolCloser {
 public:
  explicit PoolCloser(WorkerPool* pool) : pool_(pool) {}
  ~PoolCloser() {
    pool_->Close();
    pool_->Join();
  }

 private:
  WorkerPool* pool_;
};

TEST(WorkerPoolTest, RunsEveryTaskOnceWithItsNodeAndGeneration) {
  Recorder recorder;
  WorkerPool pool(
      3, [&](const WorkerPool::Task& task, int) { recorder.Record(task); },
      [] {});
  ASSERT_TRUE(pool.Start().ok());
  PoolCloser closer(&pool);
  std::vector<WorkerPool::Task> batch = MakeTasks(150);
  ASSERT_TRUE(pool.Submit(&batch));
  EXPECT_TRUE(batch.empty());  // Submit empties it
  for (int i = 150; i < 200; ++i) ASSERT_TRUE(SubmitOne(&pool, MakeTask(i)));
  ASSERT_TRUE(Eventually([&] { return recorder.count() >= 200; }));
  EXPECT_TRUE(Eventually([&] { return pool.Outstanding() == 0; }));
  EXPECT_THAT(recorder.ran(), UnorderedElementsAreArray(Range(200)));
  std::vector<uint64_t> want;
  for (int i : recorder.ran()) want.push_back(1000 + i);
  EXPECT_THAT(recorder.generations(), ElementsAreArray(want));
  EXPECT_TRUE(recorder.deadlines_ok());
}

TEST(WorkerPoolTest, OneWorkerRunsTasksInSubmissionOrder) {
  Recorder recorder;
  WorkerPool pool(
      1, [&](const WorkerPool::Task& task, int) { recorder.Record(task); },
      [] {});
  ASSERT_TRUE(pool.Start().ok());
  PoolCloser closer(&pool);
  std::vector<WorkerPool::Task> batch = MakeTasks(100);
  ASSERT_TRUE(pool.Submit(&batch));
  for (int i = 100; i < 130; ++i) ASSERT_TRUE(SubmitOne(&pool, MakeTask(i)));
  ASSERT_TRUE(Eventually([&] { return recorder.count() >= 130; }));
  EXPECT_THAT(recorder.ran(), ElementsAreArray(Range(130)));
}

// N tasks that each wait until all N are running: only N workers running
// at once can finish them.
void ExpectRunsAtOnce(int workers, bool as_batch) {
  std::atomic<int> running{0};
  std::atomic<int> all_met{0};
  WorkerPool pool(
      workers,
      [&](const WorkerPool::Task&, int) {
        running.fetch_add(1);
        if (Eventually([&] { return running.load() >= workers; })) {
          all_met.fetch_add(1);
        }
      },
      [] {});
  ASSERT_TRUE(pool.Start().ok());
  PoolCloser closer(&pool);
  if (as_batch) {
    std::vector<WorkerPool::Task> batch = MakeTasks(workers);
    ASSERT_TRUE(pool.Submit(&batch));
  } else {
    for (int i = 0; i < workers; ++i)
      ASSERT_TRUE(SubmitOne(&pool, MakeTask(i)));
  }
  ASSERT_TRUE(Eventually([&] { return pool.Outstanding() == 0; },
                         kPatience + absl::Seconds(5)));
  EXPECT_EQ(all_met.load(), workers)
      << "only " << running.load() << " tasks ran at once with " << workers
      << " workers";
}

TEST(WorkerPoolTest, NWorkersRunNTasksAtOnce) {
  for (int workers : {1, 2, 4, 8}) {
    SCOPED_TRACE(workers);
    ExpectRunsAtOnce(workers, /*as_batch=*/true);
    ExpectRunsAtOnce(workers, /*as_batch=*/false);
  }
}

TEST(WorkerPoolTest, SubmitAfterCloseReturnsFalseAndKeepsTheTasks) {
  Recorder recorder;
  WorkerPool pool(
      2, [&](const WorkerPool::Task& task, int) { recorder.Record(task); },
      [] {});
  ASSERT_TRUE(pool.Start().ok());
  EXPECT_TRUE(pool.Close().empty());
  EXPECT_FALSE(SubmitOne(&pool, MakeTask(0)));
  std::vector<WorkerPool::Task> batch = {MakeTask(1), MakeTask(2)};
  EXPECT_FALSE(pool.Submit(&batch));
  ASSERT_EQ(batch.size(), 2u);  // left as it was
  EXPECT_EQ(batch[0].node, FakeNode(1));
  EXPECT_EQ(batch[1].node, FakeNode(2));
  EXPECT_EQ(pool.Outstanding(), 0);
  EXPECT_EQ(pool.QueueDepth(), 0);
  pool.Join();
  EXPECT_EQ(recorder.count(), 0u);
}

TEST(WorkerPoolTest, CloseReturnsTheUnstartedTasksInOrder) {
  Gate gate;
  Event first_started;
  Recorder recorder;
  WorkerPool pool(
      1,
      [&](const WorkerPool::Task& task, int) {
        recorder.Record(task);
        if (IndexOf(task.node) == 0) {
          first_started.Notify();
          gate.Pass();
        }
      },
      [] {});
  ASSERT_TRUE(pool.Start().ok());
  ASSERT_TRUE(SubmitOne(&pool, MakeTask(0)));
  ASSERT_TRUE(first_started.Wait());
  for (int i = 1; i <= 5; ++i) ASSERT_TRUE(SubmitOne(&pool, MakeTask(i)));
  std::vector<WorkerPool::Task> left = pool.Close();
  gate.Open();
  pool.Join();
  ASSERT_EQ(left.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(left[i].node, FakeNode(i + 1));
    EXPECT_EQ(left[i].generation, 1001u + i);
  }
  EXPECT_THAT(recorder.ran(), ElementsAreArray({0}));  // only the running one
  EXPECT_EQ(pool.Outstanding(), 0);
}

TEST(WorkerPoolTest, CloseLetsTheRunningTaskFinish) {
  Gate gate;
  Event started;
  std::atomic<bool> finished{false};
  WorkerPool pool(
      1,
      [&](const WorkerPool::Task&, int) {
        started.Notify();
        gate.Pass();
        finished.store(true);
      },
      [] {});
  ASSERT_TRUE(pool.Start().ok());
  ASSERT_TRUE(SubmitOne(&pool, MakeTask(0)));
  ASSERT_TRUE(started.Wait());
  EXPECT_TRUE(pool.Close().empty());
  EXPECT_FALSE(finished.load());
  gate.Open();
  pool.Join();
  EXPECT_TRUE(finished.load());
}

TEST(WorkerPoolTest, OnThreadExitRunsOncePerThread) {
  std::atomic<int> exits{0};
  {
    WorkerPool pool(
        3, [](const WorkerPool::Task&, int) {}, [&] { exits.fetch_add(1); });
    ASSERT_TRUE(pool.Start().ok());
    ASSERT_TRUE(SubmitOne(&pool, MakeTask(0)));
    EXPECT_EQ(exits.load(), 0);
    pool.Close();
    pool.Join();
    EXPECT_EQ(exits.load(), 3);
  }
  EXPECT_EQ(exits.load(), 3);
}

TEST(WorkerPoolTest, ARefusedThreadStopsTheStartedOnesAndNamesTheWorker) {
  std::atomic<int> starts{0};
  std::atomic<int> exits{0};
  std::atomic<int> runs{0};
  WorkerPool pool(
      4, [&](const WorkerPool::Task&, int) { runs.fetch_add(1); },
      [&] { exits.fetch_add(1); }, [&](int) { starts.fetch_add(1); });
  absl::Status status;
  {
    ThreadStarterTestPeer refuse(/*allowed=*/2);
    status = pool.Start();
  }
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(),
              HasSubstr("worker 2 of 4: Resource temporarily unavailable"));
  // The two started were joined: each ran its first and last act.
  EXPECT_EQ(pool.started(), 2);
  EXPECT_EQ(starts.load(), 2);
  EXPECT_EQ(exits.load(), 2);
  // Closed: no task is taken.
  EXPECT_FALSE(SubmitOne(&pool, MakeTask(0)));
  EXPECT_EQ(runs.load(), 0);
}

TEST(WorkerPoolTest, JoinFromATasksOwnThreadDetachesInsteadOfDeadlocking) {
  // What a callback that shuts its own wheel down does.
  std::atomic<int> exits{0};
  Event joined;
  std::unique_ptr<WorkerPool> pool;
  std::thread::id task_thread;
  pool = std::make_unique<WorkerPool>(
      2,
      [&](const WorkerPool::Task&, int) {
        task_thread = std::this_thread::get_id();
        pool->Close();
        pool->Join();  // joins the other worker, detaches this one
        joined.Notify();
      },
      [&] { exits.fetch_add(1); });
  ASSERT_TRUE(pool->Start().ok());
  ASSERT_TRUE(SubmitOne(pool.get(), MakeTask(0)));
  ASSERT_TRUE(joined.Wait()) << "Join from a task deadlocked";
  // The detached thread leaves its loop on its own.
  ASSERT_TRUE(Eventually([&] { return exits.load() == 2; }));
  pool->Join();  // nothing left to join
  pool.reset();
  EXPECT_NE(task_thread, std::this_thread::get_id());
}

TEST(WorkerPoolTest, SlowTaskDoesNotHoldBackAShortQueue) {
  // Two workers, a slow task first: every task behind it runs on the other
  // worker while the slow one is still running.
  for (int fast : {1, 2, 3}) {
    SCOPED_TRACE(fast);
    Gate gate;
    std::atomic<int> fast_done{0};
    WorkerPool pool(
        2,
        [&](const WorkerPool::Task& task, int) {
          if (IndexOf(task.node) == 0) {
            gate.Pass();
          } else {
            fast_done.fetch_add(1);
          }
        },
        [] {});
    ASSERT_TRUE(pool.Start().ok());
    std::vector<WorkerPool::Task> batch = MakeTasks(fast + 1);
    ASSERT_TRUE(pool.Submit(&batch));
    EXPECT_TRUE(Eventually([&] { return fast_done.load() == fast; }))
        << fast_done.load() << " of " << fast
        << " fast tasks ran while the slow one held its worker";
    gate.Open();
    pool.Close();
    pool.Join();
  }
}

TEST(WorkerPoolTest, SlowTaskDoesNotHoldBackASingleSubmission) {
  Gate gate;
  Event slow_started;
  Event fast_done;
  WorkerPool pool(
      2,
      [&](const WorkerPool::Task& task, int) {
        if (IndexOf(task.node) == 0) {
          slow_started.Notify();
          gate.Pass();
        } else {
          fast_done.Notify();
        }
      },
      [] {});
  ASSERT_TRUE(pool.Start().ok());
  ASSERT_TRUE(SubmitOne(&pool, MakeTask(0)));
  ASSERT_TRUE(slow_started.Wait());
  ASSERT_TRUE(SubmitOne(&pool, MakeTask(1)));
  EXPECT_TRUE(fast_done.Wait());
  gate.Open();
  pool.Close();
  pool.Join();
}

TEST(WorkerPoolTest, SlowTaskDoesNotHoldBackALongQueue) {
  // DESIGN.md: "a slow callback never delays other timers while a worker is
  // free". A bucket's due timers arrive as one batch; with a queue of 8 tasks
  // and 2 workers, every task queued behind the slow one must still run on
  // the free worker while the slow one runs.
  constexpr int kTasks = 8;
  Gate gate;
  std::atomic<int> fast_done{0};
  Recorder recorder;
  WorkerPool pool(
      2,
      [&](const WorkerPool::Task& task, int) {
        if (IndexOf(task.node) == 0) {
          gate.Pass();
        } else {
          recorder.Record(task);
          fast_done.fetch_add(1);
        }
      },
      [] {});
  ASSERT_TRUE(pool.Start().ok());
  std::vector<WorkerPool::Task> batch = MakeTasks(kTasks);
  ASSERT_TRUE(pool.Submit(&batch));
  const bool all_ran = Eventually(
      [&] { return fast_done.load() == kTasks - 1; }, absl::Seconds(2));
  std::vector<int> ran = recorder.ran();
  std::sort(ran.begin(), ran.end());
  EXPECT_TRUE(all_ran) << fast_done.load() << " of " << kTasks - 1
                       << " fast tasks ran while the slow task held its "
                          "worker and the other worker was idle; ran: "
                       << ::testing::PrintToString(ran)
                       << " (a worker takes a chunk of depth / (2 * workers) "
                          "tasks, so the slow task's chunk holds the next "
                          "ones)";
  gate.Open();
  pool.Close();
  pool.Join();
}

TEST(WorkerPoolTest, OutstandingAndQueueDepthCountQueuedAndRunningTasks) {
  Gate gate;
  Event started;
  std::atomic<int> done{0};
  WorkerPool pool(
      1,
      [&](const WorkerPool::Task& task, int) {
        if (IndexOf(task.node) == 0) {
          started.Notify();
          gate.Pass();
        }
        done.fetch_add(1);
      },
      [] {});
  ASSERT_TRUE(pool.Start().ok());
  EXPECT_EQ(pool.Outstanding(), 0);
  EXPECT_EQ(pool.QueueDepth(), 0);
  ASSERT_TRUE(SubmitOne(&pool, MakeTask(0)));
  ASSERT_TRUE(started.Wait());
  EXPECT_EQ(pool.Outstanding(), 1);  // running
  EXPECT_EQ(pool.QueueDepth(), 0);
  for (int i = 1; i <= 3; ++i) {
    ASSERT_TRUE(SubmitOne(&pool, MakeTask(i)));
    EXPECT_EQ(pool.QueueDepth(), i);
    EXPECT_EQ(pool.Outstanding(), i + 1);
  }
  std::vector<WorkerPool::Task> batch = {MakeTask(4), MakeTask(5)};
  ASSERT_TRUE(pool.Submit(&batch));
  EXPECT_EQ(pool.QueueDepth(), 5);
  EXPECT_EQ(pool.Outstanding(), 6);
  gate.Open();
  EXPECT_TRUE(Eventually([&] { return pool.Outstanding() == 0; }));
  EXPECT_EQ(pool.QueueDepth(), 0);
  EXPECT_EQ(done.load(), 6);
  pool.Close();
  pool.Join();
}

TEST(WorkerPoolTest, OutstandingCountsATaskUntilItReturns) {
  Gate gate;
  Event started;
  WorkerPool pool(
      2,
      [&](const WorkerPool::Task&, int) {
        started.Notify();
        gate.Pass();
      },
      [] {});
  ASSERT_TRUE(pool.Start().ok());
  ASSERT_TRUE(SubmitOne(&pool, MakeTask(0)));
  ASSERT_TRUE(started.Wait());
  // The task cannot return before the gate opens: until then it counts.
  EXPECT_EQ(pool.Outstanding(), 1);
  EXPECT_EQ(pool.QueueDepth(), 0);
  gate.Open();
  EXPECT_TRUE(Eventually([&] { return pool.Outstanding() == 0; }));
  pool.Close();
  pool.Join();
}

TEST(WorkerPoolTest, QueueGivesBackItsSpareChunksWhenABurstDrains) {
  // The only worker blocks in task 0 while a burst queues up behind it, in
  // 3 * kKeptChunks + 1 chunks.
  constexpr size_t kBurstChunks = 3 * TaskQueue::kKeptChunks + 1;
  constexpr int kBurst =
      static_cast<int>((kBurstChunks - 1) * TaskQueue::kChunkTasks + 1);
  Gate gate;
  Event started;
  Recorder recorder;
  WorkerPool pool(
      1,
      [&](const WorkerPool::Task& task, int) {
        if (IndexOf(task.node) == 0) {
          started.Notify();
          gate.Pass();
        }
        recorder.Record(task);
      },
      [] {});
  ASSERT_TRUE(pool.Start().ok());
  PoolCloser closer(&pool);
  ASSERT_TRUE(SubmitOne(&pool, MakeTask(0)));
  ASSERT_TRUE(started.Wait());
  std::vector<WorkerPool::Task> burst;
  for (int i = 1; i <= kBurst; ++i) burst.push_back(MakeTask(i));
  ASSERT_TRUE(pool.Submit(&burst));
  EXPECT_EQ(WorkerPoolTestPeer::QueueChunks(pool), kBurstChunks);
  gate.Open();
  ASSERT_TRUE(Eventually([&] { return pool.Outstanding() == 0; }));
  EXPECT_EQ(WorkerPoolTestPeer::QueueChunks(pool), TaskQueue::kKeptChunks);
  // The pool works on, with a chunk it kept.
  std::vector<WorkerPool::Task> more;
  for (int i = kBurst + 1; i <= kBurst + 100; ++i) more.push_back(MakeTask(i));
  ASSERT_TRUE(pool.Submit(&more));
  ASSERT_TRUE(Eventually([&] { return pool.Outstanding() == 0; }));
  EXPECT_EQ(recorder.ran(), Range(kBurst + 101));
  EXPECT_TRUE(recorder.deadlines_ok());
  EXPECT_EQ(WorkerPoolTestPeer::QueueChunks(pool), TaskQueue::kKeptChunks);
}

TEST(WorkerPoolTest, FreeWorkerStealsTheStashOfAWorkerBlockedInASlowTask) {
  // Worker X is busy with a blocker while a batch of 21 arrives: the other
  // worker Y takes ceil(21 / 2) = 11 of them, blocks in the first (slow) one
  // and holds the next 10 in its stash. Once X is free it runs the rest of
  // the queue and then every task of Y's stash, while Y is still blocked.
  constexpr int kBlocker = 100;
  constexpr int kFast = 20;
  Gate blocker_gate;
  Gate slow_gate;
  Event blocker_started;
  Event slow_started;
  std::atomic<int> blocker_worker{-1};
  std::atomic<int> slow_worker{-1};
  Recorder recorder;
  Mutex mu{LockRank::kOutsideLibrary};
  std::vector<int> fast_workers;  // guarded by mu
  WorkerPool pool(
      2,
      [&](const WorkerPool::Task& task, int worker) {
        const int i = IndexOf(task.node);
        if (i == kBlocker) {
          blocker_worker.store(worker);
          blocker_started.Notify();
          blocker_gate.Pass();
        } else if (i == 0) {
          slow_worker.store(worker);
          slow_started.Notify();
          slow_gate.Pass();
        } else {
          recorder.Record(task);
          MutexLock lock(&mu);
          fast_workers.push_back(worker);
        }
      },
      [] {});
  ASSERT_TRUE(pool.Start().ok());
  PoolCloser closer(&pool);
  ASSERT_TRUE(SubmitOne(&pool, MakeTask(kBlocker)));
  ASSERT_TRUE(blocker_started.Wait());
  std::vector<WorkerPool::Task> batch = MakeTasks(kFast + 1);
  ASSERT_TRUE(pool.Submit(&batch));
  ASSERT_TRUE(slow_started.Wait());
  EXPECT_NE(slow_worker.load(), blocker_worker.load());
  EXPECT_EQ(pool.QueueDepth(), kFast);       // queued or stashed
  EXPECT_EQ(pool.Outstanding(), kFast + 2);  // and the two running
  blocker_gate.Open();
  const bool all_ran =
      Eventually([&] { return recorder.count() >= static_cast<size_t>(kFast); },
                 absl::Seconds(5));
  std::vector<int> ran = recorder.ran();
  std::sort(ran.begin(), ran.end());
  EXPECT_TRUE(all_ran) << "ran while the slow task held its worker: "
                       << ::testing::PrintToString(ran);
  EXPECT_THAT(recorder.ran(), UnorderedElementsAreArray([&] {
                std::vector<int> want;
                for (int i = 1; i <= kFast; ++i) want.push_back(i);
                return want;
              }()));
  {
    MutexLock lock(&mu);
    for (int worker : fast_workers) EXPECT_EQ(worker, blocker_worker.load());
  }
  EXPECT_EQ(pool.QueueDepth(), 0);
  // The slow task's worker (the other one is back at the queue soon).
  EXPECT_TRUE(Eventually([&] { return pool.Outstanding() == 1; }));
  slow_gate.Open();
  EXPECT_TRUE(Eventually([&] { return pool.Outstanding() == 0; }));
}

TEST(WorkerPoolTest, SlowTaskAnywhereInABurstDoesNotHoldBackTheRest) {
  // A burst of 1000 tasks on two workers, taken in batches: wherever the slow
  // task sits in its worker's batch, the tasks stashed behind it are stolen.
  constexpr int kTasks = 1000;
  for (int slow : {0, 1, 31, 500, 998, 999}) {
    SCOPED_TRACE(slow);
    Gate gate;
    std::atomic<int> fast_done{0};
    WorkerPool pool(
        2,
        [&](const WorkerPool::Task& task, int) {
          if (IndexOf(task.node) == slow) {
            gate.Pass();
          } else {
            fast_done.fetch_add(1);
          }
        },
        [] {});
    ASSERT_TRUE(pool.Start().ok());
    PoolCloser closer(&pool);
    std::vector<WorkerPool::Task> batch = MakeTasks(kTasks);
    ASSERT_TRUE(pool.Submit(&batch));
    EXPECT_TRUE(Eventually([&] { return fast_done.load() == kTasks - 1; },
                           absl::Seconds(5)))
        << fast_done.load() << " of " << kTasks - 1
        << " fast tasks ran while the slow one held its worker";
    EXPECT_EQ(pool.QueueDepth(), 0);
    EXPECT_TRUE(Eventually([&] { return pool.Outstanding() == 1; }));
    gate.Open();
    EXPECT_TRUE(Eventually([&] { return pool.Outstanding() == 0; }));
  }
}

TEST(WorkerPoolTest, CloseTakesBackTheStashFirstThenTheQueueInOrder) {
  // One worker takes a batch of 10 (it runs the first, blocks, and stashes
  // nine); three more tasks are queued behind. Close returns the nine stashed
  // tasks and the three queued ones in submission order, and none of them
  // runs.
  Gate gate;
  Event started;
  Recorder recorder;
  WorkerPool pool(
      1,
      [&](const WorkerPool::Task& task, int) {
        recorder.Record(task);
        if (IndexOf(task.node) == 0) {
          started.Notify();
          gate.Pass();
        }
      },
      [] {});
  ASSERT_TRUE(pool.Start().ok());
  std::vector<WorkerPool::Task> batch = MakeTasks(10);
  ASSERT_TRUE(pool.Submit(&batch));
  ASSERT_TRUE(started.Wait());
  for (int i = 10; i < 13; ++i) ASSERT_TRUE(SubmitOne(&pool, MakeTask(i)));
  EXPECT_EQ(pool.QueueDepth(), 12);
  EXPECT_EQ(pool.Outstanding(), 13);
  std::vector<WorkerPool::Task> left = pool.Close();
  EXPECT_EQ(pool.QueueDepth(), 0);
  gate.Open();
  pool.Join();
  std::vector<int> left_indexes;
  for (const WorkerPool::Task& task : left) {
    left_indexes.push_back(IndexOf(task.node));
    EXPECT_EQ(task.generation, 1000u + IndexOf(task.node));
    EXPECT_EQ(task.deadline_ns, 2000 + IndexOf(task.node));
  }
  std::vector<int> want;
  for (int i = 1; i < 13; ++i) want.push_back(i);
  EXPECT_THAT(left_indexes, ElementsAreArray(want));
  EXPECT_THAT(recorder.ran(), ElementsAreArray({0}));
  EXPECT_EQ(pool.Outstanding(), 0);
}

TEST(WorkerPoolTest, CloseTakesBackEveryStashOnceAndNoneRunsAfterIt) {
  // Every task blocks: both workers block in their first task with the rest
  // of their batch stashed, the remainder queued. Close returns everything
  // not started exactly once, and nothing it returned runs.
  constexpr int kTasks = 40;
  Gate gate;
  std::atomic<int> started{0};
  Recorder recorder;
  WorkerPool pool(
      2,
      [&](const WorkerPool::Task& task, int) {
        recorder.Record(task);
        started.fetch_add(1);
        gate.Pass();
      },
      [] {});
  ASSERT_TRUE(pool.Start().ok());
  std::vector<WorkerPool::Task> batch = MakeTasks(kTasks);
  ASSERT_TRUE(pool.Submit(&batch));
  ASSERT_TRUE(Eventually([&] { return started.load() == 2; }));
  EXPECT_EQ(pool.QueueDepth(), kTasks - 2);
  std::vector<WorkerPool::Task> left = pool.Close();
  gate.Open();
  pool.Join();
  std::vector<int> ran = recorder.ran();
  EXPECT_EQ(ran.size(), 2u);
  std::vector<int> all = ran;
  for (const WorkerPool::Task& task : left) {
    all.push_back(IndexOf(task.node));
  }
  EXPECT_THAT(all, UnorderedElementsAreArray(Range(kTasks)));
  EXPECT_EQ(pool.Outstanding(), 0);
  EXPECT_EQ(pool.QueueDepth(), 0);
}

// Submitters push tasks with unique indexes, singly and in batches of random
// sizes, while workers run them with random short delays (so stashes fill
// and get stolen from).
class StressSubmitters {
 public:
  static constexpr int kSubmitters = 4;
  static constexpr int kPerSubmitter = 20000;
  static constexpr int kTasks = kSubmitters * kPerSubmitter;

  // Starts the submitters; each stops at its first refused Submit.
  void Start(WorkerPool* pool, uint32_t seed) {
    for (int s = 0; s < kSubmitters; ++s) {
      threads_.emplace_back([this, pool, s, seed] {
        std::mt19937 rng(seed + static_cast<uint32_t>(s));
        int next = s * kPerSubmitter;
        const int end = next + kPerSubmitter;
        while (next < end) {
          // A quarter single tasks, the rest batches of 1 to 100.
          const bool single = rng() % 4 == 0;
          const int n =
              single ? 1
                     : std::min(end - next, std::uniform_int_distribution<int>(
                                                1, 100)(rng));
          bool ok;
          if (single) {
            ok = SubmitOne(pool, MakeTask(next));
          } else {
            std::vector<WorkerPool::Task> batch;
            for (int i = 0; i < n; ++i) batch.push_back(MakeTask(next + i));
            ok = pool->Submit(&batch);
            EXPECT_EQ(batch.empty(), ok);
          }
          if (!ok) break;
          next += n;
          submitted_.fetch_add(n);
          if (rng() % 16 == 0) std::this_thread::yield();
        }
        accepted_end_[s] = next;
      });
    }
  }
  void Join() {
    for (std::thread& thread : threads_) thread.join();
    threads_.clear();
  }
  // Tasks whose Submit has returned true.
  int64_t submitted() const { return submitted_.load(); }
  // After Join: whether task `i` was accepted by the pool.
  bool Accepted(int i) const { return i < accepted_end_[i / kPerSubmitter]; }

 private:
  std::vector<std::thread> threads_;
  std::atomic<int64_t> submitted_{0};
  int accepted_end_[kSubmitters] = {};
};

// Runs task `i` once more; now and then slowly.
void RunStressTask(const WorkerPool::Task& task,
                   std::vector<std::atomic<int>>* runs,
                   std::atomic<int64_t>* ran) {
  const int i = IndexOf(task.node);
  EXPECT_EQ(task.generation, 1000u + i);
  (*runs)[i].fetch_add(1);
  if (i % 97 == 0) {
    absl::SleepFor(absl::Microseconds(50));
  } else if (i % 7 == 0) {
    std::this_thread::yield();
  }
  ran->fetch_add(1);
}

TEST(WorkerPoolTest, StressEveryTaskRunsExactlyOnceAndOutstandingReachesZero) {
  const uint32_t seed = ::testing::UnitTest::GetInstance()->random_seed();
  SCOPED_TRACE(seed);
  std::vector<std::atomic<int>> runs(StressSubmitters::kTasks);
  std::atomic<int64_t> ran{0};
  WorkerPool pool(
      3,
      [&](const WorkerPool::Task& task, int) {
        RunStressTask(task, &runs, &ran);
      },
      [] {});
  ASSERT_TRUE(pool.Start().ok());
  PoolCloser closer(&pool);
  StressSubmitters submitters;
  // Outstanding() == 0 means every task submitted before it ran to the end.
  std::atomic<bool> stop{false};
  std::atomic<int> early_zeros{0};
  std::thread checker([&] {
    while (!stop.load()) {
      const int64_t submitted = submitters.submitted();
      if (pool.Outstanding() == 0 && ran.load() < submitted) {
        early_zeros.fetch_add(1);
      }
      std::this_thread::yield();
    }
  });
  submitters.Start(&pool, seed);
  submitters.Join();
  EXPECT_TRUE(Eventually([&] { return pool.Outstanding() == 0; }));
  EXPECT_EQ(ran.load(), StressSubmitters::kTasks);
  stop.store(true);
  checker.join();
  EXPECT_EQ(early_zeros.load(), 0)
      << "Outstanding() was 0 while a submitted task had not run";
  EXPECT_EQ(pool.QueueDepth(), 0);
  int wrong = 0;
  for (int i = 0; i < StressSubmitters::kTasks; ++i) {
    if (runs[i].load() != 1) ++wrong;
  }
  EXPECT_EQ(wrong, 0) << "tasks not run exactly once";
  EXPECT_TRUE(pool.Close().empty());
}

TEST(WorkerPoolTest, StressCloseWhileSubmittingLosesAndDuplicatesNothing) {
  const uint32_t seed = ::testing::UnitTest::GetInstance()->random_seed();
  SCOPED_TRACE(seed);
  std::vector<std::atomic<int>> runs(StressSubmitters::kTasks);
  std::atomic<int64_t> ran{0};
  WorkerPool pool(
      3,
      [&](const WorkerPool::Task& task, int) {
        RunStressTask(task, &runs, &ran);
      },
      [] {});
  ASSERT_TRUE(pool.Start().ok());
  StressSubmitters submitters;
  submitters.Start(&pool, seed);
  const int64_t close_at = std::mt19937(seed)() % StressSubmitters::kTasks;
  Eventually([&] { return submitters.submitted() >= close_at; });
  const std::vector<WorkerPool::Task> left = pool.Close();
  const int64_t ran_at_close = ran.load();
  submitters.Join();
  pool.Join();
  std::vector<int> returned(StressSubmitters::kTasks);
  for (const WorkerPool::Task& task : left) ++returned[IndexOf(task.node)];
  int wrong = 0;
  for (int i = 0; i < StressSubmitters::kTasks; ++i) {
    const int want = submitters.Accepted(i) ? 1 : 0;
    if (runs[i].load() + returned[i] != want) ++wrong;
  }
  EXPECT_EQ(wrong, 0) << "tasks not run or returned exactly once";
  // Only the tasks already started when Close returned ran after it: at
  // most one per worker.
  EXPECT_LE(ran.load(), ran_at_close + 3);
  EXPECT_EQ(pool.Outstanding(), 0);
}

TEST(WorkerPoolTest, OnThreadStartRunsFirstOnEachWorkerWithItsNumber) {
  constexpr int kWorkers = 3;
  Mutex mu{LockRank::kOutsideLibrary};
  std::set<std::string> names;
  std::atomic<int> running{0};
  WorkerPool pool(
      kWorkers,
      [&](const WorkerPool::Task&, int worker) {
        char name[16] = {};
        pthread_getname_np(pthread_self(), name, sizeof(name));
        {
          MutexLock lock(&mu);
          names.insert(name);
          // The worker number given to the RunFn is the one the thread's
          // on_thread_start got, before it took any task.
          EXPECT_EQ(std::string(name), "tw-worker-" + std::to_string(worker));
        }
        running.fetch_add(1);
        // Hold this worker until every worker has a task.
        Eventually([&] { return running.load() >= kWorkers; });
      },
      [] {},
      [](int worker) {
        SetCurrentThreadName(("tw-worker-" + std::to_string(worker)).c_str());
      });
  ASSERT_TRUE(pool.Start().ok());
  for (int i = 0; i < kWorkers; ++i) ASSERT_TRUE(SubmitOne(&pool, MakeTask(i)));
  ASSERT_TRUE(Eventually([&] { return pool.Outstanding() == 0; }));
  pool.Close();
  pool.Join();
  MutexLock lock(&mu);
  EXPECT_EQ(names, (std::set<std::string>{"tw-worker-0", "tw-worker-1",
                                          "tw-worker-2"}));
}

// The tasks ForEachTask visits, by index, taken ones apart.
struct Visited {
  std::vector<int> waiting;
  std::vector<int> taken;
};
Visited Visit(WorkerPool* pool) {
  Visited visited;
  pool->ForEachTask([&](const WorkerPool::Task& task, bool taken) {
    (taken ? visited.taken : visited.waiting).push_back(IndexOf(task.node));
  });
  return visited;
}

TEST(WorkerPoolTest, ForEachTaskSeesTakenTasksUntilDoneAfterTheirRun) {
  Gate gate;
  Event first_runs;
  std::atomic<int> ran{0};
  Mutex mu{LockRank::kOutsideLibrary};
  std::vector<std::pair<int, int>> done_after;  // (task, runs before it)
  WorkerPool pool(
      1,
      [&](const WorkerPool::Task& task, int) {
        if (IndexOf(task.node) == 0) {
          first_runs.Notify();
          gate.Pass();
        }
        ran.fetch_add(1);
      },
      [] {}, nullptr,
      [&](const WorkerPool::Task& task) {
        MutexLock lock(&mu);
        done_after.push_back({IndexOf(task.node), ran.load()});
      });
  ASSERT_TRUE(pool.Start().ok());
  PoolCloser closer(&pool);
  std::vector<WorkerPool::Task> batch = MakeTasks(5);
  ASSERT_TRUE(pool.Submit(&batch));
  ASSERT_TRUE(first_runs.Wait());
  Visited visited = Visit(&pool);
  EXPECT_THAT(visited.taken, ElementsAreArray({0}));
  EXPECT_THAT(visited.waiting, UnorderedElementsAreArray({1, 2, 3, 4}));
  gate.Open();
  ASSERT_TRUE(Eventually([&] { return pool.Outstanding() == 0; }));
  visited = Visit(&pool);
  EXPECT_TRUE(visited.taken.empty());
  EXPECT_TRUE(visited.waiting.empty());
  MutexLock lock(&mu);
  ASSERT_EQ(done_after.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(done_after[i].first, i) << "done once each, in run order";
    EXPECT_EQ(done_after[i].second, i + 1) << "after its own run";
  }
}

TEST(WorkerPoolTest, ExecutorModeForEachTaskSeesHandedOffAndRunningTasks) {
  std::vector<uint64_t> ids;
  std::unique_ptr<WorkerPool> pool;
  Visited during;
  std::atomic<int> done{0};
  pool = std::make_unique<WorkerPool>(
      [&](const WorkerPool::Task& task, int) {
        if (IndexOf(task.node) == 1) during = Visit(pool.get());
      },
      [&](uint64_t id) { ids.push_back(id); },
      [&](const WorkerPool::Task&) { done.fetch_add(1); });
  std::vector<WorkerPool::Task> batch = MakeTasks(3);
  // Left to the caller: nothing is handed off until it says so.
  std::vector<uint64_t> hand_offs;
  ASSERT_TRUE(pool->Submit(&batch, &hand_offs));
  EXPECT_EQ(hand_offs.size(), 3u);
  EXPECT_TRUE(ids.empty());
  Visited before = Visit(pool.get());
  EXPECT_THAT(before.waiting, UnorderedElementsAreArray({0, 1, 2}));
  pool->HandOff(hand_offs);
  ASSERT_EQ(ids.size(), 3u);
  pool->RunHandedOff(ids[1]);
  EXPECT_THAT(during.taken, ElementsAreArray({1}));
  EXPECT_THAT(during.waiting, UnorderedElementsAreArray({0, 2}));
  EXPECT_EQ(done.load(), 1);
  pool->RunHandedOff(ids[0]);
  pool->RunHandedOff(ids[2]);
  EXPECT_EQ(done.load(), 3);
  EXPECT_TRUE(Visit(pool.get()).waiting.empty());
  pool->Close();
  pool->Join();
}

TEST(WorkerPoolTest, SetCurrentThreadNameTruncatesToFifteenCharacters) {
  std::string got;
  std::thread thread([&] {
    SetCurrentThreadName("a-very-long-thread-name");
    char name[32] = {};
    pthread_getname_np(pthread_self(), name, sizeof(name));
    got = name;
  });
  thread.join();
  EXPECT_EQ(got, "a-very-long-thr");
}

}  // namespace
}  // namespace timingwheel::internal
