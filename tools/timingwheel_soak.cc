// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// timingwheel_soak.cc: a soak test that hammers one SteadyClock TimingWheel
// from several threads for a long time and then checks exact accounting.
//
// Each of --threads threads owns --slots slots and runs a random mix of
// operations on them until --duration has passed: AfterFunc (delays 0..200 ms
// mostly, some 1..5 s, some <= 0), Stop and Reset on one-shot slots; Every
// (period 1..200 ms), Reset and Stop on periodic slots (one slot in 16, one
// operation in 1024).
// Because a slot belongs to one thread, its counters need no lock across
// threads; callbacks only bump atomics.
//
// What is checked, against the API contract:
//   * one-shot slots: every arm (AfterFunc, or Reset) runs exactly once,
//     unless it was cancelled: by Stop() == true, or by Reset() == true of the
//     next arm. At the end, per slot, runs == arms - cancelled; the shortfall
//     is "lost", the excess "doubled". Timers whose handle was replaced keep
//     running and still count for their slot.
//   * early: a timer whose deadline is fixed (never Reset) must not start
//     before SteadyClock()->Now() + delay, read just before AfterFunc (the
//     wheel reads the same clock a little later, so its deadline is never
//     earlier). For Every, run j must not start before first deadline +
//     (j - 1) * period.
//   * periodic: Stop() and Reset() of a running (not stopped) periodic timer
//     return true; after Stop() returned true at most one run (one already
//     started) may still be seen; a timer that was due more than
//     --starve_grace ago and never ran counts as lost.
//   * at the end every slot is stopped, the wheel must reach Pending() == 0
//     within --quiesce_timeout, Shutdown() must cancel nothing, and the
//     wheel's Stats (fired, stopped, scheduled) must match the counts here.
//   * keeping up: the load must not outrun the wheel. Every second (and once
//     more when the wheel is idle at the end) the soak looks at the one-shot
//     callbacks with a fixed deadline that started in it (a periodic run's
//     deadline is not known: FixedRate skips the runs it missed); if most of
//     them started more than --max_lag late, the wheel was behind by that
//     much for the whole second: a backlog, which an unpaced load
//     (--rate=0) grows for as long as it runs, while every timer still fires
//     exactly once. That fails the soak, naming when it first fell behind.
//   * memory: RSS after Shutdown, destruction and malloc_trim(0) must be back
//     within --rss_slack_mib of the baseline taken before the wheel existed.
//     glibc keeps part of what threads freed in their own arenas even after
//     malloc_trim (which gives back the top of the main arena only: a
//     backlog of a million callbacks can leave 20-90 MiB in the others),
//     so the report also shows the bytes still allocated
//     (mallinfo2): back at the baseline means no leak, whatever RSS says
//     (MALLOC_ARENA_MAX=1 brings RSS back to the baseline too).
//
// Progress (ops so far, ops/s, pending, RSS) goes to stderr every
// --progress_interval; the report to stdout ends with a one-line verdict.
// Exit status: 0 pass, 1 a violation, 2 bad flags.

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <random>
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
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "parse_flags.h"
#include "proc_status.h"
#include "timingwheel/clock.h"
#include "timingwheel/timer.h"
#include "timingwheel/timingwheel.h"

ABSL_FLAG(int, threads, 2, "Threads operating on the wheel at once: 1 to 256.");
ABSL_FLAG(int64_t, rate, 100000,
          "Operations per second per thread, at least 0; 0 = as fast as it "
          "can. The timers made must not outrun those the wheel can fire, or "
          "the backlog grows for as long as it runs and the soak fails "
          "(--max_lag). On 2 cores shared with the soak threads the default "
          "keeps up with room to spare; 0 falls behind within seconds.");
ABSL_FLAG(absl::Duration, duration, absl::Seconds(60),
          "How long the threads hammer the wheel (e.g. 60s, 2m): 1ns to "
          "876000h (100 years).");
ABSL_FLAG(int, slots, 4096,
          "Slots per thread; one in 16 holds a periodic timer. At least 1, and "
          "no more than this machine's memory holds.");
ABSL_FLAG(int, workers, 0,
          "Options::workers, threads running callbacks: 0 to 1024; 0 = "
          "hardware concurrency.");
ABSL_FLAG(absl::Duration, tick, absl::Milliseconds(1),
          "Options::tick: 1us to 1h.");
ABSL_FLAG(int, wheel_size, 20, "Options::wheel_size: 2 to 65536.");
ABSL_FLAG(uint64_t, seed, 1, "Random seed; thread i uses seed + i.");
ABSL_FLAG(absl::Duration, max_lag, absl::Milliseconds(100),
          "The soak fails if in any second most one-shot callbacks with a "
          "fixed deadline started more than this late: the wheel had fallen "
          "behind the load. 1ns to 876000h (100 years).");
ABSL_FLAG(absl::Duration, quiesce_timeout, absl::Seconds(30),
          "How long to wait, after stopping everything, for Pending() == 0: "
          "1ns to 876000h (100 years).");
ABSL_FLAG(absl::Duration, starve_grace, absl::Seconds(5),
          "A periodic timer due longer ago than this that never ran is lost: "
          "1ns to 876000h (100 years).");
