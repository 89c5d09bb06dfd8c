// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// loop_wheel.h: a timing wheel driven by your own event loop, with no thread
// of its own.
//
// `LoopWheel` is for servers that run everything on their loop threads
// (epoll, io_uring, Boost.Asio, libuv): its callbacks run inline on the loop
// thread, inside RunDue, and nothing crosses threads. The loop asks it how
// long it may sleep (TimeUntilNext: pass it to epoll_wait, a timerfd or an
// Asio steady_timer) and, once awake, runs what is due (RunDue). It is the
// same single-owner wheel core as TimingWheel's design (lib/core/: lazily
// created overflow levels, one release queue of buckets), driven by the
// caller instead of a poller and an advancer, so no wake-up is ever asked
// for a tick in which no bucket is due.
//
// Example: the loop in its simplest form (a real loop sleeps in epoll_wait
// or on a timerfd for the time TimeUntilNext gives: the README and
// test/examples/ show both, and one on Boost.Asio):
//
//   auto wheel = timingwheel::LoopWheel::Create().value();
//   bool closed = false;
//   timingwheel::LoopTimer idle =
//       wheel->AfterFunc(absl::Milliseconds(30), [&] { closed = true; })
//           .value();
//   idle.Reset(absl::Milliseconds(20));  // activity: the timeout moves
//   while (std::optional<absl::Duration> wait = wheel->TimeUntilNext()) {
//     absl::SleepFor(*wait);  // epoll_wait(epfd, events, n, ms) in a loop
//     wheel->RunDue();
//   }
//
// The same promises as TimingWheel: a callback never starts before its
// deadline by the wheel's clock (deadlines are rounded up to a whole tick);
// a Stop that returns true means the callback never starts; nothing is lost;
// bad input is an absl::Status, never a crash.
//
// Threads: one. Every member of LoopWheel and LoopTimer, and the wheel's
// destruction, must be called from the loop's thread: the first thread that
// calls a member after Create. A debug build (NDEBUG not defined) checks it
// and aborts with a message naming the member and both threads; a release
// build does not check (it would cost a thread id read per call). Callbacks
// run on that thread, inside RunDue, and may call any member: schedule,
// stop and reset timers, their own included. A timer a callback makes due
// (AfterFunc(0), a Reset of another timer into the past) runs in the same
// RunDue call, after the callback returns, never recursively; a callback
// that keeps re-arming itself due keeps that RunDue call running, as a loop
// would. Destroying the wheel from one of its callbacks is allowed: the
// pending timers are cancelled and RunDue returns after that callback.
//
// Callbacks: any callable `void()` that moves without throwing and fits 32
// bytes (a lambda capturing up to four pointers, an absl::AnyInvocable, a
// std::function) is kept inline in the timer's node: scheduling allocates
// nothing but the node, from the wheel's own pool. A bigger callable is
// moved to the heap once.
//
// Handles or ids: AfterFunc, At and AtClockTime return a LoopTimer, a
// counted handle; AfterFuncId, AtId and AtClockTimeId a LoopTimerId, a
// plain 8-byte name the wheel checks before use, whose timer's node is freed
// as soon as it ends (cheaper where timers are made and stopped at a high
// rate; see LoopTimerId).
//
// Memory: a timer's node is 32 bytes with a lambda that captures nothing
// (not kept at all: any object of its type runs the same), 48 with a
// callback of up to two pointers (16 bytes), 64 (one cache line) with a
// wider one, and the bucket it waits in holds nothing per timer. After a spike,
// the chunks its timers emptied go back to the system as they empty, but for
// LoopOptions::spare_timers spare nodes.
//
// Cost: with the static library, At and AtId (on the loop's cached time), the
// Stops and a LoopTimer's release are compiled into your code, inline (the
// members marked TIMINGWHEEL_LOOP_HOT; their code comes from the generated
// header timingwheel/internal/loop_inline.h, which is not API): about 8 ns
// an At + Stop pair. With the shared library they are calls, about 2 ns
// more. AfterFunc reads the clock, a call either way.

