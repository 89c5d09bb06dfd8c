// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// timingwheel_fuzz.cc: a libFuzzer target that drives one TimingWheel on a
// ManualClock with an operation language decoded from the input bytes, and
// checks it against a reference model derived from the API contract.
//
// Each input builds a fresh wheel (nothing is shared across inputs), runs at
// most kMaxOps operations on at most kMaxTimers timers, and is checked after
// every clock move: advance, TimingWheel::WaitIdle (nothing is due
// and every due callback returned), then compare. Any mismatch prints the
// wheel's options, the operations so far and the details, then traps.
//
// Input format (every read past the end yields 0):
//   byte 0   tick: kTicks[b % 8] (1us .. 1h, odd values included)
//   byte 1   wheel_size: kWheelSizes[b % 8] (2..8, and 20)
//   byte 2   workers: 1 + (b & 3) % 3; max_pending: 0 unless the high nibble
//            is >= 12, then 1..4
//   then operations, each an opcode byte and its arguments:
//     0xff        Shutdown (rare on purpose), after waiting idle
//     0xfe        Shutdown without waiting: it races timers being flushed or
//                 dispatched; each must then have run, or been cancelled
//                 and counted in Shutdown's result
//     b % 10 = 0, 1   AfterFunc(<delay>)
//              2      Every(<delay>) (<= 0 and infinite: errors); when
//                     (b / 10) % 4 == 3 its callback Stops its own timer
//                     on its first run
//              3      Stop(<timer>)
//              4      Reset(<timer>, <delay>)
//              5, 6   Advance(<advance>), then wait idle and check
//              7      Advance to the next deadline of a live timer (-1 ns,
//                     exactly, its tick, its tick -1 ns: the next byte)
//              8      wait idle and check, without moving the clock
//              9      Advance(<advance>) WITHOUT waiting: the operations
//                     that follow race the flushes, cascades and workers
//                     (it waits all the same when a periodic timer would be
//                     due, to keep periodic timers deterministic)
//   <timer>   one byte: index into the timers created so far
//   <delay>   a selector byte, then (by selector % 10): 0: zero; 1: negative
//             (u16 ns); 2: sub-tick (u32); 3: a level boundary
//             tick * wheel_size^k, +-1 tick, +-1 ns (two bytes); 4: u16
//             ticks; 5: u32 ns; 6: up to 100 years (u64); 7: 100 years +-1
//             ns (byte); 8: 100..290 years (u64; past the supported range
//             from some clock values on); 9: infinite
//   <advance> a selector byte, then (by selector % 8): 0: 1 ns; 1: 1 + u16
//             ns; 2: 1 + byte ticks; 3: a level boundary as above; 4: up to
//             1 + byte days; 5: 1 + byte % 8 years; 6: u32 ns; 7: u16 ticks
//   integers are little-endian.
//
// The model. For every timer it keeps the deadlines of the runs that must
// have started ("owed", in order) and its live arm (deadline; whether it was
// armed with d <= 0 and so dispatched at once; whether a check saw it not
// started at the current clock). Runs of one timer never overlap and a Reset
// of a timer that is not pending arms it anew only after its callback
// started, so the k-th recorded run belongs to the k-th owed deadline, and
// only the live arm can be unaccounted for. At a check, with
// the clock at T, the live arm must have run if it was dispatched at once or
// its deadline rounded up to a tick is <= T, may have run if its deadline is
// <= T (a cascade may dispatch it before its own tick), and must not have run
// otherwise. Every recorded run time (ManualClock::Now() in the callback)
// must be >= its deadline. Stop's and Reset's return values must match the
// model when the model knows the answer (the arm is not due, or is known to
// have started or to be cancelled); when it cannot know (a one-shot due by
// the clock and not seen idle since: armed with d <= 0, or passed by an
// advance without waiting) the return value decides. Periodic timers are
// kept deterministic: they only run while the harness waits idle (after
// arming one with d <= 0 it waits at once); one kind stops itself from its
// callback, and that Stop must return true and end its runs. After each
// check Pending(), and Stats' pending, scheduled, fired, stopped and
// cancelled, must equal the model's; AfterFunc and Every must fail with
// ResourceExhausted exactly when max_pending timers are pending (allowing
// for the timers whose start the model cannot know yet).
//
// Debugging: TIMINGWHEEL_FUZZ_TRACE=1 prints the operations as they run;
// `timingwheel_fuzz <file>` reruns one input.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "fuzz/fuzz_input.h"
#include "test_util.h"
#include "timingwheel/clock.h"
#include "timingwheel/timer.h"
#include "timingwheel/timingwheel.h"

