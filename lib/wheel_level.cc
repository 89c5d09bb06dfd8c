// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "wheel_level.h"

#include <limits>

namespace timingwheel::internal {
namespace {

constexpr int64_t kMaxTicks = std::numeric_limits<int64_t>::max();

int64_t IntervalOf(int64_t tick, int wheel_size) {
  return tick > kMaxTicks / wheel_size ? kMaxTicks : tick * wheel_size;
}

}  // namespace

WheelLevel::WheelLevel(int64_t tick, int wheel_size, int64_t current,
                       DelayQueue* queue, bool closed)
    : tick_(tick),
      interval_(IntervalOf(tick, wheel_size)),
      lead_(tick == 1 ? 0 : tick / wheel_size),
      wheel_size_(wheel_size),
      queue_(queue),
      current_(FloorDiv(current, tick) * tick),
      closed_(closed) {
  buckets_.reserve(wheel_size);
  for (int i = 0; i < wheel_size; ++i) buckets_.emplace_back(this);
}

WheelLevel::~WheelLevel() { delete overflow(); }

WheelLevel* WheelLevel::GetOrCreateOverflow() {
  if (WheelLevel* up = overflow()) return up;
  SpinLockHolder lock(&mu_);
  WheelLevel* up = overflow_.load(std::memory_order_relaxed);
  if (up == nullptr) {
    // The overflow level's tick is this level's interval; it starts at this
    // level's current time (rounded down to its own tick).
    up = new WheelLevel(interval_, wheel_size_,
                        current_.load(std::memory_order_relaxed), queue_,
                        closed_);
    overflow_.store(up, std::memory_order_release);
  }
  return up;
}

WheelLevel* WheelLevel::Locate(int64_t expiration_tick) {
  WheelLevel* level = this;
  // interval_ == kMaxTicks spans every tick a deadline can have.
  while (level->interval_ != kMaxTicks &&
         expiration_tick - level->current() - level->tick_ >=
             level->interval_) {
    level = level->GetOrCreateOverflow();
  }
  return level;
}

WheelLevel::AddResult WheelLevel::Add(TimerNode* node, int64_t expiration_tick,
                                      uint64_t gen) {
  SpinLockHolder lock(&mu_);
  if (closed_) return AddResult::kClosed;
  const int64_t current = current_.load(std::memory_order_relaxed);
  const int64_t ahead = expiration_tick - current;
  if (tick_ == 1) {
    if (ahead <= 0) return AddResult::kDue;
  } else if (ahead < tick_) {
    return AddResult::kRetry;
  }
  const int64_t id = expiration_tick / tick_;
  Bucket& bucket = buckets_[id % wheel_size_];
  if (interval_ != kMaxTicks && ahead >= interval_) {
    // The one bucket past the span: only in a slot that is free.
    if (ahead - tick_ >= interval_ ||
        (bucket.expiration() != Bucket::kNoExpiration &&
         bucket.expiration() != id * tick_)) {
      return AddResult::kTooFar;
    }
  }
  bucket.Add(node, gen);
  if (bucket.SetExpiration(id * tick_)) {
    queue_->Offer(&bucket, id * tick_ - lead_);
  }
  return AddResult::kAdded;
}

bool WheelLevel::Remove(TimerNode* node, Bucket* bucket, uint64_t gen) {
  SpinLockHolder lock(&mu_);
  if (!bucket->Holds(node) ||
      (gen != kAnyGeneration && node->linked_gen != gen)) {
    return false;
  }
  bucket->Remove(node);
  return true;
}

void WheelLevel::Advance(int64_t tick) {
  for (WheelLevel* level = this; level != nullptr; level = level->overflow()) {
    SpinLockHolder lock(&level->mu_);
    const int64_t rounded = FloorDiv(tick, level->tick_) * level->tick_;
    if (rounded > level->current_.load(std::memory_order_relaxed)) {
      level->current_.store(rounded, std::memory_order_release);
    }
  }
}

void WheelLevel::Detach(Bucket* bucket, std::vector<TimerNode*>* out) {
  SpinLockHolder lock(&mu_);
  bucket->Detach(out);
}

void WheelLevel::Close(std::vector<TimerNode*>* out) {
  SpinLockHolder lock(&mu_);
  closed_ = true;
  for (Bucket& bucket : buckets_) bucket.Flush(out);
}

int64_t WheelLevel::CountTimers() const {
  SpinLockHolder lock(&mu_);
  int64_t n = 0;
  for (const Bucket& bucket : buckets_) n += bucket.size();
  return n;
}

}  // namespace timingwheel::internal
