// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "threads/release_alarm.h"

#include <algorithm>

namespace timingwheel::internal {

ReleaseAlarm::ReleaseAlarm(const TimeBase* time)
    : time_(time),
      min_wait_(std::max(absl::Nanoseconds(time->tick_ns()), kMinWaitFloor)),
      wake_up_(time->shared_clock().get(), &mu_, &cv_) {}

void ReleaseAlarm::Set(int64_t release_tick) {
  MutexLock lock(&mu_);
  const bool sooner = release_tick < tick_;
  tick_ = release_tick;
  if (sooner) cv_.NotifyOne();
}

bool ReleaseAlarm::Wait() {
  MutexLock lock(&mu_);
  bool retried = false;  // the clock said "no wait" for a time not reached
  while (!closed_) {
    if (Due()) {
      tick_ = kNever;
      return true;
    }
    // The reading was taken under `mu_` (Due) and the wait releases `mu_`
    // atomically: a NotifyTimeChanged after that reading finds us waiting.
    absl::Duration wait =
        tick_ == kNever
            ? absl::InfiniteDuration()
            : time_->clock().RealTimeUntil(time_->ToClock(ReleaseNs(tick_)));
    if (wait <= absl::ZeroDuration()) {
      // Once: the time passed between the two readings. Again: the clock's
      // Now() and RealTimeUntil disagree (a coarse Now()); sleep a little
      // rather than spin.
      if (retried) wait = min_wait_;
      retried = true;
    } else {
      retried = false;
    }
    cv_.WaitFor(&mu_, wait);
  }
  return false;
}

void ReleaseAlarm::Close() {
  MutexLock lock(&mu_);
  closed_ = true;
  cv_.NotifyAll();
}

}  // namespace timingwheel::internal
