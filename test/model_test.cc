// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// model_test.cc: the wheel against a reference model, on random calls from 1
// to 4 threads.
//
// Each seed makes a wheel on a ManualClock (random tick, wheel_size and
// worker count) and 1 to 4 operating threads, then plays rounds:
//   1. With the clock frozen, each operating thread makes a few random calls
//      (AfterFunc, Every, Stop, Reset) on the timers it made itself, all at
//      once with the other threads, and checks every return value against its
//      own model: a sorted multimap of deadlines, nothing about levels or
//      buckets.
//   2. When every thread is done, the main thread waits until the wheel is
//      quiescent (TimingWheel::WaitIdle, not a sleep) and compares
//      every timer with the models: which ran and how often, at what clock
//      time, and Pending() against their sum. Then it advances the clock by
//      1 ns to 20 years, waits again and compares again: each timer due ran
//      exactly once, none before its deadline or more than one tick after it.
// Delays are 0, negative, sub-tick, each level's boundary +-1 tick, random up
// to 100 years and at the end of the supported range (and past it, which
// fails); Reset also takes an infinite delay.
//
// Why the model stays exact with threads running at once: while the clock is
// frozen nothing becomes due, but an arm with d <= 0 ("immediate"), whose
// callback runs on a worker while its owner goes on. Only a Stop or Reset of
// such an arm in the same round can legitimately see either answer; the
// model accepts both, then holds the wheel to it (one-shot: true, that arm
// never runs; false, it ran once). A periodic timer stays pending whether its
// run came first or not, so there the model allows 0 or 1 run. Every other
// answer is decided by one thread and the frozen clock, and must match.
//
// Shutdown ends half the seeds: at a barrier, by the main thread, or in the
// middle of a round by one operating thread while the others go on making
// calls (but no Reset: a Reset of an idle timer racing Shutdown arms it or
// not, and returns false either way). Its count must equal what the models
// find pending: every arm ran, was stopped by a true Stop or Reset, or was
// counted by Shutdown, exactly once. Calls that start after it returned fail
// (AfterFunc and Every: FailedPrecondition; Stop and Reset: false), and no
// callback runs after it.
//
// Seeds 1 to 1500 (600 under sanitizers), with 1 + seed % 4 threads. A
// failure prints the command that replays it:
//   model_test --seed=N --threads=T   just that seed
//   model_test --seeds=COUNT          seeds 1 to COUNT
// A replay makes the same calls in every round, except in the round that a
// Shutdown by an operating thread interrupts: which calls come after it
// depends on the scheduler.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/random/distributions.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "gtest/gtest.h"
#include "test_util.h"
#include "timingwheel/clock.h"
#include "timingwheel/timer.h"
#include "timingwheel/timingwheel.h"

ABSL_FLAG(uint64_t, seed, 0, "run only this seed (0: seeds 1 to --seeds)");
ABSL_FLAG(int, seeds, 0,
          "how many seeds to run (0: 1500, or 600 under sanitizers)");
ABSL_FLAG(int, threads, 0, "operating threads, 1 to 4 (0: 1 + seed % 4)");

