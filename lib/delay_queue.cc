// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "delay_queue.h"

#include <algorithm>
#include <utility>

namespace timingwheel::internal {
namespace {

// std::*_heap build a max-heap; this order puts the earliest on top.
bool Later(const DelayQueue::Entry& a, const DelayQueue::Entry& b) {
  return a.release_tick > b.release_tick;
}

}  // namespace

DelayQueue::DelayQueue(std::shared_ptr<Clock> clock, absl::Duration origin,
                       int64_t tick_ns)
    : clock_(std::move(clock)),
      origin_(origin),
      tick_ns_(tick_ns),
      min_wait_(std::max(absl::Nanoseconds(tick_ns), kMinWaitFloor)),
      wake_up_(clock_.get(), &mu_, &cv_) {}

void DelayQueue::Offer(Bucket* bucket, int64_t release_tick) {
  MutexLock lock(&mu_);
  heap_.push_back({release_tick, bucket});
  std::push_heap(heap_.begin(), heap_.end(), Later);
  if (heap_.front().bucket == bucket) cv_.NotifyOne();
}

bool DelayQueue::HeadDue() const {
  return !heap_.empty() &&
         clock_->Now() >= DeadlineOf(heap_.front().release_tick);
}

bool DelayQueue::Poll(std::vector<Entry>* out) {
  MutexLock lock(&mu_);
  bool retried = false;  // the clock said "no wait" for a head not yet due
  while (!closed_) {
    if (HeadDue()) {
      const absl::Duration now = clock_->Now();
      while (!heap_.empty() && now >= DeadlineOf(heap_.front().release_tick)) {
        std::pop_heap(heap_.begin(), heap_.end(), Later);
        out->push_back(heap_.back());
        heap_.pop_back();
        ++outstanding_;
      }
      return true;
    }
    const absl::Duration deadline =
        heap_.empty() ? absl::InfiniteDuration()
                      : DeadlineOf(heap_.front().release_tick);
    // Now() was read under `mu_` (HeadDue) and the wait releases `mu_`
    // atomically: a NotifyTimeChanged after that read finds us waiting.
    absl::Duration wait = clock_->RealTimeUntil(deadline);
    if (wait <= absl::ZeroDuration()) {
      // Once: the deadline passed between the two readings. Again: the
      // clock's Now() and RealTimeUntil disagree (a coarse Now()); sleep a
      // little rather than spin.
      if (retried) wait = min_wait_;
      retried = true;
    } else {
      retried = false;
    }
    cv_.WaitFor(&mu_, wait);
  }
  return false;
}

void DelayQueue::Done(int64_t n) {
  MutexLock lock(&mu_);
  outstanding_ -= n;
}

bool DelayQueue::IsIdle() const {
  MutexLock lock(&mu_);
  return outstanding_ == 0 && !HeadDue();
}

void DelayQueue::Close() {
  MutexLock lock(&mu_);
  closed_ = true;
  cv_.NotifyAll();
}

int64_t DelayQueue::size() const {
  MutexLock lock(&mu_);
  return static_cast<int64_t>(heap_.size());
}

}  // namespace timingwheel::internal
