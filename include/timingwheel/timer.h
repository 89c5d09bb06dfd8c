// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// timer.h: `Timer`, the handle to one scheduled callback.
//
// A `Timer` is what `TimingWheel::AfterFunc` and `TimingWheel::Every` return.
// It is a reference-counted pointer to the timer's node: cheap to copy, and
// every copy refers to the same timer. The node lives as long as a handle or
// the wheel needs it, so a handle stays safe to use after the callback ran,
// after `Shutdown()`, and after the wheel itself was destroyed (then `Stop`
// and `Reset` just return false). A handle never refers to another timer
// than its own: node memory is reused only after the last handle is gone.
//
// Example:
//
//   timingwheel::Timer deadline =
//       wheel->AfterFunc(absl::Seconds(30), [conn] { conn->Close(); }).value();
//   ...
//   deadline.Reset(absl::Seconds(30));  // activity: push the deadline out
//   ...
//   if (deadline.Stop()) {
//     // The close callback will never start.
//   }
//
// Thread-safety: every member may be called from any thread, concurrently,
// also from the timer's own callback. No lock is held while a callback runs,
// so a callback may Stop or Reset any timer, itself included.

#ifndef TIMINGWHEEL_TIMER_H_
#define TIMINGWHEEL_TIMER_H_

#include <chrono>

#include "absl/time/time.h"

namespace timingwheel {

namespace internal {
class TimerNode;
}  // namespace internal

class Timer {
 public:
  // A handle that refers to nothing: Stop and Reset return false.
  Timer();
  Timer(const Timer& other);
  Timer(Timer&& other) noexcept;
  Timer& operator=(const Timer& other);
  Timer& operator=(Timer&& other) noexcept;
  ~Timer();

  // Prevents the callback from running.
  //
  // Returns true if this call stopped a pending timer: one waiting in the
  // wheel, cascading between levels, or handed to a worker but not started.
  // After a true return the callback never starts (for a periodic timer: no
  // new run starts, also when called from inside its own callback).
  // Returns false if the callback had already started (a one-shot timer that
  // fired), the timer was already stopped, the wheel is shut down, or the
  // handle refers to nothing. Of concurrent Stops, exactly one returns true.
  //
  // Does not wait for a callback that is already running: callers that need
  // that must synchronize with the callback themselves.
  bool Stop();

  // Re-arms the timer to fire after `d` from now (`d <= 0`: as soon as
  // possible, still on a worker thread).
  //
  // Returns true if the timer was pending (as for Stop), false if it had fired
  // or been stopped. Either way it is armed again, unless the wheel is shut
  // down or gone, or the handle refers to nothing (then false and nothing is
  // armed). A periodic timer fires after `d`, then keeps its period.
  // A timer whose callback is running is re-armed when the callback returns,
  // so runs of one timer never overlap.
  //
  // An infinite `d`, or one past the wheel's supported range (about 292 years
  // from the wheel's start), cannot be armed: Reset then stops the timer and
  // returns what Stop would have returned. `max_pending` does not limit Reset.
  bool Reset(absl::Duration d);
  template <class Rep, class Period>
  bool Reset(std::chrono::duration<Rep, Period> d) {
    return Reset(absl::FromChrono(d));
  }

  // The timer whose callback is running on the calling thread, or an empty
  // handle outside callbacks. Lets a callback stop or reset its own timer
  // without sharing the handle AfterFunc returned (which the callback could
  // otherwise read before the caller has stored it):
  //
  //   wheel->Every(absl::Seconds(1), [&] {
  //     if (++beats == 5) timingwheel::Timer::Current().Stop();
  //   });
  static Timer Current();

  // True if the handle refers to a timer.
  explicit operator bool() const { return node_ != nullptr; }

  friend bool operator==(const Timer& a, const Timer& b) {
    return a.node_ == b.node_;
  }
  friend bool operator!=(const Timer& a, const Timer& b) { return !(a == b); }

 private:
  friend class TimingWheel;
  // Adopts one reference to `node`.
  explicit Timer(internal::TimerNode* node) : node_(node) {}

  internal::TimerNode* node_;
};

}  // namespace timingwheel

#endif  // TIMINGWHEEL_TIMER_H_
