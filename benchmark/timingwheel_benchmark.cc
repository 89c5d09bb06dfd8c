// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// timingwheel_benchmark.cc: the performance budget of DESIGN.md section 4,
// measured for timingwheel next to the baselines a user would otherwise use.
//
// Every scenario is a function template over an implementation adapter and
// is registered once per implementation, one argument at a time, so that the
// output prints the three side by side:
//   * Wheel: timingwheel::TimingWheel (tick 1 ms, wheel_size 20, 2 workers;
//            BM_Fire: hardware concurrency, timingwheel_cli's default);
//   * Heap:  bench::HeapTimer, an indexed min-heap + dispatcher + as many
//            workers (heap_timer.h), the baseline every benchmark compares
//            to;
//   * Asio:  bench::AsioTimer, Boost.Asio steady_timers on one io thread
//            (asio_timer.h); built only when Boost was found
//            (TIMINGWHEEL_HAVE_ASIO).
// The loop scenarios (BM_Loop*, and BM_Memory for these two) run on one
// thread, the loop's, that drives the timers itself:
//   * Loop:     timingwheel::LoopWheel (tick 1 ms, wheel_size 20);
//   * LoopHeap: bench::LoopHeapTimer, HeapTimer's indexed heap with no lock
//               and no thread, exact deadlines (loop_heap_timer.h): what a
//               loop keeps without a wheel.
//
// Scenarios:
//   BM_AfterFuncStop_Firing/N  N timers pending at (i % 10000) ms, firing
//                              while we measure; one op = AfterFunc(1 s) +
//                              Stop(). The reference benchmark of the Go port
//                              (329/363/440 ns/op at 1M/5M/10M).
//   BM_AfterFuncStop_Quiet/N   the same with the N timers 10-20 min out.
//                              <WheelById>: the wheel's timers by id
//                              (AfterFuncId, then Stop(id)), here and in
//                              BM_AfterFuncStop_Threads.
//   BM_AfterFuncStop_Threads   Quiet, 1M pending, 1/2/4 calling threads;
//                              items_per_second is the total rate.
//   BM_AfterFuncStop_Shards/N  Quiet, 1M pending spread over N instances,
//                              one calling thread; op i goes to instance
//                              i % N (a key sharded over N wheels).
//   BM_Fire                    1M timers uniform over 1 s, all fire:
//                              scheduling rate, time to the last fire,
//                              lateness percentiles (and p99 of the timers
//                              due after scheduling ended), early fires,
//                              lost timers. The run ./tools/run.sh makes
//                              (timingwheel_cli --timers=1000000), measured
//                              the same way: see below.
//   BM_Burst                   10M timers due in the same tick: callbacks/s
//                              from the deadline to the last callback (the
//                              manual time), and from the first callback to
//                              the last; the first callback's lateness.
//   BM_Memory/N/capture:C      RSS bytes per pending timer (what N more
//                              add), callbacks capturing C bytes (16, or
//                              0: nothing); the fixed cost beside it.
//   BM_Idle                    process CPU over 10 s with 1M timers 1 h out.
//   BM_LowRate/rate:R          a fresh instance, nothing else pending; for
//                              10 s one thread makes R AfterFunc(1 s) +
//                              Stop pairs per second (R/1000 each ms, then
//                              sleeps to the next ms): CPU of the
//                              implementation's threads (process minus the
//                              caller's, getrusage), of the caller, and
//                              the threads' context switches.
//   BM_LoopAfterFuncStop/pending:N/cached:C/turn:T
//                              N timers pending at (i % 10000) ms, firing
//                              as the loop takes its turns, one every T
//                              ops; one op = AfterFunc(1 s) + Stop
//                              (cached:0, the clock read per call) or
//                              At(the loop's cached time + 1 s) + Stop
//                              (cached:1). <LoopById>: the LoopWheel's
//                              timers held by id (AfterFuncId or AtId,
//                              then Stop(id)), <Loop>: by LoopTimer.
//   BM_LoopTurn                a loop's turn with nothing due: RunDueAt(the
//                              loop's cached time), 1M timers pending 10 to
//                              20 minutes out.
//   BM_LoopFire                1M timers due over 1 s, run by a loop that
//                              sleeps for TimeUntilNext, then RunDue:
//                              lateness in ticks, early fires, lost timers,
//                              wake-ups beside the ticks with a deadline.
//   BM_Spike/fire:F            10M timers pending, then all stopped (F=0) or
//                              all fired (F=1), then 10 s idle: RSS before,
//                              at the peak and after; the longest call, and
//                              beside it the longest of a control: the same
//                              timing around an empty call, interleaved
//                              with the measured ones (what the machine
//                              alone does to a call: a VM's stolen time;
//                              while scheduling, an empty interval read
//                              right after each AfterFunc).
//   BM_Instances/N             what one more instance costs a process: N
//                              of them with 1 worker each, created, then
//                              destroyed; per instance: threads, RSS, create
//                              and destroy time.
//   BM_HandOff/rate:R          Wheel only, a default wheel: one thread
//                              makes R AfterFunc(5 s) a second (R/1000 each
//                              ms) for 2 s; the hand-off wait (AfterFunc's
//                              clock reading -> the advancer's take), p50 /
//                              p99 / max, as the wheel measures it
//                              (Stats::handoff_*).
//
// BM_Fire and BM_Burst record fires as timingwheel_cli does, with
// tools::FireLog (tools/fire_log.h): a timer's deadline is the steady clock
// read just before its AfterFunc plus its delay; its callback reads the same
// clock and appends (id, time) to its own thread's records, sharing no
// counter or cache line with other threads, so that the callbacks cost the
// same and next to nothing in every implementation; the benchmark thread
// polls the threads' fire counts every 10 ms, and lost, doubled and early
// timers are counted from the records after Shutdown. Percentiles are
// nearest-rank, as in timingwheel_cli's report.
//
// The heavy scenarios run a fixed number of iterations: building millions of
// timers is setup, done before the timed loop, and Google Benchmark would
// otherwise repeat it for every iteration-count probe. The default suite
// takes a few minutes; `--benchmark_filter` picks scenarios, and
// `--benchmark_repetitions=3 --benchmark_report_aggregates_only=true` gives
// medians.
//
// Correctness is checked on the way: a failed AfterFunc, a Stop that should
// have succeeded, a Pending() that does not match, a timer that never fires
// or fires twice or early shows up as a counter and a line on stderr.

#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "benchmark/benchmark.h"
#include "fire_log.h"
#include "heap_timer.h"
#include "loop_heap_timer.h"
#include "proc_status.h"
#include "timingwheel/clock.h"
#include "timingwheel/loop_wheel.h"
#include "timingwheel/timingwheel.h"
#ifdef TIMINGWHEEL_HAVE_ASIO
#include "asio_timer.h"
#endif

namespace timingwheel {
namespace bench {
namespace {

constexpr int kWorkers = 2;

// ---------------------------------------------------------------------------
// Adapters: the same mini-API over each implementation.
//   explicit Impl(int workers);
//   Handle AfterFunc(absl::Duration, absl::AnyInvocable<void()>);  // Stop()
//   int64_t Pending(); int64_t Shutdown(); int64_t errors();

// The wheel `Create` made, or the benchmark aborts saying why (`what`
// names the factory).
template <typename W>
std::unique_ptr<W> CreatedOrAbort(absl::StatusOr<std::unique_ptr<W>> wheel,
                                  const char* what) {
  if (!wheel.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, wheel.status().ToString().c_str());
    std::abort();
  }
  return *std::move(wheel);
}

// A timer of WheelById: its wheel and its id, stopped as a handle is.
struct IdHandle {
  TimingWheel* wheel = nullptr;
  TimerId id;
  bool Stop() { return wheel != nullptr && wheel->Stop(id); }
};

// The wheel, its timers held by handle (Timer) or, kById, by id (TimerId).
template <bool kById>
class WheelOf {
 public:
  using Handle = std::conditional_t<kById, IdHandle, timingwheel::Timer>;

  explicit WheelOf(int workers) {
    Options options;
    options.tick = absl::Milliseconds(1);
    options.wheel_size = 20;
    options.workers = workers;
    wheel_ = CreatedOrAbort(TimingWheel::Create(std::move(options)),
                            "TimingWheel::Create");
  }