namespace timingwheel {
namespace {

constexpr int kMaxOps = 64;
constexpr int kMaxTimers = 32;
constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
constexpr int64_t kNsPerDay = int64_t{86400} * 1000 * 1000 * 1000;
constexpr int64_t kNsPerYear = 365 * kNsPerDay;
constexpr int64_t kTicks[8] = {
    1000,                                // 1us, the minimum
    7919,                                // an odd tick
    1000 * 1000,                         // 1ms, the default
    1000 * 1000,                         //
    3 * 1000 * 1000 + 1,                 // 3ms + 1ns
    int64_t{1000} * 1000 * 1000,         // 1s
    int64_t{3600} * 1000 * 1000 * 1000,  // 1h
    100 * 1000,                          // 100us
};
constexpr int kWheelSizes[8] = {2, 3, 4, 5, 6, 7, 8, 20};

// a + b, saturated at INT64_MAX; b >= 0.
int64_t SatAdd(int64_t a, int64_t b) {
  return a > kMaxInt64 - b ? kMaxInt64 : a + b;
}

// a * b, saturated at INT64_MAX; a, b >= 0.
int64_t SatMul(int64_t a, int64_t b) {
  if (a != 0 && b > kMaxInt64 / a) return kMaxInt64;
  return a * b;
}

// A requested duration: finite nanoseconds, or infinite.
struct Delay {
  bool infinite = false;
  int64_t ns = 0;
  absl::Duration ToDuration() const {
    return infinite ? absl::InfiniteDuration() : absl::Nanoseconds(ns);
  }
  std::string ToString() const {
    return infinite ? "inf" : absl::StrCat(ns, "ns");
  }
};

// What the callbacks record: the clock's time at each start, per timer.
// Written by workers, read by the fuzzing thread after WaitIdle.
// A self-stopping timer's callback calls Stop() on its own handle on its
// first run and records what it returned.
class RunLog {
 public:
  explicit RunLog(const ManualClock* clock)
      : clock_(clock), timers_(kMaxTimers) {}
  void Record(size_t timer) {
    const int64_t now_ns = absl::ToInt64Nanoseconds(clock_->Now());
    Timer self;
    {
      std::lock_guard<std::mutex> lock(mu_);
      PerTimer& t = timers_[timer];
      t.runs.push_back(now_ns);
      if (t.runs.size() == 1) self = t.self;
    }
    if (self) {
      const bool stopped = self.Stop();
      std::lock_guard<std::mutex> lock(mu_);
      timers_[timer].self_stop_result = stopped ? 1 : 0;
    }
  }
  // Makes `timer` stop itself on its first run.
  void SetSelf(size_t timer, Timer self) {
    std::lock_guard<std::mutex> lock(mu_);
    timers_[timer].self = std::move(self);
  }
  std::vector<int64_t> Runs(size_t timer) const {
    std::lock_guard<std::mutex> lock(mu_);
    return timers_[timer].runs;
  }
  // -1 before the self Stop ran, else its result (0 or 1).
  int SelfStopResult(size_t timer) const {
    std::lock_guard<std::mutex> lock(mu_);
    return timers_[timer].self_stop_result;
  }
  // Drops the handles held for self-stopping timers.
  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    for (PerTimer& t : timers_) t.self = Timer();
  }

 private:
  struct PerTimer {
    std::vector<int64_t> runs;
    Timer self;
    int self_stop_result = -1;
  };
  const ManualClock* const clock_;
  mutable std::mutex mu_;
  std::vector<PerTimer> timers_;
};

struct ModelTimer {
  bool periodic = false;
  int64_t period_ns = 0;
  Timer handle;
  // Deadlines of the runs that must have started, in order.
  std::vector<int64_t> owed;
  // Runs already checked against `owed`.
  size_t checked = 0;
  // The live arm: pending by the model, not known to have started.
  bool live = false;
  int64_t deadline_ns = 0;
  // Armed with d <= 0: dispatched at once, it must run unless stopped.
  bool immediate = false;
  // A check saw the live arm not started, and the clock has not moved since:
  // it cannot start before the next advance.
  bool settled = false;
  // Stops itself from its first run (a periodic timer).
  bool self_stop = false;
};

class Fuzzer {
 public:
  explicit Fuzzer(Input& in) : in_(in) {
    tick_ns_ = kTicks[in_.Byte() % 8];
    wheel_size_ = kWheelSizes[in_.Byte() % 8];
    const uint8_t b = in_.Byte();
    workers_ = 1 + (b & 3) % 3;
    max_pending_ = (b >> 4) >= 12 ? (b >> 4) - 11 : 0;
    max_deadline_ns_ = kMaxInt64 / tick_ns_ * tick_ns_;
  }