namespace timingwheel {
namespace {

using internal::CondVar;
using internal::LockRank;
using internal::Mutex;
using internal::MutexLock;

constexpr int kDefaultSeeds = kSanitized ? 600 : 1500;
constexpr int kMaxThreads = 4;
constexpr int kRounds = 60;
constexpr int64_t kYearNs = int64_t{365} * 24 * 3600 * 1000000000;
constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
// The clock stays below 250 years after the wheel's start, so periodic
// schedules never leave the range; deadlines past it are still tried.
constexpr int64_t kClockCapNs = 250 * kYearNs;

int64_t CeilDiv(int64_t a, int64_t b) { return a / b + (a % b > 0 ? 1 : 0); }

// How a call relates to a Shutdown that another thread may make meanwhile.
enum class Timing {
  kBefore,  // it returned before Shutdown was called
  kDuring,  // it overlapped Shutdown
  kAfter,   // it started after Shutdown returned
};

// Shutdown as the threads see it. `cancelled` is written before `returned`
// and read by the main thread once the round is over.
struct ShutdownSignal {
  std::atomic<bool> started{false};
  std::atomic<bool> returned{false};
  int64_t cancelled = 0;
};

// The reference for the timers of one thread: which are armed, their
// deadline (nanoseconds since the wheel's start) and period.
class Model {
 public:
  struct Entry {
    Timer handle;
    std::shared_ptr<RunLog> log;
    int64_t period_ns = 0;
    bool armed = false;
    int64_t deadline_ns = 0;
    bool immediate = false;  // armed with d <= 0: runs at once, on a worker
    // A Stop or Reset during or after Shutdown returned false: Shutdown
    // cancelled this arm, or (an immediate one) it ran first.
    bool lost = false;
    size_t runs = 0;  // runs accounted for so far
    // Runs of the immediate arms that a Stop or Reset ended since the last
    // settle: at least, at most.
    int raced_min = 0;
    int raced_max = 0;
    std::multimap<int64_t, int>::iterator where;
  };

  Model(int owner, int64_t tick_ns, int64_t origin_ns)
      : owner_(owner),
        tick_ns_(tick_ns),
        max_deadline_ns_(kMaxInt64 / tick_ns * tick_ns),
        origin_ns_(origin_ns) {}

  // The deadline of `d` from `now_ns`, or -1 when out of range.
  int64_t DeadlineAfter(int64_t now_ns, absl::Duration d) const {
    if (d <= absl::ZeroDuration()) return now_ns;
    const absl::Duration ceil = absl::Ceil(d, absl::Nanoseconds(1));
    if (ceil > absl::Nanoseconds(max_deadline_ns_ - now_ns)) return -1;
    return now_ns + absl::ToInt64Nanoseconds(ceil);
  }

  int Add(Entry entry) {
    entries_.push_back(std::move(entry));
    return size() - 1;
  }
  Entry& at(int id) { return entries_[id]; }
  int size() const { return static_cast<int>(entries_.size()); }
  int64_t pending() const { return static_cast<int64_t>(deadlines_.size()); }
  int64_t max_deadline_ns() const { return max_deadline_ns_; }

  void Arm(int id, int64_t deadline_ns, bool immediate) {
    Disarm(id);
    Entry& e = entries_[id];
    e.armed = true;
    e.lost = false;
    e.deadline_ns = deadline_ns;
    e.immediate = immediate;
    e.where = deadlines_.emplace(deadline_ns, id);
  }
  void Disarm(int id) {
    Entry& e = entries_[id];
    if (!e.armed) return;
    deadlines_.erase(e.where);
    e.armed = false;
  }

  // A Stop or Reset of timer `id` returned `got`: checks it and ends the
  // timer's arm. Returns a mismatch, or "".
  std::string End(int id, bool got, Timing timing) {
    Entry& e = entries_[id];
    if (!e.armed || e.lost) return got ? "true, but it is not pending" : "";
    if (timing != Timing::kBefore && !got) {
      e.lost = true;  // for SettleShutdown to account
      return "";
    }
    if (timing == Timing::kAfter) return "true after Shutdown returned";
    Disarm(id);
    if (!e.immediate) return got ? "" : "false, but it is pending";
    // The arm's callback raced this call on a worker.
    if (e.period_ns != 0) {
      ++e.raced_max;  // it ran first, or not; the timer was pending either way
      return got ? "" : "false, but a periodic timer is pending until stopped";
    }
    if (!got) {  // its callback started first
      ++e.raced_min;
      ++e.raced_max;
    }
    return "";
  }

