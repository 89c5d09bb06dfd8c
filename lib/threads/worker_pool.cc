// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "threads/worker_pool.h"

#include <pthread.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "threads/thread_starter.h"

namespace timingwheel::internal {
namespace {

// The tasks this thread is running, innermost first (see "Thread-locals").
struct RunFrame {
  const WorkerPool* pool;
  const RunFrame* outer;
};
thread_local const RunFrame* tls_runs = nullptr;

// Pushes a run frame for its lifetime.
class ScopedRun {
 public:
  explicit ScopedRun(const WorkerPool* pool) : frame_{pool, tls_runs} {
    tls_runs = &frame_;
  }
  ScopedRun(const ScopedRun&) = delete;
  ScopedRun& operator=(const ScopedRun&) = delete;
  ~ScopedRun() { tls_runs = frame_.outer; }

 private:
  const RunFrame frame_;
};

// How many of the runs on this thread are `pool`'s.
int64_t RunsOnThisThread(const WorkerPool* pool) {
  int64_t runs = 0;
  for (const RunFrame* frame = tls_runs; frame != nullptr;
       frame = frame->outer) {
    if (frame->pool == pool) ++runs;
  }
  return runs;
}

// A hand-off in progress on this thread, and the ids that Submits made
// inside it queued for it (see "Re-entrant hand-offs").
struct HandOffFrame {
  const WorkerPool* pool;
  std::vector<uint64_t> queued;  // handed on in order, front to back
  HandOffFrame* outer;
};
thread_local HandOffFrame* tls_hand_offs = nullptr;

// The most tasks a worker takes from the queue at once (it runs one and
// stashes the others).
constexpr size_t kMaxBatch = 32;

}  // namespace
void SetCurrentThreadName(const char* name) {
  std::string truncated(name);
  truncated.resize(std::min<size_t>(truncated.size(), 15));
  pthread_setname_np(pthread_self(), truncated.c_str());
}

WorkerPool::WorkerPool(int workers, RunFn run,
                       std::function<void()> on_thread_exit,
                       std::function<void(int worker)> on_thread_start,
                       DoneFn done)
    : run_(std::move(run)),
      done_(std::move(done)),
      on_thread_exit_(std::move(on_thread_exit)),
      on_thread_start_(std::move(on_thread_start)) {
  stashes_.reserve(workers);
  for (int i = 0; i < workers; ++i) {
    stashes_.push_back(std::make_unique<Stash>());
    SpinLockHolder hold(&stashes_.back()->mu);
    stashes_.back()->tasks.reserve(kMaxBatch);
  }
}

absl::Status WorkerPool::Start() {
  const int workers = static_cast<int>(stashes_.size());
  threads_.reserve(workers);
  for (int i = 0; i < workers; ++i) {
    absl::StatusOr<std::thread> thread =
        ThreadStarter::Start([this, i] { Loop(i); });
    if (!thread.ok()) {
      Close();  // nothing was submitted yet: no task comes back
      Join();
      return absl::ResourceExhaustedError(absl::StrCat(
          "worker ", i, " of ", workers, ": ", thread.status().message()));
    }
    threads_.push_back(*std::move(thread));
  }
  return absl::OkStatus();
}

WorkerPool::WorkerPool(RunFn run,
                       absl::AnyInvocable<void(uint64_t id)> hand_off,
                       DoneFn done)
    : run_(std::move(run)),
      done_(std::move(done)),
      hand_off_(std::move(hand_off)) {}

WorkerPool::~WorkerPool() = default;

void WorkerPool::RunHandedOff(uint64_t id) {
  Task task;
  {
    MutexLock lock(&mu_);
    auto it = handed_off_.find(id);
    if (it == handed_off_.end()) return;  // taken back by Close
    task = it->second;
    handed_off_.erase(it);
    running_handed_off_.emplace(id, task);
    ++running_;
  }
  {
    ScopedRun scoped(this);
    run_(task, 0);
  }
  {
    MutexLock lock(&mu_);
    running_handed_off_.erase(id);
  }
  // Still counted as running: Join and WaitNoneRunning wait for `done` too.
  if (done_) done_(task);
  MutexLock lock(&mu_);
  --running_;
  idle_cv_.NotifyAll();
}

std::optional<WorkerPool::Task> WorkerPool::DropHandedOff(uint64_t id) {
  MutexLock lock(&mu_);
  auto it = handed_off_.find(id);
  if (it == handed_off_.end()) return std::nullopt;
  const Task task = it->second;
  handed_off_.erase(it);
  return task;
}

bool WorkerPool::Submit(std::vector<Task>* tasks,
                        std::vector<uint64_t>* hand_offs) {
  if (hand_off_) {
    // One id per task, handed off with no lock held: the user's executor may
    // run the closure inline.
    std::vector<uint64_t> ids;
    {
      MutexLock lock(&mu_);
      if (closed_) return false;
      for (const Task& task : *tasks) {
        ids.push_back(next_id_);
        handed_off_.emplace(next_id_++, task);
      }
    }
    tasks->clear();
    if (hand_offs != nullptr) {
      hand_offs->insert(hand_offs->end(), ids.begin(), ids.end());
    } else {
      HandOff(std::move(ids));
    }
    return true;
  }
  MutexLock lock(&mu_);
  if (closed_) return false;
  const size_t count = tasks->size();
  queue_.Append(*tasks);
  tasks->clear();
  if (count == 1) {
    cv_.NotifyOne();
  } else if (count > 1) {
    cv_.NotifyAll();
  }
  return true;
}

void WorkerPool::HandOff(std::vector<uint64_t> ids) {
  if (ids.empty()) return;
  for (HandOffFrame* frame = tls_hand_offs; frame != nullptr;
       frame = frame->outer) {
    if (frame->pool == this) {
      frame->queued.insert(frame->queued.end(), ids.begin(), ids.end());
      return;
    }
  }
  HandOffFrame frame{this, std::move(ids), tls_hand_offs};
  tls_hand_offs = &frame;
  struct Pop {
    HandOffFrame* outer;
    ~Pop() { tls_hand_offs = outer; }
  } pop{frame.outer};
  // By index: a hand-off may append to `queued` (reallocating it).
  for (size_t i = 0; i < frame.queued.size(); ++i) hand_off_(frame.queued[i]);
}

void WorkerPool::Loop(int index) {
  if (on_thread_start_) on_thread_start_(index);
  bool active = false;  // counted in running_
  for (;;) {
    Task task;
    std::optional<Task> finished;
    const bool popped = PopStash(index, &task, &finished);
    if (finished.has_value() && done_) done_(*finished);
    if (!popped) {
      TaskQueue::Chunks released;  // freed after the lock is released
      // One round trip on the shared lock per batch.
      MutexLock lock(&mu_);
      while (!closed_ && !TakeBatch(index, &task, &released)) {
        if (active) {
          active = false;
          // <= 1: a task on another worker may be in WaitNoneRunning.
          if (--running_ <= 1) idle_cv_.NotifyAll();
        }
        cv_.Wait(&mu_);
      }
      if (closed_) {
        // Close took the stashes and the queue: nothing was taken.
        if (active && --running_ <= 1) idle_cv_.NotifyAll();
        break;
      }
      if (!active) {
        active = true;
        ++running_;
      }
    }
    ScopedRun scoped(this);
    run_(task, index);
  }
  // A copy: the last act of the thread may destroy the pool.
  std::function<void()> on_exit = on_thread_exit_;
  on_exit();
}

bool WorkerPool::PopStash(int index, Task* task,
                          std::optional<Task>* finished) {
  Stash& stash = *stashes_[index];
  SpinLockHolder hold(&stash.mu);
  *finished = std::exchange(stash.current, std::nullopt);
  if (stash.size() == 0) return false;
  *task = stash.tasks[stash.head++];
  stash.current = *task;
  if (stash.size() == 0) {
    stash.tasks.clear();
    stash.head = 0;
  }
  return true;
}

bool WorkerPool::TakeBatch(int index, Task* task, TaskQueue::Chunks* released) {
  Stash& own = *stashes_[index];
  const size_t workers = stashes_.size();
  if (!queue_.empty()) {
    const size_t k =
        std::min(kMaxBatch, (queue_.size() + workers - 1) / workers);
    *task = queue_.TakeFront();
    {
      // Only the owner fills its stash, and only when it is empty.
      SpinLockHolder hold(&own.mu);
      own.current = *task;
      own.tasks.clear();
      queue_.TakeFront(k - 1, &own.tasks);
      own.head = 0;
    }
    *released = queue_.ShrinkIfEmpty();
    return true;
  }
  for (size_t i = 1; i < workers; ++i) {
    Stash& victim = *stashes_[(index + i) % workers];
    SpinLockHolder hold_victim(&victim.mu);
    const size_t size = victim.size();
    if (size == 0) continue;
    // Half, rounded up, from the back: the victim keeps the tasks it would
    // run next.
    const auto first =
        victim.tasks.end() - static_cast<ptrdiff_t>((size + 1) / 2);
    *task = *first;
    {
      SpinLockHolder hold_own(&own.mu);
      own.current = *task;
      own.tasks.assign(first + 1, victim.tasks.end());
      own.head = 0;
    }
    victim.tasks.erase(first, victim.tasks.end());
    if (victim.size() == 0) {
      victim.tasks.clear();
      victim.head = 0;
    }
    return true;
  }
  return false;
}

int64_t WorkerPool::StashedLocked() const {
  int64_t stashed = 0;
  for (const std::unique_ptr<Stash>& stash : stashes_) {
    SpinLockHolder hold(&stash->mu);
    stashed += static_cast<int64_t>(stash->size());
  }
  return stashed;
}

std::vector<WorkerPool::Task> WorkerPool::Close() {
  MutexLock lock(&mu_);
  closed_ = true;
  cv_.NotifyAll();
  std::vector<Task> left;
  for (const std::unique_ptr<Stash>& stash : stashes_) {
    SpinLockHolder hold(&stash->mu);
    left.insert(left.end(),
                stash->tasks.begin() + static_cast<ptrdiff_t>(stash->head),
                stash->tasks.end());
    stash->tasks.clear();
    stash->head = 0;
  }
  queue_.TakeFront(queue_.size(), &left);
  for (const auto& [id, task] : handed_off_) left.push_back(task);
  handed_off_.clear();
  return left;
}

void WorkerPool::ForEachTask(
    absl::FunctionRef<void(const Task& task, bool taken)> visit) {
  MutexLock lock(&mu_);
  queue_.ForEach([&](const Task& task) { visit(task, false); });
  for (const std::unique_ptr<Stash>& stash : stashes_) {
    SpinLockHolder hold(&stash->mu);
    for (size_t i = stash->head; i < stash->tasks.size(); ++i) {
      visit(stash->tasks[i], false);
    }
    if (stash->current.has_value()) visit(*stash->current, true);
  }
  for (const auto& [id, task] : handed_off_) visit(task, false);
  for (const auto& [id, task] : running_handed_off_) visit(task, true);
}

void WorkerPool::WaitNoneRunning() {
  const int64_t own = RunsOnThisThread(this);
  MutexLock lock(&mu_);
  while (running_ > own) idle_cv_.Wait(&mu_);
}

void WorkerPool::Join() {
  if (hand_off_) {
    WaitNoneRunning();
    return;
  }
  for (std::thread& thread : threads_) {
    if (!thread.joinable()) continue;
    if (thread.get_id() == std::this_thread::get_id()) {
      thread.detach();
    } else {
      thread.join();
    }
  }
}

int64_t WorkerPool::Outstanding() const {
  MutexLock lock(&mu_);
  return static_cast<int64_t>(queue_.size() + handed_off_.size()) +
         StashedLocked() + running_;
}

int64_t WorkerPool::QueueDepth() const {
  MutexLock lock(&mu_);
  return static_cast<int64_t>(queue_.size() + handed_off_.size()) +
         StashedLocked();
}

}  // namespace timingwheel::internal
