// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// scheduler.cc: the schedules that come with the library (scheduler.h,
// scheduler_internal.h), and the checks of their arguments.

#include "timingwheel/scheduler.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "base/scheduler_internal.h"

namespace timingwheel {
namespace {

class FixedRateScheduler : public Scheduler {
 public:
  // `period` > 0, a whole number of nanoseconds.
  explicit FixedRateScheduler(absl::Duration period) : period_(period) {}
  std::optional<absl::Duration> NextDelay(
      const ScheduleContext& context) override {
    const absl::Duration previous = context.previous_deadline;
    absl::Duration next = previous + period_;
    if (next <= context.now) {
      // Skip the runs missed while the previous one ran: the next point of
      // previous + k * period after now. (Duration arithmetic saturates, so
      // a point past the supported range stays past it.)
      absl::Duration remainder;
      const int64_t missed =
          absl::IDivDuration(context.now - previous, period_, &remainder);
      next = previous + period_ * missed + period_;
    }
    return next - context.now;
  }

 private:
  const absl::Duration period_;
};

class FixedDelayScheduler : public Scheduler {
 public:
  explicit FixedDelayScheduler(absl::Duration delay) : delay_(delay) {}
  std::optional<absl::Duration> NextDelay(const ScheduleContext&) override {
    return delay_;
  }

 private:
  const absl::Duration delay_;
};

class BackoffScheduler : public Scheduler {
 public:
  // `options` as ExponentialBackoff checked them.
  explicit BackoffScheduler(const BackoffOptions& options)
      : options_(options),
        random_(options.seed != 0 ? options.seed : std::random_device{}()),
        delay_(options.initial) {}

  std::optional<absl::Duration> NextDelay(const ScheduleContext&) override {
    if (options_.max_attempts > 0 && attempts_ >= options_.max_attempts) {
      return std::nullopt;
    }
    if (attempts_++ == 0 && options_.first_attempt_at_once) {
      return absl::ZeroDuration();
    }
    std::uniform_real_distribution<double> factor(1.0 - options_.jitter,
                                                  1.0 + options_.jitter);
    const absl::Duration delay = delay_ * factor(random_);
    // Duration * double saturates: no overflow however many attempts.
    delay_ = std::min(options_.max, delay_ * options_.multiplier);
    return std::min(delay, options_.max);
  }

 private:
  const BackoffOptions options_;
  std::mt19937_64 random_;
  absl::Duration delay_;
  int attempts_ = 0;
};

bool FiniteAndPositive(absl::Duration d) {
  return d > absl::ZeroDuration() && d < absl::InfiniteDuration();
}

absl::Status BadArgument(absl::string_view caller, absl::string_view name,
                         absl::string_view value, absl::string_view allowed) {
  return absl::InvalidArgumentError(absl::StrCat(
      caller, ": ", name, " is ", value, "; it must be ", allowed));
}

absl::Status CheckBackoff(const BackoffOptions& o) {
  constexpr char kCaller[] = "ExponentialBackoff";
  if (!FiniteAndPositive(o.initial)) {
    return BadArgument(kCaller, "BackoffOptions::initial",
                       absl::FormatDuration(o.initial), "finite and > 0");
  }
  if (o.max < o.initial || o.max == absl::InfiniteDuration()) {
    return BadArgument(kCaller, "BackoffOptions::max",
                       absl::FormatDuration(o.max),
                       absl::StrCat("finite and >= initial (",
                                    absl::FormatDuration(o.initial), ")"));
  }
  if (!(o.multiplier >= 1.0) || !std::isfinite(o.multiplier)) {
    return BadArgument(kCaller, "BackoffOptions::multiplier",
                       absl::StrCat(o.multiplier), "finite and >= 1");
  }
  if (!(o.jitter >= 0.0 && o.jitter <= 1.0)) {
    return BadArgument(kCaller, "BackoffOptions::jitter",
                       absl::StrCat(o.jitter), "in [0, 1]");
  }
  if (o.max_attempts < 0) {
    return BadArgument(kCaller, "BackoffOptions::max_attempts",
                       absl::StrCat(o.max_attempts), ">= 0 (0 = unlimited)");
  }
  return absl::OkStatus();
}

}  // namespace

Scheduler::~Scheduler() = default;

namespace internal {

absl::StatusOr<std::unique_ptr<Scheduler>> NewFixedRate(absl::Duration period,
                                                        const char* caller) {
  if (!FiniteAndPositive(period)) {
    return BadArgument(caller, "period", absl::FormatDuration(period),
                       "finite and > 0");
  }
  // Rounded up once here, so that every deadline lies on start + k * period
  // exactly, however many runs: a period under 1 ns becomes 1 ns, not 0.
  return std::make_unique<FixedRateScheduler>(
      absl::Ceil(period, absl::Nanoseconds(1)));
}

}  // namespace internal

absl::StatusOr<std::unique_ptr<Scheduler>> FixedRate(absl::Duration period) {
  return internal::NewFixedRate(period, "FixedRate");
}

absl::StatusOr<std::unique_ptr<Scheduler>> FixedDelay(absl::Duration delay) {
  if (!FiniteAndPositive(delay)) {
    return BadArgument("FixedDelay", "delay", absl::FormatDuration(delay),
                       "finite and > 0 (0 would run the callback back to "
                       "back, for ever)");
  }
  return std::make_unique<FixedDelayScheduler>(delay);
}

absl::StatusOr<std::unique_ptr<Scheduler>> ExponentialBackoff(
    BackoffOptions options) {
  if (absl::Status status = CheckBackoff(options); !status.ok()) return status;
  return std::make_unique<BackoffScheduler>(options);
}

}  // namespace timingwheel
