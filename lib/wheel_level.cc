// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "wheel_level.h"

namespace timingwheel::internal {

WheelLevel::WheelLevel(int64_t tick_width, int wheel_size, int64_t current_tick,
                       DelayQueue* queue, bool closed)
    : geometry_(GeometryFor(tick_width, wheel_size)),
      queue_(queue),
      current_tick_(geometry_.CurrentAt(current_tick)),
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
    // The overflow level's tick width is this level's span; it starts at
    // this level's current tick (rounded down to its own tick width).
    const LevelGeometry above = OverflowOf(geometry_);
    up = new WheelLevel(above.tick_width, above.wheel_size,
                        current_tick_.load(std::memory_order_relaxed), queue_,
                        closed_);
    overflow_.store(up, std::memory_order_release);
  }
  return up;
}

WheelLevel* WheelLevel::Locate(int64_t expiration_tick) {
  WheelLevel* level = this;
  while (NeedsHigherLevel(level->geometry_, level->current_tick(),
                          expiration_tick)) {
    level = level->GetOrCreateOverflow();
  }
  return level;
}

WheelLevel::AddResult WheelLevel::Add(TimerNode* node,
                                      int64_t expiration_tick) {
  SpinLockHolder lock(&mu_);
  if (closed_) return AddResult::kClosed;
  const LevelPlacement place =
      PlaceInLevel(geometry_, current_tick_.load(std::memory_order_relaxed),
                   expiration_tick);
  switch (place.fit) {
    case Fit::kDue:
      return AddResult::kDue;
    case Fit::kLower:
      return AddResult::kRetry;
    case Fit::kHigher:
      return AddResult::kTooFar;
    case Fit::kInSpan:
    case Fit::kPastSpan:
      break;
  }
  Bucket& bucket = buckets_[place.slot];
  // The one bucket past the span only in a slot that is free: empty, or
  // holding this very bucket id already.
  if (place.fit == Fit::kPastSpan &&
      bucket.expiration() != Bucket::kNoExpiration &&
      bucket.expiration() != place.bucket_tick) {
    return AddResult::kTooFar;
  }
  bucket.Add(node);
  if (bucket.SetExpiration(place.bucket_tick)) {
    queue_->Offer(&bucket, place.release_tick);
  }
  return AddResult::kAdded;
}

bool WheelLevel::Remove(TimerNode* node, Bucket* bucket, uint64_t gen) {
  SpinLockHolder lock(&mu_);
  if (!bucket->Holds(node) || !OfGeneration(node->LoadState(), gen)) {
    return false;
  }
  bucket->Remove(node);
  return true;
}

void WheelLevel::Advance(int64_t now_tick) {
  for (WheelLevel* level = this; level != nullptr; level = level->overflow()) {
    SpinLockHolder lock(&level->mu_);
    const int64_t current_tick = level->geometry_.CurrentAt(now_tick);
    if (current_tick > level->current_tick_.load(std::memory_order_relaxed)) {
      level->current_tick_.store(current_tick, std::memory_order_release);
    }
  }
}

void WheelLevel::Detach(Bucket* bucket, NodeArray* out) {
  SpinLockHolder lock(&mu_);
  bucket->Detach(out);
}

void WheelLevel::Close(std::vector<TimerNode*>* out) {
  SpinLockHolder lock(&mu_);
  closed_ = true;
  for (Bucket& bucket : buckets_) bucket.Flush(out);
}

void WheelLevel::RemoveIf(absl::FunctionRef<bool(TimerNode*)> take,
                          std::vector<TimerNode*>* out) {
  SpinLockHolder lock(&mu_);
  for (Bucket& bucket : buckets_) bucket.RemoveIf(take, out);
}

int64_t WheelLevel::CountTimers() const {
  SpinLockHolder lock(&mu_);
  int64_t n = 0;
  for (const Bucket& bucket : buckets_) n += bucket.size();
  return n;
}

}  // namespace timingwheel::internal