  void Run() {
    clock_ = std::make_shared<ManualClock>();
    log_ = std::make_unique<RunLog>(clock_.get());
    Options options;
    options.tick = absl::Nanoseconds(tick_ns_);
    options.wheel_size = wheel_size_;
    options.workers = workers_;
    options.clock = clock_;
    options.max_pending = max_pending_;
    absl::StatusOr<std::unique_ptr<TimingWheel>> wheel =
        TimingWheel::Create(std::move(options));
    if (!wheel.ok()) Fail(absl::StrCat("Create: ", wheel.status().ToString()));
    wheel_ = *std::move(wheel);

    for (int op = 0; op < kMaxOps && !in_.empty(); ++op) Step();
    WaitIdleAndCheck();

    // The wheel goes away first; the handles must stay safe and inert.
    const bool was_shut_down = shut_down_;
    if (!was_shut_down) ShutdownOp();
    wheel_.reset();
    for (size_t i = 0; i < timers_.size(); ++i) {
      if (timers_[i].handle.Stop())
        Fail(absl::StrCat("t", i, ": Stop true after the wheel is gone"));
      if (timers_[i].handle.Reset(absl::Seconds(1))) {
        Fail(absl::StrCat("t", i, ": Reset true after the wheel is gone"));
      }
    }
    for (size_t i = 0; i < timers_.size(); ++i) {
      if (log_->Runs(i).size() != timers_[i].checked) {
        Fail(absl::StrCat("t", i, ": ran after Shutdown"));
      }
    }
    log_->Clear();
    timers_.clear();
  }

 private:
  // ---- Decoding -------------------------------------------------------------

  // tick * wheel_size^k + dticks * tick + dns, saturated.
  int64_t Boundary() {
    const int k = in_.Byte() % 14;
    const int adj = in_.Byte();
    int64_t base = tick_ns_;
    for (int i = 0; i < k; ++i) base = SatMul(base, wheel_size_);
    base = std::min(base, 250 * kNsPerYear);
    return base + (adj % 3 - 1) * tick_ns_ + ((adj / 3) % 3 - 1);
  }

  Delay DecodeDelay() {
    Delay d;
    switch (in_.Byte() % 10) {
      case 0:
        break;
      case 1:
        d.ns = -1 - static_cast<int64_t>(in_.Uint(2));
        break;
      case 2:
        d.ns = 1 + static_cast<int64_t>(in_.Uint(4) % tick_ns_);
        break;
      case 3:
        d.ns = Boundary();
        break;
      case 4:
        d.ns = static_cast<int64_t>(in_.Uint(2)) * tick_ns_;
        break;
      case 5:
        d.ns = static_cast<int64_t>(in_.Uint(4));
        break;
      case 6:
        d.ns = static_cast<int64_t>(in_.Uint(8) % (100 * kNsPerYear + 1));
        break;
      case 7:
        d.ns = 100 * kNsPerYear + (in_.Byte() % 3 - 1);
        break;
      case 8:
        d.ns = 100 * kNsPerYear +
               static_cast<int64_t>(in_.Uint(8) % (190 * kNsPerYear));
        break;
      case 9:
        d.infinite = true;
        break;
    }
    return d;
  }

  int64_t DecodeAdvance() {
    switch (in_.Byte() % 8) {
      case 0:
        return 1;
      case 1:
        return 1 + static_cast<int64_t>(in_.Uint(2));
      case 2:
        return (1 + in_.Byte()) * tick_ns_;
      case 3:
        return std::max<int64_t>(1, Boundary());
      case 4:
        return static_cast<int64_t>(1 + in_.Byte()) * kNsPerDay;
      case 5:
        return (1 + in_.Byte() % 8) * kNsPerYear;
      case 6:
        return static_cast<int64_t>(in_.Uint(4));
      default:
        return static_cast<int64_t>(in_.Uint(2)) * tick_ns_;
    }
  }