  // The callable goes to the wheel as it is (kept inline in its node), as
  // a user's lambda does.
  template <class F>
  Handle AfterFunc(absl::Duration d, F&& f) {
    if constexpr (kById) {
      absl::StatusOr<TimerId> id = wheel_->AfterFuncId(d, std::forward<F>(f));
      if (!id.ok()) {
        errors_.fetch_add(1, std::memory_order_relaxed);
        return Handle();
      }
      return Handle{wheel_.get(), *id};
    } else {
      absl::StatusOr<Timer> timer = wheel_->AfterFunc(d, std::forward<F>(f));
      if (!timer.ok()) {
        errors_.fetch_add(1, std::memory_order_relaxed);
        return Handle();
      }
      return *std::move(timer);
    }
  }
  int64_t Pending() const { return wheel_->Pending(); }
  int64_t Shutdown() { return wheel_->Shutdown(); }
  int64_t errors() const { return errors_.load(std::memory_order_relaxed); }
  // Returns once the advancer has taken every arm this thread handed it: a
  // timer made last, 1 ms out, runs only after the advancer took this
  // thread's ring up to it (a ring is taken in order).
  void Settle() {
    std::atomic<bool> ran{false};
    absl::StatusOr<Timer> timer =
        wheel_->AfterFunc(absl::Milliseconds(1), [&ran] { ran.store(true); });
    if (!timer.ok()) {
      errors_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    while (!ran.load())
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

 private:
  std::unique_ptr<TimingWheel> wheel_;
  std::atomic<int64_t> errors_{0};
};

using Wheel = WheelOf<false>;
using WheelById = WheelOf<true>;

// HeapTimer and AsioTimer already have the mini-API; they cannot fail.
template <class T>
class Baseline {
 public:
  using Handle = typename T::Handle;

  explicit Baseline(int workers) : impl_(workers) {}

  Handle AfterFunc(absl::Duration d, absl::AnyInvocable<void()> f) {
    return impl_.AfterFunc(d, std::move(f));
  }
  int64_t Pending() const { return impl_.Pending(); }
  int64_t Shutdown() { return impl_.Shutdown(); }
  int64_t errors() const { return 0; }
  void Settle() {}  // A timer is in place when AfterFunc returns.

 private:
  T impl_;
};

using Heap = Baseline<HeapTimer>;
#ifdef TIMINGWHEEL_HAVE_ASIO
using Asio = Baseline<AsioTimer>;
#endif

// Loop adapters: driven by the calling thread, which is the loop's. Beside
// the mini-API above (the worker count is ignored: they start no thread;
// Shutdown drops every pending timer):
//   Handle AtNs(int64_t steady_ns, absl::AnyInvocable<void()>);
//       at a steady_clock time the loop read itself, in ns since its epoch
//   std::optional<absl::Duration> TimeUntilNext();
//   int64_t RunDue(); int64_t RunDueAt(int64_t steady_ns);

constexpr absl::Duration kLoopTick = absl::Milliseconds(1);

// A LoopWheel timer's handle (LoopTimer) or id (LoopTimerId, with its wheel
// to stop it).
class LoopIdHandle {
 public:
  LoopIdHandle() = default;
  LoopIdHandle(LoopWheel* wheel, LoopTimerId id) : wheel_(wheel), id_(id) {}
  bool Stop() { return wheel_ != nullptr && wheel_->Stop(id_); }
  bool Pending() const { return wheel_ != nullptr && wheel_->Pending(id_); }

 private:
  LoopWheel* wheel_ = nullptr;
  LoopTimerId id_;
};

template <bool kById>
class LoopAdapter {
 public:
  using Handle = std::conditional_t<kById, LoopIdHandle, LoopTimer>;

  explicit LoopAdapter(int /*workers*/) {
    LoopOptions options;
    options.tick = kLoopTick;
    options.wheel_size = 20;
    wheel_ = CreatedOrAbort(LoopWheel::Create(std::move(options)),
                            "LoopWheel::Create");
  }

  // The callable goes to the wheel as it is (kept inline in its node), as
  // a LoopWheel user's lambda does.
  template <class F>
  Handle AfterFunc(absl::Duration d, F&& f) {
    if constexpr (kById) {
      return Adopt(wheel_->AfterFuncId(d, std::forward<F>(f)));
    } else {
      return Adopt(wheel_->AfterFunc(d, std::forward<F>(f)));
    }
  }
  template <class F>
  Handle AtNs(int64_t steady_ns, F&& f) {
    const std::chrono::steady_clock::time_point when{
        std::chrono::nanoseconds(steady_ns)};
    if constexpr (kById) {
      return Adopt(wheel_->AtId(when, std::forward<F>(f)));
    } else {
      return Adopt(wheel_->At(when, std::forward<F>(f)));
    }
  }
  std::optional<absl::Duration> TimeUntilNext() {
    return wheel_->TimeUntilNext();
  }
  int64_t RunDue() { return wheel_->RunDue(); }
  int64_t RunDueAt(int64_t steady_ns) {
    return wheel_->RunDueAt(absl::Nanoseconds(steady_ns));
  }
  int64_t Pending() const { return wheel_->Pending(); }
  int64_t Shutdown() {
    const int64_t pending = wheel_->Pending();
    wheel_.reset();  // Cancels the pending timers.
    return pending;
  }
  int64_t errors() const { return errors_; }
  void Settle() {}  // The loop's thread places its timers itself.

 private:
  Handle Adopt(absl::StatusOr<LoopTimer> timer) {
    if (!timer.ok()) {
      ++errors_;
      return Handle();
    }
    return *std::move(timer);
  }
  Handle Adopt(absl::StatusOr<LoopTimerId> id) {
    if (!id.ok()) {
      ++errors_;
      return Handle();
    }
    return Handle(wheel_.get(), *id);
  }

  std::unique_ptr<LoopWheel> wheel_;
  int64_t errors_ = 0;
};

using Loop = LoopAdapter<false>;
using LoopById = LoopAdapter<true>;

class LoopHeap {
 public:
  using Handle = LoopHeapTimer::Handle;

  explicit LoopHeap(int /*workers*/) {}

  Handle AfterFunc(absl::Duration d, absl::AnyInvocable<void()> f) {
    return timers_->AfterFunc(d, std::move(f));
  }
  Handle AtNs(int64_t steady_ns, absl::AnyInvocable<void()> f) {
    return timers_->At(steady_ns, std::move(f));
  }
  std::optional<absl::Duration> TimeUntilNext() {
    return timers_->TimeUntilNext();
  }
  int64_t RunDue() { return timers_->RunDue(); }
  int64_t RunDueAt(int64_t steady_ns) { return timers_->RunDueAt(steady_ns); }
  int64_t Pending() const { return timers_->Pending(); }
  int64_t Shutdown() {
    const int64_t pending = timers_->Pending();
    timers_ = std::make_unique<LoopHeapTimer>();  // Drops the pending timers.
    return pending;
  }
  int64_t errors() const { return 0; }
  void Settle() {}  // The loop's thread places its timers itself.

 private:
  std::unique_ptr<LoopHeapTimer> timers_ = std::make_unique<LoopHeapTimer>();
};

// ---------------------------------------------------------------------------
// Helpers.

int64_t NowNs() { return SteadyNowNs(); }

// The DESIGN.md reference shape: delays (i % 10000) ms.
template <class Impl>
void ScheduleFiring(Impl& impl, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    impl.AfterFunc(absl::Milliseconds(i % 10000), [] {});
  }
}

// Nothing fires during the benchmark: delays 10 to 20 minutes.
template <class Impl>
void ScheduleQuiet(Impl& impl, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    impl.AfterFunc(absl::Minutes(10) + absl::Milliseconds(i % 600000), [] {});
  }
}

// Records a problem as a counter and on stderr, without hiding the timing.
void Problem(benchmark::State& state, const char* counter, int64_t value) {
  if (value == 0) return;
  state.counters[counter] = static_cast<double>(value);
  std::fprintf(stderr, "PROBLEM (in the next result row): %s = %lld\n", counter,
               static_cast<long long>(value));
}

// Hands memory freed by earlier benchmarks back to the kernel, so that the
// next RSS delta is not absorbed by reused free blocks.
void TrimHeap() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

double ProcessCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

// The process's threads: the entries of /proc/self/task (Linux).
int64_t ThreadCount() {
  std::error_code error;
  std::filesystem::directory_iterator tasks("/proc/self/task", error);
  if (error) return -1;
  return std::distance(tasks, std::filesystem::directory_iterator());
}

int64_t ContextSwitches() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_nvcsw + usage.ru_nivcsw;
}

// Waits until `log` recorded `n` callbacks and `impl` holds no timer, or
// until `give_up_ns` (on the log's clock); returns false if it gave up. Polls
// the threads' own fire counts every 10 ms, as timingwheel_cli does, so that
// the callbacks share nothing with this thread.
template <class Impl>
bool WaitForFires(const tools::FireLog& log, const Impl& impl, int64_t n,
                  int64_t give_up_ns) {
  constexpr absl::Duration kPollInterval = absl::Milliseconds(10);
  while (log.Fires() < n || impl.Pending() > 0) {
    if (log.NowNs() >= give_up_ns) return false;
    absl::SleepFor(kPollInterval);
  }
  return true;
}

// ---------------------------------------------------------------------------
// 1. AfterFunc + Stop with N timers pending.

constexpr int64_t kStopOps = 2'000'000;        // Per benchmark run.
constexpr int64_t kThreadStopOps = 1'000'000;  // Per thread.

template <class Impl>
void RunAfterFuncStop(benchmark::State& state, Impl& impl) {
  const absl::Duration one_second = absl::Seconds(1);
  int64_t stop_failed = 0;
  for (auto _ : state) {
    typename Impl::Handle timer = impl.AfterFunc(one_second, [] {});
    if (!timer.Stop()) ++stop_failed;
  }
  state.SetItemsProcessed(state.iterations());
  Problem(state, "stop_failed", stop_failed);
}

template <class Impl>
void BM_AfterFuncStop_Firing(benchmark::State& state) {
  const int64_t n = state.range(0);
  Impl impl(kWorkers);
  ScheduleFiring(impl, n);
  RunAfterFuncStop(state, impl);
  impl.Shutdown();
  Problem(state, "afterfunc_errors", impl.errors());
}

template <class Impl>
void BM_AfterFuncStop_Quiet(benchmark::State& state) {
  const int64_t n = state.range(0);
  Impl impl(kWorkers);
  ScheduleQuiet(impl, n);
  RunAfterFuncStop(state, impl);
  Problem(state, "pending_off_by", impl.Pending() - n);
  Problem(state, "shutdown_off_by", impl.Shutdown() - n);
  Problem(state, "afterfunc_errors", impl.errors());
}

// 2. The same from several threads. Thread 0 builds the shared timers before
// the loop and tears them down after it; the loop's implicit start and end
// barriers keep the other threads from touching `shared` outside that window.
constexpr int64_t kThreadsPending = 1'000'000;

template <class Impl>
void BM_AfterFuncStop_Threads(benchmark::State& state) {
  static std::unique_ptr<Impl> shared;  // One per Impl.
  if (state.thread_index() == 0) {
    shared = std::make_unique<Impl>(kWorkers);
    ScheduleQuiet(*shared, kThreadsPending);
  }
  const absl::Duration one_second = absl::Seconds(1);
  int64_t stop_failed = 0;
  for (auto _ : state) {
    // `shared` is read only inside the loop, between the two barriers.
    typename Impl::Handle timer = shared->AfterFunc(one_second, [] {});
    if (!timer.Stop()) ++stop_failed;
  }
  state.SetItemsProcessed(state.iterations());
  Problem(state, "stop_failed", stop_failed);
  if (state.thread_index() == 0) {
    Problem(state, "pending_off_by", shared->Pending() - kThreadsPending);
    Problem(state, "afterfunc_errors", shared->errors());
    shared->Shutdown();
    shared.reset();
  }
}

// The same from one thread over N instances, as a program that shards its
// timers by key over N wheels calls them: 1M quiet timers spread evenly, and
// op i on instance i % N, so that consecutive ops never share one (the worst
// case for anything an instance caches per calling thread).
template <class Impl>
void BM_AfterFuncStop_Shards(benchmark::State& state) {
  const int64_t n = state.range(0);
  std::vector<std::unique_ptr<Impl>> shards;
  for (int64_t i = 0; i < n; ++i) {
    shards.push_back(std::make_unique<Impl>(kWorkers));
    ScheduleQuiet(*shards.back(), kThreadsPending / n);
  }
  const absl::Duration one_second = absl::Seconds(1);
  int64_t stop_failed = 0;
  int64_t op = 0;
  for (auto _ : state) {
    Impl& shard = *shards[static_cast<size_t>(op++ % n)];
    typename Impl::Handle timer = shard.AfterFunc(one_second, [] {});
    if (!timer.Stop()) ++stop_failed;
  }
  state.SetItemsProcessed(state.iterations());
  Problem(state, "stop_failed", stop_failed);
  int64_t errors = 0;
  for (auto& shard : shards) {
    shard->Shutdown();
    errors += shard->errors();
  }
  Problem(state, "afterfunc_errors", errors);
}

// 3. 1M timers with delays uniform over 1 s; all fire. The shape of
// ./tools/run.sh's default run (timingwheel_cli --timers=1000000): the same
// delays (its --seed=1, one scheduling thread), tick 1 ms, wheel_size 20, its
// default workers (hardware concurrency), and its recorder and lateness
// (tools::FireLog), so that the two report the same figures.
constexpr int64_t kFireTimers = 1'000'000;
constexpr int64_t kFireWindowNs = 1'000'000'000;
constexpr uint64_t kFireSeed = 1;

// timingwheel_cli's --workers=0, resolved as the wheel resolves it.
int CliWorkers() {
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

template <class Impl>
void BM_Fire(benchmark::State& state) {
  const std::shared_ptr<Clock> clock = SteadyClock();
  const int workers = CliWorkers();
  std::vector<int64_t> lateness_ns;  // Over all iterations.
  // Of the timers due after scheduling ended (no caller competing for CPU).
  std::vector<int64_t> quiet_lateness_ns;
  double sched_seconds = 0;
  double last_fire_seconds = 0;
  int64_t early = 0;
  int64_t lost = 0;
  int64_t doubled = 0;
  int64_t errors = 0;

  for (auto _ : state) {
    tools::FireLog log(kFireTimers, workers, clock.get());
    log.DrawUniformDelays(0, kFireTimers, 0, kFireWindowNs, kFireSeed);
    Impl impl(workers);

    const int64_t start_ns = log.NowNs();
    for (int64_t id = 0; id < kFireTimers; ++id) {
      const int64_t delay_ns = log.StampDeadline(id);
      impl.AfterFunc(absl::Nanoseconds(delay_ns),
                     [&log, id] { log.Record(id); });
    }
    const int64_t scheduled_ns = log.NowNs();
    const bool all_fired = WaitForFires(
        log, impl, kFireTimers,
        scheduled_ns + absl::ToInt64Nanoseconds(absl::Seconds(30)));
    const int64_t gave_up_ns = log.NowNs();
    impl.Shutdown();  // Joins the threads that ran the callbacks.
    errors += impl.errors();

    tools::FireSummary s = log.Summarize(scheduled_ns);
    const int64_t end_ns = all_fired ? s.last_fire_ns : gave_up_ns;
    early += s.early;
    lost += s.lost;
    doubled += s.doubled;
    sched_seconds += (scheduled_ns - start_ns) * 1e-9;
    last_fire_seconds += (end_ns - start_ns) * 1e-9;
    state.SetIterationTime((end_ns - start_ns) * 1e-9);
    lateness_ns.insert(lateness_ns.end(), s.lateness_ns.begin(),
                       s.lateness_ns.end());
    quiet_lateness_ns.insert(quiet_lateness_ns.end(),
                             s.lateness_due_after_ns.begin(),
                             s.lateness_due_after_ns.end());
  }

  const double iterations = static_cast<double>(state.iterations());
  state.SetItemsProcessed(state.iterations() * kFireTimers);
  state.counters["sched_per_s"] = kFireTimers * iterations / sched_seconds;
  state.counters["last_fire_ms"] = last_fire_seconds * 1e3 / iterations;
  std::sort(lateness_ns.begin(), lateness_ns.end());
  std::sort(quiet_lateness_ns.begin(), quiet_lateness_ns.end());
  const tools::LatenessStats late = tools::LatenessOf(lateness_ns);
  state.counters["late_p50_ms"] = absl::ToDoubleMilliseconds(late.p50);
  state.counters["late_p99_ms"] = absl::ToDoubleMilliseconds(late.p99);
  state.counters["late_p999_ms"] = absl::ToDoubleMilliseconds(late.p999);
  state.counters["late_p99_after_sched_ms"] =
      quiet_lateness_ns.empty()
          ? 0.0
          : tools::NearestRank(quiet_lateness_ns, 0.99) * 1e-6;
  state.counters["late_max_ms"] = absl::ToDoubleMilliseconds(late.max);
  state.counters["early"] = static_cast<double>(early);
  state.counters["lost"] = static_cast<double>(lost);
  Problem(state, "early_fires", early);
  Problem(state, "lost_timers", lost);
  Problem(state, "doubled_timers", doubled);
  Problem(state, "afterfunc_errors", errors);
}

// 4. 10M timers due in the same tick, 2 workers: callbacks per second.
// All timers share one absolute deadline, far enough out for scheduling to
// finish first: the margin comes from timing 200k AfterFuncs on a scratch
// instance, and an attempt whose scheduling overran the deadline is thrown
// away and retried with twice the margin. Each callback records into its
// own thread's records (tools::FireLog, as in BM_Fire), the same for every
// implementation, and shares nothing with other threads: the first callback
// is the earliest of the threads' records, the last the latest. Counters:
// callbacks_per_s from the deadline to the last callback (the manual time);
// pool_callbacks_per_s from the first callback to the last (the hand-off and
// the workers alone); first_fire_ms, the first callback's lateness (work an
// implementation does at the deadline before any callback starts, e.g.
// cascading a bucket).
constexpr int64_t kBurstTimers = 10'000'000;

template <class Impl>
int64_t BurstMarginNs() {
  constexpr int64_t kProbe = 200'000;
  Impl scratch(kWorkers);
  const int64_t start_ns = NowNs();
  for (int64_t i = 0; i < kProbe; ++i) {
    scratch.AfterFunc(absl::Hours(1), [] {});
  }
  const int64_t per_timer_ns = (NowNs() - start_ns) / kProbe;
  scratch.Shutdown();
  return 1'000'000'000 + 3 * per_timer_ns * kBurstTimers;
}

struct BurstResult {
  bool overran = false;  // Scheduling went past the deadline: retry.
  int64_t early = 0;
  int64_t lost = 0;
  int64_t doubled = 0;
  int64_t errors = 0;
  double seconds = 0;       // Deadline to last callback.
  double pool_seconds = 0;  // First callback to last callback.
  double first_ms = 0;      // First callback's lateness.
};

template <class Impl>
BurstResult RunBurst(int64_t margin_ns) {
  BurstResult result;
  const std::shared_ptr<Clock> clock = SteadyClock();
  tools::FireLog log(kBurstTimers, kWorkers, clock.get());
  Impl impl(kWorkers);

  const int64_t due_ns = log.NowNs() + margin_ns;
  for (int64_t id = 0; id < kBurstTimers; ++id) {
    log.SetDeadline(id, due_ns);
    impl.AfterFunc(absl::Nanoseconds(due_ns - log.NowNs()),
                   [&log, id] { log.Record(id); });
  }
  if (log.NowNs() >= due_ns) {
    result.overran = true;
    impl.Shutdown();
    return result;
  }
  const bool all_fired =
      WaitForFires(log, impl, kBurstTimers,
                   due_ns + absl::ToInt64Nanoseconds(absl::Seconds(120)));
  const int64_t gave_up_ns = log.NowNs();
  impl.Shutdown();  // Joins the threads that ran the callbacks.
  result.errors = impl.errors();

  const tools::FireSummary s = log.Summarize();
  result.early = s.early;
  result.lost = s.lost;
  result.doubled = s.doubled;
  const int64_t end_ns = all_fired ? s.last_fire_ns : gave_up_ns;
  const int64_t first_ns = s.fired > 0 ? s.first_fire_ns : end_ns;
  result.first_ms = (first_ns - due_ns) * 1e-6;
  result.seconds = std::max<int64_t>(end_ns - due_ns, 1) * 1e-9;
  result.pool_seconds = std::max<int64_t>(end_ns - first_ns, 1) * 1e-9;
  return result;
}

template <class Impl>
void BM_Burst(benchmark::State& state) {
  BurstResult total;
  int64_t retries = 0;
  for (auto _ : state) {
    int64_t margin_ns = BurstMarginNs<Impl>();
    BurstResult r = RunBurst<Impl>(margin_ns);
    while (r.overran && retries < 3) {
      ++retries;
      margin_ns *= 2;
      r = RunBurst<Impl>(margin_ns);
    }
    if (r.overran) {
      state.SkipWithError("scheduling 10M timers kept overrunning the margin");
      break;
    }
    total.early += r.early;
    total.lost += r.lost;
    total.doubled += r.doubled;
    total.errors += r.errors;
    total.seconds += r.seconds;
    total.pool_seconds += r.pool_seconds;
    total.first_ms += r.first_ms;
    state.SetIterationTime(r.seconds);
  }
  if (state.error_occurred()) return;
  const double iterations = static_cast<double>(state.iterations());
  state.SetItemsProcessed(state.iterations() * kBurstTimers);
  state.counters["callbacks_per_s"] = kBurstTimers * iterations / total.seconds;
  state.counters["pool_callbacks_per_s"] =
      kBurstTimers * iterations / total.pool_seconds;
  state.counters["first_fire_ms"] = total.first_ms / iterations;
  state.counters["lost"] = static_cast<double>(total.lost);
  Problem(state, "early_fires", total.early);
  Problem(state, "lost_timers", total.lost);
  Problem(state, "doubled_timers", total.doubled);
  Problem(state, "afterfunc_errors", total.errors);
  if (retries > 0) {
    std::fprintf(stderr,
                 "note: BM_Burst needed %lld retries with a longer "
                 "margin\n",
                 static_cast<long long>(retries));
  }
}

// 5. RSS per pending timer, 1 h out, each callback capturing 16 bytes (the
// size the performance goal names: a request id and a pointer, say), or
// nothing (capture:0: a lambda that captures nothing, which a TimingWheel
// keeps in a bare node).
//
// What one more pending timer costs: the RSS that n timers add to an
// instance that already holds kMemoryWarmTimers of the same kind (so the
// levels they need exist and the code they run was touched). Both readings
// are taken once the implementation holds everything handed to it
// (Settle: a TimingWheel's advancer has taken every arm) and after
// malloc_trim, so they count live memory: not the chunks of submissions in
// flight at that moment (freed as the advancer takes them; malloc keeps
// freed memory until trimmed). `fixed_kb` is the rest: the RSS of the
// instance with its warm-up timers over the process before it, less those
// timers at the measured cost each (threads' stacks touched, the levels,
// code, the rings' chunks; a LoopWheel's at 1M may come out below 0,
// its cost per timer rounded up by the huge page it last faulted in).
constexpr int64_t kMemoryWarmTimers = 100'000;

template <class Impl>
void AddMemoryTimers(Impl* impl, int64_t first, int64_t n, bool capture,
                     int64_t* where) {
  for (int64_t i = first; i < first + n; ++i) {
    const absl::Duration d = absl::Hours(1) + absl::Milliseconds(i % 10000);
    if (capture) {
      impl->AfterFunc(d, [id = i, where] {
        benchmark::DoNotOptimize(id);
        benchmark::DoNotOptimize(where);
      });
    } else {
      impl->AfterFunc(d, [] {});
    }
  }
}

template <class Impl>
void BM_Memory(benchmark::State& state) {
  const int64_t n = state.range(0);
  const bool capture = state.range(1) != 0;
  double bytes_per_timer = 0;
  double rss_mb = 0;
  double fixed_kb = 0;
  int64_t errors = 0;
  for (auto _ : state) {
    state.PauseTiming();  // Trimming what earlier benchmarks freed is slow.
    TrimHeap();
    const int64_t empty = ProcStatusBytes("VmRSS");
    Impl impl(kWorkers);
    AddMemoryTimers(&impl, 0, kMemoryWarmTimers, capture, &errors);
    impl.Settle();
    TrimHeap();
    state.ResumeTiming();
    const int64_t before = ProcStatusBytes("VmRSS");
    AddMemoryTimers(&impl, kMemoryWarmTimers, n, capture, &errors);
    state.PauseTiming();
    impl.Settle();
    TrimHeap();
    const int64_t after = ProcStatusBytes("VmRSS");
    const double per_timer = static_cast<double>(after - before) / n;
    bytes_per_timer += per_timer;
    rss_mb += (after - before) / 1048576.0;
    fixed_kb += (before - empty - per_timer * kMemoryWarmTimers) / 1024.0;
    Problem(state, "pending_off_by", impl.Pending() - kMemoryWarmTimers - n);
    impl.Shutdown();
    errors += impl.errors();
    state.ResumeTiming();
  }
  const double iterations = static_cast<double>(state.iterations());
  state.SetItemsProcessed(state.iterations() * n);
  state.counters["bytes_per_timer"] = bytes_per_timer / iterations;
  state.counters["rss_delta_mb"] = rss_mb / iterations;
  state.counters["fixed_kb"] = fixed_kb / iterations;
  Problem(state, "afterfunc_errors", errors);
}

// 6. CPU burnt by the process while 1M timers wait 1 h and nothing is due.
constexpr int64_t kIdleTimers = 1'000'000;
constexpr absl::Duration kIdleWindow = absl::Seconds(10);

template <class Impl>
void BM_Idle(benchmark::State& state) {
  Impl impl(kWorkers);
  for (int64_t i = 0; i < kIdleTimers; ++i) {
    impl.AfterFunc(absl::Hours(1) + absl::Milliseconds(i % 10000), [] {});
  }
  double cpu_seconds = 0;
  double wall_seconds = 0;
  int64_t switches = 0;
  for (auto _ : state) {
    const double cpu0 = ProcessCpuSeconds();
    const int64_t switches0 = ContextSwitches();
    const absl::Time wall0 = absl::Now();
    absl::SleepFor(kIdleWindow);
    wall_seconds += absl::ToDoubleSeconds(absl::Now() - wall0);
    switches += ContextSwitches() - switches0;
    cpu_seconds += ProcessCpuSeconds() - cpu0;
  }
  const double scale = absl::ToDoubleSeconds(kIdleWindow) / wall_seconds;
  state.SetItemsProcessed(state.iterations() * kIdleTimers);
  state.counters["cpu_ms_per_10s"] = cpu_seconds * 1e3 * scale;
  // Voluntary + involuntary switches of all threads: roughly the wake-ups.
  state.counters["ctx_switches_per_10s"] = switches * scale;
  Problem(state, "pending_off_by", impl.Pending() - kIdleTimers);
  impl.Shutdown();
  Problem(state, "afterfunc_errors", impl.errors());
}

// 6b. CPU burnt by the implementation's own threads while one thread makes
// AfterFunc(1 s) + Stop pairs at a low, steady rate and nothing else is
// pending: a fast call must not be bought with a background thread that
// spins or wakes up for every call (issue 23: at most 20 ms at 1,000/s and
// 100 ms at 100,000/s over 10 s).
//
// Each millisecond the benchmark thread makes rate / 1000 pairs, then sleeps
// until the next millisecond boundary on steady_clock (boundaries counted
// from the start, so a late step does not shift the ones after it). The
// implementation's threads' CPU is the process's (RUSAGE_SELF) minus this
// thread's (RUSAGE_THREAD), user + system, read right before and right after
// the window; their context switches are counted the same way, roughly
// their wake-ups.
constexpr absl::Duration kLowRateWindow = absl::Seconds(10);
constexpr absl::Duration kLowRateSettle = absl::Milliseconds(100);

struct Usage {
  double cpu_ms = 0;         // user + system
  int64_t ctx_switches = 0;  // voluntary + involuntary
};

// RUSAGE_SELF (the process) or RUSAGE_THREAD (the calling thread).
Usage UsageOf(int who) {
  rusage usage;
  getrusage(who, &usage);
  const auto ms = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) * 1e3 + tv.tv_usec * 1e-3;
  };
  return {ms(usage.ru_utime) + ms(usage.ru_stime),
          usage.ru_nvcsw + usage.ru_nivcsw};
}

