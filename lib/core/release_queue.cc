// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "core/release_queue.h"

#include <algorithm>

namespace timingwheel::internal {
namespace {

// std::*_heap build a max-heap; this order puts the earliest on top, and
// of two released at the same tick the lower level's.
struct Later {
  template <class Entry>
  bool operator()(const Entry& a, const Entry& b) const {
    if (a.release_tick != b.release_tick) {
      return a.release_tick > b.release_tick;
    }
    return a.level > b.level;
  }
};

}  // namespace

void ReleaseQueue::Push(CoreBucket* bucket, int level, int64_t release_tick) {
  bucket->queued_release = release_tick;
  heap_.push_back({release_tick, level, bucket});
  std::push_heap(heap_.begin(), heap_.end(), Later());
}

void ReleaseQueue::PopTop() {
  std::pop_heap(heap_.begin(), heap_.end(), Later());
  heap_.pop_back();
}

bool ReleaseQueue::DropStale() {
  while (!heap_.empty() && !Live(heap_.front())) {
    const Entry stale = heap_.front();
    // An emptied bucket's own entry: the bucket is no longer queued.
    if (stale.bucket->queued_release == stale.release_tick) {
      stale.bucket->queued_release = CoreBucket::kNotQueued;
    }
    PopTop();
  }
  return !heap_.empty();
}

std::optional<int64_t> ReleaseQueue::NextRelease() {
  if (!DropStale()) return std::nullopt;
  return heap_.front().release_tick;
}

CoreBucket* ReleaseQueue::PeekDueBelow(int64_t now_tick, int below) {
  if (!DropStale() || heap_.front().release_tick > now_tick ||
      heap_.front().level >= below) {
    return nullptr;
  }
  return heap_.front().bucket;
}

CoreBucket* ReleaseQueue::PopDueBelow(int64_t now_tick, int below,
                                      int64_t* release_tick, int* level) {
  if (PeekDueBelow(now_tick, below) == nullptr) return nullptr;
  const Entry head = heap_.front();
  PopTop();
  head.bucket->queued_release = CoreBucket::kNotQueued;
  *release_tick = head.release_tick;
  *level = head.level;
  return head.bucket;
}

}  // namespace timingwheel::internal
