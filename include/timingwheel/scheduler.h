// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// scheduler.h: custom schedules for TimingWheel::ScheduleFunc.
//
// A `Scheduler` decides, after each run of a timer, how long until it runs
// next; the wheel asks it once before the first run and once after every run,
// on the worker thread that ran the callback, never concurrently. Four come
// with the library: FixedRate (the schedule of Every), FixedDelay (the next
// run a delay after the previous one returned), ExponentialBackoff (retries)
// and your own.
//
// The factories check their arguments and return InvalidArgument, naming the
// argument and what is allowed, for a schedule that would make no sense (a
// period of 0 would run the callback in a loop); ScheduleFunc takes their
// result as it is and returns that error:
//
//   timingwheel::BackoffOptions backoff;
//   backoff.initial = absl::Milliseconds(100);
//   backoff.max = absl::Seconds(10);
//   backoff.max_attempts = 8;
//   backoff.first_attempt_at_once = true;  // try now, then back off
//   absl::StatusOr<timingwheel::Timer> retry = wheel->ScheduleFunc(
//       timingwheel::ExponentialBackoff(backoff),
//       [max_attempts = backoff.max_attempts] {
//         timingwheel::Timer self = timingwheel::Timer::Current();
//         if (TryConnect()) {
//           self.Stop();  // done: State() becomes kStopped
//         } else if (self.Runs() == max_attempts) {
//           GiveUp();  // the last attempt failed: State() becomes kEnded
//         }
//       });
//   if (!retry.ok()) return retry.status();
//
// A handle tells the outcome afterwards too: retry->State() is kStopped
// (succeeded), kEnded (max_attempts ran out) or kCancelled, and
// retry->Runs() the attempts made.
//
// Your own: NextDelay returns a DELAY from now, never a time. Every second
// while the queue is busy, otherwise every 10 seconds:
//
//   class PollQueue : public timingwheel::Scheduler {
//    public:
//     std::optional<absl::Duration> NextDelay(
//         const timingwheel::ScheduleContext& /*context*/) override {
//       return QueueIsBusy() ? absl::Seconds(1) : absl::Seconds(10);
//     }
//   };
//
//   absl::StatusOr<timingwheel::Timer> poller =
//       wheel->ScheduleFunc(std::make_unique<PollQueue>(), [] { Poll(); });
//
// Thread-safety: a Scheduler is called by one thread at a time (the wheel
// guarantees it); the factories' schedulers keep no shared state.

#ifndef TIMINGWHEEL_SCHEDULER_H_
#define TIMINGWHEEL_SCHEDULER_H_

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "timingwheel/export.h"

namespace timingwheel {

// What the wheel tells a Scheduler when it asks for the next run. Both fields
// are readings of the wheel's clock (Clock::Now(): time since the clock's
// origin), for computing a delay, e.g. `previous_deadline + period - now`.
struct ScheduleContext {
  // The deadline of the run that just ended (after a Reset, the deadline the
  // Reset set); before the first run, the time of ScheduleFunc.
  absl::Duration previous_deadline;
  // Now: when the callback returned; before the first run, the time of
  // ScheduleFunc.
  absl::Duration now;
};

class TIMINGWHEEL_EXPORT Scheduler {
 public:
  virtual ~Scheduler();

  // How long after `context.now` the timer runs next, or std::nullopt to end
  // it. The delay is rounded up to a whole nanosecond, and the run starts at
  // the first tick boundary at or after `now + delay`, as for AfterFunc.
  // A delay <= 0 means "as soon as possible": before the first run, at once
  // (as AfterFunc(0)); after a run, at the wheel's next tick boundary after
  // `now`, so a scheduler that answers 0 runs its timer once per tick, never
  // in a loop on a worker. A delay past the supported range (about 292 years
  // from the wheel's start) ends the timer, as std::nullopt does; so does an
  // exception, counted in Stats::schedulers_thrown and reported to
  // Options::on_failure (before the first run, it reaches the caller of
  // ScheduleFunc).
  virtual std::optional<absl::Duration> NextDelay(
      const ScheduleContext& context) = 0;
};

// Runs at previous_deadline + period, the schedule of Every: the first run one
// period after ScheduleFunc, then start + k * period, skipping the runs missed
// while a run was still going. `period` is rounded up to a whole nanosecond.
// Errors: InvalidArgument unless `period` is finite and > 0.
TIMINGWHEEL_EXPORT absl::StatusOr<std::unique_ptr<Scheduler>> FixedRate(
    absl::Duration period);

// Runs `delay` after the previous run returned (the first run `delay` after
// ScheduleFunc).
// Errors: InvalidArgument unless `delay` is finite and > 0 (a delay of 0 would
// run the callback back to back, for ever).
TIMINGWHEEL_EXPORT absl::StatusOr<std::unique_ptr<Scheduler>> FixedDelay(
    absl::Duration delay);

struct BackoffOptions {
  absl::Duration initial = absl::Milliseconds(100);  // first delay; > 0
  absl::Duration max = absl::Seconds(30);  // delays are capped here; >= initial
  double multiplier = 2.0;                 // growth per attempt; >= 1
  // Each delay is multiplied by a uniform factor in [1 - jitter, 1 + jitter],
  // so that many clients retrying at once spread out; in [0, 1].
  double jitter = 0.2;
  int max_attempts = 0;  // runs before the timer ends; 0 = unlimited; >= 0
  uint64_t seed = 0;     // 0 = a random seed
  // The first run at once (as AfterFunc(0)) instead of about `initial`
  // after ScheduleFunc; the delays after it are as without: about initial,
  // initial * multiplier, ... It counts in max_attempts.
  bool first_attempt_at_once = false;
};

// Runs initial * multiplier^attempt (attempt 0, 1, ...), capped at `max`,
// times the jitter factor, capped at `max` again, after the previous run
// returned; the first run about `initial` after ScheduleFunc, or at once
// with `first_attempt_at_once`. After max_attempts runs the timer ends
// (Timer::State() kEnded); in a run, Timer::Current().Runs() is the attempt
// number, 1 for the first.
// Errors: InvalidArgument naming the field unless `initial` is finite and > 0,
// `max` finite and >= initial, `multiplier` finite and >= 1, `jitter` in
// [0, 1], and `max_attempts` >= 0.
TIMINGWHEEL_EXPORT absl::StatusOr<std::unique_ptr<Scheduler>>
ExponentialBackoff(BackoffOptions options);

}  // namespace timingwheel

#endif  // TIMINGWHEEL_SCHEDULER_H_