#ifndef TIMINGWHEEL_LOOP_WHEEL_H_
#define TIMINGWHEEL_LOOP_WHEEL_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <type_traits>
#include <utility>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "timingwheel/callback.h"
#include "timingwheel/clock.h"
#include "timingwheel/export.h"
#include "timingwheel/internal/loop_mode.h"
#include "timingwheel/options.h"
#include "timingwheel/scheduler.h"
#include "timingwheel/scoped_timer.h"

namespace timingwheel {

namespace internal {
class LoopEngine;
struct LoopNode;

template <class Fn>
using LoopCallable = Callable<Fn, kLoopInlineCallable>;

}  // namespace internal

// What a LoopWheel is made with: the options of TimingWheel that make sense
// without threads, with the same ranges (options.h).
struct LoopOptions {
  // Width of a level-0 bucket, from kMinTick (1us) to kMaxTick (1h).
  absl::Duration tick = absl::Milliseconds(1);
  // Buckets per level, from kMinWheelSize (2) to kMaxWheelSize (65536).
  int wheel_size = 20;
  // The time source; nullptr = SteadyClock().
  std::shared_ptr<Clock> clock = nullptr;
  // Most timers pending at once; AfterFunc and the rest beyond it fail with
  // ResourceExhausted. 0 = unlimited.
  int64_t max_pending = 0;
  // The memory of this many ended timers (of each node size: 32, 48, 64
  // and, periodic, 80 bytes) is kept for new ones; beyond it, memory goes back
  // to the system. From 0 to kMaxSpareTimers (2^40: keep everything). Nodes
  // come from chunks of 4 MiB; new timers fill the fullest chunk first, and a
  // chunk left empty when a timer ends (Stop, RunDue, a handle's release) is
  // unmapped at once (one munmap, well under a millisecond) unless the
  // wheel would keep fewer than `spare_timers` free nodes. After a spike the
  // wheel keeps the chunks that hold pending timers, plus about
  // `spare_timers` free nodes and one chunk. The default keeps about 3 MiB
  // (48-byte nodes).
  int64_t spare_timers = 65536;
};

// The handle to one timer of a LoopWheel: cheap to copy, every copy refers
// to the same timer, safe to use after the callback ran and after the wheel
// is gone (then Stop and Reset return false). Loop thread only, like the
// wheel.
class TIMINGWHEEL_EXPORT LoopTimer {
 public:
  // A handle that refers to nothing: Stop and Reset return false.
  LoopTimer() = default;
  LoopTimer(const LoopTimer& other);
  LoopTimer(LoopTimer&& other) noexcept
      : engine_(std::exchange(other.engine_, nullptr)),
        node_(std::exchange(other.node_, nullptr)) {}
  LoopTimer& operator=(const LoopTimer& other);
  LoopTimer& operator=(LoopTimer&& other) noexcept;
  ~LoopTimer() {
    if (node_ != nullptr) Release();
  }

  // Prevents the callback from running. True if this call stopped a pending
  // timer (for a periodic timer, also from its own callback: no new run
  // starts); false if it had started (a one-shot timer), was stopped
  // already, the wheel is gone, or the handle refers to nothing.
  TIMINGWHEEL_LOOP_HOT bool Stop();
  // Re-arms the timer to run after `d` from now (`d <= 0`: in the next
  // RunDue). True if it was pending (as for Stop). Armed again unless the
  // wheel is gone or the handle is empty. A timer whose callback is running
  // is re-armed when it returns; a periodic timer runs after `d`, then keeps
  // its schedule. An infinite `d` (either sign), or one past the supported
  // range, stops the timer and returns what Stop would have.
  bool Reset(absl::Duration d);
  template <class Rep, class Period>
  bool Reset(std::chrono::duration<Rep, Period> d) {
    return Reset(absl::FromChrono(d));
  }
  // True if the timer is pending: armed and its callback not started, or a
  // periodic timer not stopped (also while its callback runs).
  bool Pending() const;
  // The deadline of the pending arm as a reading of the wheel's clock (as
  // asked: `now + d`, or the point for At), or nullopt when not pending.
  std::optional<absl::Duration> Deadline() const;
  // Deadline() minus the clock's current time, at least zero; nullopt when
  // not pending.
  std::optional<absl::Duration> TimeLeft() const;

