// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// timingwheel.h: a hierarchical timing wheel for millions of timeouts.
//
// `TimingWheel` runs callbacks after a delay: request deadlines, heartbeats,
// retries, delayed jobs. Scheduling and stopping a timer cost O(1) whatever
// the number of pending timers, and no thread wakes up for a tick in which
// nothing is due. The design bet (as in Kafka's purgatory and the kernel's
// timer wheel): most timers are stopped or reset long before they fire, so
// add and stop must be cheap, and firing may cost a little more.
//
// Example:
//
//   #include "timingwheel/timingwheel.h"
//
//   auto wheel = timingwheel::TimingWheel::Create().value();
//   absl::StatusOr<timingwheel::Timer> t =
//       wheel->AfterFunc(absl::Milliseconds(250), [] { Retry(); });
//   if (!t.ok()) return t.status();
//   // ... the reply came in time:
//   t->Stop();  // true: Retry() will never start
//
// The design (after Varghese & Lauck, as Kafka builds it)
// -------------------------------------------------------
// Level 0 has `wheel_size` buckets `tick` apart and spans
// `tick * wheel_size`. A timer too far out for a level goes to its overflow
// level, whose tick is the lower level's span; overflow levels are created the
// first time they are needed. With the defaults (tick 1 ms, wheel_size 20),
// ten levels cover 325 years (the table of levels is at the top of
// lib/core/placement.h in the source tree).
//
// Every level's non-empty buckets sit in ONE delay queue, ordered by bucket
// expiration. The levels, buckets and that queue belong to one thread, the
// advancer: a caller hands its timers, stops and re-arms over to it through
// a lane of its own thread, and never touches a bucket. Deadlines are
// rounded UP to a whole tick, so a callback never starts before its
// deadline by the wheel's clock, and starts within one tick after it plus
// the time to hand it to a worker.
//
// Memory: what a wheel keeps, and when it gives back
// ---------------------------------------------------
// A timer's node (48 bytes on x86-64, with a callable of up to 16 bytes
// inside; 32 bytes for a lambda that captures nothing; see AfterFunc) comes
// from the wheel's own pools (one per node size): slabs of whole nodes, of
// about 64 KiB (60 KiB: 1,280 nodes of 48 bytes), mapped as the wheel grows,
// carved a few nodes at a time. When timers end (fire, are stopped or
// cancelled) their nodes go back to the pool, and the slabs left empty go back
// to the system (madvise MADV_DONTNEED) as they empty: the thread that frees
// the nodes (a caller, a worker, the advancer) sorts them into their slabs (the
// 64 it hands over at a time: microseconds, with no lock held that another
// thread waits for), and `tw-giveback`, one thread per process, started the
// first time a wheel has such work, makes the system call within milliseconds,
// so that no caller and no wheel thread waits for it. The wheel keeps the
// memory of Options::spare_timers ended timers (default 65536, in each pool)
// for new ones. After a spike of N timers that all end, it keeps about that,
// not N: a slab that holds one pending timer stays whole, and each thread
// caches the last 128 nodes it freed (per pool); new timers fill the fullest
// slabs first, so a wheel whose pending count falls empties slabs as it goes. A
// bucket holds nothing per timer: its timers are linked through 32-bit links
// inside their nodes.
//
// Threads and locks
// -----------------
// Who runs what (thread names with the default Options::thread_name_prefix):
//   * callers (any thread, callbacks included): AfterFunc, Every, At, Stop,
//     Reset, the Timer queries, Pending, CancelAll, Shutdown. They never wait
//     for the wheel's threads, except Shutdown, which joins them, and
//     CancelAll, which waits for the Resets in flight and for the advancer
//     to end the advance under way (with the code of yours it runs: the
//     executor, on_failure, destructors), then looks on the advancer's
//     thread; a Reset that finds a CancelAll under way waits for it to end
//     (but on the advancer). An arm, stop or re-arm is handed to the
//     advancer as a submission: it wakes the advancer only when it is due
//     before the advancer's next planned wake-up.
//   * `tw-poller`: sleeps on the clock until the delay queue's next bucket
//     is due, then wakes the advancer.
//   * `tw-advancer`: takes the callers' submissions (links each new timer,
//     unlinks each stopped one), moves every level's current time to the
//     due bucket's expiration, empties the bucket, and sends each timer to
//     the workers (if due) or down into a lower level (if not).
//   * `tw-worker-N`: runs due callbacks, `Options::workers` of them at once.
//   Each of these calls Options::on_thread_start first, if set.
//   * `tw-giveback`: one per process, shared by the wheels, not theirs (no
//     on_thread_start, never joined): gives memory back to the system when
//     a call that ended timers left some of that work (see Memory above).
// Every lock of the library and their order: the lock table in
// lib/base/mutex.h. No lock of the wheel is held while a callback runs, which
// is why a callback may call any member of its own wheel, Shutdown included.
// The Stop contract: each timer has one atomic state; the thread whose
// compare-and-swap moves it out of "pending" decides whether it stops or runs.
// Stop never waits for a running callback.
//
// Threads and shutdown
// --------------------
// Your code that a wheel runs, and the threads it runs on:
//   * a callback: a worker; with Options::executor, wherever the executor
//     runs the task (your threads, the advancer, or the thread whose
//     AfterFunc, Reset or callback made a timer due at once, if it runs the
//     task inline);
//   * the destructor of a callback (and of what it captured): where the
//     timer's last reference goes: the thread that drops the last Timer
//     handle, the worker after the last run, the advancer for a stopped
//     timer, a worker (or the thread that runs or destroys an executor's
//     task) for a timer stopped after it came due; or the thread of the
//     Shutdown or CancelAll that cancelled it, or that took a stopped timer
//     out of the wheel (the worker, once the run returned, for a timer
//     cancelled while its callback ran);
//   * Options::executor: the advancer, or a thread whose AfterFunc, Reset or
//     callback made a timer due at once; a task it destroys unrun: wherever
//     it destroys it;
//   * Options::on_failure: the thread that saw the failure (a worker or the
//     executor's thread after a throw, the executor's caller, the thread
//     that destroyed a task unrun);
//   * a Scheduler: the caller of Every or ScheduleFunc for the first delay,
//     then the thread that ran each callback;
//   * Options::on_thread_start: each new thread of the wheel, first;
//   * a Clock's Now and RealTimeUntil: any thread, with the wheel's locks
//     held.
// What each may call on a wheel (this one or another):
//   * everything except WaitIdle, from all of them but the last two:
//     AfterFunc, Every, At, ScheduleFunc, the Timer and ScopedTimer
//     operations, Pending, GetStats, CancelAll. None waits for a callback.
//     CancelAll waits for the advancer (and so for your code running on
//     it, which may call anything here: a CancelAll or Reset from the
//     advancer does not wait), and a Reset made while a CancelAll is under
//     way waits for it to end; a CancelAll never waits for a Reset made from
//     code it runs itself (the destructors of what it cancelled).
//   * Shutdown, and destroying the TimingWheel, from all of them but the
//     last two. The first Shutdown cancels and counts the pending timers,
//     joins the wheel's threads except the caller's own (which exits once
//     your code returns) and waits for the running callbacks except the
//     caller's own. A later Shutdown, while the first is under way, returns
//     0 at once from any code a wheel runs (waiting could wait for itself, or
//     for a thread that is joining it); from a thread of your own it waits
//     until the first has finished. Once the first has finished every
//     Shutdown returns 0 at once.
//   * WaitIdle returns at once from code a wheel runs (it would wait for
//     itself); from your own threads it waits.
//   * on_thread_start and a Clock must not call into the wheel: the first
//     runs while Create is starting the wheel, the second with its locks held.
// Stop and Reset never wait for a running callback: Stop's true means that
// no new run starts, not that a run in progress has returned.
// fork(): a wheel created before fork() is not usable in the child (its
// threads are not there); the child may create and use new wheels, also when
// other threads were using wheels at the fork (the library's process-wide
// locks are held across fork() by pthread_atfork handlers).

