// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// clock.cc: Clock's list of sleepers, SteadyClock and ManualClock (see
// include/timingwheel/clock.h, and lib/base/clock_wake_up.h for why no
// wake-up is lost and none runs after its owner has gone).
//
// Every Clock owns a ClockWakeUpList: the library's sleepers (one per delay
// queue on the clock) registered as ClockWakeUps. NotifyTimeChanged walks it
// under the list's lock, so registering, removing and waking are serialized:
// a list of a few entries, changed only when a wheel is created or destroyed.

#include "timingwheel/clock.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "base/clock_wake_up.h"
#include "base/mutex.h"

namespace timingwheel {
namespace internal {

class ClockWakeUpList {
 public:
  ClockWakeUpList() = default;
  ~ClockWakeUpList() {
    MutexLock lock(&mu_);
    assert(wake_ups_.empty() && "a Clock destroyed while a wheel sleeps on it");
  }
  ClockWakeUpList(const ClockWakeUpList&) = delete;
  ClockWakeUpList& operator=(const ClockWakeUpList&) = delete;

  void Add(ClockWakeUp* wake_up) ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    wake_ups_.push_back(wake_up);
  }

  void Remove(ClockWakeUp* wake_up) ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    wake_ups_.erase(std::find(wake_ups_.begin(), wake_ups_.end(), wake_up));
  }

  // Lock order: `mu_`, then each wake-up's mutex (in Wake).
  void WakeAll() ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    for (ClockWakeUp* wake_up : wake_ups_) wake_up->Wake();
  }

 private:
  Mutex mu_{LockRank::kClockWakeUps};
  std::vector<ClockWakeUp*> wake_ups_ ABSL_GUARDED_BY(mu_);
};

ClockWakeUp::ClockWakeUp(Clock* clock, Mutex* mu, CondVar* cv)
    : list_(clock->wake_ups_.get()), mu_(mu), cv_(cv) {
  list_->Add(this);
}

ClockWakeUp::~ClockWakeUp() { list_->Remove(this); }

void ClockWakeUp::Wake() {
  MutexLock lock(mu_);
  cv_->NotifyAll();
}

}  // namespace internal

namespace {

class SteadyClockImpl : public Clock {
 public:
  absl::Duration Now() const override {
    return absl::FromChrono(
        std::chrono::steady_clock::now().time_since_epoch());
  }
};

}  // namespace

Clock::Clock() : wake_ups_(std::make_unique<internal::ClockWakeUpList>()) {}

Clock::~Clock() = default;

absl::Duration Clock::RealTimeUntil(absl::Duration deadline) const {
  return deadline - Now();
}

void Clock::NotifyTimeChanged() { wake_ups_->WakeAll(); }

std::shared_ptr<Clock> SteadyClock() {
  static const auto* clock =
      new std::shared_ptr<Clock>(std::make_shared<SteadyClockImpl>());
  return *clock;
}

ManualClock::ManualClock() = default;

absl::Duration ManualClock::Now() const {
  return absl::Nanoseconds(now_ns_.load(std::memory_order_acquire));
}

absl::Duration ManualClock::RealTimeUntil(absl::Duration) const {
  return absl::InfiniteDuration();
}

void ManualClock::Advance(absl::Duration d) {
  if (d <= absl::ZeroDuration()) return;
  const int64_t step = absl::ToInt64Nanoseconds(d);  // saturates
  const int64_t max = std::numeric_limits<int64_t>::max();
  // Release: publishes what this thread wrote before advancing (the CAS
  // continues the release sequence of concurrent Advances).
  int64_t now = now_ns_.load(std::memory_order_relaxed);
  while (!now_ns_.compare_exchange_weak(
      now, now > max - step ? max : now + step, std::memory_order_release,
      std::memory_order_relaxed)) {
  }
  NotifyTimeChanged();
}

}  // namespace timingwheel
