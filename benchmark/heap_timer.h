// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// heap_timer.h: `HeapTimer`, the baseline every benchmark compares to.
//
// This is the timer service a careful engineer writes when no timer library
// is at hand, so beating it is what justifies timingwheel. It is meant to be
// a fair opponent, not a strawman:
//   * one binary min-heap of (deadline, node) pairs under one mutex
//     (TimerHeap, timer_heap.h); each node knows its heap position, so Stop
//     removes it in O(log n) instead of leaving a tombstone behind;
//   * nodes live in a pool (chunks of 64Ki, never moved, recycled through a
//     free list): no allocation per timer once the pool is warm, and a handle
//     is a (slot, generation) pair, so a stale handle never stops a newer
//     timer that reuses its slot;
//   * one dispatcher thread sleeps on a condition variable until the top
//     deadline; AfterFunc wakes it only when the new deadline is earlier
//     than the one it already sleeps until (a timer that became the earliest
//     and was stopped again leaves one harmless early wake-up), pops what
//     is due in batches of at most `kMaxBatch` (so callers are not locked out
//     for long) and hands the callbacks to `CallbackPool`;
//   * `CallbackPool` is the usual mutex + condition variable queue that
//     workers pop one callback at a time from; it wakes only idle workers.
// Adding and stopping cost O(log n) under the one lock every caller shares;
// that lock and the heap's cache misses at millions of timers are exactly
// what the wheel is designed to avoid.
//
// Example:
//
//   timingwheel::bench::HeapTimer timers(/*workers=*/2);
//   timingwheel::bench::HeapTimer::Handle h =
//       timers.AfterFunc(absl::Seconds(1), [] { Retry(); });
//   h.Stop();  // true: Retry() will never start
//   timers.Shutdown();
//
// Threads and locks
// -----------------
//   * callers (any thread): AfterFunc, Handle::Stop, Pending, Shutdown.
//   * the dispatcher thread: moves due callbacks out of the heap.
//   * `workers` pool threads: run the callbacks.
// Locks: `HeapTimer::mu_` guards the heap and its node pool;
// `CallbackPool::mu_` guards the queue ("guarded by" below). They are plain
// std::mutex, as in a program without timingwheel, not the library's
// annotated wrapper: a baseline must not depend on the library's internals
// (so clang's -Wthread-safety does not check this file; ThreadSanitizer
// still sees std::mutex). Both are leaves: the dispatcher
// releases `HeapTimer::mu_` before it calls `CallbackPool::Submit`, and no
// lock is held while a callback runs (callbacks may call AfterFunc and Stop;
// they must not call Shutdown, which joins the threads).
// The Stop contract: Stop returns true if the timer was still in the heap;
// once the dispatcher took it out, the callback will run and Stop returns
// false. Handles must not be used after the HeapTimer is destroyed.

#ifndef TIMINGWHEEL_BENCHMARK_HEAP_TIMER_H_
#define TIMINGWHEEL_BENCHMARK_HEAP_TIMER_H_

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/time/time.h"
#include "timer_heap.h"

namespace timingwheel {
namespace bench {

// Nanoseconds on std::chrono::steady_clock.
inline int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// SteadyNowNs() + d, as both heap baselines take it: a negative `d` is 0,
// and the sum saturates at INT64_MAX.
inline int64_t SteadyDeadlineNs(absl::Duration d) {
  const int64_t now_ns = SteadyNowNs();
  const int64_t delay_ns = std::max<int64_t>(absl::ToInt64Nanoseconds(d), 0);
  return delay_ns > std::numeric_limits<int64_t>::max() - now_ns
             ? std::numeric_limits<int64_t>::max()
             : now_ns + delay_ns;
}

// A fixed set of threads running callbacks from one FIFO queue.
// Thread-safe.
class CallbackPool {
 public:
  explicit CallbackPool(int threads);
  CallbackPool(const CallbackPool&) = delete;
  CallbackPool& operator=(const CallbackPool&) = delete;
  ~CallbackPool();  // Shutdown().

  // Queues every callback of `batch` (which is left empty) and wakes up to
  // `batch.size()` idle workers.
  void Submit(std::vector<absl::AnyInvocable<void()>>& batch);

  // Runs what is already queued, then joins the workers. Idempotent.
  // Must not be called from a worker.
  void Shutdown();

 private:
  void Run();

  std::mutex mu_;
  // Notified when queue_ grows or stopping_ is set.
  std::condition_variable work_;
  // Guarded by mu_:
  std::deque<absl::AnyInvocable<void()>> queue_;
  int idle_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;  // Written only by ctor and Shutdown.
  std::once_flag shutdown_once_;
};

class HeapTimer {
 public:
  // Refers to one timer; cheap to copy. A default-constructed handle, or one
  // returned after Shutdown, refers to nothing and Stop returns false.
  class Handle {
   public:
    Handle() = default;

    // Returns true if this call removed the timer before the dispatcher took
    // it: its callback will never start. False if it already fired (or was
    // handed to the pool), was stopped, or the timer service is shut down.
    bool Stop();

    explicit operator bool() const { return owner_ != nullptr; }

   private:
    friend class HeapTimer;
    Handle(HeapTimer* owner, uint32_t slot, uint32_t generation)
        : owner_(owner), slot_(slot), generation_(generation) {}

    HeapTimer* owner_ = nullptr;
    uint32_t slot_ = 0;
    uint32_t generation_ = 0;
  };

  // Starts the dispatcher and `workers` (at least 1) pool threads.
  explicit HeapTimer(int workers);
  HeapTimer(const HeapTimer&) = delete;
  HeapTimer& operator=(const HeapTimer&) = delete;
  ~HeapTimer();  // Shutdown().

  // Runs `f` on a pool thread once `d` has passed (`d <= 0`: as soon as
  // possible). After Shutdown, drops `f` and returns an empty handle.
  Handle AfterFunc(absl::Duration d, absl::AnyInvocable<void()> f);

  // Timers in the heap.
  int64_t Pending() const;

  // Drops every timer in the heap (their callbacks never run), runs the
  // callbacks already handed to the pool, joins every thread. Returns how
  // many timers it dropped; later calls return 0. Not from a callback.
  int64_t Shutdown();

 private:
  static constexpr size_t kMaxBatch = 1024;

  bool StopSlot(uint32_t slot, uint32_t generation);
  void DispatchLoop();

  CallbackPool pool_;
  mutable std::mutex mu_;
  // Notified on a new earliest timer and on Shutdown.
  std::condition_variable wake_;
  // Guarded by mu_:
  TimerHeap heap_;
  bool shutdown_ = false;
  // When the dispatcher wakes up next: INT64_MAX while it waits for a first
  // timer, INT64_MIN while it is awake (it re-reads the heap before sleeping).
  int64_t wake_at_ns_ = std::numeric_limits<int64_t>::min();
  std::thread dispatcher_;  // Written only by the ctor; joined by Shutdown.
  std::once_flag join_once_;
};

}  // namespace bench
}  // namespace timingwheel

#endif  // TIMINGWHEEL_BENCHMARK_HEAP_TIMER_H_
