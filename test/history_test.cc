// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// history_test.cc: concurrent histories of the timer contract, each checked
// for a serial order that explains it.
//
// A run (one seed) makes a wheel on a ManualClock with the built-in worker
// pool, then three threads call AfterFunc, Every, Stop, Reset, State and, in
// some seeds, Shutdown or CancelAll on timers they share, while a driver
// thread advances the clock. In three seeds of four, half the one-shot
// timers are made by AfterFuncId and reached through their TimerId (Stop,
// Reset, Pending), their callbacks through Timer::Current(). Every call is
// logged with a sequence number taken just before it and one just after it
// returned (one atomic counter: the real-time order), the clock readings around
// it, and what it returned; every callback logs its start and its end the same
// way (sequence number and clock). Some callbacks stop or reset their own timer
// or ask its state, and some linger, so that other threads' calls meet them
// running. At the end the workload settles (the wheel idle at the last time),
// then the clock moves past every deadline and the wheel idles again; both
// points are logged.
//
// The checker (CheckHistory) then looks, for each timer, for a serial order
// of its calls, its callback starts and ends, and Shutdown's two moments
// (closing, then cancelling), that respects the real-time order (an event
// that ended before another began comes first) and that the contract's
// serial specification accepts, per arm (AfterFunc or Every make arm 0, each
// Reset that arms again makes the next arm, each run of a periodic timer the
// next one):
//   * Stop returns true only for an arm that is pending (not started; for a
//     periodic timer, not stopped), at most once; no run of that arm after.
//   * Reset returns true for a pending arm, which it supersedes, else false;
//     it arms again either way, after the run if the callback is running,
//     except when it finds the wheel shut down or the timer cancelled (false,
//     nothing armed), or, by id, the id spent: the run returned, or a Stop
//     took the arm or the re-arm (false, nothing armed). A Reset that found the
//     wheel open takes effect before Shutdown cancels anything, possibly after
//     a later Reset was refused (see kMaxRacingResets).
//   * CancelAll first looks whether the wheel is shut down (then it does
//     nothing: Shutdown cancels the timers), then takes effect on each timer
//     at one point of its call: a pending arm is cancelled (for good), a
//     running callback's re-arm too (the run goes on, and ends cancelled);
//     its count adds up to the arms it cancelled.
//   * State answers what the timer is at one point of its call: pending
//     (also a periodic timer's run), running (not armed again), fired,
//     stopped or cancelled; Pending(id) whether it is pending.
//   * A run starts only from a pending arm, never before its deadline (for
//     a periodic timer: the previous deadline plus a period, and after the
//     previous run ended); runs of one timer never overlap. (Not before the
//     deadline's tick either, only when the arm waited in a bucket: an arm
//     whose deadline has passed when it is armed or cascades is dispatched
//     at once.)
//   * Nothing lost: at each idle point an arm whose deadline's tick has
//     passed has run (or was stopped or superseded).
//   * Shutdown's counts add up to the arms it cancelled; AfterFunc fails only
//     once Shutdown has begun. The counts of Shutdown and CancelAll are
//     checked together: some choice, per timer, of which cancelled it (or
//     neither) must give both.
// An arm's deadline is known only within the clock readings around its call
// (or, for a periodic re-arm, within a period of its run), so the checker
// keeps the earliest and latest deadline possible. The search is exhaustive
// with memoization; histories are small (3 threads x 20 to 40 calls).
// The checker is itself tested on hand-made bad histories below, and
// tools/mutation_check.sh shows it catching bugs injected into the hand-off.
//
// Seeds: 1 to 2000 (400 under sanitizers), in 4 shards. A failure prints its
// seed and history; replay it with
//   TIMINGWHEEL_HISTORY_SEED=N history_test --gtest_filter='*Concurrent*'
// (the same calls on the same timers; the interleaving is the scheduler's),
// or run more seeds with TIMINGWHEEL_HISTORY_SEEDS=COUNT.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "test_util.h"
#include "timingwheel/clock.h"
#include "timingwheel/timer.h"
#include "timingwheel/timingwheel.h"

namespace timingwheel {
namespace {

// ---------------------------------------------------------------------------
// The history

enum class OpKind {
  kAfterFunc,
  kEvery,
  kStop,
  kReset,
  kShutdown,
  kCancelAll,
  kState,
  kPending,  // TimingWheel::Pending(id)
};

struct Op {
  OpKind kind = OpKind::kStop;
  // The timer made or acted on; -1 for Shutdown, CancelAll and a failed
  // AfterFunc/Every.
  int timer = -1;
  int64_t inv = 0;            // sequence number taken just before the call
  int64_t resp = 0;           // and just after it returned
  absl::Duration clock_inv;   // the clock read before `inv`
  absl::Duration clock_resp;  // and after `resp`
  absl::Duration d;           // AfterFunc's and Reset's delay, Every's period
  bool ok = false;    // AfterFunc/Every succeeded; Stop/Reset returned true
  int64_t count = 0;  // what Shutdown or CancelAll returned
  TimerState state = TimerState::kNone;  // what State returned
  bool in_callback = false;              // called by the timer's own callback
  // AfterFuncId, and the calls through its TimerId (Stop, Reset, Pending):
  // an id is spent once its timer ran or was stopped (Reset arms nothing).
  bool by_id = false;
};

// One callback run: its first and last actions.
struct CallbackRun {
  int timer = -1;
  int64_t start_seq = 0;
  absl::Duration start_clock;
  int64_t end_seq = 0;
  absl::Duration end_clock;
};

// A point at which the wheel was idle: no call in progress, every callback
// due by the clock started and returned (TimingWheel::WaitIdle).
struct IdlePoint {
  int64_t seq = 0;
  absl::Duration clock;
};

struct History {
  absl::Duration tick = absl::Milliseconds(1);
  std::vector<Op> ops;
  std::vector<CallbackRun> runs;
  std::vector<IdlePoint> idle;  // in sequence order
};

std::string Describe(const Op& op) {
  std::string call;
  switch (op.kind) {
    case OpKind::kAfterFunc:
      call = absl::StrCat(op.by_id ? "AfterFuncId(" : "AfterFunc(",
                          absl::FormatDuration(op.d), ") -> ",
                          op.ok ? "ok" : "failed");
      break;
    case OpKind::kEvery:
      call = absl::StrCat("Every(", absl::FormatDuration(op.d), ") -> ",
                          op.ok ? "ok" : "failed");
      break;
    case OpKind::kStop:
      call = absl::StrCat(op.by_id ? "Stop(id)" : "Stop()", " -> ", op.ok);
      break;
    case OpKind::kReset:
      call = absl::StrCat(op.by_id ? "Reset(id, " : "Reset(",
                          absl::FormatDuration(op.d), ") -> ", op.ok);
      break;
    case OpKind::kPending:
      call = absl::StrCat("Pending(id) -> ", op.ok);
      break;
    case OpKind::kShutdown:
      call = absl::StrCat("Shutdown() -> ", op.count);
      break;
    case OpKind::kCancelAll:
      call = absl::StrCat("CancelAll() -> ", op.count);
      break;
    case OpKind::kState: {
      std::ostringstream state;
      state << op.state;
      call = absl::StrCat("State() -> ", state.str());
      break;
    }
  }
  return absl::StrCat(
      "[", op.inv, ", ", op.resp, "] ",
      op.timer >= 0 ? absl::StrCat("timer ", op.timer, " ") : "", call,
      op.in_callback ? " (from its callback)" : "", "  clock ",
      absl::FormatDuration(op.clock_inv), "..",
      absl::FormatDuration(op.clock_resp));
}

std::string Describe(const CallbackRun& run) {
  return absl::StrCat("[", run.start_seq, ", ", run.end_seq, "] timer ",
                      run.timer, " callback ran, clock ",
                      absl::FormatDuration(run.start_clock), "..",
                      absl::FormatDuration(run.end_clock));
}

// ---------------------------------------------------------------------------
// The checker

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

int64_t Ns(absl::Duration d) { return absl::ToInt64Nanoseconds(d); }

// A timer's state in the serial specification.
enum class Phase : uint8_t {
  kUnborn,            // AfterFunc/Every not yet taken effect
  kPending,           // an arm waits for its deadline
  kRunning,           // a callback runs, nothing armed after it
  kRunningArmed,      // a callback runs, the next arm waits for it to return
  kRunningStopped,    // a callback runs, a true Stop took the next arm
  kRunningCancelled,  // a callback runs, CancelAll took the next arm
  kDone,              // a one-shot run returned
  kStopped,           // a true Stop took the pending arm
  kCancelled,         // Shutdown or CancelAll cancelled the pending arm
};

// What Timer::State() answers in `phase`.
TimerState StateIn(Phase phase) {
  switch (phase) {
    case Phase::kPending:
    case Phase::kRunningArmed:
      return TimerState::kPending;
    case Phase::kRunning:
    case Phase::kRunningStopped:
    case Phase::kRunningCancelled:
      return TimerState::kRunning;
    case Phase::kDone:
      return TimerState::kFired;
    case Phase::kStopped:
      return TimerState::kStopped;
    case Phase::kCancelled:
      return TimerState::kCancelled;
    case Phase::kUnborn:
      break;
  }
  return TimerState::kNone;
}

struct ModelState {
  Phase phase = Phase::kUnborn;
  bool closed = false;      // Shutdown's close has taken effect
  bool cancelling = false;  // Shutdown's cancel has taken effect
  // kRunningArmed: the next arm is the periodic one (not a Reset's), due
  // after this run ends.
  bool rearm_by_period = false;
  uint8_t cancelled = 0;      // arms Shutdown cancelled (0 or 1)
  uint8_t cancelled_all = 0;  // arms CancelAll cancelled (0 or 1)
  // CancelAll's look at the wheel: 0 not yet, 1 open, 2 shut down.
  uint8_t cancel_all_look = 0;
  int32_t runs = 0;  // runs started
  // The pending arm's (or the next arm's) deadline lies in [earliest,
  // latest], in nanoseconds of the clock; latest is kNever while unknown.
  int64_t earliest = 0;
  int64_t latest = kNever;
  // Resets racing Shutdown, by Event::racing bit: which found the wheel open
  // (admitted) or closed, and which admitted ones have not taken effect yet.
  uint64_t checked = 0;
  uint64_t admitted = 0;
  uint64_t in_flight = 0;

