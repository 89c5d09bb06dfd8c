// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// clock.cc: SteadyClock and ManualClock (see include/timingwheel/clock.h).
//
// ManualClock wakes its waiters without a lost wake-up: a waiter registers its
// (mutex, condition variable) before it re-checks the time, with its mutex
// held; Advance publishes the new time, then notifies each registered waiter
// while holding that waiter's mutex, so the notify lands either before the
// waiter's check (which then sees the new time) or while it waits. Lock order:
// a waiter's mutex, then `waiters_mu_`; Advance never holds both. A waiter
// unregisters with its own mutex released and waits until no Advance is still
// notifying, so Advance never touches a waiter that has gone.

#include "timingwheel/clock.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <vector>

namespace timingwheel {
namespace {

// Real-time waits are capped so that converting the deadline to a
// std::chrono time point can never overflow; the caller simply waits again.
constexpr absl::Duration kMaxRealWait = absl::Hours(24);

class SteadyClockImpl : public Clock {
 public:
  absl::Duration Now() const override {
    return absl::FromChrono(
        std::chrono::steady_clock::now().time_since_epoch());
  }
};

}  // namespace

Clock::~Clock() = default;

void Clock::WaitUntil(absl::Duration deadline,
                      std::unique_lock<std::mutex>& lock,
                      std::condition_variable& cv) const {
  if (deadline == absl::InfiniteDuration()) {
    cv.wait(lock);
    return;
  }
  const absl::Duration left = deadline - Now();
  if (left <= absl::ZeroDuration()) return;
  cv.wait_for(lock, absl::ToChronoNanoseconds(std::min(left, kMaxRealWait)));
}

std::shared_ptr<Clock> SteadyClock() {
  static const auto* clock =
      new std::shared_ptr<Clock>(std::make_shared<SteadyClockImpl>());
  return *clock;
}

ManualClock::ManualClock() = default;

absl::Duration ManualClock::Now() const {
  return absl::Nanoseconds(now_ns_.load(std::memory_order_acquire));
}

void ManualClock::Advance(absl::Duration d) {
  if (d <= absl::ZeroDuration()) return;
  const int64_t step = absl::ToInt64Nanoseconds(d);  // saturates
  std::vector<Waiter> waiters;
  {
    std::lock_guard<std::mutex> lock(waiters_mu_);
    const int64_t now = now_ns_.load(std::memory_order_relaxed);
    const int64_t max = std::numeric_limits<int64_t>::max();
    now_ns_.store(now > max - step ? max : now + step,
                  std::memory_order_release);
    waiters.assign(waiters_.begin(), waiters_.end());
    ++notifying_;
  }
  for (const Waiter& waiter : waiters) {
    std::lock_guard<std::mutex> lock(*waiter.first);
    waiter.second->notify_all();
  }
  std::lock_guard<std::mutex> lock(waiters_mu_);
  if (--notifying_ == 0) notify_done_.notify_all();
}

void ManualClock::WaitUntil(absl::Duration deadline,
                            std::unique_lock<std::mutex>& lock,
                            std::condition_variable& cv) const {
  if (Now() >= deadline) return;
  const Waiter self(lock.mutex(), &cv);
  {
    std::lock_guard<std::mutex> guard(waiters_mu_);
    waiters_.insert(self);
  }
  if (Now() < deadline) cv.wait(lock);
  lock.unlock();
  {
    std::unique_lock<std::mutex> guard(waiters_mu_);
    waiters_.erase(waiters_.find(self));
    notify_done_.wait(guard, [this] { return notifying_ == 0; });
  }
  lock.lock();
}

}  // namespace timingwheel