#ifndef TIMINGWHEEL_TIMINGWHEEL_H_
#define TIMINGWHEEL_TIMINGWHEEL_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "timingwheel/callback.h"
#include "timingwheel/clock.h"
#include "timingwheel/export.h"
#include "timingwheel/metrics_text.h"
#include "timingwheel/options.h"
#include "timingwheel/scheduler.h"
#include "timingwheel/scoped_timer.h"
#include "timingwheel/timer.h"

namespace timingwheel {

namespace internal {
class Engine;
class TimerNode;

// The most a TimingWheel keeps of a callable in its pool's memory: in the
// node itself up to 16 bytes, else in a second block of the pool (48
// bytes, lib/handles/timer_state.h); a bigger one goes to the heap once.
inline constexpr size_t kWheelBlockCallable = 48;
template <class Fn>
using WheelCallable = Callable<Fn, kWheelBlockCallable>;
}  // namespace internal

class TIMINGWHEEL_EXPORT TimingWheel {
 public:
  // Validates `options` and starts the poller, advancer and worker threads.
  // Errors: InvalidArgument naming the option, its value and what is allowed;
  // ResourceExhausted when the system refuses to start a thread (a pid or
  // thread limit, `ulimit -v`), naming the thread, how many the wheel asks
  // for and the system's error, once the threads already started are
  // stopped and joined.
  static absl::StatusOr<std::unique_ptr<TimingWheel>> Create(
      Options options = {});

