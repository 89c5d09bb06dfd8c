// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// scoped_timer.h: `ScopedTimer`, a guard that stops its timer when it goes out
// of scope.
//
// The most common timer is a deadline on a piece of work: armed when the work
// starts, stopped when it ends, by whichever path it ends (a return, an error,
// an exception). A `ScopedTimer` holds the `Timer` and calls `Stop()` in its
// destructor, so no path can forget it. `Release()` hands the timer back
// instead, for a deadline that should outlive the scope.
//
// Example: a request handler whose deadline cancels the request.
//
//   absl::Status Handle(timingwheel::TimingWheel& wheel, Request& request) {
//     auto cancelled = std::make_shared<std::atomic<bool>>(false);
//     absl::StatusOr<timingwheel::Timer> t = wheel.AfterFunc(
//         absl::Seconds(2), [cancelled] { cancelled->store(true); });
//     if (!t.ok()) return t.status();
//     timingwheel::ScopedTimer deadline(*std::move(t));
//     for (Step& step : request.steps) {
//       if (cancelled->load()) return absl::DeadlineExceededError("slow");
//       absl::Status status = step.Run();
//       if (!status.ok()) return status;  // this return stops the deadline
//     }
//     return absl::OkStatus();  // and so does this one
//   }
//
// As with `Timer::Stop()`, the destructor does not wait for a callback that
// has already started: the callback may still be running, or just about to
// run, when the scope is left. So a callback must not refer to the scope's
// locals; give it shared state (a `shared_ptr`, as above) or synchronize with
// it yourself.
//
// Thread-safety: like a `std::unique_ptr`, one guard is used by one thread at
// a time; the timer it holds may be used through copies of the handle from
// any thread (see timer.h).

#ifndef TIMINGWHEEL_SCOPED_TIMER_H_
#define TIMINGWHEEL_SCOPED_TIMER_H_

#include <utility>

#include "timingwheel/timer.h"

namespace timingwheel {

// The guard for a handle type `TimerT` (Timer, or LoopTimer of an event-loop
// wheel, as ScopedLoopTimer in loop_wheel.h): anything with Stop(), a
// comparison and an empty state.
template <class TimerT>
class BasicScopedTimer {
 public:
  // A guard that holds no timer.
  BasicScopedTimer() = default;
  // Takes `timer`, to be stopped when the guard goes.
  explicit BasicScopedTimer(TimerT timer) : timer_(std::move(timer)) {}

  // Move-only: the timer moves with the guard, and the guard moved from holds
  // none (its destructor then stops nothing).
  BasicScopedTimer(BasicScopedTimer&& other) noexcept = default;
  // Stops the timer this guard held, then takes `other`'s. When both hold the
  // same timer (two guards of copies of one handle), nothing is stopped: this
  // guard goes on holding it, and stops it when it goes.
  BasicScopedTimer& operator=(BasicScopedTimer&& other) noexcept {
    if (this != &other) {
      if (timer_ != other.timer_) timer_.Stop();
      timer_ = std::move(other.timer_);
    }
    return *this;
  }
  BasicScopedTimer(const BasicScopedTimer&) = delete;
  BasicScopedTimer& operator=(const BasicScopedTimer&) = delete;

  // Stops the timer (Timer::Stop: a callback not started never starts; one
  // already started is not waited for).
  ~BasicScopedTimer() { timer_.Stop(); }

  // Gives the timer back, still armed; the guard then holds none.
  TimerT Release() { return std::move(timer_); }

  // The timer held (an empty handle when none), e.g. to Reset the deadline:
  // `deadline.get().Reset(absl::Seconds(2))`, or `deadline->Reset(...)`.
  TimerT& get() { return timer_; }
  const TimerT& get() const { return timer_; }
  TimerT* operator->() { return &timer_; }
  const TimerT* operator->() const { return &timer_; }

  // True if the guard holds a timer.
  explicit operator bool() const { return static_cast<bool>(timer_); }

 private:
  TimerT timer_;
};

using ScopedTimer = BasicScopedTimer<Timer>;

}  // namespace timingwheel

#endif  // TIMINGWHEEL_SCOPED_TIMER_H_