ABSL_FLAG(int64_t, rss_slack_mib, 64,
          "Allowed RSS above the baseline after Shutdown and malloc_trim: 0 to "
          "1048576 (1 TiB).");
ABSL_FLAG(absl::Duration, progress_interval, absl::Seconds(1),
          "How often to report progress on stderr: 1ns to 876000h (100 "
          "years).");

namespace timingwheel::soak {
namespace {

constexpr char kUsage[] =
    R"(Soak-tests a timingwheel::TimingWheel on the steady clock.

--threads threads each own --slots slots and, for --duration, run a random mix
of AfterFunc, Stop, Reset and Every (+ Stop later) on them. Then everything
still armed is stopped, the wheel must become idle, and the accounting must be
exact: every arm runs exactly once unless Stop() or the next Reset() returned
true for it (0 lost, 0 doubled), no timer with a fixed deadline starts early,
and RSS returns near its baseline after Shutdown. The wheel must also keep up:
a second in which most one-shot callbacks started more than --max_lag late
fails the soak, as the backlog of a load the wheel cannot fire as fast as it
is made (an unpaced --rate=0 on a small machine) grows without end.

Examples:
  timingwheel_soak --duration=2m --threads=2
  timingwheel_soak --duration=30s --threads=4 --rate=25000 --slots=100000 \
      --tick=100us
  timingwheel_soak --duration=10s --rate=0   # unpaced: fails if it falls behind

Exit status: 0 pass, or --help; 1 a violation (lost, doubled, early,
contract, stats, memory) or the wheel fell behind; 2 bad flags.)";

constexpr int kMaxThreads = 256;
// 1 TiB: far above any RSS this tool reaches, and small enough that the slack
// in bytes fits int64.
constexpr int64_t kMaxRssSlackMib = int64_t{1} << 20;
constexpr int kPeriodicEvery = 16;      // slot i is periodic when i % 16 == 0
constexpr int kPeriodicOpOneIn = 1024;  // ops on a periodic slot
constexpr int64_t kNsPerMs = 1000 * 1000;
constexpr int64_t kNsPerSecond = 1000 * kNsPerMs;
constexpr int64_t kPublishEvery = 256;  // ops between progress updates
// How long the soak looks at the callbacks' lateness at a time.
constexpr absl::Duration kLagWindow = absl::Seconds(1);

struct Options {
  int threads = 0;
  int64_t rate = 0;
  absl::Duration duration;
  int slots = 0;
  int workers = 0;
  absl::Duration tick;
  int wheel_size = 0;
  uint64_t seed = 0;
  absl::Duration max_lag;
  absl::Duration quiesce_timeout;
  absl::Duration starve_grace;
  int64_t rss_slack_mib = 0;
  absl::Duration progress_interval;
};

int64_t NowNs() { return absl::ToInt64Nanoseconds(SteadyClock()->Now()); }

// Bytes allocated with malloc and not freed (glibc's mallinfo2): tells a
// leak (this stays high) from memory the allocator keeps (only RSS does).
int64_t HeapInUse() {
  const struct mallinfo2 info = mallinfo2();
  return static_cast<int64_t>(info.uordblks + info.hblkhd);
}

std::string Mib(int64_t bytes) {
  if (bytes < 0) return "n/a";
  return absl::StrFormat("%.1f MiB", static_cast<double>(bytes) / (1 << 20));
}

// "123", "45.6k", "7.89M".
std::string Count(double n) {
  if (n >= 1e6) return absl::StrFormat("%.2fM", n / 1e6);
  if (n >= 1e4) return absl::StrFormat("%.1fk", n / 1e3);
  return absl::StrFormat("%.0f", n);
}

// ---------------------------------------------------------------------------
// Shared counters, written by callbacks on worker threads.

// How many one-shot callbacks with a fixed deadline started in one window,
// and how many of them more than --max_lag late.
struct LagWindow {
  int64_t runs = 0;
  int64_t lagging = 0;

  // Most of them: the wheel was that far behind for the whole window.
  bool Behind() const { return lagging > runs - lagging; }
};

// LagWindows counts into two banks, so that the main thread reads and clears
// one while the callbacks count into the other. A callback that read the bank
// just before a switch counts into the one being read; its run then shows in
// a later window.
class LagWindows {
 public:
  explicit LagWindows(absl::Duration max_lag)
      : max_lag_ns_(absl::ToInt64Nanoseconds(max_lag)) {}

  // Callbacks, any thread.
  void Record(int64_t lateness_ns) {
    Bank& bank = banks_[current_.load(std::memory_order_relaxed)];
    bank.runs.fetch_add(1, std::memory_order_relaxed);
    if (lateness_ns > max_lag_ns_) {
      bank.lagging.fetch_add(1, std::memory_order_relaxed);
    }
  }

  // The main thread: ends the window under way and returns it.
  LagWindow Take() {
    const int bank = current_.load(std::memory_order_relaxed);
    current_.store(1 - bank, std::memory_order_relaxed);
    return {banks_[bank].runs.exchange(0, std::memory_order_relaxed),
            banks_[bank].lagging.exchange(0, std::memory_order_relaxed)};
  }

