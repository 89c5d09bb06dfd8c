// Copyright 2026 The timingwheel Authors.

#include "worker_pool.h"

#include <pthread.h>

#include <algorithm>
#include <string>
#include <utility>

namespace timingwheel::internal {
namespace {

constexpr int64_t kMaxChunk = 64;

}  // namespace

void SetCurrentThreadName(const char* name) {
  std::string truncated(name);
  truncated.resize(std::min<size_t>(truncated.size(), 15));
  pthread_setname_np(pthread_self(), truncated.c_str());
}

WorkerPool::WorkerPool(int workers, RunFn run,
                       std::function<void()> on_thread_exit)
    : workers_(workers),
      run_(std::move(run)),
      on_thread_exit_(std::move(on_thread_exit)) {
  threads_.reserve(workers);
  for (int i = 0; i < workers; ++i) {
    threads_.emplace_back([this, i] { Loop(i); });
  }
}

WorkerPool::~WorkerPool() = default;

bool WorkerPool::Submit(std::vector<Task>* tasks) {
  if (tasks->empty()) return true;
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
  std::vector<Task> chunk;
  for (;;) {
    {
      MutexLock lock(&mu_);
      running_ -= static_cast<int64_t>(chunk.size());
      chunk.clear();
      while (queue_.empty() && !closed_) cv_.Wait(&mu_);
      if (queue_.empty()) break;  // closed
      // Share a long queue among the workers; take one at a time from a short
      // one so that a slow callback holds back no task another worker could
      // run.
      const int64_t depth = static_cast<int64_t>(queue_.size());
      const int64_t take =
          std::clamp<int64_t>(depth / (int64_t{2} * workers_), 1, kMaxChunk);
      for (int64_t i = 0; i < take; ++i) {
        chunk.push_back(queue_.front());
        queue_.pop_front();
      }
      running_ += take;
    }
    for (const Task& task : chunk) run_(task, index);
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