  // ---- Operations -----------------------------------------------------------

  void Step() {
    const uint8_t op = in_.Byte();
    if (op >= 0xfe) {
      ShutdownOp(/*wait=*/op == 0xff);
      return;
    }
    switch (op % 10) {
      case 0:
      case 1:
        AfterFuncOp(DecodeDelay());
        break;
      case 2:
        EveryOp(DecodeDelay(), /*self_stop=*/(op / 10) % 4 == 3);
        break;
      case 3:
        if (timers_.empty()) break;
        StopOp(in_.Byte() % timers_.size());
        break;
      case 4: {
        if (timers_.empty()) break;
        const size_t t = in_.Byte() % timers_.size();
        ResetOp(t, DecodeDelay());
        break;
      }
      case 5:
      case 6:
        AdvanceOp(DecodeAdvance());
        break;
      case 7:
        AdvanceToDeadlineOp(in_.Byte());
        break;
      case 8:
        Trace("check");
        WaitIdleAndCheck();
        break;
      default:
        AdvanceOp(DecodeAdvance(), /*wait=*/false);
        break;
    }
  }

  // The status AfterFunc / Every must return for delay `d` (Every: period),
  // or nullopt when either success or ResourceExhausted is right (max_pending
  // with timers whose start the model cannot know).
  std::optional<absl::StatusCode> ExpectedScheduleStatus(const Delay& d,
                                                         bool every) {
    if (d.infinite || (every && d.ns <= 0)) {
      return absl::StatusCode::kInvalidArgument;
    }
    if (shut_down_) return absl::StatusCode::kFailedPrecondition;
    if (d.ns > 0 && d.ns > max_deadline_ns_ - now_ns_) {
      return absl::StatusCode::kInvalidArgument;
    }
    if (max_pending_ > 0) {
      int64_t certain = 0;
      int64_t uncertain = 0;
      for (const ModelTimer& t : timers_) {
        if (t.live) {
          (ExpectedPending(t).has_value() ? certain : uncertain) += 1;
        }
        // A one-shot run that started since the last check may still be
        // counted: a worker moves the state to running, then decrements the
        // pending count (Engine::RunTask). The cap must agree at rest only
        // (DESIGN.md, trap 9).
        if (!t.periodic && t.owed.size() > t.checked) {
          uncertain += static_cast<int64_t>(t.owed.size() - t.checked);
        }
      }
      if (certain >= max_pending_) return absl::StatusCode::kResourceExhausted;
      if (certain + uncertain >= max_pending_) return std::nullopt;
    }
    return absl::StatusCode::kOk;
  }

  // Arms the live arm of `t` at now + d (d <= 0: now, dispatched at once).
  void ArmModel(ModelTimer& t, int64_t d_ns) {
    t.live = true;
    t.settled = false;
    t.immediate = d_ns <= 0;
    t.deadline_ns = d_ns <= 0 ? now_ns_ : now_ns_ + d_ns;
  }

  void AfterFuncOp(const Delay& d) {
    Trace(absl::StrCat("AfterFunc(", d.ToString(), ")"));
    Schedule(d, /*every=*/false);
  }

  void EveryOp(const Delay& d, bool self_stop) {
    Trace(absl::StrCat("Every(", d.ToString(), self_stop ? ", self-stop" : "",
                       ")"));
    Schedule(d, /*every=*/true, self_stop);
  }

  void Schedule(const Delay& d, bool every, bool self_stop = false) {
    if (timers_.size() >= kMaxTimers) return;
    const std::optional<absl::StatusCode> expected =
        ExpectedScheduleStatus(d, every);
    const size_t id = timers_.size();
    RunLog* log = log_.get();
    auto callback = [log, id] { log->Record(id); };
    absl::StatusOr<Timer> timer =
        every ? wheel_->Every(d.ToDuration(), callback)
              : wheel_->AfterFunc(d.ToDuration(), callback);
    const absl::StatusCode got = timer.status().code();
    if (expected.has_value()
            ? got != *expected
            : got != absl::StatusCode::kOk &&
                  got != absl::StatusCode::kResourceExhausted) {
      Fail(absl::StrCat(every ? "Every" : "AfterFunc", ": expected ",
                        expected.has_value()
                            ? absl::StatusCodeToString(*expected)
                            : std::string("OK or RESOURCE_EXHAUSTED"),
                        ", got ", timer.status().ToString()));
    }
    if (!timer.ok()) {
      Trace(absl::StrCat("  -> ", timer.status().ToString()));
      return;
    }
    Trace(absl::StrCat("  -> t", id));
    ++scheduled_;
    ModelTimer& t = timers_.emplace_back();
    t.periodic = every;
    t.period_ns = every ? d.ns : 0;
    t.handle = *std::move(timer);
    t.self_stop = self_stop;
    // Its first run is at least one period away: no run can miss this.
    if (self_stop) log_->SetSelf(id, t.handle);
    ArmModel(t, d.ns);
  }

