// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// heap_timer.cc: the baseline timer service of heap_timer.h: an indexed
// binary min-heap over pooled nodes (timer_heap.h), one dispatcher thread
// and a mutex + condition variable callback pool. See the header for why it
// is built this way and who runs what.

#include "heap_timer.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <mutex>
#include <utility>

namespace timingwheel {
namespace bench {

// ---------------------------------------------------------------------------
// CallbackPool

CallbackPool::CallbackPool(int threads) {
  threads = std::max(threads, 1);
  threads_.reserve(threads);
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Run(); });
}

CallbackPool::~CallbackPool() { Shutdown(); }

void CallbackPool::Submit(std::vector<absl::AnyInvocable<void()>>& batch) {
  if (batch.empty()) return;
  size_t wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& f : batch) queue_.push_back(std::move(f));
    wake = std::min(batch.size(), static_cast<size_t>(idle_));
  }
  batch.clear();
  // Notifying after unlocking spares the woken worker an immediate block on
  // mu_; a worker that goes idle meanwhile re-checks queue_ before waiting.
  if (wake == 1) {
    work_.notify_one();
  } else if (wake > 1) {
    work_.notify_all();
  }
}

void CallbackPool::Shutdown() {
  std::call_once(shutdown_once_, [this] {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    work_.notify_all();
    for (std::thread& t : threads_) t.join();
  });
}

void CallbackPool::Run() {
  for (;;) {
    absl::AnyInvocable<void()> f;
    {
      std::unique_lock<std::mutex> lock(mu_);
      while (queue_.empty() && !stopping_) {
        ++idle_;
        work_.wait(lock);
        --idle_;
      }
      if (queue_.empty()) return;  // Stopping, and everything queued ran.
      f = std::move(queue_.front());
      queue_.pop_front();
    }
    f();
    // `f` (and whatever it captured) is destroyed here, with no lock held.
  }
}

// ---------------------------------------------------------------------------
// HeapTimer

bool HeapTimer::Handle::Stop() {
  return owner_ != nullptr && owner_->StopSlot(slot_, generation_);
}

HeapTimer::HeapTimer(int workers) : pool_(workers) {
  dispatcher_ = std::thread([this] { DispatchLoop(); });
}

HeapTimer::~HeapTimer() { Shutdown(); }

HeapTimer::Handle HeapTimer::AfterFunc(absl::Duration d,
                                       absl::AnyInvocable<void()> f) {
  const int64_t deadline_ns = SteadyDeadlineNs(d);
  TimerHeap::Id id;
  bool earliest;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shutdown_) return Handle();
    id = heap_.Push(deadline_ns, std::move(f));
    // Only a deadline before the dispatcher's next wake-up changes how long
    // it may sleep.
    earliest = deadline_ns < wake_at_ns_;
    if (earliest) wake_at_ns_ = std::numeric_limits<int64_t>::min();
  }
  if (earliest) wake_.notify_one();
  return Handle(this, id.slot, id.generation);
}

int64_t HeapTimer::Pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(heap_.size());
}

int64_t HeapTimer::Shutdown() {
  int64_t dropped = 0;
  TimerHeap timers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!shutdown_) {
      shutdown_ = true;
      dropped = static_cast<int64_t>(heap_.size());
      timers = std::exchange(heap_, TimerHeap());
    }
  }
  wake_.notify_all();
  std::call_once(join_once_, [this] {
    dispatcher_.join();
    pool_.Shutdown();
  });
  return dropped;  // `timers` and their callbacks die here, unlocked.
}

bool HeapTimer::StopSlot(uint32_t slot, uint32_t generation) {
  absl::AnyInvocable<void()> dropped;  // Destroyed after unlocking.
  std::lock_guard<std::mutex> lock(mu_);
  return !shutdown_ && heap_.Remove(TimerHeap::Id{slot, generation}, &dropped);
}

void HeapTimer::DispatchLoop() {
  std::vector<absl::AnyInvocable<void()>> batch;
  batch.reserve(kMaxBatch);
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      int64_t now_ns;
      for (;;) {
        if (shutdown_) return;
        if (heap_.empty()) {
          wake_at_ns_ = std::numeric_limits<int64_t>::max();
          wake_.wait(lock);
          wake_at_ns_ = std::numeric_limits<int64_t>::min();
          continue;
        }
        now_ns = SteadyNowNs();
        const int64_t next_ns = heap_.top_deadline_ns();
        if (next_ns <= now_ns) break;
        // Sleep at most a day at a time: far deadlines stay representable.
        constexpr int64_t kDayNs = int64_t{86400} * 1000 * 1000 * 1000;
        wake_at_ns_ = std::min(next_ns, now_ns + kDayNs);
        wake_.wait_until(lock, std::chrono::steady_clock::time_point(
                                   std::chrono::nanoseconds(wake_at_ns_)));
        wake_at_ns_ = std::numeric_limits<int64_t>::min();
      }
      while (!heap_.empty() && heap_.top_deadline_ns() <= now_ns &&
             batch.size() < kMaxBatch) {
        batch.push_back(heap_.Pop());
      }
    }
    pool_.Submit(batch);
  }
}

}  // namespace bench
}  // namespace timingwheel
