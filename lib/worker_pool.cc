// Copyright 2026 The timingwheel Authors.

#include "worker_pool.h"

#include <pthread.h>

#include <algorithm>
#include <string>
#include <utility>

namespace timingwheel::internal {
namespace {

// The pool whose task this thread is running, if any.
thread_local const WorkerPool* tls_running_pool = nullptr;

}  // namespace
void SetCurrentThreadName(const char* name) {
  std::string truncated(name);
  truncated.resize(std::min<size_t>(truncated.size(), 15));
  pthread_setname_np(pthread_self(), truncated.c_str());
}

WorkerPool::WorkerPool(int workers, RunFn run,
                       std::function<void()> on_thread_exit)
    : run_(std::move(run)), on_thread_exit_(std::move(on_thread_exit)) {
  threads_.reserve(workers);
  for (int i = 0; i < workers; ++i) {
    threads_.emplace_back([this, i] { Loop(i); });
  }
}

WorkerPool::WorkerPool(RunFn run,
                       absl::AnyInvocable<void(uint64_t id)> hand_off)
    : run_(std::move(run)), hand_off_(std::move(hand_off)) {}

WorkerPool::~WorkerPool() = default;

void WorkerPool::RunHandedOff(uint64_t id) {
  Task task;
  {
    MutexLock lock(&mu_);
    auto it = handed_off_.find(id);
    if (it == handed_off_.end()) return;  // taken back by Close
    task = it->second;
    handed_off_.erase(it);
    ++running_;
  }
  tls_running_pool = this;
  run_(task, 0);
  tls_running_pool = nullptr;
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

bool WorkerPool::Submit(std::vector<Task>* tasks) {
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
    for (uint64_t id : ids) hand_off_(id);
    return true;
  }
  MutexLock lock(&mu_);
  if (closed_) return false;
  queue_.insert(queue_.end(), tasks->begin(), tasks->end());
  tasks->clear();
  cv_.NotifyAll();
  return true;
}

bool WorkerPool::Submit(Task task) {
  if (hand_off_) {
    std::vector<Task> one{task};
    return Submit(&one);
  }
  MutexLock lock(&mu_);
  if (closed_) return false;
  queue_.push_back(task);
  cv_.NotifyOne();
  return true;
}

void WorkerPool::Loop(int index) {
  SetCurrentThreadName(("tw-worker-" + std::to_string(index)).c_str());
  bool ran = false;
  for (;;) {
    Task task;
    {
      // One lock round trip per task: finishing one and taking the next.
      MutexLock lock(&mu_);
      if (ran && --running_ == 0) idle_cv_.NotifyAll();
      while (queue_.empty() && !closed_) cv_.Wait(&mu_);
      if (queue_.empty()) break;  // closed
      // One task at a time: a task taken but not started would wait behind
      // a slow callback while another worker is free.
      task = queue_.front();
      queue_.pop_front();
      ++running_;
    }
    tls_running_pool = this;
    run_(task, index);
    tls_running_pool = nullptr;
    ran = true;
  }
  // A copy: the last act of the thread may destroy the pool.
  std::function<void()> on_exit = on_thread_exit_;
  on_exit();
}

std::vector<WorkerPool::Task> WorkerPool::Close() {
  MutexLock lock(&mu_);
  closed_ = true;
  cv_.NotifyAll();
  std::vector<Task> left(queue_.begin(), queue_.end());
  queue_.clear();
  for (const auto& [id, task] : handed_off_) left.push_back(task);
  handed_off_.clear();
  return left;
}

void WorkerPool::WaitNoneRunning() {
  const int64_t own = tls_running_pool == this ? 1 : 0;
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
  return static_cast<int64_t>(queue_.size() + handed_off_.size()) + running_;
}

int64_t WorkerPool::QueueDepth() const {
  MutexLock lock(&mu_);
  return static_cast<int64_t>(queue_.size() + handed_off_.size());
}

}  // namespace timingwheel::internal