  TimingWheel(const TimingWheel&) = delete;
  TimingWheel& operator=(const TimingWheel&) = delete;

  // Shutdown(). Handles to its timers stay safe to use.
  ~TimingWheel();

  // Runs `f` once on a worker thread after `d`: never before `d` by the
  // wheel's clock; `d <= 0` runs it as soon as possible, still on a worker,
  // never inline. Thread-safe, also from callbacks.
  // `f` is any callable `void()`, move-only ones included; an empty one
  // (nullptr, a null function pointer, an empty AnyInvocable or
  // std::function) is an error here rather than a throw on a worker. Where
  // it is kept: a lambda that captures nothing (any callable that is empty,
  // trivially copyable and trivially destructible) nowhere, its node 32 bytes
  // on x86-64; a callable of at most 16 bytes (a lambda capturing two
  // pointers, `[this, id]`) inside the timer's node, 48 bytes; one of at most
  // 48 bytes (an absl::AnyInvocable, a std::function, a
  // lambda capturing up to six pointers) in a second block of the wheel's
  // pool; a bigger one, or one aligned beyond a pointer or whose move may
  // throw, is moved to the heap once. Only the pool's blocks are taken on
  // the way, from the calling thread's cache: no malloc (but in a process
  // of over 65,000 callable types, whose later types' timers keep their
  // callable and its operations in one heap block:
  // lib/handles/callback_numbers.h). Errors: InvalidArgument (empty `f`;
  // infinite `d`; a deadline past the supported range, about 292 years from the
  // wheel's start: every finite `d` up to 100 years works), FailedPrecondition
  // (after Shutdown), ResourceExhausted (`max_pending` timers are pending).
  template <class F, class = std::enable_if_t<internal::kIsCallback<F>>>
  absl::StatusOr<Timer> AfterFunc(absl::Duration d, F&& f) {
    internal::WheelCallable<std::decay_t<F>> callable(std::in_place,
                                                      std::forward<F>(f));
    return ScheduleAfter(d, callable.Ref());
  }
  absl::StatusOr<Timer> AfterFunc(absl::Duration d,
                                  absl::AnyInvocable<void()> f);
  template <class Rep, class Period, class F>
  absl::StatusOr<Timer> AfterFunc(std::chrono::duration<Rep, Period> d, F&& f) {
    return AfterFunc(absl::FromChrono(d), std::forward<F>(f));
  }