template <class Impl>
void BM_LowRate(benchmark::State& state) {
  const int64_t rate = state.range(0);  // Pairs per second.
  const int64_t per_step = rate / 1000;
  const int64_t steps = absl::ToInt64Milliseconds(kLowRateWindow);
  Impl impl(kWorkers);
  absl::SleepFor(kLowRateSettle);  // Its threads start outside the window.
  const absl::Duration one_second = absl::Seconds(1);
  int64_t pairs = 0;
  int64_t stop_failed = 0;
  Usage process;
  Usage caller;
  for (auto _ : state) {
    const Usage process0 = UsageOf(RUSAGE_SELF);
    const Usage caller0 = UsageOf(RUSAGE_THREAD);
    const auto start = std::chrono::steady_clock::now();
    for (int64_t step = 1; step <= steps; ++step) {
      for (int64_t i = 0; i < per_step; ++i) {
        typename Impl::Handle timer = impl.AfterFunc(one_second, [] {});
        if (!timer.Stop()) ++stop_failed;
      }
      pairs += per_step;
      std::this_thread::sleep_until(start + std::chrono::milliseconds(step));
    }
    const Usage caller1 = UsageOf(RUSAGE_THREAD);
    const Usage process1 = UsageOf(RUSAGE_SELF);
    process.cpu_ms += process1.cpu_ms - process0.cpu_ms;
    process.ctx_switches += process1.ctx_switches - process0.ctx_switches;
    caller.cpu_ms += caller1.cpu_ms - caller0.cpu_ms;
    caller.ctx_switches += caller1.ctx_switches - caller0.ctx_switches;
  }
  const double iterations = static_cast<double>(state.iterations());
  state.SetItemsProcessed(pairs);
  state.counters["pairs"] = static_cast<double>(pairs) / iterations;
  state.counters["threads_cpu_ms"] =
      (process.cpu_ms - caller.cpu_ms) / iterations;
  state.counters["caller_cpu_ms"] = caller.cpu_ms / iterations;
  // Roughly the wake-ups of the implementation's threads.
  state.counters["threads_ctx_switches"] =
      static_cast<double>(process.ctx_switches - caller.ctx_switches) /
      iterations;
  Problem(state, "stop_failed", stop_failed);
  Problem(state, "pending_off_by", impl.Pending());
  impl.Shutdown();
  Problem(state, "afterfunc_errors", impl.errors());
}

