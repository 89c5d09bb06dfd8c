// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "base/time_base.h"

#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace timingwheel::internal {
namespace {

constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();

}  // namespace

int64_t CeilNs(absl::Duration d) {
  int64_t ns = absl::ToInt64Nanoseconds(d);
  if (ns < kMaxInt64 && absl::Nanoseconds(ns) < d) ++ns;
  return ns;
}

int64_t LatenessNs(int64_t start_ns, int64_t deadline_ns) {
  int64_t lateness_ns;
  if (__builtin_sub_overflow(start_ns, deadline_ns, &lateness_ns)) {
    return start_ns < deadline_ns ? std::numeric_limits<int64_t>::min()
                                  : kMaxInt64;
  }
  return lateness_ns;
}

TimeBase::TimeBase(std::shared_ptr<Clock> clock, absl::Duration tick)
    : clock_(std::move(clock)),
      steady_(clock_ == SteadyClock()),
      origin_(clock_->Now()),
      origin_ns_(absl::ToInt64Nanoseconds(origin_)),
      tick_ns_(absl::ToInt64Nanoseconds(tick)),
      by_tick_(tick_ns_),
      max_deadline_ns_(kMaxInt64 / tick_ns_ * tick_ns_) {}

int64_t TimeBase::OtherClockNowNs() const {
  // Never back: a reading below the latest one counts as the latest.
  const int64_t reading = absl::ToInt64Nanoseconds(clock_->Now() - origin_);
  int64_t latest = latest_ns_.load(std::memory_order_relaxed);
  while (reading > latest) {
    // Relaxed: only the number matters, no other data is published with it.
    if (latest_ns_.compare_exchange_weak(latest, reading,
                                         std::memory_order_relaxed)) {
      return reading;
    }
  }
  return latest;
}

absl::StatusOr<int64_t> TimeBase::DeadlineAfter(int64_t now_ns,
                                                absl::Duration d,
                                                const char* caller) const {
  int64_t deadline_ns;
  if (TryDeadlineAfter(now_ns, d, &deadline_ns)) return deadline_ns;
  return absl::InvalidArgumentError(absl::StrCat(
      caller, ": duration ", absl::FormatDuration(d),
      " is out of range; deadlines must lie within ",
      absl::FormatDuration(absl::Nanoseconds(max_deadline_ns_)),
      " of the wheel's start, so at most ",
      absl::FormatDuration(absl::Nanoseconds(max_deadline_ns_ - now_ns)),
      " from now (every duration up to 100 years works)"));
}

absl::StatusOr<int64_t> TimeBase::DeadlineAt(absl::Duration when,
                                             const char* caller) const {
  // Saturated values are out of range below, or the earliest deadline.
  const int64_t deadline_ns = CeilNs(when - origin_);
  if (deadline_ns <= max_deadline_ns_) return deadline_ns;
  return absl::InvalidArgumentError(absl::StrCat(
      caller, ": time ", absl::FormatDuration(when),
      " is out of range; deadlines must lie within ",
      absl::FormatDuration(absl::Nanoseconds(max_deadline_ns_)),
      " of the wheel's start (", absl::FormatDuration(origin_),
      " by its clock), so at most ",
      absl::FormatDuration(origin_ + absl::Nanoseconds(max_deadline_ns_))));
}

absl::StatusOr<int64_t> TimeBase::FirstRunDeadline(Scheduler& scheduler,
                                                   int64_t now_ns,
                                                   const char* caller) const {
  const absl::Duration now = ToClock(now_ns);
  const std::optional<absl::Duration> first = scheduler.NextDelay({now, now});
  if (!first.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        caller,
        ": the scheduler ended before the first run (NextDelay returned "
        "nullopt); it must return a first delay"));
  }
  return DeadlineAfter(now_ns, *first, caller);
}

std::optional<int64_t> TimeBase::NextRunAfter(int64_t now_ns,
                                              absl::Duration delay) const {
  if (delay <= absl::ZeroDuration()) {
    const int64_t tick_start_ns = now_ns - now_ns % tick_ns_;
    if (tick_start_ns > max_deadline_ns_ - tick_ns_) return std::nullopt;
    return tick_start_ns + tick_ns_;
  }
  const int64_t delay_ns = CeilNs(delay);
  if (delay_ns > max_deadline_ns_ - now_ns) return std::nullopt;
  return now_ns + delay_ns;
}

}  // namespace timingwheel::internal