  // The wheel is idle and its clock at `now_ns`: checks what ran since the
  // last settle and moves the model on. Returns the mismatches.
  std::vector<std::string> Settle(int64_t now_ns) {
    std::vector<std::string> failures;
    for (int id = 0; id < size(); ++id) {
      Entry& e = entries_[id];
      const int fresh = Fresh(id, now_ns, &failures);
      // Due for sure once the clock reaches the deadline rounded up to a
      // tick; may run from the deadline itself on (when it cascades out of a
      // higher level at a time past its deadline but before that tick).
      const bool must =
          e.armed && (e.immediate ||
                      CeilDiv(e.deadline_ns, tick_ns_) * tick_ns_ <= now_ns);
      const bool may = e.armed && e.deadline_ns <= now_ns;
      const int low = e.raced_min + (must ? 1 : 0);
      const int high = e.raced_max + (may ? 1 : 0);
      // Raced runs and a run of the current arm are never both uncertain: a
      // Stop or Reset that raced a periodic timer left it unarmed, armed at
      // once (a sure run) or armed after `now_ns` (no run before an advance).
      const bool current_ran = must || (may && fresh > e.raced_max);
      const std::string raced =
          e.raced_max == 0
              ? ""
              : absl::StrCat(" (", e.raced_min, " to ", e.raced_max,
                             " of them raced a Stop or Reset)");
      e.raced_min = 0;
      e.raced_max = 0;
      if (fresh < low || fresh > high) {
        failures.push_back(
            absl::StrCat(Name(id), " (deadline ",
                         e.armed ? absl::StrCat(e.deadline_ns, "ns") : "none",
                         ", period ", e.period_ns, "ns) ran ", fresh,
                         " times by ", now_ns, "ns; expected ", low,
                         low == high ? "" : absl::StrCat(" to ", high), raced));
        continue;
      }
      if (!current_ran) continue;
      if (e.period_ns == 0) {
        Disarm(id);
        continue;
      }
      // The next point of deadline + k * period after now.
      const int64_t d = e.deadline_ns;
      const int64_t steps = (now_ns - d) / e.period_ns + 1;
      if (steps > (max_deadline_ns_ - d) / e.period_ns) {
        Disarm(id);  // the schedule leaves the supported range
      } else {
        Arm(id, d + steps * e.period_ns, false);
      }
    }
    return failures;
  }

  // Shutdown returned and the round it came in is over, the clock at
  // `now_ns`: checks what ran in that round, and adds to `*cancelled` the
  // arms that Shutdown must have counted. Then nothing is armed.
  std::vector<std::string> SettleShutdown(int64_t now_ns, int64_t* cancelled) {
    std::vector<std::string> failures;
    for (int id = 0; id < size(); ++id) {
      Entry& e = entries_[id];
      const int fresh = Fresh(id, now_ns, &failures);
      // An immediate arm ran before Shutdown cancelled it, or not.
      const int high = e.raced_max + (e.armed && e.immediate ? 1 : 0);
      if (fresh < e.raced_min || fresh > high) {
        failures.push_back(
            absl::StrCat(Name(id), " ran ", fresh,
                         " times in or after the round of Shutdown; "
                         "expected ",
                         e.raced_min, " to ", high));
      } else if (e.armed && (e.period_ns != 0 || fresh == e.raced_max)) {
        ++*cancelled;  // pending when Shutdown came (one-shot: it never ran)
      }
      e.raced_min = 0;
      e.raced_max = 0;
      Disarm(id);
    }
    return failures;
  }

 private:
  std::string Name(int id) const {
    return absl::StrCat("timer ", owner_, ".", id);
  }

  // How often timer `id` ran since the last settle; every such run must have
  // started at `now_ns` by the clock.
  int Fresh(int id, int64_t now_ns, std::vector<std::string>* failures) {
    Entry& e = entries_[id];
    const std::vector<absl::Duration> ran = e.log->runs();
    for (size_t i = e.runs; i < ran.size(); ++i) {
      const int64_t at = absl::ToInt64Nanoseconds(ran[i]) - origin_ns_;
      if (at != now_ns) {
        failures->push_back(absl::StrCat(Name(id), " ran at ", at,
                                         "ns, the clock is at ", now_ns, "ns"));
      }
    }
    const int fresh = static_cast<int>(ran.size() - e.runs);
    e.runs = ran.size();
    return fresh;
  }