  void AppendKey(std::string* key) const {
    const int64_t words[] = {
        static_cast<int64_t>(phase) | int64_t{closed} << 8 |
            int64_t{cancelling} << 9 | int64_t{rearm_by_period} << 10 |
            int64_t{cancelled} << 11 | int64_t{cancelled_all} << 12 |
            int64_t{cancel_all_look} << 13,
        runs,
        earliest,
        latest,
        static_cast<int64_t>(checked),
        static_cast<int64_t>(admitted),
        static_cast<int64_t>(in_flight)};
    key->append(reinterpret_cast<const char*>(words), sizeof(words));
  }
};

enum class EventKind {
  kOp,
  kResetCheck,  // a Reset racing Shutdown looks whether the wheel is open
  kStart,
  kEnd,
  kClose,
  kCancel,
  kCancelAllLook,  // CancelAll looks whether the wheel is shut down
  kCancelAll,      // CancelAll's effect on this timer
  kIdle,
};

// One event of a timer's history, with the window of sequence numbers in
// which it took effect.
struct Event {
  int64_t inv = 0;
  int64_t resp = 0;
  EventKind kind = EventKind::kOp;
  int index = 0;  // into History::ops, the timer's runs, or History::idle
  // For a Reset whose call overlaps Shutdown's: its bit in the masks of
  // ModelState (its kOp and kResetCheck events share it); else -1.
  int racing = -1;
};

// A Reset looks whether the wheel is shut down first, then takes effect
// under the timer's lock; Shutdown waits for the Resets that found it open
// before it cancels anything. So for a Reset that races Shutdown the checker
// has two events: the look (admitted, or refused: false and nothing armed)
// and the effect, which for an admitted Reset may come after Shutdown closed
// the wheel (a Reset that started later was refused meanwhile), but before
// Shutdown cancels. Other Resets come wholly before or after Shutdown.
constexpr int kMaxRacingResets = 64;

// Searches the serial orders of one timer's events.
class TimerSearch {
 public:
  TimerSearch(const History& history, std::vector<const CallbackRun*> runs,
              std::vector<Event> events, bool periodic, int64_t period_ns)
      : history_(history),
        runs_(std::move(runs)),
        events_(std::move(events)),
        periodic_(periodic),
        period_ns_(period_ns),
        tick_ns_(Ns(history.tick)) {
    std::sort(events_.begin(), events_.end(),
              [](const Event& a, const Event& b) { return a.inv < b.inv; });
  }

  // Whether some order explains the events; with `want_shutdown` (or
  // `want_cancel_all`) >= 0, one in which Shutdown (CancelAll) cancelled that
  // many of this timer's arms.
  absl::StatusOr<bool> Explain(int want_shutdown, int want_cancel_all) {
    want_shutdown_ = want_shutdown;
    want_cancel_all_ = want_cancel_all;
    seen_.clear();
    steps_ = 0;
    deepest_.clear();
    deepest_stuck_.clear();
    std::vector<bool> done(events_.size(), false);
    std::vector<int> order;
    const bool found = Search(&done, &order, ModelState{});
    if (steps_ > kMaxSteps) {
      return absl::ResourceExhaustedError("search budget exhausted");
    }
    return found;
  }

  // The longest prefix of events some order could explain, and what it was
  // stuck on: for the failure message.
  std::string DeepestPrefix() const {
    std::string out = "  longest explained prefix:\n";
    for (int i : deepest_) {
      absl::StrAppend(&out, "    ", Name(events_[i]), "\n");
    }
    absl::StrAppend(&out, "  then none of these fits:\n");
    for (int i : deepest_stuck_) {
      absl::StrAppend(&out, "    ", Name(events_[i]), "\n");
    }
    return out;
  }

  std::string Name(const Event& event) const {
    switch (event.kind) {
      case EventKind::kOp:
        return Describe(history_.ops[event.index]);
      case EventKind::kResetCheck:
        return absl::StrCat("the look at the wheel of ",
                            Describe(history_.ops[event.index]));
      case EventKind::kStart:
        return absl::StrCat(
            "start of run ", event.index, " at clock ",
            absl::FormatDuration(runs_[event.index]->start_clock),
            " (logged at ", runs_[event.index]->start_seq, ")");
      case EventKind::kEnd:
        return absl::StrCat("end of run ", event.index, " at clock ",
                            absl::FormatDuration(runs_[event.index]->end_clock),
                            " (logged at ", runs_[event.index]->end_seq, ")");
      case EventKind::kClose:
        return "Shutdown closes the wheel";
      case EventKind::kCancel:
        return "Shutdown cancels what is pending";
      case EventKind::kCancelAllLook:
        return "CancelAll looks whether the wheel is shut down";
      case EventKind::kCancelAll:
        return "CancelAll cancels what is pending";
      case EventKind::kIdle:
        return absl::StrCat(
            "[", history_.idle[event.index].seq, "] idle at clock ",
            absl::FormatDuration(history_.idle[event.index].clock));
    }
    return "?";
  }

 private:
  static constexpr int64_t kMaxSteps = 2'000'000;

  int64_t CeilTick(int64_t ns) const {
    if (ns <= 0) return ns;
    return (ns + tick_ns_ - 1) / tick_ns_ * tick_ns_;
  }

  bool Search(std::vector<bool>* done, std::vector<int>* order,
              const ModelState& state) {
    if (++steps_ > kMaxSteps) return false;
    if (order->size() == events_.size()) {
      return (want_shutdown_ < 0 || state.cancelled == want_shutdown_) &&
             (want_cancel_all_ < 0 || state.cancelled_all == want_cancel_all_);
    }
    std::string key(done->begin(), done->end());
    state.AppendKey(&key);
    if (!seen_.insert(std::move(key)).second) return false;

    // An event may go next if no other pending event ended before it began.
    int64_t min_resp = kNever;
    for (size_t i = 0; i < events_.size(); ++i) {
      if (!(*done)[i]) min_resp = std::min(min_resp, events_[i].resp);
    }
    std::vector<int> stuck;
    for (size_t i = 0; i < events_.size(); ++i) {
      if ((*done)[i]) continue;
      if (events_[i].inv > min_resp) break;  // sorted by inv
      ModelState next = state;
      if (!Apply(events_[i], &next)) {
        stuck.push_back(static_cast<int>(i));
        continue;
      }
      (*done)[i] = true;
      order->push_back(static_cast<int>(i));
      if (Search(done, order, next)) return true;
      order->pop_back();
      (*done)[i] = false;
    }
    if (order->size() >= deepest_.size()) {
      deepest_ = *order;
      deepest_stuck_ = std::move(stuck);
    }
    return false;
  }

