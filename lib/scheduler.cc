// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// scheduler.cc: the schedules that come with the library (scheduler.h).

#include "timingwheel/scheduler.h"

#include <algorithm>
#include <random>

namespace timingwheel {
namespace {

class FixedRateScheduler : public Scheduler {
 public:
  explicit FixedRateScheduler(absl::Duration period) : period_(period) {}
  std::optional<absl::Duration> Next(absl::Duration previous,
                                     absl::Duration now) override {
    if (period_ <= absl::ZeroDuration()) return now;
    absl::Duration next = previous + period_;
    if (next <= now) {
      // Skip the runs missed while the previous one ran.
      absl::Duration remainder;
      next = previous +
             period_ *
                 (absl::IDivDuration(now - previous, period_, &remainder) + 1);
    }
    return next;
  }

 private:
  const absl::Duration period_;
};

class FixedDelayScheduler : public Scheduler {
 public:
  explicit FixedDelayScheduler(absl::Duration delay) : delay_(delay) {}
  std::optional<absl::Duration> Next(absl::Duration,
                                     absl::Duration now) override {
    return now + delay_;
  }

 private:
  const absl::Duration delay_;
};

class BackoffScheduler : public Scheduler {
 public:
  explicit BackoffScheduler(const BackoffOptions& options)
      : options_(options),
        random_(options.seed != 0 ? options.seed : std::random_device{}()),
        delay_(options.initial) {}

  std::optional<absl::Duration> Next(absl::Duration,
                                     absl::Duration now) override {
    if (options_.max_attempts > 0 && attempts_ >= options_.max_attempts) {
      return std::nullopt;
    }
    ++attempts_;
    const double jitter = std::clamp(options_.jitter, 0.0, 1.0);
    std::uniform_real_distribution<double> factor(1.0 - jitter, 1.0 + jitter);
    const absl::Duration delay = delay_ * factor(random_);
    delay_ =
        std::min(options_.max, delay_ * std::max(options_.multiplier, 1.0));
    return now + std::min(delay, options_.max);
  }

 private:
  const BackoffOptions options_;
  std::mt19937_64 random_;
  absl::Duration delay_;
  int attempts_ = 0;
};

}  // namespace

Scheduler::~Scheduler() = default;

std::unique_ptr<Scheduler> FixedRate(absl::Duration period) {
  return std::make_unique<FixedRateScheduler>(period);
}

std::unique_ptr<Scheduler> FixedDelay(absl::Duration delay) {
  return std::make_unique<FixedDelayScheduler>(delay);
}

std::unique_ptr<Scheduler> ExponentialBackoff(BackoffOptions options) {
  return std::make_unique<BackoffScheduler>(options);
}

}  // namespace timingwheel