  const int owner_;
  const int64_t tick_ns_;
  const int64_t max_deadline_ns_;
  const int64_t origin_ns_;
  std::vector<Entry> entries_;
  std::multimap<int64_t, int> deadlines_;
};

// Delays: zero, negative, sub-tick, level boundaries +-1 tick, random up to
// 100 years, and at or just past the end of the range (`room_ns` from now).
absl::Duration ModelDelay(std::mt19937_64& rng, int64_t tick_ns, int wheel_size,
                          int64_t room_ns) {
  switch (absl::Uniform(rng, 0, 9)) {
    case 0:
      return absl::ZeroDuration();
    case 1:
      return -absl::Nanoseconds(absl::Uniform<int64_t>(rng, 1, 3 * tick_ns));
    case 2:
      return absl::Nanoseconds(absl::Uniform<int64_t>(rng, 1, tick_ns));
    case 3:
    case 4: {
      // wheel_size^k ticks +-1 tick, for a level k that fits in 100 years.
      int64_t span = tick_ns;
      const int levels = absl::Uniform(rng, 1, 6);
      for (int i = 0; i < levels && span <= 100 * kYearNs / wheel_size; ++i) {
        span *= wheel_size;
      }
      return absl::Nanoseconds(span + absl::Uniform(rng, -1, 2) * tick_ns);
    }
    case 5:
    case 6:
      return absl::Nanoseconds(
          absl::Uniform<int64_t>(rng, 1, 3 * wheel_size * tick_ns));
    case 7:
      return absl::Nanoseconds(
          absl::Uniform<int64_t>(rng, 1, std::min(100 * kYearNs, room_ns)));
    default:
      // Near or past the end of the range.
      return absl::Nanoseconds(room_ns) +
             absl::Nanoseconds(absl::Uniform<int64_t>(rng, -1, 2));
  }
}

// Clock steps, from 1 ns to years.
absl::Duration ModelStep(std::mt19937_64& rng, int64_t tick_ns,
                         int wheel_size) {
  switch (absl::Uniform(rng, 0, 8)) {
    case 0:
      return absl::Nanoseconds(1);
    case 1:
      return absl::Nanoseconds(absl::Uniform<int64_t>(rng, 1, tick_ns));
    case 2:
      return absl::Nanoseconds(tick_ns);
    case 3:
      return absl::Nanoseconds(
          absl::Uniform<int64_t>(rng, 1, 4 * wheel_size * tick_ns));
    case 4: {
      int64_t span = tick_ns;
      const int levels = absl::Uniform(rng, 1, 5);
      for (int i = 0; i < levels && span <= 10 * kYearNs / wheel_size; ++i) {
        span *= wheel_size;
      }
      return absl::Nanoseconds(span + absl::Uniform(rng, -1, 2) * tick_ns);
    }
    case 5:
      return absl::Seconds(absl::Uniform(rng, 1, 100));
    case 6:
      return absl::Hours(absl::Uniform(rng, 1, 24 * 40));
    default:
      return absl::Nanoseconds(absl::Uniform<int64_t>(rng, 1, 20 * kYearNs));
  }
}

const char* ToString(Timing timing) {
  switch (timing) {
    case Timing::kBefore:
      return "before Shutdown";
    case Timing::kDuring:
      return "during Shutdown";
    case Timing::kAfter:
      return "after Shutdown";
  }
  return "?";
}

// Whether AfterFunc or Every may return `status` for a deadline in the range
// or not: a mismatch, or "".
std::string CheckCreated(const absl::Status& status, bool in_range,
                         Timing timing) {
  const absl::StatusCode code = status.code();
  const bool allowed =
      (code == absl::StatusCode::kOk && in_range && timing != Timing::kAfter) ||
      (code == absl::StatusCode::kInvalidArgument && !in_range &&
       timing != Timing::kAfter) ||
      (code == absl::StatusCode::kFailedPrecondition &&
       timing != Timing::kBefore);
  return allowed ? ""
                 : absl::StrCat("wrong ", ToString(timing), " for a deadline ",
                                in_range ? "in" : "out of", " range");
}

// What the operating threads are to do in a round; written by the main thread
// before the round starts.
struct Round {
  int number = 0;
  int64_t now_ns = 0;  // the frozen clock, since the wheel's start
  int shutter = -1;    // the operating thread that calls Shutdown, or -1
};

// One operating thread: its random choices, its timers and their model.
class Operator {
 public:
  Operator(int index, uint64_t seed, int64_t tick_ns, int wheel_size,
           int64_t origin_ns, std::shared_ptr<Clock> clock)
      : index_(index),
        rng_(seed),
        tick_ns_(tick_ns),
        wheel_size_(wheel_size),
        clock_(std::move(clock)),
        model_(index, tick_ns, origin_ns) {}