  // Applies `event` to `state`: false if the specification forbids it.
  bool Apply(const Event& event, ModelState* s) const {
    switch (event.kind) {
      case EventKind::kOp:
        return ApplyOp(history_.ops[event.index], event.racing, s);
      case EventKind::kResetCheck: {
        const uint64_t bit = uint64_t{1} << event.racing;
        s->checked |= bit;
        if (!s->closed) {
          s->admitted |= bit;
          s->in_flight |= bit;
        }
        return true;
      }
      case EventKind::kStart: {
        const CallbackRun& run = *runs_[event.index];
        if (s->phase != Phase::kPending || s->runs != event.index) return false;
        if (Ns(run.start_clock) < s->earliest) return false;  // early
        ++s->runs;
        if (periodic_) {
          s->phase = Phase::kRunningArmed;
          s->rearm_by_period = true;
          s->earliest += period_ns_;
          s->latest = kNever;
        } else {
          s->phase = Phase::kRunning;
        }
        return true;
      }
      case EventKind::kEnd: {
        const CallbackRun& run = *runs_[event.index];
        if (s->runs != event.index + 1) return false;
        if (s->phase == Phase::kRunning) {
          s->phase = Phase::kDone;
          return true;
        }
        if (s->phase == Phase::kRunningStopped) {
          s->phase = Phase::kStopped;
          return true;
        }
        if (s->phase == Phase::kRunningCancelled) {
          s->phase = Phase::kCancelled;
          return true;
        }
        if (s->phase != Phase::kRunningArmed) return false;
        if (s->rearm_by_period) {
          // The next periodic deadline lies after the time the run ended.
          s->earliest = std::max(s->earliest, Ns(run.end_clock) + 1);
          s->rearm_by_period = false;
        }
        if (s->cancelling) {
          s->phase = Phase::kCancelled;
          s->cancelled = 1;
        } else {
          s->phase = Phase::kPending;
        }
        return true;
      }
      case EventKind::kClose:
        s->closed = true;
        return true;
      case EventKind::kCancel:
        if (!s->closed || s->in_flight != 0) return false;
        s->cancelling = true;
        if (s->phase == Phase::kPending) {
          s->phase = Phase::kCancelled;
          s->cancelled = 1;
        }
        return true;
      case EventKind::kCancelAllLook:
        s->cancel_all_look = s->closed ? 2 : 1;
        return true;
      case EventKind::kCancelAll:
        if (s->cancel_all_look == 0) return false;  // it looks first
        // It found the wheel shut down: Shutdown cancels, and counts, them.
        if (s->cancel_all_look == 2) return true;
        if (s->phase == Phase::kPending) {
          s->phase = Phase::kCancelled;
          s->cancelled_all = 1;
        } else if (s->phase == Phase::kRunningArmed) {
          s->phase = Phase::kRunningCancelled;
          s->cancelled_all = 1;
        }
        return true;
      case EventKind::kIdle: {
        if (s->phase != Phase::kPending) return true;
        const int64_t now = Ns(history_.idle[event.index].clock);
        if (s->latest == kNever) {
          // A periodic re-arm: its deadline is at most one period after the
          // time its run ended, which was before now.
          s->latest = now + period_ns_;
          return true;
        }
        return CeilTick(s->latest) > now;  // else it is lost
      }
    }
    return false;
  }

  bool ApplyOp(const Op& op, int racing, ModelState* s) const {
    // The deadline is the wheel's now (within the call's clock readings)
    // plus `d`; a delay <= 0 means now.
    const auto arm = [&](absl::Duration d) {
      d = std::max(d, absl::ZeroDuration());
      s->earliest = Ns(op.clock_inv + d);
      s->latest = Ns(op.clock_resp + d);
      s->rearm_by_period = false;
    };
    switch (op.kind) {
      case OpKind::kAfterFunc:
      case OpKind::kEvery:
        if (s->phase != Phase::kUnborn || s->closed || !op.ok) return false;
        s->phase = Phase::kPending;
        arm(op.d);
        return true;
      case OpKind::kStop:
        switch (s->phase) {
          case Phase::kUnborn:
            return false;
          case Phase::kPending:
            if (!op.ok) return false;
            s->phase = Phase::kStopped;
            return true;
          case Phase::kRunningArmed:
            if (!op.ok) return false;
            s->phase = Phase::kRunningStopped;
            return true;
          default:
            return !op.ok;
        }
      case OpKind::kState:
        return s->phase != Phase::kUnborn && op.state == StateIn(s->phase);
      case OpKind::kPending:
        return s->phase != Phase::kUnborn &&
               op.ok == (StateIn(s->phase) == TimerState::kPending);
      case OpKind::kReset: {
        if (s->phase == Phase::kUnborn) return false;
        bool refused = s->closed;
        if (racing >= 0) {
          const uint64_t bit = uint64_t{1} << racing;
          if ((s->checked & bit) == 0) return false;  // it looks first
          refused = (s->admitted & bit) == 0;
          s->in_flight &= ~bit;
        }
        if (refused) return !op.ok;  // nothing armed
        // A spent id: its one-shot run returned (kDone), or a Stop took its
        // arm (kStopped) or the re-arm a Reset made during its run
        // (kRunningStopped).
        if (op.by_id &&
            (s->phase == Phase::kDone || s->phase == Phase::kStopped ||
             s->phase == Phase::kRunningStopped)) {
          return !op.ok;  // nothing armed
        }
        switch (s->phase) {
          case Phase::kPending:
          case Phase::kRunningArmed:  // supersedes the arm after the run
            if (!op.ok) return false;
            arm(op.d);
            return true;
          case Phase::kRunning:
          case Phase::kRunningStopped:
            if (op.ok) return false;
            s->phase = Phase::kRunningArmed;
            arm(op.d);
            return true;
          case Phase::kDone:
          case Phase::kStopped:
            if (op.ok) return false;
            s->phase = Phase::kPending;
            arm(op.d);
            return true;
          default:  // kCancelled, kRunningCancelled: nothing armed
            return !op.ok;
        }
      }
      case OpKind::kShutdown:
      case OpKind::kCancelAll:
        return false;  // not a timer's event
    }
    return false;
  }