  explicit operator bool() const { return node_ != nullptr; }
  friend bool operator==(const LoopTimer& a, const LoopTimer& b) {
    return a.node_ == b.node_;
  }
  friend bool operator!=(const LoopTimer& a, const LoopTimer& b) {
    return !(a == b);
  }

 private:
  friend class internal::LoopEngine;
  friend class LoopWheel;
  // Adopts one reference to `node` (not null), a node of `engine`.
  LoopTimer(internal::LoopEngine* engine, internal::LoopNode* node)
      : engine_(engine), node_(node) {}
  // Lets go of the reference to `node_`.
  TIMINGWHEEL_LOOP_HOT void Release();

  // The node's engine: a node keeps its engine alive, so this one is valid
  // while `node_` is.
  internal::LoopEngine* engine_ = nullptr;
  internal::LoopNode* node_ = nullptr;
};

// Stops its LoopTimer when it goes out of scope (see scoped_timer.h).
using ScopedLoopTimer = BasicScopedTimer<LoopTimer>;

// The name of a timer scheduled by id (LoopWheel::AfterFuncId, AtId,
// AtClockTimeId), for the wheel's Stop, Reset, Pending, Deadline and
// TimeLeft: 8 bytes, trivially copyable, counting no reference. The lighter
// choice where a loop makes and stops timers at a high rate (a deadline per
// request): no handle to release, and the timer's node is freed the moment
// it ends. What it gives up against a LoopTimer: once its timer ran or was
// stopped, the id is spent (Reset does not arm it again: schedule a new
// one), and it is only as good as its wheel (keep it no longer).
//
// A spent id is safe to pass: the wheel checks it before it reads the node
// it names, and answers false or nullopt, whether that node's memory was
// reused by another timer or went back to the system. (Its generation is
// 31 bits: only if the wheel has scheduled a multiple of 2^31 timers by id
// since, and the last of them took that very node, does a spent id name
// that new timer.) Copies name the same timer. Pass an id only to the wheel
// that gave it; another wheel answers false or nullopt for it too, also
// where it reused the memory of the id's node (each wheel counts
// generations from a start of its own: they meet only by the same kind of
// chance).
class LoopTimerId {
 public:
  // Names no timer: the wheel's calls return false or nullopt.
  constexpr LoopTimerId() = default;

  // The id as a number, never 0 for an id a wheel gave (for a hash or a
  // log; there is no way back).
  constexpr uint64_t value() const { return value_; }
  constexpr explicit operator bool() const { return value_ != 0; }
  friend constexpr bool operator==(LoopTimerId a, LoopTimerId b) {
    return a.value_ == b.value_;
  }
  friend constexpr bool operator!=(LoopTimerId a, LoopTimerId b) {
    return !(a == b);
  }
  template <typename H>
  friend H AbslHashValue(H h, LoopTimerId id) {
    return H::combine(std::move(h), id.value_);
  }

 private:
  friend class internal::LoopEngine;
  friend class LoopWheel;
  constexpr explicit LoopTimerId(uint64_t value) : value_(value) {}

  uint64_t value_ = 0;
};

class TIMINGWHEEL_EXPORT LoopWheel {
 public:
  // Validates `options`; starts no thread.
  // Errors: InvalidArgument naming the option, its value and what is allowed.
  static absl::StatusOr<std::unique_ptr<LoopWheel>> Create(
      LoopOptions options = {});
  LoopWheel(const LoopWheel&) = delete;
  LoopWheel& operator=(const LoopWheel&) = delete;
  // Cancels every pending timer (its callback never runs and is destroyed).
  // Handles stay safe to use.
  ~LoopWheel();

