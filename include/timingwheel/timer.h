// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// timer.h: `Timer`, the handle to one scheduled callback.
//
// A `Timer` is what `TimingWheel::AfterFunc` and `TimingWheel::Every` return.
// It is a reference-counted pointer to the timer's node: two pointers (16
// bytes on a 64-bit machine), a copy costs two uncontended atomic adds and a
// move copies the two pointers, and every copy refers to the same timer. The
// node lives as long as a handle or the wheel needs it, so a handle stays safe
// to use after the callback ran, after `Shutdown()`, and after the wheel itself
// was destroyed (then `Stop` and `Reset` just return false). A handle never
// refers to another timer than its own: node memory is reused only after the
// last handle is gone.
//
// Example:
//
//   timingwheel::Timer deadline =
//       wheel->AfterFunc(absl::Seconds(30), [conn] { conn->Close(); }).value();
//   // ... on activity:
//   deadline.Reset(absl::Seconds(30));  // push the deadline out
//   // ... when the peer closes the connection first:
//   if (deadline.Stop()) {
//     // The close callback will never start.
//   }
//
// A handle can also be asked about its timer: `Pending()`, `State()` (did it
// run, was it stopped, cancelled, is its schedule over), `Deadline()`,
// `TimeLeft()` and `Runs()`. Their answers are snapshots (see "Queries and
// races" below):
//
//   if (deadline.State() == timingwheel::TimerState::kFired) {
//     LogIdleClose();  // the deadline closed it; kStopped: Stop() came first
//   }
//
// Thread-safety: every member may be called from any thread, concurrently,
// also from the timer's own callback. No lock is held while a callback runs,
// so a callback may Stop or Reset any timer, itself included.
//
// Queries and races
// -----------------
// Pending, State, Deadline, TimeLeft and Runs each report the timer as it was
// at one instant during the call; another thread (or the wheel, firing it)
// may have changed it by the time the answer is returned. So:
//   * a true Pending() (State() kPending) does not promise that a later
//     Stop() returns true: the callback may start in between. A false
//     Pending() does not promise that a later Stop() returns false: a
//     concurrent Reset may re-arm the timer;
//   * what the calling thread did itself is always seen: after its Stop()
//     returned true, Pending() is false and State() kStopped (kRunning while
//     a run in progress of a periodic timer goes on); after its Reset()
//     returned, Pending() is true (unless the timer was cancelled or the
//     wheel is shut down), until the timer starts its callback or is stopped
//     or reset by someone else; a timer that its CancelAll() counted is
//     kCancelled (kRunning while its run goes on), for good;
//   * a run ends a little after the callback's last statement: a thread that
//     learned from the callback that it ran may still see kRunning (or, for a
//     periodic timer, the arm of the run in progress). WaitIdle() on a
//     ManualClock waits for that too;
//   * one call of Deadline() (or TimeLeft()) is consistent in itself: it has
//     a value exactly when the timer was pending at that instant, and then it
//     is the deadline of that arm. Two calls may describe two different arms.
// None of them waits for the wheel's threads; Pending(), State() and Runs()
// take no lock, and Deadline() and TimeLeft() take the timer's own spin lock
// for a few instructions (the lock that Reset takes).

#ifndef TIMINGWHEEL_TIMER_H_
#define TIMINGWHEEL_TIMER_H_

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <utility>

#include "absl/time/time.h"
#include "timingwheel/export.h"

