// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// timingwheel_cli.cc: a load generator that checks a TimingWheel end to end.
//
// It schedules many one-shot timers from several threads, records when each
// callback starts, and reports the scheduling rate, the rates at which timers
// came due and fired, the lateness percentiles, early / lost / doubled fires
// and the peak RSS. It
// exits 1 if any timer fired early, was lost or fired twice, so it serves as
// a smoke test in CI as well as a benchmark. With --plot it also draws the
// lateness distribution as an SVG image (lateness_plot.h).
//
// How lateness is measured: with tools::FireLog (fire_log.h), the recorder
// BM_Fire and BM_Burst (benchmark/timingwheel_benchmark.cc) use too, so that
// the figures of the two agree. The delays are drawn before scheduling starts;
// a timer's deadline is SteadyClock()->Now() taken just before its AfterFunc,
// plus its delay; its callback reads the same clock as its first statement,
// and the lateness is that reading minus the deadline (a negative one is a
// genuine early fire: fire_log.h says why). Percentiles are nearest-rank.
//
// The callbacks measure the wheel, not this tool: a callback captures only
// its id and a pointer (it fits AnyInvocable's inline storage), reads the
// clock and appends (id, time) to its own thread's records; it shares no
// counter and no per-timer flag with other workers. Whether every timer fired
// exactly once and never early is decided after Shutdown(), which joins the
// workers, by merging the threads' records. The main thread polls each
// thread's fire count and TimingWheel::Pending() every 10 ms to know when all
// have fired.

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli_report.h"
#include "fire_log.h"
#include "lateness_plot.h"
#include "parse_flags.h"
#include "proc_status.h"
#include "timingwheel/clock.h"
#include "timingwheel/timer.h"
#include "timingwheel/timingwheel.h"

ABSL_FLAG(int64_t, timers, 1000000,
          "How many one-shot timers to schedule: at least 1, and no more than "
          "this machine's memory holds.");
ABSL_FLAG(int, threads, 1,
          "Threads calling AfterFunc at the same time; the timers are split "
          "evenly between them. 1 to 1024.");
ABSL_FLAG(absl::Duration, tick, absl::Milliseconds(1),
          "Wheel resolution, Options::tick (e.g. 1ms, 100us): 1us to 1h.");
ABSL_FLAG(int, wheel_size, 20,
          "Buckets per wheel level, Options::wheel_size: 2 to 65536.");
ABSL_FLAG(int, workers, 0,
          "Threads running callbacks, Options::workers: 0 to 1024; 0 = "
          "hardware concurrency.");
ABSL_FLAG(absl::Duration, window, absl::Seconds(1),
          "Delays are uniformly random in [min_delay, min_delay + window); "
          "min_delay + window is at most 876000h (100 years).");
ABSL_FLAG(absl::Duration, min_delay, absl::ZeroDuration(),
          "The shortest delay, at least 0.");
ABSL_FLAG(absl::Duration, grace, absl::Seconds(5),
          "How long past the last deadline to wait for timers that have not "
          "fired before counting them lost: 0 to 876000h (100 years).");
ABSL_FLAG(uint64_t, seed, 1,
          "Seed of the random delays (scheduling thread i uses seed + i).");
ABSL_FLAG(bool, json, false,
          "Print the results as one JSON object instead of a text report.");
ABSL_FLAG(std::string, plot, "",
          "Also write the lateness distribution (histogram and CDF) to this "
          "file as an SVG image, e.g. --plot=lateness.svg, and name it at the "
          "end of the report (on stderr with --json).");
ABSL_FLAG(bool, progress, false,
          "Show the progress bar on stderr even when stderr is not a "
          "terminal.");