  // Runs `f` every `period` (> 0; rounded up to a whole nanosecond), first
  // after one period, until stopped. Runs keep to the schedule
  // start + k * period; runs of one timer never overlap, and a run that would
  // start while the previous one still runs is skipped, not queued. After
  // Stop() returns true, no new run starts. The same as
  // ScheduleFunc(FixedRate(period), f), with errors naming Every.
  // Errors: as AfterFunc, and InvalidArgument for a `period` not finite and
  // > 0.
  template <class F, class = std::enable_if_t<internal::kIsCallback<F>>>
  absl::StatusOr<Timer> Every(absl::Duration period, F&& f) {
    internal::WheelCallable<std::decay_t<F>> callable(std::in_place,
                                                      std::forward<F>(f));
    return ScheduleEvery(period, callable.Ref());
  }
  absl::StatusOr<Timer> Every(absl::Duration period,
                              absl::AnyInvocable<void()> f);
  template <class Rep, class Period, class F>
  absl::StatusOr<Timer> Every(std::chrono::duration<Rep, Period> period,
                              F&& f) {
    return Every(absl::FromChrono(period), std::forward<F>(f));
  }

  // Runs `f` at the times `scheduler` decides: before the first run and after
  // each run it is asked for the delay until the next (see scheduler.h:
  // FixedRate, FixedDelay, ExponentialBackoff, or your own); the timer ends
  // when it returns std::nullopt. Runs never overlap; Stop and Reset work as
  // for Every (Reset: the next run after d, then the schedule goes on from
  // there). Takes the factories' StatusOr as it is, and your own scheduler
  // (`std::make_unique<MyScheduler>()`) as well.
  // Errors: as AfterFunc; the factory's error when `scheduler` holds one;
  // InvalidArgument for a null scheduler, one that ends before the first run,
  // or a first delay past the supported range.
  template <class F, class = std::enable_if_t<internal::kIsCallback<F>>>
  absl::StatusOr<Timer> ScheduleFunc(
      absl::StatusOr<std::unique_ptr<Scheduler>> scheduler, F&& f) {
    internal::WheelCallable<std::decay_t<F>> callable(std::in_place,
                                                      std::forward<F>(f));
    return ScheduleWith(std::move(scheduler), callable.Ref());
  }
  absl::StatusOr<Timer> ScheduleFunc(
      absl::StatusOr<std::unique_ptr<Scheduler>> scheduler,
      absl::AnyInvocable<void()> f);

  // Timers scheduled and not yet fired (callback started) or stopped; a
  // periodic timer counts until stopped. 0 after Shutdown. Thread-safe.
  int64_t Pending() const;

  // Counters and lateness, over the wheel's life and over the last minute of
  // its clock; see Stats. MetricsText (metrics_text.h) prints them for
  // Prometheus. Thread-safe.
  Stats GetStats() const;

  // Blocks until no timer is due by the clock and every due callback has
  // returned (or the wheel is shut down). For tests on a ManualClock:
  // `clock->Advance(d); wheel->WaitIdle();` and then everything due by the
  // new time has run, exactly, with no sleeping. On a real clock it returns
  // at a moment when nothing is due; timers that come due later run later.
  // From code a wheel runs (a callback, a hook, an executor, a scheduler, a
  // destructor the wheel calls; see "Threads and shutdown") it returns at
  // once instead of waiting for itself. Thread-safe.
  void WaitIdle() const;