 private:
  struct alignas(64) Bank {
    std::atomic<int64_t> runs{0};
    std::atomic<int64_t> lagging{0};
  };

  const int64_t max_lag_ns_;
  std::atomic<int> current_{0};
  Bank banks_[2];
};

struct Violations {
  explicit Violations(absl::Duration max_lag) : lag(max_lag) {}

  LagWindows lag;
  std::atomic<int64_t> early{0};
  std::atomic<int64_t> worst_early_ns{0};  // most negative lateness seen
  std::atomic<int64_t> periodic_runs{0};
  // Runs of a periodic timer seen after its Stop() returned true, beyond the
  // one that may have started before.
  std::atomic<int64_t> periodic_runs_after_stop{0};
  std::atomic<int64_t> fixed_deadline_runs{0};  // runs checked for early

  void Early(int64_t lateness_ns) {
    early.fetch_add(1, std::memory_order_relaxed);
    int64_t worst = worst_early_ns.load(std::memory_order_relaxed);
    while (lateness_ns < worst &&
           !worst_early_ns.compare_exchange_weak(worst, lateness_ns,
                                                 std::memory_order_relaxed)) {
    }
  }
};

struct Slot;

// One timer created by AfterFunc or Every; its callback owns a reference.
struct Instance {
  Slot* slot = nullptr;
  int64_t deadline_ns = 0;  // of the first arm (steady clock)
  int64_t period_ns = 0;    // 0: one-shot
  // Set by the owner before the first Reset: the deadline is not fixed any
  // more, so the early check stops.
  std::atomic<bool> reset{false};
  // Periodic only.
  std::atomic<int64_t> runs{0};
  std::atomic<bool> stopped{false};  // set after Stop() returned true
  std::atomic<int64_t> runs_seen_stopped{0};
};

struct Slot {
  bool periodic = false;
  Timer timer;  // the latest timer of the slot; empty before the first
  std::shared_ptr<Instance> instance;
  // One-shot accounting; the owner thread only, except `runs`.
  int64_t arms = 0;
  int64_t cancelled = 0;
  std::atomic<int64_t> runs{0};
  // Periodic: active = armed and not stopped; when the latest arm is due and
  // how many runs its instance had then (for the starvation check).
  bool active = false;
  int64_t due_ns = 0;
  int64_t runs_at_arm = 0;
};

// Memory per slot while the soak runs, about: the slot, and its latest
// timer's Instance and wheel node (the 128 bytes timingwheel_cli counts per
// pending timer). Replaced timers still pending take more.
constexpr int64_t kBytesPerSlot = sizeof(Slot) + sizeof(Instance) + 128;

// What one thread did, summed at the end.
struct ThreadCounts {
  int64_t after_func = 0;
  int64_t every = 0;
  int64_t stop = 0;
  int64_t reset = 0;
  int64_t stop_true = 0;  // Stop() calls that returned true
  int64_t scheduled = 0;  // arms the wheel counts as scheduled
  int64_t schedule_errors = 0;
  std::string first_error;
  int64_t periodic_contract = 0;  // Stop/Reset of an active periodic: false
  int64_t periodic_starved = 0;
};

struct alignas(64) Progress {
  std::atomic<int64_t> ops{0};
};

void OneShotCallback(Instance* inst, Violations* v) {
  const int64_t now_ns = NowNs();
  inst->slot->runs.fetch_add(1, std::memory_order_relaxed);
  if (!inst->reset.load(std::memory_order_acquire)) {
    v->fixed_deadline_runs.fetch_add(1, std::memory_order_relaxed);
    if (now_ns < inst->deadline_ns) v->Early(now_ns - inst->deadline_ns);
    v->lag.Record(now_ns - inst->deadline_ns);
  }
}

void PeriodicCallback(Instance* inst, Violations* v) {
  const int64_t now_ns = NowNs();
  v->periodic_runs.fetch_add(1, std::memory_order_relaxed);
  const int64_t run = inst->runs.fetch_add(1, std::memory_order_acq_rel) + 1;
  if (inst->stopped.load(std::memory_order_acquire) &&
      inst->runs_seen_stopped.fetch_add(1, std::memory_order_relaxed) >= 1) {
    v->periodic_runs_after_stop.fetch_add(1, std::memory_order_relaxed);
  }
  if (!inst->reset.load(std::memory_order_acquire)) {
    v->fixed_deadline_runs.fetch_add(1, std::memory_order_relaxed);
    const int64_t earliest = inst->deadline_ns + (run - 1) * inst->period_ns;
    if (now_ns < earliest) v->Early(now_ns - earliest);
  }
}

// Stops the active periodic timer of `slot`, checking the contract (Stop()
// is true) and that it ran if it was due long enough ago.
void StopPeriodic(Slot& slot, ThreadCounts& counts, absl::Duration grace) {
  Instance& inst = *slot.instance;
  ++counts.stop;
  const int64_t runs = inst.runs.load(std::memory_order_acquire);
  const int64_t now_ns = NowNs();
  if (slot.timer.Stop()) {
    ++counts.stop_true;
    inst.stopped.store(true, std::memory_order_release);
  } else {
    ++counts.periodic_contract;
  }
  if (runs == slot.runs_at_arm &&
      now_ns - slot.due_ns > absl::ToInt64Nanoseconds(grace)) {
    ++counts.periodic_starved;
  }
  slot.active = false;
}

// ---------------------------------------------------------------------------
// The threads that hammer the wheel.

class Hammer {
 public:
  Hammer(TimingWheel& wheel, std::vector<Slot>& slots, uint64_t seed,
         int64_t rate, absl::Duration starve_grace, Violations& v,
         Progress& progress, ThreadCounts& counts)
      : wheel_(wheel),
        rate_(rate),
        rng_(seed),
        starve_grace_(starve_grace),
        v_(v),
        progress_(progress),
        counts_(counts) {
    for (Slot& slot : slots) {
      (slot.periodic ? periodic_ : one_shot_).push_back(&slot);
    }
  }