namespace timingwheel::cli {
namespace {

using tools::FireLog;
using tools::FireSummary;
using tools::LatenessOf;

constexpr char kUsage[] =
    R"(Load-tests a timingwheel::TimingWheel.

Schedules --timers one-shot timers from --threads threads, with delays
uniformly random in [--min_delay, --min_delay + --window), waits until all have
fired (giving up --grace after the last deadline), then reports the scheduling
rate, the due and fire rates (below), lateness percentiles (callback start -
deadline), early / lost / doubled timers and the peak RSS. A progress bar goes
to stderr when it is a terminal (or with --progress).

Lateness is measured as the benchmark's BM_Fire measures it: the deadline is
the steady clock read just before AfterFunc plus the delay (drawn before
scheduling starts), the callback start is the same clock read as the
callback's first statement. Each callback only appends (timer, time) to its own
thread's preallocated records; whether every timer fired exactly once and
never early is checked after the run, from all threads' records.

The due rate is the timers over the span of their deadlines (about --timers
over --window, or the scheduling rate if that is lower), the fire rate the
timers over the span of their first fires. While the wheel keeps up the two
agree; a fire rate below the due rate means the wheel fell behind, and is then
the rate at which it ran the callbacks.

A run that would need more memory than this machine has is refused before it
starts, with an estimate of the memory it needs.

Examples:
  timingwheel_cli --timers=1000000
  timingwheel_cli --timers=100000 --threads=2 --json
  timingwheel_cli --tick=100us --wheel_size=64 --min_delay=1s --window=10s
  timingwheel_cli --timers=1000000 --plot=lateness.svg

Exit status: 0 every timer fired exactly once and never early, or --help; 1
some timer fired early, was lost or fired twice, or AfterFunc failed; 2 bad
options (a value outside its range included; then an existing --plot file is
left as it was), or the --plot file cannot be written.)";

constexpr int kMaxThreads = 1024;
// So that ShardBegin's timers * shard cannot overflow; CheckMemory allows far
// fewer on any machine.
constexpr int64_t kMaxTimers =
    std::numeric_limits<int64_t>::max() / kMaxThreads;
// How often the main thread checks progress, and redraws the bar.
constexpr absl::Duration kPollInterval = absl::Milliseconds(10);
constexpr absl::Duration kRedrawInterval = absl::Milliseconds(100);
// A scheduling thread publishes its progress every this many timers.
constexpr int64_t kProgressBatch = 1024;
// Memory per timer: this tool's records (FireLog::kBytesPerTimer), and the
// wheel's (a pooled node of 112 bytes and its entry in a bucket's array; the
// README's Performance section measures 121-123 bytes of RSS per pending
// timer).
constexpr int64_t kToolBytesPerTimer = FireLog::kBytesPerTimer;
constexpr int64_t kWheelBytesPerTimer = 128;
constexpr int64_t kBytesPerTimer = kToolBytesPerTimer + kWheelBytesPerTimer;

int64_t NowNs(const Clock& clock) {
  return absl::ToInt64Nanoseconds(clock.Now());
}

// ---------------------------------------------------------------------------
// Options.

// Every flag is checked here, before anything is sized or computed from it.
absl::StatusOr<RunOptions> OptionsFromFlags() {
  using tools::CheckFlagRange;
  using tools::kMaxFlagDuration;
  RunOptions o;
  o.timers = absl::GetFlag(FLAGS_timers);
  o.threads = absl::GetFlag(FLAGS_threads);
  o.tick = absl::GetFlag(FLAGS_tick);
  o.wheel_size = absl::GetFlag(FLAGS_wheel_size);
  o.workers = absl::GetFlag(FLAGS_workers);
  o.window = absl::GetFlag(FLAGS_window);
  o.min_delay = absl::GetFlag(FLAGS_min_delay);
  o.grace = absl::GetFlag(FLAGS_grace);
  o.seed = absl::GetFlag(FLAGS_seed);

  for (const absl::Status& s :
       {CheckFlagRange("timers", o.timers, 1, kMaxTimers,
                       "and no more than this machine's memory holds"),
        CheckFlagRange("threads", o.threads, 1, kMaxThreads),
        tools::CheckWheelFlags(o.tick, o.wheel_size, o.workers),
        CheckFlagRange("window", o.window, absl::ZeroDuration(),
                       kMaxFlagDuration),
        CheckFlagRange("min_delay", o.min_delay, absl::ZeroDuration(),
                       kMaxFlagDuration),
        CheckFlagRange("grace", o.grace, absl::ZeroDuration(),
                       kMaxFlagDuration)}) {
    if (!s.ok()) return s;
  }
  // Both are at most kMaxFlagDuration, so the sum is exact. Bounding it
  // bounds every deadline, and the time to give up (the last deadline plus
  // --grace) stays within int64 nanoseconds of the steady clock.
  if (o.min_delay + o.window > kMaxFlagDuration) {
    return absl::InvalidArgumentError(
        absl::StrCat("--min_delay=", absl::FormatDuration(o.min_delay),
                     " plus --window=", absl::FormatDuration(o.window),
                     " is out of range: the delays must end by ",
                     absl::FormatDuration(kMaxFlagDuration), " (100 years)"));
  }
  o.workers_resolved =
      o.workers != 0 ? o.workers
                     : static_cast<int>(std::thread::hardware_concurrency());
  return o;
}

// "1.5 GiB", "14.2 PiB".
std::string FormatMemory(double bytes) {
  constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int unit = 0;
  while (bytes >= 1024 && unit + 1 < static_cast<int>(std::size(kUnits))) {
    bytes /= 1024;
    ++unit;
  }
  return absl::StrFormat("%.1f %s", bytes, kUnits[unit]);
}

// Refuses a run whose timers would not fit in the machine's physical memory
// (a bigger one would die of std::bad_alloc, or swap).
absl::Status CheckMemory(const RunOptions& o) {
  const int64_t physical = PhysicalMemoryBytes();
  if (physical < 0) return absl::OkStatus();  // Unknown.
  const int64_t max_timers = physical / kBytesPerTimer;
  if (o.timers <= max_timers) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrFormat(
      "--timers=%d would need about %s of memory (%d bytes per timer: %d for "
      "this tool's records, %d for the wheel's), and this machine has %s: at "
      "most --timers=%d",
      o.timers, FormatMemory(static_cast<double>(o.timers) * kBytesPerTimer),
      kBytesPerTimer, kToolBytesPerTimer, kWheelBytesPerTimer,
      FormatMemory(static_cast<double>(physical)), max_timers));
}