  // Runs `f` once, inline in a RunDue call, after `d` (d <= 0: in the next
  // RunDue). `f` is any callable `void()` (see "Callbacks" above). Errors:
  // InvalidArgument (empty `f`; infinite `d`; a deadline past the supported
  // range: every finite `d` up to 100 years works), ResourceExhausted
  // (`max_pending` timers are pending).
  template <class F, class = std::enable_if_t<internal::kIsCallback<F>>>
  absl::StatusOr<LoopTimer> AfterFunc(absl::Duration d, F&& f) {
    internal::LoopCallable<std::decay_t<F>> callable(std::in_place,
                                                     std::forward<F>(f));
    return ScheduleAfter(d, callable.Ref());
  }
  absl::StatusOr<LoopTimer> AfterFunc(absl::Duration d,
                                      absl::AnyInvocable<void()> f);
  template <class Rep, class Period, class F>
  absl::StatusOr<LoopTimer> AfterFunc(std::chrono::duration<Rep, Period> d,
                                      F&& f) {
    return AfterFunc(absl::FromChrono(d), std::forward<F>(f));
  }
  // Runs `f` at the point `when` of std::chrono::steady_clock (a wheel on
  // SteadyClock() only; otherwise InvalidArgument: use AtClockTime); a point
  // passed runs in the next RunDue. Reads no clock: a loop passes the time
  // it read at the start of its turn plus the delay. Errors as AfterFunc.
  template <class F, class = std::enable_if_t<internal::kIsCallback<F>>>
  absl::StatusOr<LoopTimer> At(std::chrono::steady_clock::time_point when,
                               F&& f) {
    internal::LoopCallable<std::decay_t<F>> callable(std::in_place,
                                                     std::forward<F>(f));
    return ScheduleSteady(std::chrono::duration_cast<std::chrono::nanoseconds>(
                              when.time_since_epoch())
                              .count(),
                          callable.Ref());
  }
  absl::StatusOr<LoopTimer> At(std::chrono::steady_clock::time_point when,
                               absl::AnyInvocable<void()> f);
  // Runs `f` when the wheel's clock reads `when`. Errors as AfterFunc.
  template <class F, class = std::enable_if_t<internal::kIsCallback<F>>>
  absl::StatusOr<LoopTimer> AtClockTime(absl::Duration when, F&& f) {
    internal::LoopCallable<std::decay_t<F>> callable(std::in_place,
                                                     std::forward<F>(f));
    return ScheduleAt(when, callable.Ref());
  }
  absl::StatusOr<LoopTimer> AtClockTime(absl::Duration when,
                                        absl::AnyInvocable<void()> f);
  // The same, scheduled by id (LoopTimerId above): no handle, the node
  // freed as soon as the timer ends. Errors as AfterFunc.
  template <class F, class = std::enable_if_t<internal::kIsCallback<F>>>
  absl::StatusOr<LoopTimerId> AfterFuncId(absl::Duration d, F&& f) {
    internal::LoopCallable<std::decay_t<F>> callable(std::in_place,
                                                     std::forward<F>(f));
    return ScheduleAfterId(d, callable.Ref());
  }
  template <class Rep, class Period, class F>
  absl::StatusOr<LoopTimerId> AfterFuncId(std::chrono::duration<Rep, Period> d,
                                          F&& f) {
    return AfterFuncId(absl::FromChrono(d), std::forward<F>(f));
  }
  template <class F, class = std::enable_if_t<internal::kIsCallback<F>>>
  absl::StatusOr<LoopTimerId> AtId(std::chrono::steady_clock::time_point when,
                                   F&& f) {
    internal::LoopCallable<std::decay_t<F>> callable(std::in_place,
                                                     std::forward<F>(f));
    return ScheduleSteadyId(
        std::chrono::duration_cast<std::chrono::nanoseconds>(
            when.time_since_epoch())
            .count(),
        callable.Ref());
  }
  template <class F, class = std::enable_if_t<internal::kIsCallback<F>>>
  absl::StatusOr<LoopTimerId> AtClockTimeId(absl::Duration when, F&& f) {
    internal::LoopCallable<std::decay_t<F>> callable(std::in_place,
                                                     std::forward<F>(f));
    return ScheduleAtId(when, callable.Ref());
  }
  // What LoopTimer's members do, for the timer `id` names. A spent id (its
  // timer ran or was stopped), an empty one, or one of another wheel:
  // false, nullopt, and Reset arms nothing.
  TIMINGWHEEL_LOOP_HOT bool Stop(LoopTimerId id);
  bool Reset(LoopTimerId id, absl::Duration d);
  template <class Rep, class Period>
  bool Reset(LoopTimerId id, std::chrono::duration<Rep, Period> d) {
    return Reset(id, absl::FromChrono(d));
  }
  bool Pending(LoopTimerId id) const;
  std::optional<absl::Duration> Deadline(LoopTimerId id) const;
  std::optional<absl::Duration> TimeLeft(LoopTimerId id) const;