// 7. On the loop's thread: a LoopWheel (Loop) and the heap a loop keeps
// without one (LoopHeap), driven by the benchmark thread as an event loop
// drives them.
//
// BM_LoopAfterFuncStop: N timers pending at (i % 10000) ms; one op is
// AfterFunc(1 s) + Stop (cached:0, which reads the clock) or At(the loop's
// steady_clock time + 1 s) + Stop (cached:1: the loop passes the time it
// read at the start of its turn, as a loop that handles a batch of events
// does).
// Every T ops (turn:T) the loop takes a turn: it reads the clock once and
// runs what is due by then (RunDueAt), so that the N timers fire meanwhile,
// as in BM_AfterFuncStop_Firing, and the cached time stays fresh. A turn
// every 100 ops is a loop's batch of events; every 10,000 ops leaves the
// turns out of the figure, as a benchmark of the pair alone does (how
// Agrona's DeadlineTimerWheel gives its 2.6 ns, README "Performance").

// The timed loop, one per kind of call: a loop's call site makes one kind,
// and the compiler sees only its path (the LoopWheel's is inline).
template <class Impl, bool kCached>
int64_t LoopPairs(benchmark::State& state, Impl& impl, int64_t turn_every) {
  const absl::Duration one_second = absl::Seconds(1);
  const int64_t one_second_ns = absl::ToInt64Nanoseconds(one_second);
  int64_t now_ns = NowNs();  // The loop's time, read once per turn.
  int64_t turn_ops = 0;
  int64_t stop_failed = 0;
  for (auto _ : state) {
    if (++turn_ops == turn_every) {
      turn_ops = 0;
      now_ns = NowNs();
      impl.RunDueAt(now_ns);
    }
    typename Impl::Handle timer = [&] {
      if constexpr (kCached) {
        return impl.AtNs(now_ns + one_second_ns, [] {});
      } else {
        return impl.AfterFunc(one_second, [] {});
      }
    }();
    if (!timer.Stop()) ++stop_failed;
  }
  return stop_failed;
}