  void Run(const std::atomic<bool>& stop) {
    int64_t unpublished = 0;
    int64_t done = 0;
    const absl::Time start = absl::Now();
    while (!stop.load(std::memory_order_relaxed)) {
      // Periodic timers live about a second between operations, so that
      // most run several times before they are reset or stopped.
      if (one_shot_.empty() || Uniform(0, kPeriodicOpOneIn - 1) == 0) {
        PeriodicOp(*Pick(periodic_));
      } else {
        OneShotOp(*Pick(one_shot_));
      }
      if (++unpublished == kPublishEvery) {
        progress_.ops.fetch_add(unpublished, std::memory_order_relaxed);
        unpublished = 0;
        done += kPublishEvery;
        // --rate: wait until these ops are due.
        if (rate_ > 0) {
          absl::SleepFor(start + absl::Seconds(1) * done / rate_ - absl::Now());
        }
      }
    }
    progress_.ops.fetch_add(unpublished, std::memory_order_relaxed);
  }

 private:
  int64_t Uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  Slot* Pick(const std::vector<Slot*>& from) {
    return from[Uniform(0, static_cast<int64_t>(from.size()) - 1)];
  }

  // Mostly 0..200 ms; some 1..5 s; some <= 0 (as soon as possible).
  int64_t Delay() {
    const int64_t p = Uniform(0, 99);
    if (p < 3) return -Uniform(0, kNsPerMs);
    if (p < 10) return Uniform(kNsPerSecond, 5 * kNsPerSecond);
    return Uniform(0, 200 * kNsPerMs);
  }

  void Error(const absl::Status& status) {
    if (counts_.schedule_errors++ == 0) counts_.first_error = status.ToString();
  }

  void OneShotOp(Slot& slot) {
    const int64_t p = Uniform(0, 99);
    if (!slot.timer || p < 45) {
      const int64_t delay_ns = Delay();
      auto inst = std::make_shared<Instance>();
      inst->slot = &slot;
      inst->deadline_ns = NowNs() + delay_ns;
      ++counts_.after_func;
      absl::StatusOr<Timer> timer =
          wheel_.AfterFunc(absl::Nanoseconds(delay_ns),
                           [inst, v = &v_] { OneShotCallback(inst.get(), v); });
      if (!timer.ok()) {
        Error(timer.status());
        return;
      }
      ++slot.arms;
      ++counts_.scheduled;
      slot.timer = *std::move(timer);  // the old timer, if pending, still runs
      slot.instance = std::move(inst);
    } else if (p < 75) {
      ++counts_.reset;
      slot.instance->reset.store(true, std::memory_order_release);
      if (slot.timer.Reset(absl::Nanoseconds(Delay()))) {
        ++slot.cancelled;  // the previous arm
      } else {
        ++counts_.scheduled;  // it was not pending: a new arm
      }
      ++slot.arms;
    } else {
      ++counts_.stop;
      if (slot.timer.Stop()) {
        ++slot.cancelled;
        ++counts_.stop_true;
      }
    }
  }

  void PeriodicOp(Slot& slot) {
    if (!slot.active) {
      const int64_t period_ns = Uniform(kNsPerMs, 200 * kNsPerMs);
      auto inst = std::make_shared<Instance>();
      inst->slot = &slot;
      inst->period_ns = period_ns;
      inst->deadline_ns = NowNs() + period_ns;
      ++counts_.every;
      absl::StatusOr<Timer> timer =
          wheel_.Every(absl::Nanoseconds(period_ns),
                       [inst, v = &v_] { PeriodicCallback(inst.get(), v); });
      if (!timer.ok()) {
        Error(timer.status());
        return;
      }
      ++counts_.scheduled;
      slot.due_ns = inst->deadline_ns;
      slot.runs_at_arm = 0;
      slot.timer = *std::move(timer);
      slot.instance = std::move(inst);
      slot.active = true;
      return;
    }
    if (Uniform(0, 1) == 0) {
      StopPeriodic(slot, counts_, starve_grace_);
      return;
    }
    Instance& inst = *slot.instance;
    ++counts_.reset;
    const int64_t delay_ns = Delay();
    inst.reset.store(true, std::memory_order_release);
    // A run in progress may still count after the Reset: taking the count
    // before it makes the starvation check conservative.
    const int64_t runs = inst.runs.load(std::memory_order_acquire);
    const int64_t due_ns = NowNs() + std::max<int64_t>(0, delay_ns);
    if (!slot.timer.Reset(absl::Nanoseconds(delay_ns))) {
      ++counts_.periodic_contract;  // a periodic timer is pending until Stop
    }
    slot.due_ns = due_ns;
    slot.runs_at_arm = runs;
  }