namespace timingwheel {

namespace internal {
class NodeHome;
class TimerNode;
}  // namespace internal

// What a timer is doing, or how its last arm ended (Timer::State()).
enum class TimerState {
  // The handle refers to no timer.
  kNone,
  // Armed: waiting for its deadline, or due and waiting for a free worker;
  // a periodic timer also while its callback runs, since it runs again.
  // Pending() is true exactly in this state, and Stop() would return true.
  kPending,
  // Its callback is running and the timer is not armed again after it: a
  // one-shot timer, or a periodic one stopped or cancelled during the run.
  kRunning,
  // Its callback ran and returned, and the timer is not armed again.
  kFired,
  // A Stop() ended its last arm (for a periodic timer, also a Stop from
  // inside its callback, once the run returned).
  kStopped,
  // Its schedule ended (Every, ScheduleFunc): the Scheduler returned
  // std::nullopt (ExponentialBackoff: max_attempts ran out), a delay past
  // the supported range, or threw.
  kEnded,
  // CancelAll() or Shutdown() cancelled it: its callback never runs again
  // and is destroyed, and it stays cancelled (Reset returns false and arms
  // nothing).
  kCancelled,
};

// Writes its name, "kPending" etc. (for logs, and GoogleTest's messages).
TIMINGWHEEL_EXPORT std::ostream& operator<<(std::ostream& os, TimerState state);

class TIMINGWHEEL_EXPORT Timer {
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
  // Returns true if this call stopped a pending timer: one handed to the
  // wheel and not taken yet, waiting in the wheel, cascading between levels,
  // or handed to a worker but not started.
  // After a true return the callback never starts (for a periodic timer: no
  // new run starts, also when called from inside its own callback).
  // Returns false if the callback had already started (a one-shot timer that
  // fired), the timer was already stopped, the wheel is shut down, or the
  // handle refers to nothing. Of concurrent Stops, exactly one returns true.
  //
  // Does not wait for a callback that is already running: callers that need
  // that must synchronize with the callback themselves.
  bool Stop();

  // Re-arms the timer to fire after `d` from now (a finite `d <= 0`: as soon
  // as possible, still on a worker thread).
  //
  // Returns true if the timer was pending (as for Stop), false if it had fired
  // or been stopped. Either way it is armed again, unless it was cancelled
  // (CancelAll, Shutdown: a cancelled timer stays cancelled), the wheel is
  // shut down or gone, or the handle refers to nothing (then false and
  // nothing is armed). A periodic timer fires after `d`, then keeps its
  // period. While a CancelAll() of its wheel is under way, Reset waits for
  // it to finish.
  // A timer whose callback is running is re-armed when the callback returns,
  // so runs of one timer never overlap.
  //
  // An infinite `d`, `absl::InfiniteDuration()` or its negative, or one past
  // the wheel's supported range (about 292 years from the wheel's start),
  // cannot be armed: Reset then stops the timer and returns what Stop would
  // have returned. `max_pending` does not limit Reset.
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
  //   auto heartbeat = wheel->Every(absl::Seconds(1), [&beats] {
  //     if (++beats == 5) timingwheel::Timer::Current().Stop();
  //   });
  //
  // Also for a timer scheduled by id (TimingWheel::AfterFuncId, below): the
  // handle then keeps the node, and follows a handle's rules, so its Reset
  // arms the timer again after its run returned, where a Reset by the id,
  // spent by that run, would not (the id names the timer again once armed).
  static Timer Current();

  // True if the timer is pending: armed, its callback not started, and not
  // stopped or cancelled (the states in which Stop() returns true). A timer
  // due and waiting for a free worker is still pending. A periodic timer is
  // pending until it is stopped or its schedule ends, also while its callback
  // runs; a one-shot timer stops being pending when its callback starts,
  // unless a Reset re-arms it. False after Shutdown and for an empty handle.
  // A snapshot; see "Queries and races" above.
  bool Pending() const;

  // What the timer is doing, or how its last arm ended: whether the callback
  // ran (kFired), runs now (kRunning), was stopped (kStopped) or cancelled
  // (kCancelled), whether a periodic timer's schedule ended (kEnded); see
  // TimerState. kPending exactly when Pending() is true. A Reset arms the
  // timer again (kPending) from any state but kCancelled. kNone for an empty
  // handle. A snapshot; see "Queries and races" above.
  TimerState State() const;

  // How many runs of a periodic timer (Every, ScheduleFunc) have started, the
  // one in progress included: in its callback, which run this is, 1 for the
  // first (for ExponentialBackoff, the attempt number:
  // `Timer::Current().Runs()`). Runs a Reset added count too. 0 for a
  // one-shot timer (AfterFunc, At; State() says whether it ran) and an empty
  // handle. A snapshot; see "Queries and races" above.
  int64_t Runs() const;