  // A few random calls at the frozen time, stopping at the first mismatch;
  // the round's shutter calls Shutdown before one of them (or after all).
  void Play(TimingWheel& wheel, const Round& round, ShutdownSignal& signal) {
    const int calls = absl::Uniform(rng_, 0, 5);
    const bool shutter = round.shutter == index_;
    const int shutdown_before =
        shutter ? absl::Uniform(rng_, 0, calls + 1) : -1;
    // While another thread may be shutting the wheel down, no Reset.
    const bool may_reset = round.shutter < 0 || shutter;
    for (int i = 0; i <= calls && failure_.empty(); ++i) {
      if (i == shutdown_before) {
        signal.started.store(true);
        signal.cancelled = wheel.Shutdown();
        signal.returned.store(true);
        history_.push_back(absl::StrCat("round ", round.number,
                                        ": Shutdown() = ", signal.cancelled));
      }
      if (i < calls) Call(wheel, round, signal, may_reset);
    }
  }

  Model& model() { return model_; }
  const std::string& failure() const { return failure_; }
  // The last calls, for a failure message.
  std::string History() const {
    const size_t shown = std::min<size_t>(history_.size(), 10);
    return absl::StrCat(
        "  the last ", shown, " calls of thread ", index_, ":\n    ",
        absl::StrJoin(history_.end() - shown, history_.end(), "\n    "));
  }

 private:
  void Call(TimingWheel& wheel, const Round& round, ShutdownSignal& signal,
            bool may_reset) {
    const int64_t now = round.now_ns;
    const int64_t room = model_.max_deadline_ns() - now;
    const int choice = absl::Uniform(rng_, 0, 100);
    const bool returned_before = signal.returned.load();
    // Read after the call returned.
    auto timing = [&] {
      if (!signal.started.load()) return Timing::kBefore;
      return returned_before ? Timing::kAfter : Timing::kDuring;
    };
    std::string what;
    std::string mismatch;
    if (choice < 32 || model_.size() == 0) {
      const bool periodic = choice >= 24 && choice < 32;
      absl::Duration d;
      if (!periodic) {
        d = ModelDelay(rng_, tick_ns_, wheel_size_, room);
      } else if (absl::Uniform(rng_, 0, 4) == 0) {
        // Periods from sub-tick to days.
        d = absl::Nanoseconds(absl::Uniform<int64_t>(rng_, 1, 2 * tick_ns_));
      } else {
        d = absl::Nanoseconds(
                absl::Uniform<int64_t>(rng_, 1, 5 * wheel_size_ * tick_ns_)) *
            (absl::Uniform(rng_, 0, 6) == 0 ? 100000 : 1);
      }
      auto log = std::make_shared<RunLog>(clock_);
      absl::StatusOr<Timer> timer =
          periodic ? wheel.Every(d, RunLog::Callback(log))
                   : wheel.AfterFunc(d, RunLog::Callback(log));
      const int64_t deadline = model_.DeadlineAfter(now, d);
      mismatch = CheckCreated(timer.status(), deadline >= 0, timing());
      what = absl::StrCat(
          periodic ? "Every(" : "AfterFunc(", absl::FormatDuration(d), ") = ",
          timer.ok() ? absl::StrCat("timer ", index_, ".", model_.size())
                     : timer.status().ToString());
      if (timer.ok() && mismatch.empty()) {
        Model::Entry entry;
        entry.handle = *std::move(timer);
        entry.log = std::move(log);
        entry.period_ns = periodic ? absl::ToInt64Nanoseconds(d) : 0;
        model_.Arm(model_.Add(std::move(entry)), deadline,
                   d <= absl::ZeroDuration());
      }
    } else if (choice < 62 || !may_reset) {
      const int id = absl::Uniform(rng_, 0, model_.size());
      const bool got = model_.at(id).handle.Stop();
      mismatch = model_.End(id, got, timing());
      what = absl::StrCat("Stop(timer ", index_, ".", id,
                          ") = ", got ? "true" : "false");
    } else {
      const int id = absl::Uniform(rng_, 0, model_.size());
      const absl::Duration d =
          absl::Uniform(rng_, 0, 20) == 0
              ? absl::InfiniteDuration()
              : ModelDelay(rng_, tick_ns_, wheel_size_, room);
      const bool got = model_.at(id).handle.Reset(d);
      const Timing when = timing();
      mismatch = model_.End(id, got, when);
      what =
          absl::StrCat("Reset(timer ", index_, ".", id, ", ",
                       absl::FormatDuration(d), ") = ", got ? "true" : "false");
      // It arms again, unless the wheel is shut down (this thread Resets
      // only when no other thread may be shutting it down) or the delay
      // cannot be armed (infinite, out of range: it only stops).
      const int64_t deadline =
          d == absl::InfiniteDuration() ? -1 : model_.DeadlineAfter(now, d);
      if (when == Timing::kBefore && deadline >= 0) {
        model_.Arm(id, deadline, d <= absl::ZeroDuration());
      }
    }
    history_.push_back(
        absl::StrCat("round ", round.number, " at ", now, "ns: ", what));
    if (!mismatch.empty()) {
      failure_ = absl::StrCat("round ", round.number, ", thread ", index_, ": ",
                              what, ": ", mismatch);
    }
  }