// tick, wheel_size and workers are checked by OptionsFromFlags (and again by
// TimingWheel::Create).
Options WheelOptions(const RunOptions& o, std::shared_ptr<Clock> clock) {
  Options options;
  options.tick = o.tick;
  options.wheel_size = o.wheel_size;
  options.workers = o.workers;
  options.clock = std::move(clock);
  return options;
}

// ---------------------------------------------------------------------------
// What fired when: the records are a tools::FireLog (fire_log.h), as in
// BM_Fire; this fills the report from them.

// Fills the firing, lateness and correctness fields of `r` from `s`, and
// returns the lateness samples they summarize, sorted ascending.
std::vector<int64_t> AddFires(FireSummary s, RunResults& r) {
  r.fired = s.fired;
  r.early = s.early;
  r.lost = s.lost;
  r.doubled = s.doubled;
  r.deadline_span =
      s.scheduled > 0
          ? absl::Nanoseconds(s.last_deadline_ns - s.first_deadline_ns)
          : absl::ZeroDuration();
  r.fire_span = s.fired > 0
                    ? absl::Nanoseconds(s.last_fire_ns - s.first_fire_ns)
                    : absl::ZeroDuration();
  r.lateness = LatenessOf(s.lateness_ns);
  return std::move(s.lateness_ns);
}

// ---------------------------------------------------------------------------
// Progress bar: one line on stderr, redrawn in place with '\r'.

class ProgressBar {
 public:
  ProgressBar(bool enabled, const Clock* clock)
      : enabled_(enabled), clock_(clock) {}

  // Starts a phase in which `done` of `total` are already done; the rate
  // shown counts from here.
  void Start(absl::string_view phase, int64_t done, int64_t total) {
    phase_ = std::string(phase);
    done_at_start_ = done;
    total_ = total;
    start_ = clock_->Now();
    last_draw_ = start_;  // The first draw comes with a meaningful rate.
  }

  // Redraws at most every kRedrawInterval.
  void Show(int64_t done) {
    if (!enabled_ || clock_->Now() - last_draw_ < kRedrawInterval) return;
    Draw(done);
  }

  // Draws the final state of the phase and ends the line.
  void Finish(int64_t done) {
    if (!enabled_) return;
    Draw(done);
    std::fputs("\n", stderr);
    line_length_ = 0;
  }