template <class Impl>
void BM_LoopAfterFuncStop(benchmark::State& state) {
  const int64_t n = state.range(0);
  const bool cached = state.range(1) != 0;
  const int64_t turn_every = state.range(2);
  Impl impl(/*workers=*/0);  // None: the loop's thread runs the callbacks.
  ScheduleFiring(impl, n);
  const int64_t stop_failed =
      cached ? LoopPairs<Impl, true>(state, impl, turn_every)
             : LoopPairs<Impl, false>(state, impl, turn_every);
  state.SetItemsProcessed(state.iterations());
  Problem(state, "stop_failed", stop_failed);
  Problem(state, "afterfunc_errors", impl.errors());
}

// BM_LoopTurn: one op is a turn of a loop that finds nothing due: RunDueAt
// with the time the loop read at its start (a loop woken by I/O, not by the
// wheel, runs what is due before it sleeps again).
template <class Impl>
void BM_LoopTurn(benchmark::State& state) {
  Impl impl(/*workers=*/0);
  ScheduleQuiet(impl, 1'000'000);
  const int64_t now_ns = NowNs();
  int64_t ran = 0;
  for (auto _ : state) ran += impl.RunDueAt(now_ns);
  state.SetItemsProcessed(state.iterations());
  Problem(state, "ran", ran);
  Problem(state, "afterfunc_errors", impl.errors());
}

// BM_LoopFire: 1M timers with delays uniform over [1 s, 2 s), scheduled by
// the loop before it runs: a loop that schedules a million timers cannot
// run the ones due meanwhile, so they start after the scheduling is done
// (a timer due before it ended is a problem, reported). Then the loop
// sleeps for TimeUntilNext (absl::SleepFor) and calls RunDue, until nothing
// is pending. The loop's thread asks for 1 us of timer slack (Linux's
// default, 50 us, is added to each sleep of a thread, but not to a timerfd's
// expiry, which test/examples/epoll_idle_timeouts.cc waits on), as the
// threaded wheel's own poller and advancer do. Fires are recorded as in
// BM_Fire (tools::FireLog), with the same seed. Counters: lateness p50/p99/max
// in ticks (1 ms; LoopHeap has no tick but is given the same unit), early fires
// (0: never early), lost timers; wake_ups, the loop's sleeps, beside due_ticks,
// the ticks in which a deadline falls (a LoopWheel wakes for the buckets due,
// so about once per due tick plus a few for cascades; a loop woken every tick
// would wake as often as there are ticks), and empty_wake_ups, those after
// which RunDue ran nothing (cascades, for the wheel).
constexpr int64_t kLoopFireMarginNs = 1'000'000'000;