  // What Stop / Reset must return for `t`: nullopt when either is right.
  std::optional<bool> ExpectedPending(const ModelTimer& t) const {
    if (shut_down_ || !t.live) return false;
    if (t.periodic || t.deadline_ns > now_ns_ || t.settled) return true;
    return std::nullopt;  // due, and not seen idle since: it may have started
  }

  // Applies a Stop-like result `got` (checked against the model) to `t`.
  void ApplyStop(size_t id, bool got, const char* what) {
    ModelTimer& t = timers_[id];
    const std::optional<bool> expected = ExpectedPending(t);
    if (expected.has_value() && got != *expected) {
      Fail(absl::StrCat("t", id, ": ", what, " returned ", got,
                        ", the model expected ", *expected));
    }
    if (t.live && !got) {
      // It had started: that run is owed.
      t.owed.push_back(t.deadline_ns);
    }
    t.live = false;
    t.immediate = false;
    t.settled = false;
  }

  void StopOp(size_t id) {
    const bool got = timers_[id].handle.Stop();
    Trace(absl::StrCat("Stop(t", id, ") -> ", got));
    if (got) ++stopped_;
    ApplyStop(id, got, "Stop");
  }

  void ResetOp(size_t id, const Delay& d) {
    ModelTimer& t = timers_[id];
    const bool got = t.handle.Reset(d.ToDuration());
    Trace(absl::StrCat("Reset(t", id, ", ", d.ToString(), ") -> ", got));
    if (shut_down_) {
      if (got) Fail(absl::StrCat("t", id, ": Reset true after Shutdown"));
      return;
    }
    if (d.infinite || (d.ns > 0 && d.ns > max_deadline_ns_ - now_ns_)) {
      // Cannot be armed: Reset stops the timer.
      if (got) ++stopped_;
      ApplyStop(id, got, "Reset (out of range, as Stop)");
      return;
    }
    ApplyStop(id, got, "Reset");
    if (!got) ++scheduled_;  // an arm of a timer that was not pending
    ArmModel(t, d.ns);
    if (t.periodic && t.immediate) {
      // Keep periodic timers deterministic: its run happens now.
      WaitIdleAndCheck();
    }
  }

  void AdvanceOp(int64_t d_ns, bool wait = true) {
    const int64_t now_ns = SatAdd(now_ns_, d_ns);
    for (const ModelTimer& t : timers_) {
      // A periodic run racing the fuzzing thread would make its next
      // deadline depend on timing.
      if (t.live && t.periodic && t.deadline_ns <= now_ns) wait = true;
    }
    Trace(absl::StrCat("Advance(", d_ns, "ns", wait ? "" : ", no wait", ")"));
    clock_->Advance(absl::Nanoseconds(d_ns));
    now_ns_ = now_ns;
    Trace(absl::StrCat("  now = ", now_ns_, "ns"));
    for (ModelTimer& t : timers_) t.settled = false;
    if (wait) WaitIdleAndCheck();
  }

  void AdvanceToDeadlineOp(uint8_t variant) {
    std::optional<int64_t> next;
    for (const ModelTimer& t : timers_) {
      if (t.live && t.deadline_ns > now_ns_) {
        next = std::min(next.value_or(kMaxInt64), t.deadline_ns);
      }
    }
    if (!next.has_value()) {
      AdvanceOp(tick_ns_);
      return;
    }
    int64_t target = *next;
    switch (variant % 4) {
      case 0:
        target = *next - 1;
        break;
      case 1:
        break;
      case 2:
        target = CeilTick(*next);
        break;
      default:
        target = CeilTick(*next) - 1;
        break;
    }
    AdvanceOp(std::max<int64_t>(1, target - now_ns_));
  }

