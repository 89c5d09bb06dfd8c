// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// loop_heap_timer.h: `LoopHeapTimer`, the heap baseline of the loop-driven
// benchmarks: the timers a single-threaded event loop keeps when it has no
// wheel (libuv's and libevent's timers are heaps too), driven the way a
// LoopWheel is: the loop sleeps for TimeUntilNext, then runs what is due.
//
// It is HeapTimer's heap (TimerHeap, timer_heap.h: indexed, over pooled
// nodes, O(log n) add and stop) without what one thread does not need: no
// lock, no dispatcher, no pool. Deadlines are exact nanoseconds of
// std::chrono::steady_clock, with no tick: TimeUntilNext is the time to the
// earliest deadline, and RunDue runs, inline, every timer whose deadline
// has passed, earliest first. Callbacks may call AfterFunc, At and Stop (a
// callback leaves the heap before it runs, and a timer a callback makes due
// runs in the same RunDue).
//
// Example:
//
//   timingwheel::bench::LoopHeapTimer timers;
//   timers.AfterFunc(absl::Milliseconds(5), [] { Retry(); });
//   while (std::optional<absl::Duration> wait = timers.TimeUntilNext()) {
//     absl::SleepFor(*wait);
//     timers.RunDue();
//   }
//
// Thread-safety: thread-compatible: one thread, the loop's, calls every
// member; handles are used only while their LoopHeapTimer lives.

#ifndef TIMINGWHEEL_BENCHMARK_LOOP_HEAP_TIMER_H_
#define TIMINGWHEEL_BENCHMARK_LOOP_HEAP_TIMER_H_

#include <cstdint>
#include <optional>

#include "absl/functional/any_invocable.h"
#include "absl/time/time.h"
#include "timer_heap.h"

namespace timingwheel {
namespace bench {

class LoopHeapTimer {
 public:
  // Refers to one timer; cheap to copy. A default-constructed handle refers
  // to nothing and Stop returns false.
  class Handle {
   public:
    Handle() = default;

    // True if this call removed a pending timer: its callback never starts.
    // False if it had started, was stopped, or the handle is empty.
    bool Stop();

   private:
    friend class LoopHeapTimer;
    Handle(LoopHeapTimer* owner, TimerHeap::Id id) : owner_(owner), id_(id) {}

    LoopHeapTimer* owner_ = nullptr;
    TimerHeap::Id id_;
  };

  LoopHeapTimer() = default;
  LoopHeapTimer(const LoopHeapTimer&) = delete;
  LoopHeapTimer& operator=(const LoopHeapTimer&) = delete;

  // Runs `f` once `d` has passed by the clock read now (`d <= 0`: in the
  // next RunDue).
  Handle AfterFunc(absl::Duration d, absl::AnyInvocable<void()> f);
  // Runs `f` once steady_clock reads `deadline_ns` (nanoseconds since its
  // epoch), a time the loop read itself; reads no clock.
  Handle At(int64_t deadline_ns, absl::AnyInvocable<void()> f);

  // The time until the earliest deadline (zero once it passed), or nullopt
  // when no timer is pending.
  std::optional<absl::Duration> TimeUntilNext() const;
  // Runs every timer due by the clock's time, earliest first; returns how
  // many ran.
  int64_t RunDue();
  // The same by `now_ns` (steady_clock nanoseconds), a time the loop read.
  int64_t RunDueAt(int64_t now_ns);

  // Timers pending.
  int64_t Pending() const { return static_cast<int64_t>(heap_.size()); }

 private:
  TimerHeap heap_;
};

}  // namespace bench
}  // namespace timingwheel

#endif  // TIMINGWHEEL_BENCHMARK_LOOP_HEAP_TIMER_H_