template <class Impl>
void BM_LoopFire(benchmark::State& state) {
  const std::shared_ptr<Clock> clock = SteadyClock();
  const int64_t tick_ns = absl::ToInt64Nanoseconds(kLoopTick);
  std::vector<int64_t> lateness_ns;  // Over all iterations.
  int64_t early = 0;
  int64_t lost = 0;
  int64_t doubled = 0;
  int64_t due_before_loop = 0;
  int64_t wake_ups = 0;
  int64_t empty_wake_ups = 0;
  int64_t due_ticks = 0;
  double sched_seconds = 0;
  int64_t errors = 0;
  const int slack_ns = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
  prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);

  for (auto _ : state) {
    tools::FireLog log(kFireTimers, 1, clock.get());
    log.DrawUniformDelays(0, kFireTimers, kLoopFireMarginNs, kFireWindowNs,
                          kFireSeed);
    // The wheel's ticks count from its creation; this is a reading just
    // before it, so the ticks below may be shifted by a few microseconds.
    const int64_t origin_ns = log.NowNs();
    Impl impl(/*workers=*/0);

    const int64_t start_ns = log.NowNs();
    for (int64_t id = 0; id < kFireTimers; ++id) {
      const int64_t delay_ns = log.StampDeadline(id);
      impl.AfterFunc(absl::Nanoseconds(delay_ns),
                     [&log, id] { log.Record(id); });
    }
    const int64_t scheduled_ns = log.NowNs();
    const int64_t give_up_ns = scheduled_ns + kLoopFireMarginNs +
                               kFireWindowNs +
                               absl::ToInt64Nanoseconds(absl::Seconds(30));
    while (std::optional<absl::Duration> wait = impl.TimeUntilNext()) {
      if (*wait > absl::ZeroDuration()) {
        absl::SleepFor(*wait);
        ++wake_ups;
        if (impl.RunDue() == 0) ++empty_wake_ups;
      } else {
        impl.RunDue();
      }
      if (log.NowNs() > give_up_ns) break;
    }
    const int64_t end_ns = log.NowNs();
    errors += impl.errors();
    impl.Shutdown();

    const tools::FireSummary s = log.Summarize();
    early += s.early;
    lost += s.lost;
    doubled += s.doubled;
    sched_seconds += (scheduled_ns - start_ns) * 1e-9;
    state.SetIterationTime((end_ns - start_ns) * 1e-9);
    lateness_ns.insert(lateness_ns.end(), s.lateness_ns.begin(),
                       s.lateness_ns.end());
    std::vector<int64_t> ticks(kFireTimers);
    for (int64_t id = 0; id < kFireTimers; ++id) {
      const int64_t deadline_ns = log.Deadline(id);
      if (deadline_ns < scheduled_ns) ++due_before_loop;
      ticks[id] = (deadline_ns - origin_ns + tick_ns - 1) / tick_ns;
    }
    std::sort(ticks.begin(), ticks.end());
    due_ticks += std::unique(ticks.begin(), ticks.end()) - ticks.begin();
  }
  prctl(PR_SET_TIMERSLACK, static_cast<unsigned long>(slack_ns), 0UL, 0UL, 0UL);

  const double iterations = static_cast<double>(state.iterations());
  const double tick_ms = absl::ToDoubleMilliseconds(kLoopTick);
  state.SetItemsProcessed(state.iterations() * kFireTimers);
  state.counters["sched_per_s"] = kFireTimers * iterations / sched_seconds;
  std::sort(lateness_ns.begin(), lateness_ns.end());
  const tools::LatenessStats late = tools::LatenessOf(lateness_ns);
  state.counters["late_p50_ticks"] =
      absl::ToDoubleMilliseconds(late.p50) / tick_ms;
  state.counters["late_p99_ticks"] =
      absl::ToDoubleMilliseconds(late.p99) / tick_ms;
  state.counters["late_max_ticks"] =
      absl::ToDoubleMilliseconds(late.max) / tick_ms;
  state.counters["early"] = static_cast<double>(early);
  state.counters["lost"] = static_cast<double>(lost);
  state.counters["wake_ups"] = wake_ups / iterations;
  state.counters["due_ticks"] = due_ticks / iterations;
  state.counters["empty_wake_ups"] = empty_wake_ups / iterations;
  Problem(state, "early_fires", early);
  Problem(state, "lost_timers", lost);
  Problem(state, "doubled_timers", doubled);
  Problem(state, "due_before_loop", due_before_loop);
  Problem(state, "afterfunc_errors", errors);
}

// 8. What one more instance (one more wheel) costs a process: N of them with
// 1 worker each, no timers, all alive at once, then destroyed. Per instance:
// the threads it started, the RSS it added, the time to create it and the
// time to destroy it (Shutdown and joining its threads).
template <class Impl>
void BM_Instances(benchmark::State& state) {
  const int64_t n = state.range(0);
  double threads = 0;
  double rss_bytes = 0;
  double create_us = 0;
  double destroy_us = 0;
  for (auto _ : state) {
    state.PauseTiming();
    TrimHeap();
    state.ResumeTiming();
    const int64_t threads_before = ThreadCount();
    const int64_t rss_before = ProcStatusBytes("VmRSS");
    const int64_t start_ns = NowNs();
    std::vector<std::unique_ptr<Impl>> instances;
    instances.reserve(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      instances.push_back(std::make_unique<Impl>(1));
    }
    const int64_t created_ns = NowNs();
    threads += static_cast<double>(ThreadCount() - threads_before) / n;
    rss_bytes += static_cast<double>(ProcStatusBytes("VmRSS") - rss_before) / n;
    const int64_t destroy_ns = NowNs();
    instances.clear();
    destroy_us += (NowNs() - destroy_ns) * 1e-3 / n;
    create_us += (created_ns - start_ns) * 1e-3 / n;
  }
  const double iterations = static_cast<double>(state.iterations());
  state.SetItemsProcessed(state.iterations() * n);
  state.counters["threads_each"] = threads / iterations;
  state.counters["rss_bytes_each"] = rss_bytes / iterations;
  state.counters["create_us_each"] = create_us / iterations;
  state.counters["destroy_us_each"] = destroy_us / iterations;
}

// 9. A spike: kSpikeTimers pending, then all stopped (fire:0) or all fired
// (fire:1), then kSpikeIdle of nothing. Does the memory go back, and does
// giving it back stall anyone? Callbacks capture 16 bytes, as in BM_Memory.
// fire:0 keeps the handles (in a vector reserved up front, whose bytes are
// taken out of the peak figure) and stops each; fire:1 drops them and lets
// the timers come due from kSpikeFireAfterNs after the first was scheduled,
// spread over kSpikeFireSpreadMs. Counters:
//   rss_before_mb, rss_peak_mb, rss_after_mb: RSS with the instance made and
//       idle, with all timers scheduled, and kSpikeIdle after the last one
//       ended; kept_of_spike = (after - before) / (peak - before), target
//       <= 0.10; rss_trimmed_mb: after that, malloc_trim(0) (what malloc,
//       not the instance, kept);
//   sched_s, sched_max_call_us: the scheduling, and its longest AfterFunc;
//   max_call_us: the longest call from the peak on, on the benchmark
//       thread: each Stop with its handle's release (fire:0) and, for Loop,
//       each RunDue of the idle time, called every millisecond (where a
//       LoopWheel finishes giving back); max_call_cpu_us, the most CPU time
//       of this thread one of them took (on a busy machine the first also
//       counts time the thread was preempted); calls_over_1ms, how many
//       took more than 1 ms;
//   probe_max_us, probe_max_cpu_us, probe_over_1ms (Wheel): the same for a
//       thread calling AfterFunc + Stop every millisecond from the peak to
//       the end (it would wait for any lock the give-back holds), at a
//       real-time priority where allowed (probe_realtime: 1), so that it
//       does not wait for a core;
//   late_max_ms (fire:1): the latest callback (a stalled advancer, worker
//       or loop shows there).
constexpr int64_t kSpikeTimers = 10'000'000;
constexpr absl::Duration kSpikeIdle = absl::Seconds(10);
constexpr int64_t kSpikeFireAfterNs = 20'000'000'000;
constexpr int64_t kSpikeFireSpreadMs = 5000;

// The largest of many values, written by several threads.
void RaiseTo(std::atomic<int64_t>& max, int64_t value) {
  int64_t seen = max.load(std::memory_order_relaxed);
  while (value > seen &&
         !max.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}

int64_t ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1'000'000'000 + ts.tv_nsec;
}