  // Without `wait`, a live arm that may have started (due, not seen idle)
  // must, once Shutdown has returned (it joins the workers), have run or been
  // cancelled; every other live arm must have been cancelled.
  void ShutdownOp(bool wait = true) {
    Trace(wait ? "Shutdown" : "Shutdown (no wait)");
    if (wait) WaitIdleAndCheck();
    const int64_t got = wheel_->Shutdown();
    Trace(absl::StrCat("  -> ", got));
    int64_t expected = 0;
    for (size_t id = 0; id < timers_.size(); ++id) {
      ModelTimer& t = timers_[id];
      const std::vector<int64_t> runs = log_->Runs(id);
      if (!shut_down_ && t.live) {
        if (!ExpectedPending(t).has_value() &&
            runs.size() == t.owed.size() + 1) {
          t.owed.push_back(t.deadline_ns);  // it started before Shutdown
        } else {
          ++expected;  // cancelled by Shutdown
        }
      }
      t.live = false;
      if (runs.size() != t.owed.size()) {
        Fail(absl::StrCat("t", id, ": ran ", runs.size(),
                          " times by Shutdown; the model expected ",
                          t.owed.size(), TimerDetails(t, runs)));
      }
      for (size_t k = t.checked; k < runs.size(); ++k) {
        if (runs[k] < t.owed[k]) {
          Fail(absl::StrCat("t", id, ": run ", k, " started at ", runs[k],
                            "ns, its deadline is ", t.owed[k], "ns",
                            TimerDetails(t, runs)));
        }
        ++fired_;
      }
      t.checked = runs.size();
    }
    if (got != expected) {
      Fail(absl::StrCat("Shutdown returned ", got, ", the model expected ",
                        expected, " pending timers"));
    }
    if (!shut_down_) cancelled_ = expected;
    shut_down_ = true;
    CheckCounters();
  }

  // ---- Checks
  // -----------------------------------------------------------------

  int64_t CeilTick(int64_t ns) const {
    if (ns > max_deadline_ns_) return kMaxInt64;
    const int64_t q = ns / tick_ns_ + (ns % tick_ns_ > 0 ? 1 : 0);
    return q * tick_ns_;
  }

  int64_t LivePending() const {
    int64_t n = 0;
    for (const ModelTimer& t : timers_) n += t.live ? 1 : 0;
    return n;
  }

  // Every's next deadline after a run for `deadline` that returned at `now`
  // (the next point of deadline + k * period after now), or nullopt when that
  // is past the supported range and the schedule ends.
  std::optional<int64_t> NextPeriodic(const ModelTimer& t,
                                      int64_t deadline) const {
    const int64_t behind = std::max<int64_t>(0, now_ns_ - deadline);
    const int64_t steps = behind / t.period_ns + 1;
    if (steps > (max_deadline_ns_ - deadline) / t.period_ns) {
      return std::nullopt;
    }
    return deadline + steps * t.period_ns;
  }

  void WaitIdleAndCheck() {
    if (!shut_down_) wheel_->WaitIdle();
    for (size_t id = 0; id < timers_.size(); ++id) CheckTimer(id);
    CheckCounters();
  }

  void CheckTimer(size_t id) {
    ModelTimer& t = timers_[id];
    const std::vector<int64_t> runs = log_->Runs(id);
    const size_t owed = t.owed.size();
    size_t min_runs = owed;
    size_t max_runs = owed;
    if (t.live) {
      if (t.immediate || CeilTick(t.deadline_ns) <= now_ns_) ++min_runs;
      if (t.deadline_ns <= now_ns_) ++max_runs;
    }
    if (runs.size() < min_runs || runs.size() > max_runs) {
      Fail(absl::StrCat("t", id, ": ran ", runs.size(),
                        " times; the model expected ", min_runs, "..", max_runs,
                        TimerDetails(t, runs)));
    }
    if (runs.size() > owed) {
      t.owed.push_back(t.deadline_ns);
      t.immediate = false;
      if (!t.periodic) {
        t.live = false;
      } else if (t.self_stop) {
        // Its callback stopped it: that Stop must have returned true.
        const int result = log_->SelfStopResult(id);
        if (result != 1) {
          Fail(absl::StrCat("t", id, ": Stop from its own callback returned ",
                            result, ", expected 1", TimerDetails(t, runs)));
        }
        ++stopped_;
        t.live = false;
        t.self_stop = false;  // only its first run stops it
      } else if (std::optional<int64_t> next = NextPeriodic(t, t.deadline_ns)) {
        t.deadline_ns = *next;
      } else {
        t.live = false;  // past the supported range: the schedule ended
      }
    }
    if (t.live) {
      // Quiescent: a live arm that has not started cannot start before the
      // clock moves.
      t.immediate = false;
      t.settled = true;
    }
    for (size_t k = t.checked; k < runs.size(); ++k) {
      if (runs[k] < t.owed[k] || runs[k] > now_ns_) {
        Fail(absl::StrCat("t", id, ": run ", k, " started at ", runs[k],
                          "ns, its deadline is ", t.owed[k], "ns",
                          TimerDetails(t, runs)));
      }
      ++fired_;
    }
    t.checked = runs.size();
  }