  const History& history_;
  const std::vector<const CallbackRun*> runs_;
  std::vector<Event> events_;
  const bool periodic_;
  const int64_t period_ns_;
  const int64_t tick_ns_;
  int want_shutdown_ = -1;
  int want_cancel_all_ = -1;
  int64_t steps_ = 0;
  std::unordered_set<std::string> seen_;
  std::vector<int> deepest_;
  std::vector<int> deepest_stuck_;
};

// OK if some serial order consistent with real time explains `history`;
// otherwise says what could not be explained.
absl::Status CheckHistory(const History& history) {
  // The timers made (numbers may have gaps: a failed AfterFunc makes none).
  std::vector<int> timers;
  for (const Op& op : history.ops) {
    if (op.timer >= 0 && op.ok &&
        (op.kind == OpKind::kAfterFunc || op.kind == OpKind::kEvery)) {
      timers.push_back(op.timer);
    }
  }
  std::sort(timers.begin(), timers.end());
  if (std::adjacent_find(timers.begin(), timers.end()) != timers.end()) {
    return absl::InternalError("two timers have the same number");
  }
  const auto made_timer = [&](int timer) {
    return std::binary_search(timers.begin(), timers.end(), timer);
  };
  for (const Op& op : history.ops) {
    if (op.timer >= 0 && !made_timer(op.timer)) {
      return absl::InternalError(
          absl::StrCat("a call on a timer never made: ", Describe(op)));
    }
  }
  for (const CallbackRun& run : history.runs) {
    if (!made_timer(run.timer)) {
      return absl::InternalError(
          absl::StrCat("a callback of an unknown timer ran: ", Describe(run)));
    }
  }

  // Shutdown: the first call's work takes effect between the first start and
  // the first return of all the calls (later calls wait for it).
  std::vector<const Op*> shutdowns;
  int64_t shutdown_inv = kNever;
  int64_t shutdown_resp = kNever;
  int64_t shutdown_total = 0;
  for (const Op& op : history.ops) {
    if (op.kind != OpKind::kShutdown) continue;
    shutdowns.push_back(&op);
    shutdown_inv = std::min(shutdown_inv, op.inv);
    shutdown_resp = std::min(shutdown_resp, op.resp);
    shutdown_total += op.count;
  }
  // Shutdown waits for running callbacks: none is still running when the
  // first call returns, and none starts after it.
  for (const CallbackRun& run : history.runs) {
    if (run.end_seq > shutdown_resp) {
      return absl::InternalError(absl::StrCat(
          "a callback ran after Shutdown returned: ", Describe(run)));
    }
  }
  // AfterFunc fails only after Shutdown began, and never succeeds after one
  // failed.
  int64_t first_failure_resp = kNever;
  for (const Op& op : history.ops) {
    const bool makes =
        op.kind == OpKind::kAfterFunc || op.kind == OpKind::kEvery;
    if (!makes || op.ok) continue;
    if (op.resp < shutdown_inv) {
      return absl::InternalError(absl::StrCat(
          "a timer could not be made before any Shutdown: ", Describe(op)));
    }
    first_failure_resp = std::min(first_failure_resp, op.resp);
  }
  for (const Op& op : history.ops) {
    const bool makes =
        op.kind == OpKind::kAfterFunc || op.kind == OpKind::kEvery;
    if (makes && op.ok && op.inv > first_failure_resp) {
      return absl::InternalError(absl::StrCat(
          "a timer was made after making one had failed: ", Describe(op)));
    }
  }

  // CancelAll: at most one call (its count is checked as one).
  const Op* cancel_all = nullptr;
  for (const Op& op : history.ops) {
    if (op.kind != OpKind::kCancelAll) continue;
    if (cancel_all != nullptr) {
      return absl::InternalError("more than one CancelAll: too many to check");
    }
    cancel_all = &op;
  }

  // The (Shutdown, CancelAll) totals of cancelled arms the timers checked so
  // far can explain: reachable[s][c].
  const size_t most = timers.size() + 1;
  std::vector<std::vector<bool>> reachable(most, std::vector<bool>(most));
  reachable[0][0] = true;
  for (const int t : timers) {
    // Event windows are in half steps (2 * seq) so that a bound known to
    // lie strictly before a logged event (2 * seq - 1) can be said.
    std::vector<Event> events;
    const Op* made = nullptr;
    int racing = 0;
    for (size_t i = 0; i < history.ops.size(); ++i) {
      const Op& op = history.ops[i];
      if (op.timer != t) continue;
      if (op.kind == OpKind::kAfterFunc || op.kind == OpKind::kEvery) {
        made = &op;
      }
      Event event{2 * op.inv, 2 * op.resp, EventKind::kOp, static_cast<int>(i)};
      if (op.kind == OpKind::kReset && op.resp > shutdown_inv &&
          op.inv < shutdown_resp) {
        if (racing == kMaxRacingResets) {
          return absl::InternalError(
              absl::StrCat("timer ", t, " has more than ", kMaxRacingResets,
                           " Resets racing Shutdown: too many to check"));
        }
        event.racing = racing++;
        Event look = event;
        look.kind = EventKind::kResetCheck;
        events.push_back(look);
      }
      events.push_back(event);
    }
    std::vector<const CallbackRun*> runs;
    for (const CallbackRun& run : history.runs) {
      if (run.timer == t) runs.push_back(&run);
    }
    std::sort(runs.begin(), runs.end(),
              [](const CallbackRun* a, const CallbackRun* b) {
                return a->start_seq < b->start_seq;
              });
    for (size_t k = 0; k < runs.size(); ++k) {
      const CallbackRun& run = *runs[k];
      const bool overlaps =
          k + 1 < runs.size() && runs[k + 1]->start_seq < run.end_seq;
      if (run.end_seq < run.start_seq || overlaps) {
        return absl::InternalError(absl::StrCat(
            "runs of timer ", t, " overlap: ", Describe(run),
            overlaps ? absl::StrCat(" and ", Describe(*runs[k + 1])) : ""));
      }
      // A run starts after the previous one ended (or after the timer was
      // made) and before it logged its start; it ends after it logged its
      // end, and before the next run starts and before the next idle point.
      const int64_t start_after =
          2 * (k == 0 ? made->inv : runs[k - 1]->end_seq);
      int64_t end_before =
          k + 1 < runs.size() ? 2 * runs[k + 1]->start_seq - 1 : kNever;
      for (const IdlePoint& idle : history.idle) {
        if (idle.seq > run.end_seq) {
          end_before = std::min(end_before, 2 * idle.seq - 1);
          break;
        }
      }
      events.push_back({start_after, 2 * run.start_seq, EventKind::kStart,
                        static_cast<int>(k)});
      events.push_back(
          {2 * run.end_seq, end_before, EventKind::kEnd, static_cast<int>(k)});
    }
    if (!shutdowns.empty()) {
      events.push_back(
          {2 * shutdown_inv, 2 * shutdown_resp, EventKind::kClose, 0});
      events.push_back(
          {2 * shutdown_inv, 2 * shutdown_resp, EventKind::kCancel, 0});
    }
    if (cancel_all != nullptr) {
      events.push_back({2 * cancel_all->inv, 2 * cancel_all->resp,
                        EventKind::kCancelAllLook, 0});
      events.push_back({2 * cancel_all->inv, 2 * cancel_all->resp,
                        EventKind::kCancelAll, 0});
    }
    for (size_t i = 0; i < history.idle.size(); ++i) {
      const int64_t seq = 2 * history.idle[i].seq;
      events.push_back({seq, seq, EventKind::kIdle, static_cast<int>(i)});
    }

    const bool periodic = made->kind == OpKind::kEvery;
    TimerSearch search(history, runs, std::move(events), periodic,
                       periodic ? Ns(made->d) : 0);
    absl::StatusOr<bool> found = search.Explain(-1, -1);
    if (!found.ok()) return found.status();
    if (!*found) {
      return absl::InternalError(
          absl::StrCat("no serial order explains the history of timer ", t,
                       ":\n", search.DeepestPrefix()));
    }
    // Which (Shutdown, CancelAll) counts of cancelled arms can this timer
    // contribute? At most one of them cancels it.
    std::vector<std::vector<bool>> next(most, std::vector<bool>(most));
    for (const auto& [s, c] : {std::pair<int, int>{0, 0}, {1, 0}, {0, 1}}) {
      if ((s > 0 && shutdowns.empty()) || (c > 0 && cancel_all == nullptr)) {
        continue;
      }
      absl::StatusOr<bool> with = search.Explain(s, c);
      if (!with.ok()) return with.status();
      if (!*with) continue;
      for (size_t i = 0; i + s < most; ++i) {
        for (size_t j = 0; j + c < most; ++j) {
          if (reachable[i][j]) next[i + s][j + c] = true;
        }
      }
    }
    reachable = std::move(next);
  }
  const int64_t cancel_all_total =
      cancel_all != nullptr ? cancel_all->count : 0;
  if (shutdown_total < 0 || cancel_all_total < 0 ||
      shutdown_total >= static_cast<int64_t>(most) ||
      cancel_all_total >= static_cast<int64_t>(most) ||
      !reachable[shutdown_total][cancel_all_total]) {
    std::string explained;
    for (size_t s = 0; s < most; ++s) {
      for (size_t c = 0; c < most; ++c) {
        if (reachable[s][c]) absl::StrAppend(&explained, " (", s, ", ", c, ")");
      }
    }
    return absl::InternalError(
        absl::StrCat("Shutdown returned ", shutdown_total,
                     " in all and CancelAll ", cancel_all_total,
                     ", but the timers explain only these (Shutdown, "
                     "CancelAll) counts of cancelled arms:",
                     explained));
  }
  return absl::OkStatus();
}

// The events of `history` in sequence order, for a failure message.
std::string Dump(const History& history) {
  std::vector<std::pair<int64_t, std::string>> lines;
  for (const Op& op : history.ops) lines.push_back({op.inv, Describe(op)});
  for (const CallbackRun& run : history.runs) {
    lines.push_back({run.start_seq, Describe(run)});
  }
  for (const IdlePoint& idle : history.idle) {
    lines.push_back({idle.seq, absl::StrCat("[", idle.seq, "] idle at clock ",
                                            absl::FormatDuration(idle.clock))});
  }
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (const auto& line : lines) absl::StrAppend(&out, "  ", line.second, "\n");
  return out;
}

// ---------------------------------------------------------------------------
// The checker on hand-made histories

// Builds histories one event at a time, each after the last, unless a call
// or run is begun and ended around others.
class HistoryBuilder {
 public:
  int AfterFunc(absl::Duration d) { return Make(OpKind::kAfterFunc, d); }
  int Every(absl::Duration period) { return Make(OpKind::kEvery, period); }
  void Stop(int timer, bool result) {
    EndCall(BeginCall(OpKind::kStop, timer, absl::ZeroDuration(), result));
  }
  void Reset(int timer, absl::Duration d, bool result) {
    EndCall(BeginCall(OpKind::kReset, timer, d, result));
  }
  void Shutdown(int64_t count) {
    const int call =
        BeginCall(OpKind::kShutdown, -1, absl::ZeroDuration(), true);
    history_.ops[call].count = count;
    EndCall(call);
  }
  void CancelAll(int64_t count) {
    const int call =
        BeginCall(OpKind::kCancelAll, -1, absl::ZeroDuration(), true);
    history_.ops[call].count = count;
    EndCall(call);
  }
  void State(int timer, TimerState state) {
    const int call =
        BeginCall(OpKind::kState, timer, absl::ZeroDuration(), true);
    history_.ops[call].state = state;
    EndCall(call);
  }
  // A callback run of `timer` at the current clock.
  void RunCallback(int timer) { EndRun(StartRun(timer)); }
  void Advance(absl::Duration d) { now_ += d; }
  void Idle() { history_.idle.push_back({++seq_, now_}); }