  // The deadline of the timer's pending arm, as a reading of the wheel's
  // clock (what `Clock::Now()` of `Options::clock` returns; for the default
  // SteadyClock(), `std::chrono::steady_clock::time_point` converts as
  // `steady_clock::time_point(absl::ToChronoNanoseconds(*deadline))`), or
  // std::nullopt when the timer is not pending (as Pending()).
  //
  // It is the deadline as asked for (`now + d` for AfterFunc and Reset, the
  // point for At, also one already passed), to the nanosecond above; the
  // callback starts no earlier, at the first whole tick at or after it. The
  // calling thread stamps it when it arms the timer, so it is known at once,
  // also while the wheel's thread has not taken the timer yet; except for
  // AfterFunc while the wheel polls (at 200,000 calls a second or more, with
  // the default SteadyClock(); see Stats::handoffs): then `now` is a
  // reading taken after the call, by the wheel's thread when it takes the
  // timer, at most a few hundred microseconds later, or by the first
  // Deadline() or TimeLeft() asked before that; every later answer is the
  // same. Either way the deadline is at least `d` after the call. While
  // a periodic timer's callback runs, its next deadline is not decided yet
  // (the schedule is asked when the callback returns): Deadline() is then the
  // deadline of the run in progress, unless a Reset during the run set the
  // next one. A snapshot; see "Queries and races" above.
  std::optional<absl::Duration> Deadline() const;

  // `Deadline()` minus the wheel clock's current time, at least zero: zero
  // when the deadline has passed and the callback has not started yet (it is
  // waiting for its tick or a free worker), or while a periodic timer's
  // callback runs. std::nullopt when the timer is not pending.
  std::optional<absl::Duration> TimeLeft() const;

  // True if the handle refers to a timer.
  explicit operator bool() const { return node_ != nullptr; }

  friend bool operator==(const Timer& a, const Timer& b) {
    return a.node_ == b.node_;
  }
  friend bool operator!=(const Timer& a, const Timer& b) { return !(a == b); }

 private:
  friend class TimingWheel;
  // Adopts one reference to `node` (not null) and counts itself in `home`,
  // the calling thread's home in the node's engine.
  Timer(internal::TimerNode* node, internal::NodeHome* home);

  // Two pointers (16 bytes): the node, and where the handle counts itself,
  // which also names the node's engine. A copy takes a reference and a
  // count (two uncontended atomic adds); a move copies the two pointers.
  internal::TimerNode* node_;
  internal::NodeHome* home_;
};

// The name of a timer scheduled by id (TimingWheel::AfterFuncId), for the
// wheel's Stop, Reset, Pending, Deadline and TimeLeft: 8 bytes, trivially
// copyable, counting nothing. The lighter choice where timers are made and
// stopped at a high rate (a deadline per request): no handle to count or
// release, and the timer's node is freed the moment it ends. What it gives
// up against a Timer: once its callback ran (returned without a Reset during
// the run) or it was stopped, the id is spent (Reset does not arm it again:
// schedule a new one); its timer is one-shot; and it is only as good as its
// wheel (pass it to no other, keep it no longer).
//
// A spent id is safe to pass, from any thread: the wheel checks it before it
// reads the node it names, and answers false or nullopt, whether that node's
// memory was reused by another timer or went back to the system. (Its
// generation is 31 bits, counted across the process: only if 2^31 timers
// were scheduled by id since, and the last of them took that very node,
// does a spent id name that new timer.) Another wheel answers false or
// nullopt for it too. Copies name the same timer.
class TimerId {
 public:
  // Names no timer: the wheel's calls return false or nullopt.
  constexpr TimerId() = default;

  // The id as a number, never 0 for an id a wheel gave (for a hash or a
  // log; there is no way back).
  constexpr uint64_t value() const { return value_; }
  constexpr explicit operator bool() const { return value_ != 0; }
  friend constexpr bool operator==(TimerId a, TimerId b) {
    return a.value_ == b.value_;
  }
  friend constexpr bool operator!=(TimerId a, TimerId b) { return !(a == b); }
  template <typename H>
  friend H AbslHashValue(H h, TimerId id) {
    return H::combine(std::move(h), id.value_);
  }

 private:
  friend class TimingWheel;
  constexpr explicit TimerId(uint64_t value) : value_(value) {}

  uint64_t value_ = 0;
};

}  // namespace timingwheel

#endif  // TIMINGWHEEL_TIMER_H_