  const int index_;
  std::mt19937_64 rng_;
  const int64_t tick_ns_;
  const int wheel_size_;
  const std::shared_ptr<Clock> clock_;
  Model model_;
  std::vector<std::string> history_;
  std::string failure_;
};

// Starts rounds on the operating threads and waits for their end.
class RoundBarrier {
 public:
  explicit RoundBarrier(int threads) : threads_(threads) {}

  // Main thread: starts a round on every operating thread and returns once
  // all have finished it.
  void Run() ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    ++round_;
    finished_ = 0;
    cv_.NotifyAll();
    while (finished_ < threads_) cv_.Wait(&mu_);
  }
  // Main thread: every Await returns false from now on.
  void Quit() ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    quit_ = true;
    cv_.NotifyAll();
  }
  // Operating thread: waits for a round after `*seen`; false after Quit.
  bool Await(int64_t* seen) ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    while (round_ == *seen && !quit_) cv_.Wait(&mu_);
    *seen = round_;
    return !quit_;
  }
  // Operating thread: done with the round.
  void Finished() ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    if (++finished_ == threads_) cv_.NotifyAll();
  }

 private:
  const int threads_;
  Mutex mu_{LockRank::kOutsideLibrary};
  CondVar cv_;
  int64_t round_ ABSL_GUARDED_BY(mu_) = 0;
  int finished_ ABSL_GUARDED_BY(mu_) = 0;
  bool quit_ ABSL_GUARDED_BY(mu_) = false;
};

