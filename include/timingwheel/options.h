// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// options.h: what a TimingWheel is made with (Options), what it tells of
// itself (Stats), and what it reports of failures (Failure).
//
// Options is move-only: the executor and the failure hook are
// absl::AnyInvocable, so they may own move-only state. Pass it with
// std::move: `TimingWheel::Create(std::move(options))`.
//
// Thread-safety: plain values; a wheel copies or moves what it needs when it
// is created.

#ifndef TIMINGWHEEL_OPTIONS_H_
#define TIMINGWHEEL_OPTIONS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/time/time.h"
#include "timingwheel/clock.h"

namespace timingwheel {

// What went wrong, for Options::on_failure.
struct Failure {
  enum class Kind {
    // A timer's callback threw. The exception is caught; a periodic timer
    // keeps its schedule.
    kCallbackThrew,
    // A ScheduleFunc scheduler threw while asked for the next run; the
    // timer ends (no longer pending).
    kSchedulerThrew,
    // Options::executor threw while handed a task.
    kExecutorThrew,
    // Options::executor destroyed a task unrun: its timer counts as stopped.
    kTaskDropped,
  };
  Kind kind;
  // The exception's what(), or a description.
  std::string what;
};

// What a thread of the wheel does (Options::on_thread_start).
enum class ThreadRole {
  kPoller,    // `<prefix>-poller`: sleeps until the next bucket is due
  kAdvancer,  // `<prefix>-advancer`: moves the wheel, hands due timers over
  kWorker,    // `<prefix>-worker-N`: runs callbacks
};

// The ranges Create accepts; outside them it answers InvalidArgument.
inline constexpr absl::Duration kMinTick = absl::Microseconds(1);
inline constexpr absl::Duration kMaxTick = absl::Hours(1);
inline constexpr int kMinWheelSize = 2;
inline constexpr int kMaxWheelSize = 1 << 16;
inline constexpr int kMaxWorkers = 1024;
inline constexpr int64_t kMaxSpareTimers = int64_t{1} << 40;

struct Options {
  // Width of a level-0 bucket: the wheel's resolution. From kMinTick (1us)
  // to kMaxTick (1h).
  absl::Duration tick = absl::Milliseconds(1);
  // Buckets per level, from kMinWheelSize (2) to kMaxWheelSize (65536).
  int wheel_size = 20;
  // Threads that run callbacks, up to kMaxWorkers (1024); 0 =
  // hardware_concurrency().
  int workers = 0;
  // The time source; nullptr = SteadyClock().
  std::shared_ptr<Clock> clock = nullptr;
  // Most timers pending at once; AfterFunc and Every beyond it fail with
  // ResourceExhausted. 0 = unlimited.
  int64_t max_pending = 0;
  // The memory of this many ended timers is kept for new ones; beyond it,
  // memory goes back to the system. From 0 to kMaxSpareTimers (2^40: keep
  // everything). What a wheel keeps: timers' nodes come from slabs of
  // about 64 KiB that the wheel maps as it grows. When timers end (fire, are
  // stopped or cancelled), the slabs left empty go back to the system (madvise
  // MADV_DONTNEED) within moments, from the process's give-back thread
  // (`tw-giveback`: no caller and no wheel thread makes the call), keeping
  // at least `spare_timers` free nodes. A slab that holds one pending timer
  // stays, and so do the last ended timers each thread caches (at most 128 a
  // thread in each pool): after a spike of N timers that all end, the wheel
  // keeps the memory of about `spare_timers` of them, not of N. New timers fill
  // the fullest slabs first, so a wheel whose pending count falls empties slabs
  // as it goes. Each of the wheel's two pools (48-byte nodes, and 32-byte ones
  // for callbacks that capture nothing) keeps this many: the default keeps 3
  // MiB and 2 MiB at most.
  int64_t spare_timers = 65536;
  // Runs callbacks on your executor instead of the built-in worker pool
  // (`workers` is then ignored and no worker thread is started). Each due
  // timer is handed over as one task: call it once, on any thread, to run the
  // callback (it does nothing if the timer was stopped meanwhile); destroying
  // it unrun stops the timer (counted in Stats::stopped and
  // Stats::executor_dropped, and reported to `on_failure`). Shutdown cancels
  // the tasks not started yet (they then do nothing) and waits for those
  // running.
  //
  // The executor is called concurrently, from the advancer thread and from
  // any thread whose AfterFunc, Reset or callback made a timer due at once,
  // so it must be thread-safe (hence `const`). What it may do:
  //   * run the task inline, on the calling thread. The callback then runs
  //     on the wheel's advancer (or the caller's) thread and holds up the
  //     wheel while it runs. Due timers that such a callback makes (a
  //     Reset(0) of itself, an AfterFunc(0)) are queued and run after it
  //     returns, on the same thread, never recursively;
  //   * queue it to a thread pool, or destroy it (the timer is stopped);
  //   * throw: the exception is caught, counted (Stats::executor_threw) and
  //     reported to `on_failure`; a task the throw destroyed is dropped as
  //     above, and the wheel goes on.
  // What it must not do: block until callbacks of this wheel have finished
  // (the advancer would wait for itself), or call the task twice (the second
  // call does nothing).
  // Lifetime: the wheel keeps the executor until its last reference goes,
  // which may be after the TimingWheel was destroyed and on one of the
  // executor's own threads (a task that ran last releases it). So an
  // executor that owns threads should not be owned by the wheel: keep the
  // pool elsewhere, outliving the wheel, and capture a pointer to it.
  absl::AnyInvocable<void(absl::AnyInvocable<void()> task) const> executor =
      nullptr;
  // Told of what went wrong where no caller can be told (see Failure). Called
  // on the thread that saw it, with no lock of the wheel held; it must be
  // thread-safe. Exceptions it throws are swallowed. Empty (the default): a
  // line on stderr, at most one a second per wheel, saying how many were
  // left out meanwhile.
  absl::AnyInvocable<void(const Failure& failure) const> on_failure = nullptr;
  // The wheel's threads are named `<prefix>-poller`, `<prefix>-advancer` and
  // `<prefix>-worker-N` (N from 0), as `top -H`, `ps -L` and debuggers show
  // them; give two wheels of one process different prefixes to tell their
  // threads apart. Linux keeps 15 characters of a thread name, so the prefix
  // must be non-empty and short enough for the longest name to fit: at most
  // 6 characters (for `-advancer`), 5 with more than 10 workers, 4 with more
  // than 100, 3 with more than 1000. Create checks it against the number of
  // workers it starts.
  std::string thread_name_prefix = "tw";
  // Called first thing on each thread the wheel starts, after the thread is
  // named, with its role and index (the worker number N; 0 for the poller and
  // the advancer): for pinning (pthread_setaffinity_np), priorities, or
  // registering threads with a profiler. Once per thread: two (poller and
  // advancer) plus one per worker (none with `executor`). It runs on several
  // threads at once (hence `const`), possibly after Create returned; every
  // call has returned when Shutdown returns. It must not throw, nor call into
  // the wheel being created, whose threads are not running yet.
  absl::AnyInvocable<void(ThreadRole role, int index) const> on_thread_start =
      nullptr;
};

// Stats::recent covers the callbacks started in the last kRecentWindow of
// the wheel's clock, counted in slots of kRecentSlot since the wheel was
// created: from the start of the slot kRecentWindow before the current one
// up to now, so between 60 and 70 seconds (all of a wheel younger than that).
inline constexpr absl::Duration kRecentWindow = absl::Minutes(1);
inline constexpr absl::Duration kRecentSlot = absl::Seconds(10);

// One bucket of Stats::lateness_buckets.
struct LatenessBucket {
  // Inclusive: 2^k - 1 ns for k = 10 to 36 (about 1us, 2us, 4us ... 34s,
  // 69s), then absl::InfiniteDuration().
  absl::Duration upper_bound;
  // Callbacks started at most `upper_bound` late: cumulative, as the `le`
  // buckets of a Prometheus histogram.
  int64_t count = 0;
};

// Stats over a recent span of the wheel's clock (kRecentWindow).
struct RecentStats {
  // The span covered, up to the GetStats call: kRecentWindow plus the part
  // of the current kRecentSlot gone by; the wheel's age while that is less.
  absl::Duration span;
  int64_t fired = 0;  // callbacks started in the span
  // How late they started, as Stats::lateness_* (max is exact).
  absl::Duration lateness_p50;
  absl::Duration lateness_p99;
  absl::Duration lateness_p999;
  absl::Duration lateness_max;
};

// A snapshot of a wheel's counters (TimingWheel::GetStats). Exact when the
// wheel is at rest; a momentary value while timers are being added or fire.
// For one-shot timers, at rest: pending == scheduled - fired - stopped -
// cancelled (a periodic timer is scheduled once and fires many times).
// The counters cover the wheel's whole life; `recent` the last minute. For
// rates, take the difference of two snapshots (or export them with
// MetricsText, metrics_text.h, and let the monitoring system do it).
struct Stats {
  int64_t pending = 0;    // as Pending()
  int64_t scheduled = 0;  // arms: AfterFunc, Every, Reset of an unarmed timer
  int64_t fired = 0;      // callbacks started (each run of a periodic timer)
  int64_t stopped = 0;    // Stop() calls that returned true
  // Pending timers cancelled by Shutdown() and CancelAll() (a periodic timer
  // whose re-arm was cancelled while its callback ran included).
  int64_t cancelled = 0;
  int64_t callbacks_thrown = 0;    // callbacks that threw (caught)
  int64_t schedulers_thrown = 0;   // ScheduleFunc schedulers that threw
  int64_t executor_threw = 0;      // calls of Options::executor that threw
  int64_t executor_dropped = 0;    // tasks it destroyed unrun (also stopped)
  int64_t worker_queue_depth = 0;  // due callbacks waiting for a free worker
  // How late callbacks started (start - deadline, by the wheel's clock; for At
  // a point already passed counts from the point), over every callback
  // started so far; within 12.5% (log-linear histogram).
  absl::Duration lateness_p50;
  absl::Duration lateness_p99;
  absl::Duration lateness_p999;
  absl::Duration lateness_max;
  // Their lateness added up (for a mean: lateness_sum / fired), and counted
  // by lateness in 27 buckets plus one for the rest (see LatenessBucket);
  // the last bucket's count is `fired`.
  absl::Duration lateness_sum;
  std::vector<LatenessBucket> lateness_buckets;
  // The same for the callbacks started in the last minute.
  RecentStats recent;
  // The hand-off: a call that arms a timer (AfterFunc, Every, At, Reset, and
  // a periodic timer's next run) hands it to the wheel's advancer thread,
  // which links it into its bucket. `handoffs` counts the arms the advancer
  // took; the percentiles are how long they waited, from the wheel's clock
  // reading in the call (the one its deadline counts from) to the
  // advancer's when it took the arm, over the wheel's whole life; within
  // 12.5% (max exact). Not counted: arms due at once (they go straight to
  // the workers), and arms that a Stop on their own thread took back before
  // the advancer took them (a Stop soon after the AfterFunc). An arm due
  // later than the advancer's next planned wake-up does not wake it: it may
  // wait until 4,096 have gathered in its thread's lane, or about 100 ms.
  // While AfterFunc is called 200,000 times a second or more, the advancer
  // polls instead (it looks every 50 us), and AfterFunc reads no clock: the
  // advancer stamps the deadline when it takes the arm, so such a timer is
  // late by its wait (never early). Of those arms, whose calls read no
  // clock, one in 64 of each thread is timed, and counted for 64.
  int64_t handoffs = 0;
  absl::Duration handoff_p50;
  absl::Duration handoff_p99;
  absl::Duration handoff_max;
};

}  // namespace timingwheel

#endif  // TIMINGWHEEL_OPTIONS_H_