// The longest of some calls: wall time, and CPU time of this thread (the
// difference is time the thread did not run: preempted, or waiting).
struct CallMax {
  int64_t wall_ns = 0;
  int64_t cpu_ns = 0;
  int64_t over_1ms = 0;  // calls that took more than 1 ms (wall)
};

// Calls `f` and raises `max` to its duration.
template <class F>
void Timed(CallMax& max, F&& f) {
  const int64_t start_ns = NowNs();
  const int64_t start_cpu_ns = ThreadCpuNs();
  f();
  max.cpu_ns = std::max(max.cpu_ns, ThreadCpuNs() - start_cpu_ns);
  const int64_t wall_ns = NowNs() - start_ns;
  max.wall_ns = std::max(max.wall_ns, wall_ns);
  if (wall_ns > 1'000'000) ++max.over_1ms;
}

// While it lives (Wheel only), a thread that calls AfterFunc + Stop every
// millisecond and records the longest pair, and the longest empty call timed
// right after each (the control).
template <class Impl>
class SpikeProbe {
 public:
  explicit SpikeProbe(Impl& impl) {
    thread_ = std::thread([this, &impl] {
      // Ahead of every other thread where the system allows it (root, or
      // CAP_SYS_NICE), so that a call's time is its own and the waits for
      // the wheel's locks, not a wait for a core that the wheel's busy
      // threads hold (on 2 cores); `realtime_` says whether it was.
      sched_param param{};
      param.sched_priority = 1;
      realtime_ =
          pthread_setschedparam(pthread_self(), SCHED_FIFO, &param) == 0;
      while (!done_.load(std::memory_order_relaxed)) {
        Timed(max_, [&] { impl.AfterFunc(absl::Hours(1), [] {}).Stop(); });
        Timed(control_, [] {});
        absl::SleepFor(absl::Milliseconds(1));
      }
    });
  }
  ~SpikeProbe() {
    if (thread_.joinable()) Finish();
  }
  // Joins the thread, then returns the longest pair.
  CallMax Finish() {
    done_.store(true);
    thread_.join();
    return max_;
  }
  // After Finish: the control's longest, and whether the thread ran at a
  // real-time priority.
  const CallMax& control() const { return control_; }
  bool realtime() const { return realtime_; }

 private:
  std::atomic<bool> done_{false};
  bool realtime_ = false;  // the thread's until Finish joins it
  CallMax max_;            // the thread's until Finish joins it
  CallMax control_;        // the same
  std::thread thread_;
};

// Waits `d`; a loop takes a turn every millisecond meanwhile (timed into
// `*max`, and an empty call after it into `*control`, unless `max` is null:
// a turn that runs callbacks is as long as they are), a wheel's threads are
// left alone.
template <class Impl>
void SpikeWait(Impl& impl, absl::Duration d, CallMax* max, CallMax* control) {
  const absl::Time end = absl::Now() + d;
  while (absl::Now() < end) {
    if constexpr (std::is_same_v<Impl, Loop>) {
      if (max != nullptr) {
        Timed(*max, [&] { impl.RunDue(); });
        Timed(*control, [] {});
      } else {
        impl.RunDue();
      }
    }
    absl::SleepFor(absl::Milliseconds(1));
  }
}

template <class Impl>
void BM_Spike(benchmark::State& state) {
  constexpr bool kLoop = std::is_same_v<Impl, Loop>;
  const bool fire = state.range(0) != 0;
  using Handle = typename Impl::Handle;
  struct Fires {
    std::atomic<int64_t> count{0};
    std::atomic<int64_t> late_max_ns{0};
  };
  constexpr double kMiB = 1048576.0;
  for (auto _ : state) {
    TrimHeap();
    Impl impl(kWorkers);
    Fires fires;
    std::vector<Handle> handles;
    if (!fire) handles.reserve(kSpikeTimers);
    const int64_t before = ProcStatusBytes("VmRSS");
    int64_t sched_max_ns = 0;
    int64_t sched_control_max_ns = 0;
    const int64_t start_ns = NowNs();
    for (int64_t i = 0; i < kSpikeTimers; ++i) {
      const int64_t now_ns = NowNs();
      const int64_t due_ns =
          start_ns + kSpikeFireAfterNs + (i % kSpikeFireSpreadMs) * 1'000'000;
      const absl::Duration d = fire ? absl::Nanoseconds(due_ns - now_ns)
                                    : absl::Hours(1) + absl::Milliseconds(i);
      Handle handle = impl.AfterFunc(d, [where = &fires, due_ns] {
        where->count.fetch_add(1, std::memory_order_relaxed);
        RaiseTo(where->late_max_ns, NowNs() - due_ns);
      });
      if (!fire) handles.push_back(std::move(handle));
      const int64_t called_ns = NowNs();
      sched_max_ns = std::max(sched_max_ns, called_ns - now_ns);
      // The control: an empty interval, timed the same way.
      sched_control_max_ns =
          std::max(sched_control_max_ns, NowNs() - called_ns);
    }
    const int64_t sched_end_ns = NowNs();
    const int64_t peak = ProcStatusBytes("VmRSS");
    std::optional<SpikeProbe<Impl>> probe;
    if constexpr (!kLoop) probe.emplace(impl);
    CallMax max_call;
    CallMax control;  // an empty call timed after each measured one
    int64_t stop_failed = 0;
    if (fire) {
      while (impl.Pending() > 0)
        SpikeWait(impl, absl::Milliseconds(1), nullptr, nullptr);
    } else {
      for (Handle& handle : handles) {
        Timed(max_call, [&] {
          if (!handle.Stop()) ++stop_failed;
          handle = Handle();  // the last reference: the node is freed
        });
        Timed(control, [] {});
      }
      std::vector<Handle>().swap(handles);
    }
    SpikeWait(impl, kSpikeIdle, &max_call, &control);
    const int64_t after = ProcStatusBytes("VmRSS");
    TrimHeap();
    const int64_t trimmed = ProcStatusBytes("VmRSS");
    const double handle_mb =
        fire ? 0 : static_cast<double>(kSpikeTimers * sizeof(Handle)) / kMiB;
    const double peak_mb = (peak - before) / kMiB - handle_mb;
    state.counters["rss_before_mb"] = before / kMiB;
    state.counters["rss_peak_mb"] = before / kMiB + peak_mb;
    state.counters["rss_after_mb"] = after / kMiB;
    state.counters["rss_trimmed_mb"] = trimmed / kMiB;
    state.counters["kept_of_spike"] = (after - before) / kMiB / peak_mb;
    state.counters["sched_s"] = (sched_end_ns - start_ns) * 1e-9;
    state.counters["sched_max_call_us"] = sched_max_ns / 1e3;
    state.counters["sched_control_max_us"] = sched_control_max_ns / 1e3;
    state.counters["max_call_us"] = max_call.wall_ns / 1e3;
    state.counters["max_call_cpu_us"] = max_call.cpu_ns / 1e3;
    state.counters["calls_over_1ms"] = static_cast<double>(max_call.over_1ms);
    if (!fire || kLoop) {
      state.counters["control_max_call_us"] = control.wall_ns / 1e3;
      state.counters["control_max_call_cpu_us"] = control.cpu_ns / 1e3;
      state.counters["control_over_1ms"] =
          static_cast<double>(control.over_1ms);
    }
    if constexpr (!kLoop) {
      const CallMax probe_max = probe->Finish();
      state.counters["probe_max_us"] = probe_max.wall_ns / 1e3;
      state.counters["probe_max_cpu_us"] = probe_max.cpu_ns / 1e3;
      state.counters["probe_over_1ms"] =
          static_cast<double>(probe_max.over_1ms);
      state.counters["probe_control_max_us"] = probe->control().wall_ns / 1e3;
      state.counters["probe_control_over_1ms"] =
          static_cast<double>(probe->control().over_1ms);
      state.counters["probe_realtime"] = probe->realtime() ? 1 : 0;
    }
    if (fire) {
      state.counters["late_max_ms"] =
          fires.late_max_ns.load(std::memory_order_relaxed) / 1e6;
      Problem(state, "lost_timers",
              kSpikeTimers - fires.count.load(std::memory_order_relaxed));
      Problem(state, "fired_before_the_peak",
              sched_end_ns > start_ns + kSpikeFireAfterNs ? 1 : 0);
    }
    Problem(state, "stop_failed", stop_failed);
    Problem(state, "afterfunc_errors", impl.errors());
    impl.Shutdown();
  }
}

// 10. The hand-off (Wheel only: the baselines hand nothing over): how long
// new timers wait between their AfterFunc and the advancer taking them out
// of the inbox, as the wheel measures it itself (Stats::handoff_*), on a
// default wheel (Options{}: tick 1 ms, wheel_size 20, a worker per hardware
// thread). One thread paces AfterFunc(5 s) at `rate` a second (rate / 1000
// each ms, then it sleeps to the next ms) for kHandOffWindow, keeping none
// of the handles; nothing fires meanwhile. The stats are read as the window
// ends: the arms still in the inbox then are left out, as in any window of
// a steady stream (at the end of the stream they would wait for the
// advancer's ~100 ms look instead of the 4,096 arms that wake it).
constexpr absl::Duration kHandOffWindow = absl::Seconds(2);