// One seed: a wheel on a ManualClock, the operating threads and their models.
class SeedRun {
 public:
  SeedRun(uint64_t seed, int threads) : rng_(seed), barrier_(threads) {
    const int64_t ticks_ns[] = {1000, 1000000, 1500000, 3000000};
    const int wheel_sizes[] = {2, 3, 8, 20, 64};
    tick_ns_ = ticks_ns[absl::Uniform(rng_, 0, 4)];
    wheel_size_ = wheel_sizes[absl::Uniform(rng_, 0, 5)];
    const int workers = absl::Uniform(rng_, 1, 3);
    // Shutdown in half the seeds, in a random round, by the main thread at
    // the barrier before it (-1) or by an operating thread during it.
    shutdown_round_ =
        absl::Uniform(rng_, 0, 2) == 0 ? absl::Uniform(rng_, 0, kRounds) : -1;
    shutter_ = absl::Uniform(rng_, -1, threads);
    config_ = absl::StrCat(
        "tick ", tick_ns_, "ns, wheel_size ", wheel_size_, ", workers ",
        workers, ", ",
        shutdown_round_ < 0
            ? "no Shutdown"
            : absl::StrCat("Shutdown in round ", shutdown_round_, " by ",
                           shutter_ < 0 ? "the main thread"
                                        : absl::StrCat("thread ", shutter_)));

    // The wheel's origin is wherever the clock is when it is created.
    clock_->Advance(
        absl::Nanoseconds(absl::Uniform<int64_t>(rng_, 0, 1000000000)));
    origin_ns_ = absl::ToInt64Nanoseconds(clock_->Now());
    Options options;
    options.clock = clock_;
    options.tick = absl::Nanoseconds(tick_ns_);
    options.wheel_size = wheel_size_;
    options.workers = workers;
    absl::StatusOr<std::unique_ptr<TimingWheel>> wheel =
        TimingWheel::Create(std::move(options));
    if (!wheel.ok()) {
      create_error_ = wheel.status().ToString();
      return;
    }
    wheel_ = *std::move(wheel);
    for (int t = 0; t < threads; ++t) {
      operators_.push_back(std::make_unique<Operator>(
          t, rng_(), tick_ns_, wheel_size_, origin_ns_, clock_));
    }
    for (int t = 0; t < threads; ++t) {
      threads_.emplace_back([this, t] {
        int64_t seen = 0;
        while (barrier_.Await(&seen)) {
          operators_[t]->Play(*wheel_, round_, signal_);
          barrier_.Finished();
        }
      });
    }
  }
  SeedRun(const SeedRun&) = delete;
  SeedRun& operator=(const SeedRun&) = delete;
  ~SeedRun() {
    barrier_.Quit();
    for (std::thread& thread : threads_) thread.join();
  }

  // Plays every round; returns the first mismatch, described, or "".
  std::string Play() {
    if (wheel_ == nullptr) return Describe("Create: " + create_error_);
    // Without Shutdown every round; with it, up to the round after it.
    const int last = shutdown_round_ < 0 ? kRounds - 1 : shutdown_round_ + 1;
    for (int round = 0; round <= last; ++round) {
      std::string failure = PlayRound(round);
      if (!failure.empty()) {
        return Describe(absl::StrCat("round ", round, ": ", failure));
      }
    }
    return "";
  }

 private:
  std::string PlayRound(int number) {
    const bool shutdown = number == shutdown_round_;
    if (shutdown && shutter_ < 0) {
      signal_.started.store(true);
      signal_.cancelled = wheel_->Shutdown();
      signal_.returned.store(true);
      history_.push_back(
          absl::StrCat("round ", number, ": Shutdown() = ", signal_.cancelled));
    }
    round_.number = number;
    round_.now_ns = NowNs();
    round_.shutter = shutdown ? shutter_ : -1;
    barrier_.Run();
    for (const auto& op : operators_) {
      if (!op->failure().empty()) return op->failure();
    }
    if (signal_.started.load()) {
      // The round of Shutdown, or the one after it.
      int64_t cancelled = 0;
      std::vector<std::string> failures;
      for (const auto& op : operators_) {
        const std::vector<std::string> more =
            op->model().SettleShutdown(NowNs(), &cancelled);
        failures.insert(failures.end(), more.begin(), more.end());
      }
      if (!failures.empty()) return absl::StrJoin(failures, "; ");
      if (shutdown && signal_.cancelled != cancelled) {
        return absl::StrCat("Shutdown() returned ", signal_.cancelled,
                            ", the models count ", cancelled, " pending");
      }
      if (wheel_->Pending() != 0) {
        return absl::StrCat("Pending() is ", wheel_->Pending(),
                            " after Shutdown");
      }
      // Nothing runs any more, however far the clock goes.
      Advance(number);
      return "";
    }
    if (std::string failure = Compare("the calls"); !failure.empty()) {
      return failure;
    }
    return Compare(Advance(number));
  }