  // A call whose window stays open until EndCall, returning `result`.
  int BeginCall(OpKind kind, int timer, absl::Duration d, bool result) {
    Op op;
    op.kind = kind;
    op.timer = timer;
    op.d = d;
    op.ok = result;
    op.inv = ++seq_;
    op.clock_inv = now_;
    history_.ops.push_back(op);
    return static_cast<int>(history_.ops.size()) - 1;
  }
  void EndCall(int call) {
    history_.ops[call].resp = ++seq_;
    history_.ops[call].clock_resp = now_;
  }
  int StartRun(int timer) {
    CallbackRun run;
    run.timer = timer;
    run.start_seq = ++seq_;
    run.start_clock = now_;
    history_.runs.push_back(run);
    return static_cast<int>(history_.runs.size()) - 1;
  }
  void EndRun(int run) {
    history_.runs[run].end_seq = ++seq_;
    history_.runs[run].end_clock = now_;
  }

  Op& last_op() { return history_.ops.back(); }
  Op& op(int call) { return history_.ops[call]; }
  const History& history() const { return history_; }

 private:
  int Make(OpKind kind, absl::Duration d) {
    EndCall(BeginCall(kind, timers_, d, true));
    return timers_++;
  }

  History history_;  // tick 1 ms
  int64_t seq_ = 0;
  absl::Duration now_;
  int timers_ = 0;
};

constexpr absl::Duration kMs = absl::Milliseconds(1);

TEST(HistoryCheckerTest, AcceptsATimerThatRunsAtItsDeadline) {
  HistoryBuilder b;
  const int t = b.AfterFunc(5 * kMs);
  b.Idle();
  b.Advance(5 * kMs);
  b.RunCallback(t);
  b.Idle();
  b.Stop(t, false);
  EXPECT_TRUE(CheckHistory(b.history()).ok()) << CheckHistory(b.history());
}

TEST(HistoryCheckerTest, AcceptsEitherAnswerOfAStopThatRacesTheStart) {
  for (const bool stopped : {false, true}) {
    HistoryBuilder b;
    const int t = b.AfterFunc(kMs);
    b.Advance(kMs);
    // The run starts while Stop is in progress: it came first (false), or
    // the Stop did and there is no run (true).
    const int stop =
        b.BeginCall(OpKind::kStop, t, absl::ZeroDuration(), stopped);
    if (!stopped) b.RunCallback(t);
    b.EndCall(stop);
    b.Idle();
    EXPECT_TRUE(CheckHistory(b.history()).ok())
        << stopped << ": " << CheckHistory(b.history());
  }
}

TEST(HistoryCheckerTest, AcceptsResetWhileRunningThatRunsAgainAfterTheRun) {
  HistoryBuilder b;
  const int t = b.AfterFunc(kMs);
  b.Advance(kMs);
  const int run = b.StartRun(t);
  b.Reset(t, 2 * kMs, false);  // it had started: false, armed after the run
  b.EndRun(run);
  b.Advance(2 * kMs);
  b.RunCallback(t);
  b.Idle();
  b.Stop(t, false);
  EXPECT_TRUE(CheckHistory(b.history()).ok()) << CheckHistory(b.history());
}

TEST(HistoryCheckerTest, AcceptsAPeriodicTimerThatSkipsMissedRuns) {
  HistoryBuilder b;
  const int t = b.Every(2 * kMs);
  b.Advance(2 * kMs);
  b.RunCallback(t);
  b.Advance(2 * kMs);
  b.RunCallback(t);
  b.Advance(7 * kMs);  // 11 ms: the runs at 6, 8 and 10 ms come as one
  b.RunCallback(t);
  b.Idle();
  b.Stop(t, true);
  EXPECT_TRUE(CheckHistory(b.history()).ok()) << CheckHistory(b.history());
}

TEST(HistoryCheckerTest, AcceptsShutdownCountingWhatWasPending) {
  HistoryBuilder b;
  const int a = b.AfterFunc(5 * kMs);
  const int c = b.AfterFunc(kMs);
  b.AfterFunc(7 * kMs);
  b.Stop(a, true);
  b.Advance(kMs);
  b.RunCallback(c);
  b.Shutdown(1);
  b.Reset(a, kMs, false);  // shut down: nothing armed
  b.Idle();
  EXPECT_TRUE(CheckHistory(b.history()).ok()) << CheckHistory(b.history());
}

TEST(HistoryCheckerTest, AcceptsAResetThatShutdownAdmittedTakingEffectLate) {
  // The slow Reset found the wheel open; Shutdown closed it, refused a later
  // Reset, and waited for the slow one to arm the timer before cancelling.
  HistoryBuilder b;
  const int t = b.AfterFunc(5 * kMs);
  b.Stop(t, true);
  const int slow = b.BeginCall(OpKind::kReset, t, kMs, false);
  const int shutdown =
      b.BeginCall(OpKind::kShutdown, -1, absl::ZeroDuration(), true);
  b.Reset(t, kMs, false);  // refused: nothing armed
  b.Stop(t, false);
  b.EndCall(slow);  // armed it
  b.Stop(t, true);
  b.EndCall(shutdown);  // nothing left to cancel: count 0
  b.Idle();
  EXPECT_TRUE(CheckHistory(b.history()).ok()) << CheckHistory(b.history());
}

TEST(HistoryCheckerTest, AcceptsCancelAllCountingThePendingArms) {
  HistoryBuilder b;
  const int pending = b.AfterFunc(5 * kMs);
  const int periodic = b.Every(2 * kMs);
  const int stopped = b.AfterFunc(5 * kMs);
  b.Stop(stopped, true);
  b.CancelAll(2);
  b.State(pending, TimerState::kCancelled);
  b.State(stopped, TimerState::kStopped);
  b.Reset(pending, kMs, false);  // cancelled for good: nothing armed
  b.Reset(stopped, kMs, false);  // armed again
  b.Advance(10 * kMs);
  b.RunCallback(stopped);
  b.Idle();
  b.State(periodic, TimerState::kCancelled);
  b.State(stopped, TimerState::kFired);
  b.Shutdown(0);
  EXPECT_TRUE(CheckHistory(b.history()).ok()) << CheckHistory(b.history());
}

TEST(HistoryCheckerTest, AcceptsCancelAllOfARunningPeriodicTimer) {
  HistoryBuilder b;
  const int t = b.Every(2 * kMs);
  b.Advance(2 * kMs);
  const int run = b.StartRun(t);
  b.State(t, TimerState::kPending);  // it runs again after this run
  b.CancelAll(1);                    // its re-arm
  b.State(t, TimerState::kRunning);
  b.Reset(t, kMs, false);
  b.EndRun(run);
  b.State(t, TimerState::kCancelled);
  b.Advance(10 * kMs);
  b.Idle();
  b.Shutdown(0);
  EXPECT_TRUE(CheckHistory(b.history()).ok()) << CheckHistory(b.history());
}

TEST(HistoryCheckerTest, AcceptsACancelAllThatFoundTheWheelShutDown) {
  HistoryBuilder b;
  const int t = b.AfterFunc(5 * kMs);
  const int shutdown =
      b.BeginCall(OpKind::kShutdown, -1, absl::ZeroDuration(), true);
  b.CancelAll(0);  // the wheel is closed: Shutdown cancels it
  b.EndCall(shutdown);
  b.op(shutdown).count = 1;
  b.State(t, TimerState::kCancelled);
  b.Idle();
  EXPECT_TRUE(CheckHistory(b.history()).ok()) << CheckHistory(b.history());
}

TEST(HistoryCheckerTest, AcceptsEitherOrderOfACancelAllAndAStopThatRace) {
  for (const bool stopped : {false, true}) {
    HistoryBuilder b;
    const int t = b.AfterFunc(5 * kMs);
    // The Stop came first (true), or CancelAll did (and counted it).
    const int cancel =
        b.BeginCall(OpKind::kCancelAll, -1, absl::ZeroDuration(), true);
    b.Stop(t, stopped);
    b.EndCall(cancel);
    b.op(cancel).count = stopped ? 0 : 1;
    b.Idle();
    EXPECT_TRUE(CheckHistory(b.history()).ok())
        << stopped << ": " << CheckHistory(b.history());
  }
}

TEST(HistoryCheckerTest, RejectsAStopAndACancelAllBothTakingOneArm) {
  HistoryBuilder b;
  const int t = b.AfterFunc(5 * kMs);
  const int cancel =
      b.BeginCall(OpKind::kCancelAll, -1, absl::ZeroDuration(), true);
  b.Stop(t, true);
  b.EndCall(cancel);
  b.op(cancel).count = 1;
  b.Idle();
  EXPECT_FALSE(CheckHistory(b.history()).ok());
}

TEST(HistoryCheckerTest, RejectsARunAfterCancelAllCancelledIt) {
  HistoryBuilder b;
  const int t = b.AfterFunc(kMs);
  b.CancelAll(1);
  b.Advance(kMs);
  b.RunCallback(t);
  b.Idle();
  EXPECT_FALSE(CheckHistory(b.history()).ok());
}

TEST(HistoryCheckerTest, RejectsACancelAllThatMissedAPendingTimer) {
  HistoryBuilder b;
  const int t = b.AfterFunc(5 * kMs);
  b.CancelAll(0);
  b.Stop(t, true);
  b.Idle();
  EXPECT_FALSE(CheckHistory(b.history()).ok());
}

TEST(HistoryCheckerTest, RejectsAResetThatArmsACancelledTimer) {
  HistoryBuilder b;
  const int t = b.AfterFunc(5 * kMs);
  b.CancelAll(1);
  b.Reset(t, kMs, false);
  b.Advance(kMs);
  b.RunCallback(t);
  b.Idle();
  EXPECT_FALSE(CheckHistory(b.history()).ok());
}

TEST(HistoryCheckerTest, RejectsAStateThatDisagrees) {
  for (const TimerState wrong :
       {TimerState::kPending, TimerState::kRunning, TimerState::kStopped,
        TimerState::kCancelled}) {
    HistoryBuilder b;
    const int t = b.AfterFunc(kMs);
    b.Advance(kMs);
    b.RunCallback(t);
    b.Idle();           // the run is over
    b.State(t, wrong);  // it fired
    EXPECT_FALSE(CheckHistory(b.history()).ok()) << wrong;
  }
}

TEST(HistoryCheckerTest, RejectsARunningStateForAPendingPeriodicTimer) {
  HistoryBuilder b;
  const int t = b.Every(2 * kMs);
  b.Advance(2 * kMs);
  const int run = b.StartRun(t);
  b.State(t, TimerState::kRunning);  // not stopped: pending
  b.EndRun(run);
  b.Idle();
  EXPECT_FALSE(CheckHistory(b.history()).ok());
}

TEST(HistoryCheckerTest, RejectsATimerArmedAfterShutdownReturned) {
  HistoryBuilder b;
  const int t = b.AfterFunc(5 * kMs);
  b.Stop(t, true);
  const int slow = b.BeginCall(OpKind::kReset, t, kMs, false);
  b.Shutdown(0);
  b.EndCall(slow);
  b.Stop(t, true);  // the slow Reset's arm outlived Shutdown
  b.Idle();
  EXPECT_FALSE(CheckHistory(b.history()).ok());
}

TEST(HistoryCheckerTest, RejectsARunBeforeTheDeadline) {
  HistoryBuilder b;
  const int t = b.AfterFunc(5 * kMs);
  b.Advance(4 * kMs);
  b.RunCallback(t);
  b.Idle();
  EXPECT_FALSE(CheckHistory(b.history()).ok());
}

TEST(HistoryCheckerTest, RejectsARunANanosecondBeforeASubTickDeadline) {
  HistoryBuilder b;  // tick 1 ms
  const int t = b.AfterFunc(absl::Microseconds(1500));
  b.Advance(absl::Microseconds(1500) - absl::Nanoseconds(1));
  b.RunCallback(t);
  b.Idle();
  EXPECT_FALSE(CheckHistory(b.history()).ok());
}

TEST(HistoryCheckerTest, RejectsATimerNotRunWhenItsDeadlinesTickHasPassed) {
  HistoryBuilder b;  // tick 1 ms
  b.AfterFunc(absl::Microseconds(1500));
  b.Advance(absl::Milliseconds(2));
  b.Idle();
  EXPECT_FALSE(CheckHistory(b.history()).ok());
}

TEST(HistoryCheckerTest, RejectsARunAfterATrueStop) {
  HistoryBuilder b;
  const int t = b.AfterFunc(kMs);
  b.Stop(t, true);
  b.Advance(kMs);
  b.RunCallback(t);
  b.Idle();
  EXPECT_FALSE(CheckHistory(b.history()).ok());
}

TEST(HistoryCheckerTest, RejectsARunOfAStoppedArmEvenWhenTheyOverlap) {
  HistoryBuilder b;
  const int t = b.AfterFunc(kMs);
  b.Advance(kMs);
  const int stop = b.BeginCall(OpKind::kStop, t, absl::ZeroDuration(), true);
  b.RunCallback(t);
  b.EndCall(stop);
  b.Idle();
  EXPECT_FALSE(CheckHistory(b.history()).ok());
}

TEST(HistoryCheckerTest, RejectsTwoTrueStopsOfOneArm) {
  HistoryBuilder b;
  const int t = b.AfterFunc(5 * kMs);
  b.Stop(t, true);
  b.Stop(t, true);
  b.Idle();
  EXPECT_FALSE(CheckHistory(b.history()).ok());
}

TEST(HistoryCheckerTest, RejectsATrueStopAfterTheRun) {
  HistoryBuilder b;
  const int t = b.AfterFunc(kMs);
  b.Advance(kMs);
  b.RunCallback(t);
  b.Stop(t, true);
  b.Idle();
  EXPECT_FALSE(CheckHistory(b.history()).ok());
}

TEST(HistoryCheckerTest, RejectsALostTimer) {
  HistoryBuilder b;
  b.AfterFunc(5 * kMs);
  b.Idle();
  b.Advance(absl::Seconds(1));
  b.Idle();  // past the deadline, idle, and it never ran
  EXPECT_FALSE(CheckHistory(b.history()).ok());
}

TEST(HistoryCheckerTest, RejectsALostPeriodicRun) {
  HistoryBuilder b;
  const int t = b.Every(2 * kMs);
  b.Advance(2 * kMs);
  b.RunCallback(t);
  b.Idle();
  b.Advance(absl::Seconds(1));
  b.Idle();  // the next run never came
  EXPECT_FALSE(CheckHistory(b.history()).ok());
}

TEST(HistoryCheckerTest, RejectsTwoRunsOfOneShot) {
  HistoryBuilder b;
  const int t = b.AfterFunc(kMs);
  b.Advance(kMs);
  b.RunCallback(t);
  b.RunCallback(t);
  b.Idle();
  EXPECT_FALSE(CheckHistory(b.history()).ok());
}

TEST(HistoryCheckerTest, RejectsTwoPeriodicRunsForOneTick) {
  HistoryBuilder b;
  const int t = b.Every(2 * kMs);
  b.Advance(9 * kMs);
  b.RunCallback(t);
  b.RunCallback(t);  // missed runs are skipped, not queued
  b.Idle();
  EXPECT_FALSE(CheckHistory(b.history()).ok());
}

TEST(HistoryCheckerTest, RejectsOverlappingRuns) {
  HistoryBuilder b;
  const int t = b.Every(kMs);
  b.Advance(kMs);
  const int first = b.StartRun(t);
  b.Advance(kMs);
  const int second = b.StartRun(t);  // before the first one ended
  b.EndRun(first);
  b.EndRun(second);
  b.Idle();
  EXPECT_FALSE(CheckHistory(b.history()).ok());
}

TEST(HistoryCheckerTest, RejectsARunOfASupersededArm) {
  HistoryBuilder b;
  const int t = b.AfterFunc(kMs);
  b.Reset(t, 10 * kMs, true);
  b.Advance(kMs);
  b.RunCallback(t);  // the first arm's deadline, but it was reset
  b.Idle();
  EXPECT_FALSE(CheckHistory(b.history()).ok());
}

TEST(HistoryCheckerTest, RejectsResetFalseOfAPendingTimer) {
  HistoryBuilder b;
  const int t = b.AfterFunc(10 * kMs);
  b.Reset(t, 10 * kMs, false);
  b.Idle();
  EXPECT_FALSE(CheckHistory(b.history()).ok());
}

TEST(HistoryCheckerTest, RejectsAShutdownCountThatDisagrees) {
  for (const int64_t count : {0, 2}) {
    HistoryBuilder b;
    b.AfterFunc(5 * kMs);
    b.Shutdown(count);  // one timer was pending
    b.Idle();
    EXPECT_FALSE(CheckHistory(b.history()).ok()) << count;
  }
}

TEST(HistoryCheckerTest, RejectsARunAfterShutdownReturned) {
  HistoryBuilder b;
  const int t = b.AfterFunc(kMs);
  b.Shutdown(1);
  b.Advance(kMs);
  b.RunCallback(t);
  b.Idle();
  EXPECT_FALSE(CheckHistory(b.history()).ok());
}

TEST(HistoryCheckerTest, RejectsAFailedAfterFuncWithoutShutdown) {
  HistoryBuilder b;
  b.AfterFunc(kMs);
  b.last_op().ok = false;
  b.last_op().timer = -1;
  b.Idle();
  EXPECT_FALSE(CheckHistory(b.history()).ok());
}

// ---------------------------------------------------------------------------
// Concurrent histories of a real wheel

// What one seed does.
struct Workload {
  uint64_t seed = 0;
  int threads = 3;
  int ops_per_thread = 30;
  int wheel_size = 4;
  int workers = 2;
  bool periodic = false;       // Every timers too
  bool shutdown = false;       // one thread shuts the wheel down midway
  bool cancel_all = false;     // another thread calls CancelAll midway
  bool callbacks_act = false;  // callbacks Stop or Reset their own timer
  bool by_id = false;          // half the one-shot timers by id (AfterFuncId)
  int max_timers = 5;          // timers made (fewer: more contention)
  int max_linger = 3;          // yields a callback may take while running
  absl::Duration tick = absl::Milliseconds(1);
};

Workload WorkloadFor(uint64_t seed) {
  Workload w;
  w.seed = seed;
  w.ops_per_thread = 20 + static_cast<int>(seed % 21);
  w.wheel_size = seed % 4 == 0 ? 20 : (seed % 4 == 1 ? 2 : 4);
  w.workers = 1 + static_cast<int>(seed % 3);
  w.periodic = seed % 3 == 0;
  w.shutdown = seed % 5 == 0;
  w.cancel_all = seed % 7 == 1 || seed % 7 == 3 || seed % 7 == 5;
  w.callbacks_act = seed % 2 == 0;
  w.by_id = seed % 4 != 3;
  w.max_timers = 3 + static_cast<int>(seed % 6);
  w.max_linger = seed % 7 < 2 ? 30 : 3;
  return w;
}

std::string Describe(const Workload& w) {
  return absl::StrCat(
      "seed ", w.seed, ": ", w.threads, " threads x ", w.ops_per_thread,
      " calls on up to ", w.max_timers, " timers, wheel_size ", w.wheel_size,
      ", ", w.workers, " workers", w.periodic ? ", Every" : "",
      w.shutdown ? ", Shutdown midway" : "",
      w.cancel_all ? ", CancelAll midway" : "",
      w.callbacks_act ? ", callbacks Stop/Reset/State themselves" : "",
      w.by_id ? ", timers by id" : "",
      w.max_linger > 3 ? ", callbacks linger" : "");
}

// Logs calls and runs with one sequence counter.
class Recorder {
 public:
  explicit Recorder(std::shared_ptr<ManualClock> clock)
      : clock_(std::move(clock)) {}