void BM_HandOff(benchmark::State& state) {
  const int64_t rate = state.range(0);  // AfterFunc calls per second.
  const int64_t per_step = rate / 1000;
  const int64_t steps = absl::ToInt64Milliseconds(kHandOffWindow);
  const absl::Duration five_seconds = absl::Seconds(5);
  int64_t made = 0;
  int64_t errors = 0;
  Stats stats;
  for (auto _ : state) {
    state.PauseTiming();
    std::unique_ptr<TimingWheel> wheel =
        CreatedOrAbort(TimingWheel::Create(Options()), "TimingWheel::Create");
    state.ResumeTiming();
    const auto start = std::chrono::steady_clock::now();
    for (int64_t step = 1; step <= steps; ++step) {
      for (int64_t i = 0; i < per_step; ++i) {
        if (!wheel->AfterFunc(five_seconds, [] {}).ok()) ++errors;
      }
      made += per_step;
      std::this_thread::sleep_until(start + std::chrono::milliseconds(step));
    }
    stats = wheel->GetStats();
    state.PauseTiming();
    wheel->Shutdown();
    wheel.reset();
    state.ResumeTiming();
  }
  const auto micros = [](absl::Duration d) {
    return absl::ToDoubleMicroseconds(d);
  };
  state.SetItemsProcessed(made);
  state.counters["handoffs"] = static_cast<double>(stats.handoffs);
  state.counters["handoff_p50_us"] = micros(stats.handoff_p50);
  state.counters["handoff_p99_us"] = micros(stats.handoff_p99);
  state.counters["handoff_max_us"] = micros(stats.handoff_max);
  Problem(state, "afterfunc_errors", errors);
}

// ---------------------------------------------------------------------------
// Registration: each scenario and argument for every implementation in turn,
// so that the output lists them side by side.

#ifdef TIMINGWHEEL_HAVE_ASIO
#define TW_BENCHMARK_ALL(fn, ...)            \
  BENCHMARK_TEMPLATE(fn, Wheel) __VA_ARGS__; \
  BENCHMARK_TEMPLATE(fn, Heap) __VA_ARGS__;  \
  BENCHMARK_TEMPLATE(fn, Asio) __VA_ARGS__
#else
#define TW_BENCHMARK_ALL(fn, ...)            \
  BENCHMARK_TEMPLATE(fn, Wheel) __VA_ARGS__; \
  BENCHMARK_TEMPLATE(fn, Heap) __VA_ARGS__
#endif

// The lateness scenarios come first, before any scenario has churned
// through gigabytes of memory. On the 2-core VM this suite is measured on,
// in each of eight runs one or two of the first BM_Fire<Wheel> repetitions
// after BM_AfterFuncStop_Threads<Asio> had p99 lateness of 9-95 ms, against
// 1.2-2.3 ms in their own run or after the Wheel's Threads runs. The cause
// is not known; it fades within seconds. A suite that starts with these
// scenarios measures them as a process of their own does.
TW_BENCHMARK_ALL(
    BM_Fire, ->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(1));
TW_BENCHMARK_ALL(
    BM_Burst, ->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(1));

// The loop scenarios, each for LoopWheel and for the heap on the loop.
#define TW_BENCHMARK_LOOP(fn, ...)          \
  BENCHMARK_TEMPLATE(fn, Loop) __VA_ARGS__; \
  BENCHMARK_TEMPLATE(fn, LoopHeap) __VA_ARGS__

TW_BENCHMARK_LOOP(BM_LoopFire, ->Unit(benchmark::kMillisecond)
                                   ->UseManualTime()
                                   ->Iterations(1));

void StopOptions(benchmark::internal::Benchmark* b) {
  b->Unit(benchmark::kNanosecond)->UseRealTime()->Iterations(kStopOps);
}

// The pair scenarios: the wheel's timers by id too, beside the others.
#define TW_BENCHMARK_PAIRS(fn, ...)              \
  BENCHMARK_TEMPLATE(fn, WheelById) __VA_ARGS__; \
  TW_BENCHMARK_ALL(fn, __VA_ARGS__)

TW_BENCHMARK_PAIRS(
    BM_AfterFuncStop_Firing, ->Apply(StopOptions)->Arg(1'000'000));
TW_BENCHMARK_PAIRS(
    BM_AfterFuncStop_Firing, ->Apply(StopOptions)->Arg(5'000'000));
TW_BENCHMARK_PAIRS(
    BM_AfterFuncStop_Firing, ->Apply(StopOptions)->Arg(10'000'000));
TW_BENCHMARK_PAIRS(
    BM_AfterFuncStop_Quiet, ->Apply(StopOptions)->Arg(1'000'000));
TW_BENCHMARK_PAIRS(
    BM_AfterFuncStop_Quiet, ->Apply(StopOptions)->Arg(5'000'000));
TW_BENCHMARK_PAIRS(
    BM_AfterFuncStop_Quiet, ->Apply(StopOptions)->Arg(10'000'000));

void ThreadsOptions(benchmark::internal::Benchmark* b) {
  b->Unit(benchmark::kNanosecond)->UseRealTime()->Iterations(kThreadStopOps);
}
TW_BENCHMARK_PAIRS(
    BM_AfterFuncStop_Threads, ->Apply(ThreadsOptions)->Threads(1));
TW_BENCHMARK_PAIRS(
    BM_AfterFuncStop_Threads, ->Apply(ThreadsOptions)->Threads(2));
TW_BENCHMARK_PAIRS(
    BM_AfterFuncStop_Threads, ->Apply(ThreadsOptions)->Threads(4));
TW_BENCHMARK_ALL(BM_AfterFuncStop_Shards, ->Apply(StopOptions)->Arg(1));
TW_BENCHMARK_ALL(BM_AfterFuncStop_Shards, ->Apply(StopOptions)->Arg(4));
TW_BENCHMARK_ALL(BM_AfterFuncStop_Shards, ->Apply(StopOptions)->Arg(16));

void LoopStopArgs(benchmark::internal::Benchmark* b) {
  b->Apply(StopOptions)->ArgNames({"pending", "cached", "turn"});
  for (int64_t turn : {100, 10'000}) {
    for (int64_t cached : {0, 1}) b->Args({1'000'000, cached, turn});
  }
}
TW_BENCHMARK_LOOP(BM_LoopAfterFuncStop, ->Apply(LoopStopArgs));
TW_BENCHMARK_LOOP(BM_LoopTurn, ->Apply(StopOptions));
// The same pairs with timers held by id (AfterFuncId or AtId, then Stop(id)).
BENCHMARK_TEMPLATE(BM_LoopAfterFuncStop, LoopById)->Apply(LoopStopArgs);

void MemoryOptions(benchmark::internal::Benchmark* b) {
  b->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
}
void MemoryArgs(benchmark::internal::Benchmark* b) {
  MemoryOptions(b);
  b->ArgNames({"", "capture"});
  for (int64_t capture : {16, 0}) {
    for (int64_t n : {1'000'000, 10'000'000}) b->Args({n, capture});
  }
}
TW_BENCHMARK_ALL(BM_Memory, ->Apply(MemoryArgs));
TW_BENCHMARK_LOOP(BM_Memory, ->Apply(MemoryArgs));

TW_BENCHMARK_ALL(
    BM_Idle, ->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1));

void LowRateOptions(benchmark::internal::Benchmark* b) {
  b->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
  b->ArgNames({"rate"})->Arg(1'000)->Arg(100'000);
}
TW_BENCHMARK_ALL(BM_LowRate, ->Apply(LowRateOptions));

// Wheel and Loop only: the baselines keep no pool of their own (malloc's
// memory is another story).
void SpikeOptions(benchmark::internal::Benchmark* b) {
  b->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
  b->ArgNames({"fire"})->Arg(0)->Arg(1);
}
BENCHMARK_TEMPLATE(BM_Spike, Wheel)->Apply(SpikeOptions);
BENCHMARK_TEMPLATE(BM_Spike, Loop)->Apply(SpikeOptions);

TW_BENCHMARK_ALL(BM_Instances, ->Apply(MemoryOptions)->Arg(100));
TW_BENCHMARK_ALL(BM_Instances, ->Apply(MemoryOptions)->Arg(1000));

BENCHMARK(BM_HandOff)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1)
    ->ArgNames({"rate"})
    ->Arg(1'000'000)
    ->Arg(100'000);

}  // namespace
}  // namespace bench
}  // namespace timingwheel

BENCHMARK_MAIN();
