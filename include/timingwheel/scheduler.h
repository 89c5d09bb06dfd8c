// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// scheduler.h: custom schedules for TimingWheel::ScheduleFunc.
//
// A `Scheduler` decides, after each run of a timer, when it runs next; the
// wheel asks it once before the first run and once after every run, on the
// worker thread that ran the callback, never concurrently. Four come with the
// library: FixedRate (like Every), FixedDelay (the next run a delay after the
// previous one returned), ExponentialBackoff (retries) and your own.
//
// Example: retry a connection with backoff, at most 8 times.
//
//   timingwheel::BackoffOptions backoff;
//   backoff.initial = absl::Milliseconds(100);
//   backoff.max = absl::Seconds(10);
//   backoff.max_attempts = 8;
//   wheel->ScheduleFunc(timingwheel::ExponentialBackoff(backoff), [] {
//     if (TryConnect()) timingwheel::Timer::Current().Stop();
//   });
//
// Thread-safety: a Scheduler is called by one thread at a time (the wheel
// guarantees it); the factories' schedulers keep no shared state.

#ifndef TIMINGWHEEL_SCHEDULER_H_
#define TIMINGWHEEL_SCHEDULER_H_

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/time/time.h"

namespace timingwheel {

class Scheduler {
 public:
  virtual ~Scheduler();

  // The next deadline, by the wheel's clock (Clock::Now()), or std::nullopt to
  // end the timer. Before the first run `previous` and `now` are both the time
  // of ScheduleFunc; after a run, `previous` is the deadline that run was
  // scheduled for and `now` the time its callback returned. A deadline at or
  // before `now` runs as soon as possible.
  virtual std::optional<absl::Duration> Next(absl::Duration previous,
                                             absl::Duration now) = 0;
};

// previous + period, skipping runs missed while a run was still going (the
// schedule of Every). Precondition: period > 0 (else every run is at once).
std::unique_ptr<Scheduler> FixedRate(absl::Duration period);

// now + delay: the next run starts `delay` after the previous one returned.
std::unique_ptr<Scheduler> FixedDelay(absl::Duration delay);

struct BackoffOptions {
  absl::Duration initial = absl::Milliseconds(100);  // first delay
  absl::Duration max = absl::Seconds(30);            // delays are capped here
  double multiplier = 2.0;                           // growth per attempt
  // Each delay is multiplied by a uniform factor in [1 - jitter, 1 + jitter]
  // (clamped to [0, 1]), so that many clients retrying at once spread out.
  double jitter = 0.2;
  int max_attempts = 0;  // runs before the timer ends; 0 = unlimited
  uint64_t seed = 0;     // 0 = a random seed
};

// now + min(max, initial * multiplier^attempt) * jitter, for attempt 0, 1, ...
std::unique_ptr<Scheduler> ExponentialBackoff(BackoffOptions options);

}  // namespace timingwheel

#endif  // TIMINGWHEEL_SCHEDULER_H_