  // Waits until the wheel is quiescent, then compares every timer and
  // Pending() with the models. `after` says what came last.
  std::string Compare(const std::string& after) {
    wheel_->WaitIdle();
    const int64_t now = NowNs();
    std::vector<std::string> failures;
    int64_t pending = 0;
    for (const auto& op : operators_) {
      const std::vector<std::string> more = op->model().Settle(now);
      failures.insert(failures.end(), more.begin(), more.end());
      pending += op->model().pending();
    }
    if (!failures.empty()) {
      return absl::StrCat("after ", after, ": ", absl::StrJoin(failures, "; "));
    }
    if (wheel_->Pending() != pending) {
      return absl::StrCat("after ", after, ": Pending() ", wheel_->Pending(),
                          ", the models ", pending);
    }
    return "";
  }

  // Moves the clock by a random step, staying below kClockCapNs; returns
  // what it did.
  std::string Advance(int number) {
    const int64_t now = NowNs();
    absl::Duration step = ModelStep(rng_, tick_ns_, wheel_size_);
    if (now + absl::ToInt64Nanoseconds(step) > kClockCapNs) {
      step = absl::Nanoseconds(
          absl::Uniform<int64_t>(rng_, 1, 4 * wheel_size_ * tick_ns_));
    }
    clock_->Advance(step);
    std::string what = absl::StrCat("Advance(", absl::FormatDuration(step),
                                    ") from ", now, "ns");
    history_.push_back(absl::StrCat("round ", number, ": ", what));
    return what;
  }

  int64_t NowNs() const {
    return absl::ToInt64Nanoseconds(clock_->Now()) - origin_ns_;
  }

  std::string Describe(const std::string& failure) const {
    const size_t shown = std::min<size_t>(history_.size(), 6);
    std::string out = absl::StrCat(
        config_, "\n", failure, "\n  the last ", shown,
        " steps of the main thread:\n    ",
        absl::StrJoin(history_.end() - shown, history_.end(), "\n    "));
    for (const auto& op : operators_)
      absl::StrAppend(&out, "\n", op->History());
    return out;
  }

  std::mt19937_64 rng_;
  int64_t tick_ns_;
  int wheel_size_;
  int shutdown_round_;
  int shutter_;
  std::string config_;
  const std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>();
  int64_t origin_ns_;
  std::string create_error_;
  std::unique_ptr<TimingWheel> wheel_;
  std::vector<std::unique_ptr<Operator>> operators_;
  std::vector<std::string> history_;
  Round round_;
  ShutdownSignal signal_;
  RoundBarrier barrier_;
  std::vector<std::thread> threads_;
};

TEST(ModelTest, WheelMatchesModelOnRandomCalls) {
  const uint64_t one = absl::GetFlag(FLAGS_seed);
  const int seeds = absl::GetFlag(FLAGS_seeds);
  const int threads = absl::GetFlag(FLAGS_threads);
  ASSERT_GE(seeds, 0) << "--seeds";
  ASSERT_TRUE(threads >= 0 && threads <= kMaxThreads) << "--threads";
  const uint64_t first = one != 0 ? one : 1;
  const uint64_t last = one != 0 ? one : (seeds != 0 ? seeds : kDefaultSeeds);
  for (uint64_t seed = first; seed <= last; ++seed) {
    const int n =
        threads != 0 ? threads : 1 + static_cast<int>(seed % kMaxThreads);
    const std::string failure = SeedRun(seed, n).Play();
    if (!failure.empty()) {
      ADD_FAILURE() << "seed " << seed << ", " << n << " threads: " << failure
                    << "\nrerun: model_test --seed=" << seed
                    << " --threads=" << n
                    << "\n(a failure that depends on a race may need "
                       "--gtest_repeat=1000 to show again)";
      break;  // one failing seed is enough to diagnose
    }
  }
}

}  // namespace
}  // namespace timingwheel

// gtest's flags first (also --gtest_list_tests, for gtest_discover_tests),
// then ours.
int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  absl::ParseCommandLine(argc, argv);
  return RUN_ALL_TESTS();
}