  // Stops accepting timers, cancels every pending one (its callback never
  // runs and is destroyed), waits for running callbacks (except the caller's
  // own, when called from one) and joins the threads. Returns how many pending
  // timers it cancelled; concurrent calls together return that count once.
  // Idempotent; thread-safe, also from callbacks. Later calls to any member
  // return at once (AfterFunc: FailedPrecondition).
  int64_t Shutdown();

  // Cancels every pending timer, periodic ones included, and keeps the wheel
  // running: new timers, and Reset of timers not cancelled, work as before.
  // A cancelled timer's callback never starts again and is destroyed before
  // CancelAll returns, and the timer stays cancelled (State() kCancelled;
  // Stop and Reset return false, Reset arms nothing); a periodic timer whose
  // callback is running finishes that run, is not armed again, and its
  // callback is destroyed when the run returns. Returns how many it
  // cancelled (counted in Stats::cancelled too).
  //
  // Exact under races, as Stop is: the timer's state decides, so a timer is
  // cancelled by one CancelAll or stopped by one Stop, never both, and a
  // one-shot timer whose callback started is not counted. A timer pending
  // for the whole call is cancelled by it; one made, reset or armed again by
  // its schedule during the call may or may not be. It waits for the Resets
  // in flight, and Resets wait while it looks for the pending timers; it
  // does not wait for running callbacks. 0 once Shutdown has begun (Shutdown
  // cancels and counts the pending timers). Thread-safe, also from
  // callbacks.
  int64_t CancelAll();

  // Runs `f` once on a worker at the point `when` of std::chrono::steady_clock
  // (Asio's `expires_at`): never before it, at the first whole tick at or
  // after it. The deadline is `when` itself, not `now + (when - now)` with
  // two readings of the clock; a point already passed runs as soon as
  // possible, still on a worker, and stays the deadline: Timer::Deadline()
  // says `when`, and the lateness (Stats) counts from it. Only for a wheel on
  // SteadyClock() (the default), whose time is steady_clock's; on another
  // clock use AtClockTime. Thread-safe, also from callbacks. `f` as for
  // AfterFunc. Errors: as AfterFunc, and InvalidArgument when the wheel's
  // clock is not SteadyClock().
  template <class F, class = std::enable_if_t<internal::kIsCallback<F>>>
  absl::StatusOr<Timer> At(std::chrono::steady_clock::time_point when, F&& f) {
    internal::WheelCallable<std::decay_t<F>> callable(std::in_place,
                                                      std::forward<F>(f));
    return ScheduleSteady(when, callable.Ref());
  }
  absl::StatusOr<Timer> At(std::chrono::steady_clock::time_point when,
                           absl::AnyInvocable<void()> f);

  // The same at `when`, a reading of the wheel's own clock: a time since the
  // clock's origin as its `Clock::Now()` returns it, e.g.
  // `manual_clock->Now() + absl::Seconds(5)`. A point more than about 292
  // years before the wheel's start is a deadline of that. Errors: as
  // AfterFunc (InvalidArgument for an infinite `when`, or one past the
  // supported range, about 292 years after the wheel's start).
  template <class F, class = std::enable_if_t<internal::kIsCallback<F>>>
  absl::StatusOr<Timer> AtClockTime(absl::Duration when, F&& f) {
    internal::WheelCallable<std::decay_t<F>> callable(std::in_place,
                                                      std::forward<F>(f));
    return ScheduleAtClock(when, callable.Ref());
  }
  absl::StatusOr<Timer> AtClockTime(absl::Duration when,
                                    absl::AnyInvocable<void()> f);