  // Calls `call` (returning what Op::ok records) and logs it.
  template <class F>
  void Call(Op op, F&& call) {
    op.clock_inv = clock_->Now();
    op.inv = Next();
    op.ok = call(&op);
    op.resp = Next();
    op.clock_resp = clock_->Now();
    std::lock_guard<std::mutex> lock(mu_);
    history_.ops.push_back(op);
  }
  void Start(CallbackRun* run) {
    run->start_clock = clock_->Now();
    run->start_seq = Next();
  }
  void End(CallbackRun* run) {
    run->end_clock = clock_->Now();
    run->end_seq = Next();
    std::lock_guard<std::mutex> lock(mu_);
    history_.runs.push_back(*run);
  }
  void Idle() {
    IdlePoint idle;
    idle.seq = Next();
    idle.clock = clock_->Now();
    std::lock_guard<std::mutex> lock(mu_);
    history_.idle.push_back(idle);
  }
  History Take(absl::Duration tick) {
    std::lock_guard<std::mutex> lock(mu_);
    history_.tick = tick;
    return std::move(history_);
  }

 private:
  int64_t Next() { return seq_.fetch_add(1, std::memory_order_seq_cst); }

  const std::shared_ptr<ManualClock> clock_;
  std::atomic<int64_t> seq_{1};
  std::mutex mu_;
  History history_;
};

// A timer the threads share: its handle, or (made by AfterFuncId) its id.
struct SharedTimer {
  Timer handle;
  TimerId id;
};

// The timers the threads share: slot i is written once, by the thread that
// made timer i, before `ready[i]` is set (release); readers copy the handle
// after seeing it set (acquire).
class TimerTable {
 public:
  explicit TimerTable(int capacity)
      : handles_(capacity), ready_(new std::atomic<bool>[capacity]) {
    for (int i = 0; i < capacity; ++i) ready_[i] = false;
  }
  int Reserve() { return reserved_.fetch_add(1); }
  void Publish(int id, SharedTimer timer) {
    handles_[id] = std::move(timer);
    ready_[id].store(true, std::memory_order_release);
    published_.fetch_add(1);
  }
  int published() const { return published_.load(); }
  // A random published timer, or nullopt if none is (yet).
  std::optional<std::pair<int, SharedTimer>> Pick(std::mt19937_64& rng) const {
    const int reserved = reserved_.load();
    if (reserved == 0) return std::nullopt;
    for (int attempt = 0; attempt < 4; ++attempt) {
      const int id = static_cast<int>(rng() % reserved);
      if (ready_[id].load(std::memory_order_acquire)) {
        return std::make_pair(id, handles_[id]);
      }
    }
    return std::nullopt;
  }