 private:
  void Draw(int64_t done) {
    constexpr int kWidth = 30;
    const absl::Duration now = clock_->Now();
    last_draw_ = now;
    const double fraction =
        total_ > 0 ? static_cast<double>(done) / total_ : 1.0;
    const int filled =
        std::clamp(static_cast<int>(fraction * kWidth), 0, kWidth);
    const absl::Duration elapsed = now - start_;
    const std::string rate = elapsed < absl::Milliseconds(1)
                                 ? std::string("-")
                                 : FormatRate((done - done_at_start_) /
                                              absl::ToDoubleSeconds(elapsed));
    const std::string line = absl::StrFormat(
        "%-10s [%s%s] %*d/%d %5.1f%%  %s", phase_, std::string(filled, '#'),
        std::string(kWidth - filled, '.'),
        static_cast<int>(absl::StrCat(total_).size()), done, total_,
        100 * fraction, rate);
    // Pad with blanks over what is left of a longer previous line.
    const size_t pad =
        line_length_ > line.size() ? line_length_ - line.size() : 0;
    std::fprintf(stderr, "\r%s%s", line.c_str(), std::string(pad, ' ').c_str());
    std::fflush(stderr);
    line_length_ = line.size();
  }

  const bool enabled_;
  const Clock* const clock_;
  std::string phase_;
  int64_t done_at_start_ = 0;
  int64_t total_ = 0;
  absl::Duration start_;
  absl::Duration last_draw_;
  size_t line_length_ = 0;
};

// Polls `count()` every kPollInterval, showing it on `bar`, until
// `finished(count())` or the clock passes `give_up_ns`. Returns the last
// count.
template <class CountFn, class FinishedFn>
int64_t PollWithProgress(ProgressBar& bar, const Clock& clock, CountFn count,
                         FinishedFn finished, int64_t give_up_ns) {
  int64_t n = count();
  while (!finished(n) && NowNs(clock) < give_up_ns) {
    bar.Show(n);
    absl::SleepFor(kPollInterval);
    n = count();
  }
  return n;
}

// ---------------------------------------------------------------------------
// Scheduling.

struct ShardResult {
  int64_t errors = 0;
  std::string first_error;
  int64_t last_deadline_ns = std::numeric_limits<int64_t>::min();
  int64_t start_ns = 0;  // When this thread's first AfterFunc started.
  int64_t end_ns = 0;    // When this thread's last AfterFunc returned.
};

// Shard `shard`'s ids: [timers * shard / threads, timers * (shard + 1) /
// threads).
int64_t ShardBegin(const RunOptions& o, int shard) {
  return o.timers * shard / o.threads;
}

// Draws every timer's delay, shard by shard (scheduling thread i uses seed +
// i), before anything is timed.
void DrawDelays(const RunOptions& o, FireLog& log) {
  const int64_t min_delay_ns = absl::ToInt64Nanoseconds(o.min_delay);
  const int64_t window_ns = absl::ToInt64Nanoseconds(o.window);
  for (int shard = 0; shard < o.threads; ++shard) {
    log.DrawUniformDelays(ShardBegin(o, shard), ShardBegin(o, shard + 1),
                          min_delay_ns, window_ns,
                          o.seed + static_cast<uint64_t>(shard));
  }
}

// Schedules this shard's ids, adding to `progress` every kProgressBatch
// timers.
void ScheduleShard(TimingWheel& wheel, FireLog& log, const Clock& clock,
                   const RunOptions& o, int shard,
                   std::atomic<int64_t>& progress, ShardResult& result) {
  const int64_t begin = ShardBegin(o, shard);
  const int64_t end = ShardBegin(o, shard + 1);
  int64_t unreported = 0;
  result.start_ns = NowNs(clock);
  for (int64_t id = begin; id < end; ++id) {
    const int64_t delay_ns = log.StampDeadline(id);
    absl::StatusOr<Timer> timer = wheel.AfterFunc(
        absl::Nanoseconds(delay_ns), [&log, id] { log.Record(id); });
    if (timer.ok()) {
      result.last_deadline_ns =
          std::max(result.last_deadline_ns, log.Deadline(id));
    } else {
      log.Unschedule(id);
      if (result.errors++ == 0) result.first_error = timer.status().ToString();
    }
    if (++unreported == kProgressBatch) {
      progress.fetch_add(unreported, std::memory_order_relaxed);
      unreported = 0;
    }
  }
  result.end_ns = NowNs(clock);
  progress.fetch_add(unreported, std::memory_order_relaxed);
}

