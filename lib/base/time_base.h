// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// time_base.h: an engine's time: its clock, its origin, and deadlines as
// nanoseconds since that origin.
//
// Inside the engine every instant is an int64 count of nanoseconds since the
// origin (the clock's reading when the wheel was created), and every tick is
// a count of `tick` widths since it. This class turns the user's durations
// and clock times into such deadlines, always rounding up (a deadline is
// never earlier than asked for), and says precisely what is out of range:
// deadlines up to the last whole tick below 2^63 ns (about 292 years) after
// the origin.
//
// Now: the one place the engine reads its clock. For SteadyClock() it reads
// std::chrono::steady_clock directly (one vDSO call, no Duration math); the
// result is the same reading the Clock would give. Another clock may step
// backwards (its contract forbids it; simulators do it): NowNs never goes
// back, never below 0, and a reading below the latest one counts as the
// latest. So a deadline made after a step back is later than the clock's
// own reading + d, never earlier, and no tick or slot is ever negative.
//
// Thread-safety: every member is thread-safe; only the latest reading of a
// clock other than SteadyClock() changes after construction.

#ifndef TIMINGWHEEL_LIB_BASE_TIME_BASE_H_
#define TIMINGWHEEL_LIB_BASE_TIME_BASE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/divider.h"
#include "core/placement.h"
#include "timingwheel/clock.h"
#include "timingwheel/scheduler.h"

namespace timingwheel::internal {

// `d` in nanoseconds, rounded up. Saturates at INT64_MAX and INT64_MIN (`d`
// of about 292 years or more either way).
int64_t CeilNs(absl::Duration d);

// CeilNs of the last delay it was asked for, kept for the next ask: a server
// gives the same delay again and again (one timeout for every request), and
// CeilNs costs two calls into Abseil (about 50 instructions), the lookup two
// comparisons. Not thread-safe: one per thread, or per single-owner object.
class CeilNsCache {
 public:
  int64_t Get(absl::Duration d) {
    if (d != last_) {
      last_ns_ = CeilNs(d);
      last_ = d;
    }
    return last_ns_;
  }

 private:
  absl::Duration last_;  // zero, whose CeilNs is 0
  int64_t last_ns_ = 0;
};

// How late `start_ns` is for `deadline_ns`: start - deadline, saturated at
// INT64_MAX (a point passed long ago, AtClockTime(-292 years), is a deadline
// of INT64_MIN).
int64_t LatenessNs(int64_t start_ns, int64_t deadline_ns);

// The longest delay that may go to the advancer unstamped, and the latest
// time since the origin at which it polls (handoff/inbox.h): 100 years
// each, so that a stamp (taken at most 100 years and a hand-off after the
// origin, plus at most 100 years) is always within range.
inline constexpr int64_t kMaxUnstampedNs =
    int64_t{100} * 365 * 24 * 3600 * 1'000'000'000;

class TimeBase {
 public:
  // Precondition: `tick` is at least 1ns and finite (Options validated).
  TimeBase(std::shared_ptr<Clock> clock, absl::Duration tick);

  const Clock& clock() const { return *clock_; }
  const std::shared_ptr<Clock>& shared_clock() const { return clock_; }
  // Whether the clock is SteadyClock(), whose time is steady_clock's.
  bool steady() const { return steady_; }
  // The clock's time at which nanosecond (and tick) 0 lies.
  absl::Duration origin() const { return origin_; }
  int64_t tick_ns() const { return tick_ns_; }

  // Nanoseconds since the origin, now. Inline for SteadyClock(): every
  // AfterFunc reads it.
  int64_t NowNs() const {
    if (steady_) {
      return std::chrono::duration_cast<std::chrono::nanoseconds>(
                 std::chrono::steady_clock::now().time_since_epoch())
                 .count() -
             origin_ns_;
    }
    return OtherClockNowNs();
  }
  // `ns` since the origin as a time of the clock.
  absl::Duration ToClock(int64_t ns) const {
    return origin_ + absl::Nanoseconds(ns);
  }
  // The tick in which a deadline falls due: the first tick boundary at or
  // after it.
  int64_t TickOf(int64_t deadline_ns) const {
    // No division instruction for the deadlines of the hot path (>= 0).
    return deadline_ns >= 0 ? by_tick_.Ceil(deadline_ns)
                            : CeilDiv(deadline_ns, tick_ns_);
  }

  // `now_ns + d` as a deadline; `now_ns` for d <= 0. InvalidArgument, whose
  // message starts with `caller`, when it is out of range (d = +inf too).
  absl::StatusOr<int64_t> DeadlineAfter(int64_t now_ns, absl::Duration d,
                                        const char* caller) const;
  // DeadlineAfter's success, in `*deadline_ns`, without a status: false when
  // DeadlineAfter would fail (which then says why).
  // With `cache`, the delay's nanoseconds come from it.
  bool TryDeadlineAfter(int64_t now_ns, absl::Duration d, int64_t* deadline_ns,
                        CeilNsCache* cache = nullptr) const {
    if (d <= absl::ZeroDuration()) {
      *deadline_ns = now_ns;
      return true;
    }
    // Saturated values (d of about 292 years or more) are out of range.
    const int64_t d_ns = cache != nullptr ? cache->Get(d) : CeilNs(d);
    if (d_ns == std::numeric_limits<int64_t>::max() ||
        d_ns > max_deadline_ns_ - now_ns) {
      return false;
    }
    *deadline_ns = now_ns + d_ns;
    return true;
  }
  // The clock time `when` as a deadline, rounded up, also when it has passed
  // (the deadline of a timer that is due at once; one before the origin is
  // negative, saturated at INT64_MIN). InvalidArgument when past the range.
  absl::StatusOr<int64_t> DeadlineAt(absl::Duration when,
                                     const char* caller) const;
  // The deadline of a periodic timer's next run, `delay` after `now_ns`
  // (rounded up); a delay <= 0 means the next tick boundary after now, so a
  // schedule that keeps answering 0 runs once a tick, not in a loop. nullopt
  // when the deadline would be out of range: the schedule ends.
  // The deadline of a periodic timer's first run: `scheduler` asked at
  // `now_ns` for the delay until it (on the calling thread: an exception
  // reaches the caller). InvalidArgument, whose message starts with
  // `caller`, when the schedule ends before its first run or the deadline is
  // out of range.
  absl::StatusOr<int64_t> FirstRunDeadline(Scheduler& scheduler, int64_t now_ns,
                                           const char* caller) const;
  std::optional<int64_t> NextRunAfter(int64_t now_ns,
                                      absl::Duration delay) const;

 private:
  // NowNs of a clock other than SteadyClock().
  int64_t OtherClockNowNs() const;

  const std::shared_ptr<Clock> clock_;
  const bool steady_;
  const absl::Duration origin_;
  const int64_t origin_ns_;
  const int64_t tick_ns_;
  const Divider by_tick_;          // divides by tick_ns_
  const int64_t max_deadline_ns_;  // the last whole tick below 2^63 ns
  // The latest NowNs of a clock other than SteadyClock(), which is steady.
  mutable std::atomic<int64_t> latest_ns_{0};
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_BASE_TIME_BASE_H_