 private:
  std::vector<SharedTimer> handles_;
  std::unique_ptr<std::atomic<bool>[]> ready_;
  std::atomic<int> reserved_{0};
  std::atomic<int> published_{0};
};

// What a timer's callback does besides logging its run.
struct CallbackPlan {
  int linger = 0;        // yields while running, to be met running
  int stop_at_run = -1;  // Stop itself in this run
  int resets = 0;        // Reset itself in its first `resets` runs
  absl::Duration reset_d;
  bool asks_state = false;  // asks its own State at the end of each run
};

// A delay: 0, negative, sub-tick, mostly a few ticks (due soon, so that
// runs meet calls), up to 40 ticks (three levels of a 4-slot wheel), some a
// tick boundary +-1 ns.
absl::Duration RandomDelay(std::mt19937_64& rng, absl::Duration tick) {
  const int kind = static_cast<int>(rng() % 20);
  if (kind <= 1) return absl::ZeroDuration();
  if (kind == 2) return -tick;
  if (kind <= 5) return tick * (static_cast<double>(rng() % 1000) / 1000);
  const int64_t ticks = kind <= 12
                            ? 1 + rng() % 3
                            : (kind <= 16 ? 1 + rng() % 8 : 1 + rng() % 40);
  if (kind == 11) return tick * ticks + absl::Nanoseconds(1);
  if (kind == 12) return tick * ticks - absl::Nanoseconds(1);
  return tick * ticks;
}

History Play(const Workload& w) {
  auto clock = std::make_shared<ManualClock>();
  Options options;
  options.clock = clock;
  options.tick = w.tick;
  options.wheel_size = w.wheel_size;
  options.workers = w.workers;
  std::unique_ptr<TimingWheel> wheel =
      TimingWheel::Create(std::move(options)).value();
  auto recorder = std::make_shared<Recorder>(clock);
  TimerTable table(w.threads * w.ops_per_thread);

  const auto make_callback = [&](int id, const CallbackPlan& plan) {
    return
        [recorder, id, plan, runs = std::make_shared<std::atomic<int>>(0)]() {
          CallbackRun run;
          run.timer = id;
          recorder->Start(&run);
          const int k = runs->fetch_add(1);
          for (int i = 0; i < plan.linger; ++i) std::this_thread::yield();
          if (k == plan.stop_at_run) {
            Op op;
            op.kind = OpKind::kStop;
            op.timer = id;
            op.in_callback = true;
            recorder->Call(op, [](Op*) { return Timer::Current().Stop(); });
          }
          if (k < plan.resets) {
            Op op;
            op.kind = OpKind::kReset;
            op.timer = id;
            op.d = plan.reset_d;
            op.in_callback = true;
            recorder->Call(
                op, [&](Op*) { return Timer::Current().Reset(plan.reset_d); });
          }
          if (plan.asks_state) {
            Op op;
            op.kind = OpKind::kState;
            op.timer = id;
            op.in_callback = true;
            recorder->Call(op, [](Op* op) {
              op->state = Timer::Current().State();
              return true;
            });
          }
          recorder->End(&run);
        };
  };

  std::atomic<int> finished{0};
  const auto operate = [&](int index) {
    std::mt19937_64 rng(w.seed * 1000003 + static_cast<uint64_t>(index));
    // Thread 0 shuts the wheel down in the second half of its calls, thread
    // 1 cancels every timer somewhere in the middle of its calls.
    const int shutdown_at =
        w.shutdown && index == 0
            ? w.ops_per_thread / 2 +
                  static_cast<int>(rng() % (w.ops_per_thread / 2))
            : -1;
    const int cancel_all_at =
        w.cancel_all && index == 1
            ? w.ops_per_thread / 4 +
                  static_cast<int>(rng() % (w.ops_per_thread / 2))
            : -1;
    absl::Duration target;
    int burst = 0;
    for (int i = 0; i < w.ops_per_thread; ++i) {
      if (burst == 0) {
        // Calls come in bursts of 1 to 4 when the clock reaches the next
        // target, a multiple of half a tick: the other threads' bursts then
        // often come at the same time, and on the same few timers.
        burst = 1 + static_cast<int>(rng() % 4);
        target += w.tick / 2 * static_cast<int64_t>(rng() % 5);
        while (clock->Now() < target) std::this_thread::yield();
      }
      --burst;
      if (i == shutdown_at) {
        Op op;
        op.kind = OpKind::kShutdown;
        recorder->Call(op, [&](Op* op) {
          op->count = wheel->Shutdown();
          return true;
        });
        continue;
      }
      if (i == cancel_all_at) {
        Op op;
        op.kind = OpKind::kCancelAll;
        recorder->Call(op, [&](Op* op) {
          op->count = wheel->CancelAll();
          return true;
        });
        continue;
      }
      std::optional<std::pair<int, SharedTimer>> picked;
      const int published = table.published();
      if (published >= w.max_timers || (published > 0 && rng() % 100 >= 15)) {
        picked = table.Pick(rng);
      }
      if (!picked.has_value()) {
        const bool every = w.periodic && rng() % 3 == 0;
        CallbackPlan plan;
        plan.linger = static_cast<int>(rng() % (w.max_linger + 1));
        if (w.callbacks_act) {
          if (rng() % 3 == 0) plan.stop_at_run = static_cast<int>(rng() % 3);
          if (rng() % 3 == 0) plan.resets = 1 + static_cast<int>(rng() % 2);
          plan.reset_d = RandomDelay(rng, w.tick);
          plan.asks_state = rng() % 3 == 0;
        }
        Op op;
        op.kind = every ? OpKind::kEvery : OpKind::kAfterFunc;
        op.by_id = !every && w.by_id && rng() % 2 == 0;
        op.d = every ? w.tick * static_cast<int64_t>(1 + rng() % 5)
                     : RandomDelay(rng, w.tick);
        const int id = table.Reserve();
        op.timer = id;
        recorder->Call(op, [&](Op* op) {
          absl::Status status;
          SharedTimer made;
          if (op->by_id) {
            absl::StatusOr<TimerId> timer =
                wheel->AfterFuncId(op->d, make_callback(id, plan));
            status = timer.status();
            if (timer.ok()) made.id = *timer;
          } else {
            absl::StatusOr<Timer> timer =
                every ? wheel->Every(op->d, make_callback(id, plan))
                      : wheel->AfterFunc(op->d, make_callback(id, plan));
            status = timer.status();
            if (timer.ok()) made.handle = *std::move(timer);
          }
          if (!status.ok()) {
            EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition)
                << status;
            op->timer = -1;
            return false;
          }
          table.Publish(id, std::move(made));
          return true;
        });
      } else if (const uint64_t pick = rng() % 100; pick < 35) {
        Op op;
        op.kind = OpKind::kStop;
        op.timer = picked->first;
        const TimerId by_id = picked->second.id;
        op.by_id = static_cast<bool>(by_id);
        recorder->Call(op, [&](Op*) {
          return by_id ? wheel->Stop(by_id) : picked->second.handle.Stop();
        });
      } else if (pick < 50) {
        Op op;
        op.kind = OpKind::kState;
        op.timer = picked->first;
        if (const TimerId by_id = picked->second.id) {
          // An id has no State: whether it is pending.
          op.kind = OpKind::kPending;
          op.by_id = true;
          recorder->Call(op, [&](Op*) { return wheel->Pending(by_id); });
        } else {
          recorder->Call(op, [&](Op* op) {
            op->state = picked->second.handle.State();
            return true;
          });
        }
      } else {
        Op op;
        op.kind = OpKind::kReset;
        op.timer = picked->first;
        op.d = RandomDelay(rng, w.tick);
        const TimerId by_id = picked->second.id;
        op.by_id = static_cast<bool>(by_id);
        recorder->Call(op, [&](Op* op) {
          return by_id ? wheel->Reset(by_id, op->d)
                       : picked->second.handle.Reset(op->d);
        });
      }
    }
    finished.fetch_add(1);
  };