// Schedules all timers from o.threads threads; fills the scheduling fields of
// `r`. Returns the last deadline of any scheduled timer, in ns.
int64_t ScheduleAll(TimingWheel& wheel, FireLog& log, const Clock& clock,
                    ProgressBar& bar, RunResults& r) {
  const RunOptions& o = r.options;
  std::atomic<int64_t> progress{0};
  std::vector<ShardResult> shards(o.threads);
  std::vector<std::thread> threads;
  DrawDelays(o, log);
  bar.Start("scheduling", 0, o.timers);
  for (int i = 0; i < o.threads; ++i) {
    threads.emplace_back([&, i] {
      ScheduleShard(wheel, log, clock, o, i, progress, shards[i]);
    });
  }
  PollWithProgress(
      bar, clock, [&] { return progress.load(std::memory_order_relaxed); },
      [&o](int64_t n) { return n >= o.timers; },
      std::numeric_limits<int64_t>::max());
  for (std::thread& t : threads) t.join();
  bar.Finish(o.timers);

  // Thread start-up is not AfterFunc's time: from the first thread's first
  // call to the last thread's last return.
  int64_t start_ns = std::numeric_limits<int64_t>::max();
  int64_t end_ns = std::numeric_limits<int64_t>::min();
  int64_t last_deadline_ns = std::numeric_limits<int64_t>::min();
  for (const ShardResult& s : shards) {
    if (r.schedule_errors == 0 && s.errors > 0) {
      r.first_schedule_error = s.first_error;
    }
    r.schedule_errors += s.errors;
    start_ns = std::min(start_ns, s.start_ns);
    end_ns = std::max(end_ns, s.end_ns);
    last_deadline_ns = std::max(last_deadline_ns, s.last_deadline_ns);
  }
  r.scheduled = o.timers - r.schedule_errors;
  r.schedule_time = absl::Nanoseconds(end_ns - start_ns);
  return last_deadline_ns;
}

// Waits until the callbacks ran as many times as timers were scheduled and
// the wheel holds none of them any more (Pending() counts a timer until its
// callback starts), or until `give_up_ns`. Returns false if it gave up.
// Whether each timer ran exactly once is Summarize's to say.
bool WaitForFires(const FireLog& log, const TimingWheel& wheel,
                  const Clock& clock, ProgressBar& bar, int64_t scheduled,
                  int64_t give_up_ns) {
  const auto all_fired = [&](int64_t fires) {
    return fires >= scheduled && wheel.Pending() == 0;
  };
  bar.Start("firing", log.Fires(), scheduled);
  const int64_t fires = PollWithProgress(
      bar, clock, [&log] { return log.Fires(); }, all_fired, give_up_ns);
  bar.Finish(fires);
  return all_fired(fires);
}

// ---------------------------------------------------------------------------
// The run.

// A finished run: its results, and the lateness samples behind them.
struct Run {
  RunResults results;
  std::vector<int64_t> lateness_ns;  // Sorted ascending.
};

// What a run needs before it starts: made first, so that every option is
// checked (and the memory taken) before anything else happens.
struct Load {
  std::shared_ptr<Clock> clock;
  std::unique_ptr<FireLog> log;  // Outlives the wheel, which calls into it.
  std::unique_ptr<TimingWheel> wheel;
  int64_t baseline_rss_bytes = -1;  // VmRSS before the wheel existed.
};

// Errors: ResourceExhausted when the timers' records cannot be allocated;
// TimingWheel::Create's.
absl::StatusOr<Load> PrepareLoad(const RunOptions& o) {
  Load load;
  load.clock = SteadyClock();
  try {
    load.log = std::make_unique<FireLog>(o.timers, o.workers_resolved,
                                         load.clock.get());
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "cannot allocate the records of --timers=%d (%s)", o.timers,
        FormatMemory(static_cast<double>(o.timers) * kToolBytesPerTimer)));
  }
  load.baseline_rss_bytes = ProcStatusBytes("VmRSS");
  absl::StatusOr<std::unique_ptr<TimingWheel>> wheel =
      TimingWheel::Create(WheelOptions(o, load.clock));
  if (!wheel.ok()) return wheel.status();
  load.wheel = *std::move(wheel);
  return load;
}