  // Runs `f` every `period` (FixedRate), until stopped.
  absl::StatusOr<LoopTimer> Every(absl::Duration period,
                                  absl::AnyInvocable<void()> f);
  // Runs `f` at the times `scheduler` decides (scheduler.h), until it ends
  // or the timer is stopped. The scheduler is asked on the loop's thread.
  absl::StatusOr<LoopTimer> ScheduleFunc(
      absl::StatusOr<std::unique_ptr<Scheduler>> scheduler,
      absl::AnyInvocable<void()> f);

  // How long the loop may sleep before RunDue has work: zero when something
  // is due now, std::nullopt when no timer is pending (sleep until other
  // work arrives). Never shorter than needed: it reports the next bucket's
  // time, not every tick.
  std::optional<absl::Duration> TimeUntilNext();
  // Runs every callback due by the clock's current time, inline, tick by
  // tick (those due in one tick by deadline, to a sixteenth of the tick,
  // when it finds at most 64Ki due, a burst beyond in no set order; those a
  // callback makes due after it, in the order made); returns how many ran.
  // Also runs the timers of the next tick (of a bucket of at most 64Ki)
  // whose deadlines have passed, after the due ones: they need not wait for
  // the tick's end.
  // RunDueAt runs those due by `now`, a time of the wheel's clock the loop read
  // itself (its cached time), or by the clock's current time if that is
  // earlier; a time before one already given counts as that one. It reads
  // the clock only when `now` falls in a later tick than the last it ran.
  int64_t RunDue();
  int64_t RunDueAt(absl::Duration now);

  // Timers scheduled and not yet started (a periodic timer until stopped).
  int64_t Pending() const;

 private:
  explicit LoopWheel(internal::LoopEngine* engine) : engine_(engine) {}

  // The members above, once the callable is ready for a node (those marked
  // TIMINGWHEEL_LOOP_HOT are at the end of lib/faces/loop_engine.h).
  absl::StatusOr<LoopTimer> ScheduleAfter(absl::Duration d,
                                          internal::CallbackRef f);
  TIMINGWHEEL_LOOP_HOT absl::StatusOr<LoopTimer> ScheduleSteady(
      int64_t steady_ns, internal::CallbackRef f);
  absl::StatusOr<LoopTimer> ScheduleAt(absl::Duration when,
                                       internal::CallbackRef f);
  absl::StatusOr<LoopTimerId> ScheduleAfterId(absl::Duration d,
                                              internal::CallbackRef f);
  TIMINGWHEEL_LOOP_HOT absl::StatusOr<LoopTimerId> ScheduleSteadyId(
      int64_t steady_ns, internal::CallbackRef f);
  absl::StatusOr<LoopTimerId> ScheduleAtId(absl::Duration when,
                                           internal::CallbackRef f);

  internal::LoopEngine* const engine_;
};

}  // namespace timingwheel

// The members declared TIMINGWHEEL_LOOP_HOT, when inline (a static library):
// lib/'s headers that they need, generated from lib/ by
// cmake/loop_inline.cmake. Not part of the API.
#if TIMINGWHEEL_LOOP_INLINE
#include "timingwheel/internal/loop_inline.h"
#endif

#endif  // TIMINGWHEEL_LOOP_WHEEL_H_