  std::vector<std::thread> threads;
  for (int i = 0; i < w.threads; ++i) threads.emplace_back(operate, i);
  {
    // The driver: the clock moves by a quarter tick to a few ticks at a time
    // until every operating thread is done.
    std::mt19937_64 rng(w.seed * 1000003 + 999);
    while (finished.load() < w.threads) {
      const int kind = static_cast<int>(rng() % 10);
      clock->Advance(kind < 3   ? w.tick / 4
                     : kind < 8 ? w.tick / 2 * (1 + static_cast<int>(rng() % 3))
                                : w.tick * static_cast<int64_t>(2 + rng() % 4));
      for (int i = static_cast<int>(rng() % 8); i > 0; --i) {
        std::this_thread::yield();
      }
    }
  }
  for (std::thread& thread : threads) thread.join();
  // Settle at this time, then move past every deadline (at most 40 ticks of
  // a delay plus 5 of a period ahead) and settle again.
  wheel->WaitIdle();
  recorder->Idle();
  clock->Advance(w.tick * 100);
  wheel->WaitIdle();
  recorder->Idle();
  Op op;
  op.kind = OpKind::kShutdown;
  recorder->Call(op, [&](Op* op) {
    op->count = wheel->Shutdown();
    return true;
  });
  wheel.reset();
  return recorder->Take(w.tick);
}

int EnvInt(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::atoi(value) : fallback;
}

constexpr int kShards = 4;

class ConcurrentHistoryTest : public ::testing::TestWithParam<int> {};

TEST_P(ConcurrentHistoryTest, EveryHistoryHasASerialExplanation) {
  const int shard = GetParam();
  std::vector<uint64_t> seeds;
  if (const int only = EnvInt("TIMINGWHEEL_HISTORY_SEED", 0); only > 0) {
    if (shard == 0) seeds.push_back(static_cast<uint64_t>(only));
  } else {
    const int count =
        EnvInt("TIMINGWHEEL_HISTORY_SEEDS", kSanitized ? 400 : 2000);
    for (int seed = 1 + shard; seed <= count; seed += kShards) {
      seeds.push_back(static_cast<uint64_t>(seed));
    }
  }
  for (const uint64_t seed : seeds) {
    const Workload workload = WorkloadFor(seed);
    const History history = Play(workload);
    const absl::Status status = CheckHistory(history);
    if (!status.ok()) {
      ADD_FAILURE() << Describe(workload) << "\n"
                    << status.message() << "\nthe whole history:\n"
                    << Dump(history)
                    << "replay: TIMINGWHEEL_HISTORY_SEED=" << seed
                    << " history_test";
      return;  // one failing seed is enough to read
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shards, ConcurrentHistoryTest,
                         ::testing::Range(0, kShards));

}  // namespace
}  // namespace timingwheel
