// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "core/wheel_core.h"

#include <algorithm>

namespace timingwheel::internal {

WheelCore::Level::Level(const LevelGeometry& geometry, int64_t now_tick,
                        int index)
    : geometry(geometry),
      by_width(geometry.tick_width),
      current_tick(by_width.Floor(now_tick) * geometry.tick_width),
      buckets(std::make_unique<CoreBucket[]>(
          static_cast<size_t>(geometry.wheel_size))),
      index(index) {}

WheelCore::WheelCore(int wheel_size)
    : wheel_size_(wheel_size), by_size_(wheel_size) {
  levels_.emplace_back(GeometryFor(1, wheel_size_), now_tick_, 0);
}

bool WheelCore::Add(CoreNode* node, int64_t expiration_tick) {
  if (expiration_tick <= now_tick_) return false;
  node->expiration_tick = expiration_tick;
  Place(node);  // not due: linked
  ++size_;
  return true;
}

bool WheelCore::Place(CoreNode* node) {
  // Iterators, not indices: the size of a vector of 80-byte levels is a
  // division.
  for (auto level = levels_.begin();; ++level) {
    if (level == levels_.end()) {
      // The top level is past its span only if it does not span
      // everything, so there is a level above it.
      levels_.emplace_back(OverflowOf(levels_.back().geometry), now_tick_,
                           levels_.back().index + 1);
      level = levels_.end() - 1;
    }
    const LevelPlacement place =
        PlaceInLevel(level->geometry, level->current_tick,
                     node->expiration_tick, level->by_width, by_size_);
    if (place.fit == Fit::kDue) return false;
    // kLower cannot happen: a lower level found it past its span and the
    // one bucket after it, which is at least this level's tick width ahead.
    if (place.fit == Fit::kHigher) continue;
    CoreBucket& bucket = level->buckets[static_cast<size_t>(place.slot)];
    if (!bucket.timers.empty() && bucket.id != place.bucket_id) {
      // kPastSpan into the slot of the range that `current_tick` is in,
      // whose bucket still holds timers. It cannot: that bucket's release
      // tick is at or before the wheel's tick, so Advance flushed it (of
      // buckets released at one tick the lower level's first), and no Add
      // links into a range that has begun. Were it to, sharing the bucket
      // would release this timer with the earlier range: go higher instead.
      continue;
    }
    bucket.id = place.bucket_id;
    bucket.timers.Push(node);
    queue_.Offer(&bucket, level->index, place.release_tick);
    return true;
  }
}

void WheelCore::MoveTo(int64_t tick) {
  if (tick <= now_tick_) return;
  now_tick_ = tick;
  for (Level& level : levels_) {
    level.current_tick =
        level.by_width.Floor(now_tick_) * level.geometry.tick_width;
  }
}

int64_t WheelCore::Advance(int64_t now_tick, NodeList* due) {
  int64_t appended = 0;
  int64_t release_tick = 0;
  while (CoreBucket* bucket =
             queue_.PopDue(std::max(now_tick, now_tick_), &release_tick)) {
    // Kafka's advanceClock then flush: the levels move to the release, and
    // each timer of the bucket is placed again (a lower level) or is due.
    MoveTo(release_tick);
    NodeChain chain = bucket->timers.TakeAll();
    while (!chain.empty()) {
      CoreNode* node = chain.Pop();
      if (!Place(node)) {
        due->Push(node);
        --size_;
        ++appended;
      }
    }
  }
  MoveTo(now_tick);
  return appended;
}

void WheelCore::TakeAll(NodeList* out) {
  for (Level& level : levels_) {
    for (int slot = 0; slot < level.geometry.wheel_size; ++slot) {
      CoreBucket& bucket = level.buckets[static_cast<size_t>(slot)];
      NodeChain chain = bucket.timers.TakeAll();
      while (!chain.empty()) out->Push(chain.Pop());
      bucket.queued_release = CoreBucket::kNotQueued;
    }
  }
  queue_ = ReleaseQueue();
  size_ = 0;
}

}  // namespace timingwheel::internal