  // AfterFunc, scheduled by id (TimerId, timer.h): no handle, the node freed
  // as soon as the timer ends. Errors as AfterFunc. Thread-safe, also from
  // callbacks.
  template <class F, class = std::enable_if_t<internal::kIsCallback<F>>>
  absl::StatusOr<TimerId> AfterFuncId(absl::Duration d, F&& f) {
    internal::WheelCallable<std::decay_t<F>> callable(std::in_place,
                                                      std::forward<F>(f));
    return ScheduleAfterId(d, callable.Ref());
  }
  template <class Rep, class Period, class F>
  absl::StatusOr<TimerId> AfterFuncId(std::chrono::duration<Rep, Period> d,
                                      F&& f) {
    return AfterFuncId(absl::FromChrono(d), std::forward<F>(f));
  }
  // At and AtClockTime, scheduled by id. Errors as theirs.
  template <class F, class = std::enable_if_t<internal::kIsCallback<F>>>
  absl::StatusOr<TimerId> AtId(std::chrono::steady_clock::time_point when,
                               F&& f) {
    internal::WheelCallable<std::decay_t<F>> callable(std::in_place,
                                                      std::forward<F>(f));
    return ScheduleSteadyId(when, callable.Ref());
  }
  template <class F, class = std::enable_if_t<internal::kIsCallback<F>>>
  absl::StatusOr<TimerId> AtClockTimeId(absl::Duration when, F&& f) {
    internal::WheelCallable<std::decay_t<F>> callable(std::in_place,
                                                      std::forward<F>(f));
    return ScheduleAtClockId(when, callable.Ref());
  }
  // What Timer's members do, for the timer `id` names, from any thread, also
  // from callbacks (its own included: a Reset during its run arms it again,
  // as Timer::Reset does). A spent id (its callback ran, or it was stopped),
  // an empty one, or one of another wheel: false, nullopt, and Reset arms
  // nothing. Queries are snapshots, as Timer's (timer.h).
  bool Stop(TimerId id);
  bool Reset(TimerId id, absl::Duration d);
  template <class Rep, class Period>
  bool Reset(TimerId id, std::chrono::duration<Rep, Period> d) {
    return Reset(id, absl::FromChrono(d));
  }
  bool Pending(TimerId id) const;
  std::optional<absl::Duration> Deadline(TimerId id) const;
  std::optional<absl::Duration> TimeLeft(TimerId id) const;

 private:
  explicit TimingWheel(internal::Engine* engine);
  // The members above, once the callable is ready for a node.
  absl::StatusOr<Timer> ScheduleAfter(absl::Duration d,
                                      internal::CallbackRef f);
  absl::StatusOr<Timer> ScheduleEvery(absl::Duration period,
                                      internal::CallbackRef f);
  absl::StatusOr<Timer> ScheduleWith(
      absl::StatusOr<std::unique_ptr<Scheduler>> scheduler,
      internal::CallbackRef f);
  absl::StatusOr<Timer> ScheduleSteady(
      std::chrono::steady_clock::time_point when, internal::CallbackRef f);
  absl::StatusOr<Timer> ScheduleAtClock(absl::Duration when,
                                        internal::CallbackRef f);
  absl::StatusOr<TimerId> ScheduleAfterId(absl::Duration d,
                                          internal::CallbackRef f);
  absl::StatusOr<TimerId> ScheduleSteadyId(
      std::chrono::steady_clock::time_point when, internal::CallbackRef f);
  absl::StatusOr<TimerId> ScheduleAtClockId(absl::Duration when,
                                            internal::CallbackRef f);
  // An id the engine made, or the engine's error.
  static absl::StatusOr<TimerId> ToTimerId(absl::StatusOr<uint64_t> id);
  // At's error on a wheel whose clock is not steady_clock's: `caller` (At
  // or AtId) names `instead` (AtClockTime or AtClockTimeId).
  absl::Status CheckSteady(const char* caller, const char* instead) const;
  // The handle for a node the engine made, or the engine's error.
  absl::StatusOr<Timer> ToTimer(absl::StatusOr<internal::TimerNode*> node);

  internal::Engine* const engine_;  // One reference, released by ~TimingWheel.
};

}  // namespace timingwheel

#endif  // TIMINGWHEEL_TIMINGWHEEL_H_
