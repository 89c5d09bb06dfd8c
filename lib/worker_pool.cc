// Copyright 2026 The timingwheel Authors.

#include "worker_pool.h"

#include <pthread.h>

#include <algorithm>
#include <string>
#include <utility>

namespace timingwheel::internal {
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

WorkerPool::~WorkerPool() = default;

bool WorkerPool::Submit(std::vector<Task>* tasks) {
  MutexLock lock(&mu_);
  if (closed_) return false;
  queue_.insert(queue_.end(), tasks->begin(), tasks->end());
  tasks->clear();
  cv_.NotifyAll();
  return true;
}

bool WorkerPool::Submit(Task task) {
  MutexLock lock(&mu_);
  if (closed_) return false;
  queue_.push_back(task);
  cv_.NotifyOne();
  return true;
}

void WorkerPool::Loop(int index) {
  SetCurrentThreadName(("tw-worker-" + std::to_string(index)).c_str());
  for (;;) {
    Task task;
    {
      MutexLock lock(&mu_);
      while (queue_.empty() && !closed_) cv_.Wait(&mu_);
      if (queue_.empty()) break;  // closed
      // One task at a time: a task taken but not started would wait behind
      // a slow callback while another worker is free.
      task = queue_.front();
      queue_.pop_front();
      ++running_;
    }
    run_(task, index);
    MutexLock lock(&mu_);
    --running_;
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
  return left;
}

void WorkerPool::Join() {
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
  return static_cast<int64_t>(queue_.size()) + running_;
}

int64_t WorkerPool::QueueDepth() const {
  MutexLock lock(&mu_);
  return static_cast<int64_t>(queue_.size());
}

}  // namespace timingwheel::internal