  TimingWheel& wheel_;
  const int64_t rate_;  // ops per second, 0 = unlimited
  std::vector<Slot*> one_shot_;
  std::vector<Slot*> periodic_;
  std::mt19937_64 rng_;
  const absl::Duration starve_grace_;
  Violations& v_;
  Progress& progress_;
  ThreadCounts& counts_;
};

// ---------------------------------------------------------------------------
// The run.

struct Report {
  int64_t ops = 0;
  absl::Duration elapsed;
  ThreadCounts totals;  // schedule_errors, first_error included
  // One-shot slots.
  int64_t arms = 0;
  int64_t cancelled = 0;
  int64_t runs = 0;
  int64_t lost_slots = 0;
  int64_t doubled_slots = 0;
  int64_t lost = 0;     // one-shot shortfall + periodic starved
  int64_t doubled = 0;  // one-shot excess + periodic runs after Stop
  // From the callbacks.
  int64_t periodic_runs = 0;
  int64_t periodic_runs_after_stop = 0;
  int64_t early = 0;
  int64_t worst_early_ns = 0;
  int64_t fixed_deadline_runs = 0;
  // The end.
  absl::Duration quiesce_time;
  int64_t pending_left = 0;
  int64_t shutdown_cancelled = 0;
  Stats stats;
  int64_t baseline_rss = -1;
  int64_t peak_rss = -1;
  int64_t final_rss = -1;
  int64_t baseline_heap = 0;
  int64_t final_heap = 0;
  // Keeping up: a LagWindow for each kLagWindow of the hammering, then one
  // for the rest of it and one for the quiescence.
  std::vector<LagWindow> lag;
};

// The share of a window's runs that were more than --max_lag late: "12.5%",
// or "-" when none ran.
std::string LaggingShare(const LagWindow& w) {
  if (w.runs == 0) return "-";
  return absl::StrFormat("%.1f%%", 100.0 * static_cast<double>(w.lagging) /
                                       static_cast<double>(w.runs));
}

// `lag` is the last window of the lateness check, `max_lag` --max_lag.
void ShowProgress(bool tty, absl::Duration elapsed, int64_t ops,
                  double ops_per_s, int64_t pending, const LagWindow& lag,
                  absl::Duration max_lag, bool last) {
  const std::string line = absl::StrFormat(
      "[%6.1fs] ops %-8s %8s ops/s  pending %-8d late>%s %-6s rss %s",
      absl::ToDoubleSeconds(elapsed), Count(static_cast<double>(ops)),
      Count(ops_per_s), pending, absl::FormatDuration(max_lag),
      LaggingShare(lag), Mib(ProcStatusBytes("VmRSS")));
  if (tty) {
    std::fprintf(stderr, "\r%s%s", line.c_str(), last ? "\n" : "");
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::fflush(stderr);
}

void AddCounts(const ThreadCounts& c, ThreadCounts& total) {
  total.after_func += c.after_func;
  total.every += c.every;
  total.stop += c.stop;
  total.reset += c.reset;
  total.stop_true += c.stop_true;
  total.scheduled += c.scheduled;
  if (total.schedule_errors == 0 && c.schedule_errors > 0) {
    total.first_error = c.first_error;
  }
  total.schedule_errors += c.schedule_errors;
  total.periodic_contract += c.periodic_contract;
  total.periodic_starved += c.periodic_starved;
}

// Errors: only TimingWheel::Create's.
absl::StatusOr<Report> RunSoak(const Options& o) {
  Report r;
  // Everything the callbacks touch outlives the wheel.
  Violations v(o.max_lag);
  std::vector<std::vector<Slot>> slots(o.threads);
  for (std::vector<Slot>& s : slots) {
    s = std::vector<Slot>(o.slots);
    for (size_t i = 0; i < s.size(); ++i) {
      s[i].periodic = i % kPeriodicEvery == 0;
    }
  }
  std::vector<Progress> progress(o.threads);
  std::vector<ThreadCounts> counts(o.threads);
  r.baseline_rss = ProcStatusBytes("VmRSS");
  r.baseline_heap = HeapInUse();

  timingwheel::Options options;
  options.tick = o.tick;
  options.wheel_size = o.wheel_size;
  options.workers = o.workers;
  absl::StatusOr<std::unique_ptr<TimingWheel>> created =
      TimingWheel::Create(std::move(options));
  if (!created.ok()) return created.status();
  std::unique_ptr<TimingWheel> wheel = *std::move(created);

  // Hammer, showing progress.
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  const absl::Time start = absl::Now();
  for (int i = 0; i < o.threads; ++i) {
    threads.emplace_back([&, i] {
      Hammer(*wheel, slots[i], o.seed + static_cast<uint64_t>(i), o.rate,
             o.starve_grace, v, progress[i], counts[i])
          .Run(stop);
    });
  }
  const bool tty = isatty(STDERR_FILENO) == 1;
  auto total_ops = [&progress] {
    int64_t n = 0;
    for (const Progress& p : progress) {
      n += p.ops.load(std::memory_order_relaxed);
    }
    return n;
  };
  absl::Time last_shown = start;
  absl::Time window_end = start + kLagWindow;
  int64_t last_ops = 0;
  for (absl::Time now = start; now - start < o.duration; now = absl::Now()) {
    absl::SleepFor(
        std::min(absl::Milliseconds(50), o.duration - (now - start)));
    const absl::Time t = absl::Now();
    if (t >= window_end) {
      r.lag.push_back(v.lag.Take());
      window_end += kLagWindow;
    }
    if (t - last_shown >= o.progress_interval) {
      const int64_t ops = total_ops();
      ShowProgress(tty, t - start, ops,
                   (ops - last_ops) / absl::ToDoubleSeconds(t - last_shown),
                   wheel->Pending(), r.lag.empty() ? LagWindow() : r.lag.back(),
                   o.max_lag, /*last=*/false);
      last_shown = t;
      last_ops = ops;
    }
  }
  stop.store(true, std::memory_order_relaxed);
  for (std::thread& t : threads) t.join();
  r.elapsed = absl::Now() - start;
  r.ops = total_ops();
  r.lag.push_back(v.lag.Take());
  ShowProgress(tty, r.elapsed, r.ops, r.ops / absl::ToDoubleSeconds(r.elapsed),
               wheel->Pending(), r.lag.back(), o.max_lag, /*last=*/true);

  // Stop everything still armed; the threads are gone, the slots are ours.
  for (int i = 0; i < o.threads; ++i) {
    for (Slot& slot : slots[i]) {
      if (!slot.timer) continue;
      if (slot.periodic) {
        if (slot.active) StopPeriodic(slot, counts[i], o.starve_grace);
        continue;
      }
      ++counts[i].stop;
      if (slot.timer.Stop()) {
        ++slot.cancelled;
        ++counts[i].stop_true;
      }
    }
  }

  // Quiescence: timers whose handle was replaced are still pending, and run.
  const absl::Time quiesce_start = absl::Now();
  while (wheel->Pending() != 0 &&
         absl::Now() - quiesce_start < o.quiesce_timeout) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  r.quiesce_time = absl::Now() - quiesce_start;
  r.pending_left = wheel->Pending();
  // Joins the workers: every callback has returned after this.
  r.shutdown_cancelled = wheel->Shutdown();
  r.lag.push_back(v.lag.Take());
  r.stats = wheel->GetStats();

  // Accounting.
  for (int i = 0; i < o.threads; ++i) {
    AddCounts(counts[i], r.totals);
    for (const Slot& slot : slots[i]) {
      if (slot.periodic) continue;
      const int64_t runs = slot.runs.load(std::memory_order_relaxed);
      const int64_t expected = slot.arms - slot.cancelled;
      r.arms += slot.arms;
      r.cancelled += slot.cancelled;
      r.runs += runs;
      if (runs < expected) {
        r.lost += expected - runs;
        ++r.lost_slots;
      } else if (runs > expected) {
        r.doubled += runs - expected;
        ++r.doubled_slots;
      }
    }
  }
  r.periodic_runs = v.periodic_runs.load();
  r.periodic_runs_after_stop = v.periodic_runs_after_stop.load();
  r.early = v.early.load();
  r.worst_early_ns = v.worst_early_ns.load();
  r.fixed_deadline_runs = v.fixed_deadline_runs.load();
  r.lost += r.totals.periodic_starved;
  r.doubled += r.periodic_runs_after_stop;

  // Memory: drop the wheel, then every handle (and so every node, callback
  // and Instance), then give the freed memory back to the system.
  r.peak_rss = ProcStatusBytes("VmHWM");
  wheel.reset();
  slots.clear();
  slots.shrink_to_fit();
  malloc_trim(0);
  r.final_rss = ProcStatusBytes("VmRSS");
  r.final_heap = HeapInUse();
  return r;
}

// Prints the report; returns the violations, empty on a pass.
std::vector<std::string> PrintReport(const Options& o, const Report& r) {
  const ThreadCounts& t = r.totals;
  const int64_t all_runs = r.runs + r.periodic_runs;
  const int64_t rss_growth = r.final_rss - r.baseline_rss;
  std::vector<std::string> failures;
  auto must = [&failures](bool ok, std::string what) {
    if (!ok) failures.push_back(std::move(what));
  };
  must(r.lost == 0, absl::StrCat(r.lost, " lost"));
  must(r.doubled == 0, absl::StrCat(r.doubled, " doubled"));
  must(r.early == 0, absl::StrCat(r.early, " early"));
  must(t.periodic_contract == 0,
       absl::StrCat(t.periodic_contract,
                    " Stop/Reset of an active periodic timer returned false"));
  must(t.schedule_errors == 0,
       absl::StrCat(t.schedule_errors, " AfterFunc/Every errors"));
  must(r.pending_left == 0,
       absl::StrCat("Pending() still ", r.pending_left, " after ",
                    absl::FormatDuration(o.quiesce_timeout)));
  must(r.shutdown_cancelled == 0,
       absl::StrCat("Shutdown cancelled ", r.shutdown_cancelled));
  must(r.stats.fired == all_runs,
       absl::StrCat("Stats::fired ", r.stats.fired, " != runs ", all_runs));
  must(r.stats.stopped == t.stop_true,
       absl::StrCat("Stats::stopped ", r.stats.stopped, " != ", t.stop_true));
  must(r.stats.scheduled == t.scheduled,
       absl::StrCat("Stats::scheduled ", r.stats.scheduled,
                    " != ", t.scheduled));
  must(r.final_rss < 0 || r.baseline_rss < 0 ||
           rss_growth <= o.rss_slack_mib * (int64_t{1} << 20),
       absl::StrCat("RSS ", Mib(rss_growth), " above the baseline"));
  // Keeping up: the windows in which the wheel was behind, each named by
  // when it started ("12s"), the last by "the quiescence".
  LagWindow lag_total;
  std::vector<std::string> behind;
  for (size_t i = 0; i < r.lag.size(); ++i) {
    lag_total.runs += r.lag[i].runs;
    lag_total.lagging += r.lag[i].lagging;
    if (r.lag[i].Behind()) {
      behind.push_back(i + 1 < r.lag.size() ? absl::StrCat(i, "s")
                                            : std::string("the quiescence"));
    }
  }
  const std::string max_lag = absl::FormatDuration(o.max_lag);
  must(behind.empty(),
       absl::StrCat("fell behind the load: most callbacks started more than ",
                    max_lag, " late in ", behind.size(), " of ", r.lag.size(),
                    " windows, the first at ", behind.empty() ? "" : behind[0],
                    "; lower --rate"));

  std::string out = absl::StrFormat(
      "timingwheel_soak: %d threads x %d slots for %s (tick %s, wheel_size "
      "%d, workers %d, rate %s)\n",
      o.threads, o.slots,
      absl::FormatDuration(absl::Trunc(r.elapsed, absl::Milliseconds(1))),
      absl::FormatDuration(o.tick), o.wheel_size, o.workers,
      o.rate == 0 ? "unlimited" : absl::StrCat(o.rate, " ops/s per thread"));
  auto row = [&out](absl::string_view label, const std::string& value) {
    absl::StrAppendFormat(&out, "  %-12s %s\n", label, value);
  };
  row("ops",
      absl::StrFormat("%d (%s ops/s): AfterFunc %d, Reset %d, Stop %d, "
                      "Every %d",
                      r.ops, Count(r.ops / absl::ToDoubleSeconds(r.elapsed)),
                      t.after_func, t.reset, t.stop, t.every));
  row("one-shot",
      absl::StrFormat("arms %d, cancelled %d, runs %d (expected "
                      "%d)",
                      r.arms, r.cancelled, r.runs, r.arms - r.cancelled));
  row("periodic",
      absl::StrFormat("%d timers, %d runs; Stop/Reset returned "
                      "false while active: %d",
                      t.every, r.periodic_runs, t.periodic_contract));
  row("lost", absl::StrFormat("%d (one-shot slots short: %d; periodic "
                              "timers never run: %d)",
                              r.lost, r.lost_slots, t.periodic_starved));
  row("doubled",
      absl::StrFormat("%d (one-shot slots over: %d; periodic runs "
                      "after Stop: %d)",
                      r.doubled, r.doubled_slots, r.periodic_runs_after_stop));
  row("early",
      absl::StrFormat(
          "%d of %d runs with a fixed deadline%s", r.early,
          r.fixed_deadline_runs,
          r.early == 0 ? ""
                       : absl::StrCat(" (worst ",
                                      absl::FormatDuration(
                                          absl::Nanoseconds(r.worst_early_ns)),
                                      ")")));
  row("lag",
      absl::StrFormat("%d of %d one-shot runs with a fixed deadline more "
                      "than %s late (%s); behind (most late) in %d of %d "
                      "windows of %s, the last the quiescence",
                      lag_total.lagging, lag_total.runs, max_lag,
                      LaggingShare(lag_total), behind.size(), r.lag.size(),
                      absl::FormatDuration(kLagWindow)));
  row("quiescence",
      absl::StrFormat("Pending() %d after %s; Shutdown cancelled %d",
                      r.pending_left,
                      absl::FormatDuration(
                          absl::Trunc(r.quiesce_time, absl::Milliseconds(1))),
                      r.shutdown_cancelled));
  row("stats",
      absl::StrFormat("fired %d, stopped %d, scheduled %d; lateness "
                      "p50 %s, p99 %s, max %s",
                      r.stats.fired, r.stats.stopped, r.stats.scheduled,
                      absl::FormatDuration(r.stats.lateness_p50),
                      absl::FormatDuration(r.stats.lateness_p99),
                      absl::FormatDuration(r.stats.lateness_max)));
  row("RSS", absl::StrFormat("baseline %s, peak %s, after Shutdown + "
                             "malloc_trim %s (%s%s; limit +%d MiB)",
                             Mib(r.baseline_rss), Mib(r.peak_rss),
                             Mib(r.final_rss), rss_growth < 0 ? "-" : "+",
                             Mib(rss_growth < 0 ? -rss_growth : rss_growth),
                             o.rss_slack_mib));
  row("heap in use",
      absl::StrFormat("baseline %s, after Shutdown %s (malloc'd, not freed)",
                      Mib(r.baseline_heap), Mib(r.final_heap)));
  if (t.schedule_errors > 0) row("first error", t.first_error);
  if (failures.empty()) {
    absl::StrAppendFormat(
        &out,
        "PASS: %d ops in %s, 0 lost, 0 doubled, 0 early, never behind by %s, "
        "RSS %s%s over the baseline after Shutdown\n",
        r.ops, absl::FormatDuration(absl::Trunc(r.elapsed, absl::Seconds(1))),
        max_lag, rss_growth < 0 ? "-" : "+",
        Mib(rss_growth < 0 ? -rss_growth : rss_growth));
  } else {
    absl::StrAppend(&out, "FAIL: ", absl::StrJoin(failures, "; "), "\n");
  }
  std::fputs(out.c_str(), stdout);
  std::fflush(stdout);
  return failures;
}

absl::StatusOr<Options> OptionsFromFlags() {
  Options o;
  o.threads = absl::GetFlag(FLAGS_threads);
  o.rate = absl::GetFlag(FLAGS_rate);
  o.duration = absl::GetFlag(FLAGS_duration);
  o.slots = absl::GetFlag(FLAGS_slots);
  o.workers = absl::GetFlag(FLAGS_workers);
  o.tick = absl::GetFlag(FLAGS_tick);
  o.wheel_size = absl::GetFlag(FLAGS_wheel_size);
  o.seed = absl::GetFlag(FLAGS_seed);
  o.max_lag = absl::GetFlag(FLAGS_max_lag);
  o.quiesce_timeout = absl::GetFlag(FLAGS_quiesce_timeout);
  o.starve_grace = absl::GetFlag(FLAGS_starve_grace);
  o.rss_slack_mib = absl::GetFlag(FLAGS_rss_slack_mib);
  o.progress_interval = absl::GetFlag(FLAGS_progress_interval);
  using tools::CheckFlagRange;
  using tools::kMaxFlagDuration;
  constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max();
  for (const absl::Status& s :
       {CheckFlagRange("threads", o.threads, 1, kMaxThreads),
        CheckFlagRange("rate", o.rate, 0, kUnbounded, "0 = unlimited"),
        CheckFlagRange("duration", o.duration, absl::Nanoseconds(1),
                       kMaxFlagDuration),
        CheckFlagRange("slots", o.slots, 1, kUnbounded),
        tools::CheckWheelFlags(o.tick, o.wheel_size, o.workers),
        CheckFlagRange("max_lag", o.max_lag, absl::Nanoseconds(1),
                       kMaxFlagDuration),
        CheckFlagRange("quiesce_timeout", o.quiesce_timeout,
                       absl::Nanoseconds(1), kMaxFlagDuration),
        CheckFlagRange("starve_grace", o.starve_grace, absl::Nanoseconds(1),
                       kMaxFlagDuration),
        CheckFlagRange("rss_slack_mib", o.rss_slack_mib, 0, kMaxRssSlackMib,
                       "1 TiB"),
        CheckFlagRange("progress_interval", o.progress_interval,
                       absl::Nanoseconds(1), kMaxFlagDuration)}) {
    if (!s.ok()) return s;
  }
  return o;
}

// Refuses --threads x --slots that would not fit in the machine's physical
// memory: the slots are allocated before the run starts, and a bigger run
// would die of std::bad_alloc there, or swap.
absl::Status CheckMemory(const Options& o) {
  const int64_t physical = PhysicalMemoryBytes();
  if (physical < 0) return absl::OkStatus();  // Unknown.
  const int64_t max_slots = physical / kBytesPerSlot / o.threads;
  if (o.slots <= max_slots) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrFormat(
      "--slots=%d with --threads=%d would need about %s of memory (%d bytes "
      "per slot), and this machine has %s: at most --slots=%d with "
      "--threads=%d",
      o.slots, o.threads, Mib(int64_t{o.slots} * o.threads * kBytesPerSlot),
      kBytesPerSlot, Mib(physical), max_slots, o.threads));
}

int BadFlags(const absl::Status& status) {
  std::fprintf(stderr, "timingwheel_soak: %s\n", status.ToString().c_str());
  return 2;
}

int Main() {
  const absl::StatusOr<Options> options = OptionsFromFlags();
  if (!options.ok()) return BadFlags(options.status());
  if (absl::Status memory = CheckMemory(*options); !memory.ok()) {
    return BadFlags(memory);
  }
  const absl::StatusOr<Report> report = RunSoak(*options);
  if (!report.ok()) return BadFlags(report.status());
  return PrintReport(*options, *report).empty() ? 0 : 1;
}

}  // namespace
}  // namespace timingwheel::soak

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(timingwheel::soak::kUsage);
  if (const std::optional<int> exit_status =
          timingwheel::tools::ParseFlags(argc, argv, __FILE__)) {
    return *exit_status;
  }
  return timingwheel::soak::Main();
}