  void CheckCounters() {
    const int64_t pending = wheel_->Pending();
    const int64_t expected = shut_down_ ? 0 : LivePending();
    if (pending != expected) {
      Fail(
          absl::StrCat("Pending() is ", pending, ", the model has ", expected));
    }
    const Stats stats = wheel_->GetStats();
    if (stats.pending != expected || stats.fired != fired_ ||
        stats.stopped != stopped_ || stats.scheduled != scheduled_ ||
        stats.cancelled != cancelled_) {
      Fail(absl::StrFormat(
          "GetStats: pending %d fired %d stopped %d scheduled %d cancelled "
          "%d; the model has %d %d %d %d %d",
          stats.pending, stats.fired, stats.stopped, stats.scheduled,
          stats.cancelled, expected, fired_, stopped_, scheduled_, cancelled_));
    }
  }

  std::string TimerDetails(const ModelTimer& t,
                           const std::vector<int64_t>& runs) const {
    std::string s = absl::StrCat(
        "\n  ", t.periodic ? "periodic" : "one-shot", " period=", t.period_ns,
        "ns live=", t.live, " deadline=", t.deadline_ns,
        "ns immediate=", t.immediate, " settled=", t.settled,
        " self_stop=", t.self_stop, " now=", now_ns_, "ns\n  owed:");
    for (int64_t o : t.owed) absl::StrAppend(&s, " ", o);
    absl::StrAppend(&s, "\n  runs:");
    for (int64_t r : runs) absl::StrAppend(&s, " ", r);
    return s;
  }

  // ---- Reporting ------------------------------------------------------------

  void Trace(std::string line) {
    static const bool echo = std::getenv("TIMINGWHEEL_FUZZ_TRACE") != nullptr;
    if (echo) {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
    trace_.push_back(std::move(line));
  }

  [[noreturn]] void Fail(const std::string& what) {
    std::fprintf(stderr,
                 "\n==== timingwheel_fuzz: MISMATCH ====\n"
                 "options: tick=%lldns wheel_size=%d workers=%d "
                 "max_pending=%lld\noperations:\n",
                 static_cast<long long>(tick_ns_), wheel_size_, workers_,
                 static_cast<long long>(max_pending_));
    for (const std::string& line : trace_) {
      std::fprintf(stderr, "  %s\n", line.c_str());
    }
    std::fprintf(stderr, "mismatch: %s\n", what.c_str());
    std::fflush(stderr);
    __builtin_trap();
  }

  Input& in_;
  int64_t tick_ns_ = 0;
  int wheel_size_ = 0;
  int workers_ = 0;
  int64_t max_pending_ = 0;
  int64_t max_deadline_ns_ = 0;

  // Declared before the wheel: the callbacks use the log, the wheel the clock.
  std::shared_ptr<ManualClock> clock_;
  std::unique_ptr<RunLog> log_;
  std::vector<ModelTimer> timers_;
  std::unique_ptr<TimingWheel> wheel_;

  int64_t now_ns_ = 0;
  bool shut_down_ = false;
  int64_t scheduled_ = 0;
  int64_t fired_ = 0;
  int64_t stopped_ = 0;
  int64_t cancelled_ = 0;
  std::vector<std::string> trace_;
};

}  // namespace
}  // namespace timingwheel

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  timingwheel::Input in(data, size);
  timingwheel::Fuzzer fuzzer(in);
  fuzzer.Run();
  return 0;
}