Run RunLoad(const RunOptions& o, Load load, bool show_progress) {
  const Clock& clock = *load.clock;
  FireLog& log = *load.log;
  TimingWheel& wheel = *load.wheel;
  Run run;
  RunResults& r = run.results;
  r.options = o;
  r.baseline_rss_bytes = load.baseline_rss_bytes;

  ProgressBar bar(show_progress, &clock);
  const int64_t last_deadline_ns = ScheduleAll(wheel, log, clock, bar, r);
  // No overflow: the delays and --grace are at most 100 years each
  // (OptionsFromFlags).
  const int64_t give_up_ns =
      r.scheduled > 0 ? last_deadline_ns + absl::ToInt64Nanoseconds(o.grace)
                      : NowNs(clock);
  r.gave_up = !WaitForFires(log, wheel, clock, bar, r.scheduled, give_up_ns);
  r.pending_before_shutdown = wheel.Pending();
  r.cancelled_by_shutdown = wheel.Shutdown();
  // Before Summarize, whose own allocations would count.
  r.peak_rss_bytes = ProcStatusBytes("VmHWM");
  run.lateness_ns = AddFires(log.Summarize(), r);
  return run;
}

int BadOptions(const absl::Status& status) {
  std::fprintf(stderr, "timingwheel_cli: %s\n", status.ToString().c_str());
  return 2;
}

// ---------------------------------------------------------------------------
// The --plot file.

struct FileCloser {
  void operator()(FILE* file) const { std::fclose(file); }
};
using File = std::unique_ptr<FILE, FileCloser>;

// Reported like a bad option (exit 2). `error_number` is errno; 0 (a failure
// that set none) is reported as EIO.
absl::Status CannotWritePlot(const std::string& path, int error_number) {
  return absl::ErrnoToStatus(
      error_number != 0 ? error_number : EIO,
      absl::StrCat("cannot write --plot file '", path, "'"));
}

// Opened before the run, so that a bad path fails at once and not after it,
// and after every other check, so that a rejected run leaves an existing file
// as it was.
absl::StatusOr<File> OpenPlot(const std::string& path) {
  File file(std::fopen(path.c_str(), "w"));
  if (file == nullptr) return CannotWritePlot(path, errno);
  return file;
}

absl::Status WritePlot(File file, const std::string& path,
                       absl::string_view svg) {
  bool ok = std::fwrite(svg.data(), 1, svg.size(), file.get()) == svg.size();
  int error_number = ok ? 0 : errno;
  // Closing flushes what is still buffered, so it can fail too (ENOSPC).
  if (std::fclose(file.release()) != 0 && ok) {
    ok = false;
    error_number = errno;
  }
  return ok ? absl::OkStatus() : CannotWritePlot(path, error_number);
}

int Main() {
  const absl::StatusOr<RunOptions> options = OptionsFromFlags();
  if (!options.ok()) return BadOptions(options.status());
  if (absl::Status memory = CheckMemory(*options); !memory.ok()) {
    return BadOptions(memory);
  }
  absl::StatusOr<Load> load = PrepareLoad(*options);
  if (!load.ok()) return BadOptions(load.status());
  const std::string plot_path = absl::GetFlag(FLAGS_plot);
  absl::StatusOr<File> plot;
  if (!plot_path.empty()) {
    plot = OpenPlot(plot_path);
    if (!plot.ok()) return BadOptions(plot.status());
  }
  const bool show_progress =
      absl::GetFlag(FLAGS_progress) || isatty(STDERR_FILENO) == 1;
  const Run run = RunLoad(*options, *std::move(load), show_progress);
  const RunResults& results = run.results;
  const std::string report =
      absl::GetFlag(FLAGS_json) ? FormatJson(results) : FormatText(results);
  std::fputs(report.c_str(), stdout);
  if (!plot_path.empty()) {
    const absl::Status written = WritePlot(
        *std::move(plot), plot_path, LatenessPlotSvg(results, run.lateness_ns));
    if (!written.ok()) return BadOptions(written);
    // Last, where it is seen; not in the JSON on stdout.
    std::fprintf(absl::GetFlag(FLAGS_json) ? stderr : stdout,
                 "Lateness plot: %s\n", plot_path.c_str());
  }
  return Passed(results) ? 0 : 1;
}

}  // namespace
}  // namespace timingwheel::cli

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(timingwheel::cli::kUsage);
  if (const std::optional<int> exit_status =
          timingwheel::tools::ParseFlags(argc, argv, __FILE__)) {
    return *exit_status;
  }
  return timingwheel::cli::Main();
}
