// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "core/wheel_core.h"

#include <algorithm>
#include <limits>
#include <memory>

namespace timingwheel::internal {
WheelCore::Level::Level(const LevelGeometry& geometry, int64_t now_tick,
                        int index, const Divider& by_size)
    : geometry(geometry),
      by_width(geometry.tick_width),
      current_tick(-1),
      buckets(std::make_unique<CoreBucket[]>(
          static_cast<size_t>(geometry.wheel_size))),
      index(index) {
  MoveTo(now_tick, by_size);
}

void WheelCore::Level::MoveTo(int64_t now_tick, const Divider& by_size) {
  current_id = by_width.Floor(now_tick);
  const int64_t tick = current_id * geometry.tick_width;
  if (tick == current_tick) return;
  current_tick = tick;
  current_slot = by_size.Remainder(current_id);
  // current_tick + span + tick_width - 1, or kMaxTick past it.
  if (geometry.spans_everything() ||
      __builtin_add_overflow(current_tick, geometry.span, &last_fit) ||
      __builtin_add_overflow(last_fit, geometry.tick_width - 1, &last_fit)) {
    last_fit = kMaxTick;
  }
}

WheelCore::WheelCore(int wheel_size, int64_t unit)
    : wheel_size_(wheel_size),
      by_size_(wheel_size),
      unit_(unit),
      by_unit_(unit) {
  AddLevel(GeometryFor(1, wheel_size_));
}

void WheelCore::AddLevel(const LevelGeometry& geometry) {
  const int index = levels_.empty() ? 0 : levels_.back().index + 1;
  levels_.emplace_back(geometry, now_tick_, index, by_size_);
  for (int slot = 0; slot < wheel_size_; ++slot) {
    Register(&levels_.back().buckets[static_cast<size_t>(slot)].timers);
  }
}

void WheelCore::Register(NodeList* list) {
  // Ids past NodeList::kMaxId would not fit a head link: 134 million lists,
  // far beyond the levels a 64-bit tick needs and their flushes.
  list->set_id(static_cast<uint32_t>(holders_.size()));
  holders_.push_back(list);
}

void WheelCore::Move(NodeList* from, NodeList* to) {
  to->TakeOver(from);
  holders_[from->id()] = from;
  holders_[to->id()] = to;
}

bool WheelCore::Place(CoreNode* node, int64_t tick, bool remember) {
  // Iterators, not indices: the size of a vector of 80-byte levels is a
  // division.
  for (auto level = levels_.begin();; ++level) {
    if (level == levels_.end()) {
      // The top level is past its span only if it does not span
      // everything, so there is a level above it.
      AddLevel(OverflowOf(levels_.back().geometry));
      level = levels_.end() - 1;
    }
    // One comparison a level (NeedsHigherLevel, kept by Level::MoveTo),
    // until the level: PlaceInLevel (and its one division) runs once.
    if (tick > level->last_fit) continue;
    const LevelPlacement place =
        PlaceInLevel(level->geometry, level->current_tick, tick,
                     level->by_width, SlotOf{*level, by_size_});
    if (place.fit == Fit::kDue) return false;
    // Neither kHigher (just checked) nor kLower: a lower level found it past
    // its span and the one bucket after it, which is at least this level's
    // tick width ahead.
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
    if (remember) {
      RememberLast(*level, level == levels_.begin() ? nullptr : &*(level - 1),
                   place, &bucket);
    }
    return true;
  }
}

void WheelCore::RememberLast(const Level& level, const Level* lower,
                             const LevelPlacement& place, CoreBucket* bucket) {
  // The ticks Place maps to this bucket: past what the lower levels take
  // (their last_fit grows with the level), up to the bucket's last tick and
  // this level's last_fit.
  if (lower != nullptr && lower->last_fit == kMaxTick) {
    // Placed here past a conflict below (Place's `continue`): no tick
    // passes the lower level, so Place would pick this bucket for none.
    last_ = LastBucket();
    return;
  }
  int64_t first_tick = place.bucket_tick;
  if (lower != nullptr) first_tick = std::max(first_tick, lower->last_fit + 1);
  int64_t last_tick;
  if (__builtin_add_overflow(place.bucket_tick, level.geometry.tick_width - 1,
                             &last_tick)) {
    last_tick = kMaxTick;
  }
  last_tick = std::min(last_tick, level.last_fit);
  // The expirations whose TickOf is in [first_tick, last_tick]: first_tick
  // is past now_tick_ >= 0, so they are positive, and TickOf rounds up.
  int64_t first = 0;
  int64_t last = 0;
  if (first_tick > last_tick ||
      __builtin_mul_overflow(first_tick - 1, unit_, &first)) {
    last_ = LastBucket();
    return;
  }
  if (__builtin_mul_overflow(last_tick, unit_, &last)) {
    last = std::numeric_limits<int64_t>::max();
  }
  last_ = LastBucket{first + 1, last, bucket, bucket->queued_release};
}

void WheelCore::MoveTo(int64_t tick) {
  if (tick <= now_tick_) return;
  now_tick_ = tick;
  last_ = LastBucket();  // the levels move: Place may pick another bucket
  for (Level& level : levels_) level.MoveTo(now_tick_, by_size_);
}

int64_t WheelCore::AdvanceReleasing(int64_t now_tick,
                                    std::vector<CoreNode*>* due,
                                    Cascades cascades) {
  int64_t appended = 0;
  for (;;) {
    const std::optional<int64_t> release = queue_.NextRelease();
    const bool bucket_due = release.has_value() && *release <= now_tick;
    // Where the levels are about to move: the waiting timers are placed
    // before they get to cascade_by_, from where the levels are now (and
    // may fill buckets due sooner than the one at hand: look again).
    const int64_t to = std::max(bucket_due ? *release : now_tick, now_tick_);
    if (to >= cascade_by_ && AnyWaiting()) {
      PlaceWaiting(waiting_count_);
      continue;
    }
    if (!bucket_due) break;
    int64_t release_tick = 0;
    int level = 0;
    CoreBucket* bucket = queue_.PopDue(now_tick, &release_tick, &level);
    // Kafka's advanceClock then flush: the levels move to the release.
    MoveTo(release_tick);
    if (level > 0) {
      // Its timers wait to cascade, until the release of the first bucket
      // of the level below that they may land in.
      const LevelGeometry& geometry =
          levels_[static_cast<size_t>(level)].geometry;
      const int64_t lower_offset =
          levels_[static_cast<size_t>(level - 1)].geometry.release_offset;
      cascade_by_ = std::min(
          cascade_by_, release_tick + geometry.release_offset - lower_offset);
      waiting_count_ += static_cast<int64_t>(bucket->timers.size_bound());
      if (waiting_end_ == waiting_.size()) {
        waiting_.push_back(std::make_unique<NodeList>());
        Register(waiting_.back().get());
      }
      Move(&bucket->timers, waiting_[waiting_end_++].get());
      continue;
    }
    // Level 0: every timer of the bucket is due (its tick width is 1).
    bucket->timers.Drain([&](CoreNode* node) {
      PushDue(node, due);
      ++appended;
    });
  }
  MoveTo(now_tick);
  if (cascades == Cascades::kNow) PlaceWaiting(waiting_count_);
  return appended;
}

bool WheelCore::AdvanceSome(int64_t now_tick, std::vector<CoreNode*>* due,
                            int64_t budget) {
  target_tick_ = std::max({target_tick_, now_tick, now_tick_});
  for (;;) {
    // Kafka's advanceClock: the levels move to the release of the next due
    // bucket. While a flush is under way: only when a later tick was asked
    // for since it began (else due timers leave as Advance hands them out),
    // and of a lower level, whose timers that tick may have made due before
    // the rest of the flush's.
    int below = std::numeric_limits<int>::max();
    if (depth_ > 0) {
      const Flush& inner = *flushes_[depth_ - 1];
      below = target_tick_ > inner.target_tick ? inner.level : 0;
    }
    int64_t release_tick = 0;
    int level = 0;
    if (CoreBucket* bucket =
            queue_.PopDueBelow(target_tick_, below, &release_tick, &level)) {
      MoveTo(release_tick);
      if (depth_ == flushes_.size()) {
        flushes_.push_back(std::make_unique<Flush>());
        Register(&flushes_.back()->timers);
      }
      Flush& flush = *flushes_[depth_++];
      Move(&bucket->timers, &flush.timers);
      flush.level = level;
      flush.target_tick = target_tick_;
      continue;
    }
    if (depth_ == 0) break;
    // Kafka's flush: each timer of the released bucket is placed again (a
    // lower level) or is due.
    Flush& flush = *flushes_[depth_ - 1];
    if (flush.timers.empty()) {
      --depth_;
      continue;
    }
    if (budget <= 0) {
      // Remove and TakeAll may come before the next call.
      for (size_t i = 0; i < depth_; ++i) flushes_[i]->timers.RetagHeads();
      return false;
    }
    --budget;
    CoreNode* const node = flush.timers.PopFrontUntagged();
    // Due by a tick asked for after the flush began: out at once, not
    // after the rest of the flush.
    const int64_t tick = TickOf(node->expiration());
    const bool overtaken =
        target_tick_ > flush.target_tick && tick <= target_tick_;
    if (overtaken || !Place(node, tick)) PushDue(node, due);
  }
  MoveTo(target_tick_);
  return true;
}

int64_t WheelCore::CascadeShare() {
  if (!AnyWaiting()) return 0;
  const std::optional<int64_t> release = queue_.NextRelease();
  if (!release.has_value() || *release >= cascade_by_) {
    return PlaceWaiting(waiting_count_);  // no wake-up before cascade_by_
  }
  // Each wake-up before cascade_by_ (there is one at *release) takes a
  // share.
  const int64_t ticks_left = cascade_by_ - now_tick_;  // >= 2
  return PlaceWaiting((waiting_count_ + ticks_left - 1) / ticks_left);
}

int64_t WheelCore::PlaceWaiting(int64_t n) {
  int64_t placed = 0;
  // Taken without writing the tag into the node after each (no Remove can
  // come until this returns), as a flush's slice is: that store waits for
  // the miss the prefetch has just begun. Retagged when done with it.
  NodeList* untagged = nullptr;
  while (placed < n && AnyWaiting()) {
    NodeList* const batch = waiting_[waiting_front_].get();
    if (batch != untagged) {
      if (untagged != nullptr) untagged->RetagHeads();
      untagged = batch;
    }
    Place(batch->PopFrontUntagged());  // not due: at or past cascade_by_
    ++placed;
  }
  if (untagged != nullptr) untagged->RetagHeads();
  waiting_count_ = std::max<int64_t>(0, waiting_count_ - placed);
  if (!AnyWaiting()) {
    waiting_count_ = 0;
    cascade_by_ = kMaxTick;
  }
  return placed;
}

bool WheelCore::AnyWaiting() {
  while (waiting_front_ < waiting_end_ && waiting_[waiting_front_]->empty()) {
    ++waiting_front_;
  }
  if (waiting_front_ == waiting_end_) waiting_front_ = waiting_end_ = 0;
  return waiting_end_ > 0;
}

int64_t WheelCore::TakeNextBucket(int64_t most, std::vector<CoreNode*>* out) {
  const int64_t tick = now_tick_ + 1;
  // Nothing released by now_tick_ (Advance took it), so a head released by
  // `tick` is released at it; level 0 only (below level 1).
  if (depth_ > 0 || queue_.NoneBy(tick) || !queue_.NoneBy(now_tick_)) return 0;
  int64_t release_tick = 0;
  int level = 0;
  CoreBucket* const head = queue_.PeekDueBelow(tick, /*below=*/1);
  if (head == nullptr ||
      head->timers.size_bound() > static_cast<size_t>(most)) {
    return 0;
  }
  CoreBucket* const bucket =
      queue_.PopDueBelow(tick, /*below=*/1, &release_tick, &level);
  int64_t taken = 0;
  bucket->timers.Drain([&](CoreNode* node) {
    PushDue(node, out);
    ++taken;
  });
  return taken;
}

void WheelCore::TakeAll(std::vector<CoreNode*>* out) {
  for (NodeList* holder : holders_) {
    while (!holder->empty()) out->push_back(holder->PopFront());
  }
  for (Level& level : levels_) {
    for (int slot = 0; slot < level.geometry.wheel_size; ++slot) {
      level.buckets[static_cast<size_t>(slot)].queued_release =
          CoreBucket::kNotQueued;
    }
  }
  depth_ = 0;
  waiting_front_ = waiting_end_ = 0;
  waiting_count_ = 0;
  cascade_by_ = kMaxTick;
  queue_ = ReleaseQueue();
  size_ = 0;
}

}  // namespace timingwheel::internal
