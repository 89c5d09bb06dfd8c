// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// release_queue.h: the ONE queue of buckets, of every level, ordered by the
// tick at which each is released (its expiration, early above level 0: see
// core/placement.h). The core's owner asks it when the next bucket is due
// and takes the due ones in order, so nothing wakes for a tick in which no
// bucket is due.
//
// A binary min-heap of (release tick, bucket). Stopping a timer never
// searches the heap: a bucket emptied by stops keeps its entry, which is
// stale from then on and dropped when it reaches the top (an entry is live
// while its bucket holds timers and was queued under that tick,
// CoreBucket::queued_release). A bucket refilled for the same range reuses
// its entry; one refilled for another range gets a new one. The heap holds
// at most a few entries per bucket, so its O(log n) never matters.
//
// Part of the core (lib/core/): no atomics, no locks, no clock; one owner.
// Thread-safety: thread-compatible.

#ifndef TIMINGWHEEL_LIB_CORE_RELEASE_QUEUE_H_
#define TIMINGWHEEL_LIB_CORE_RELEASE_QUEUE_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "core/bucket.h"

namespace timingwheel::internal {

class ReleaseQueue {
 public:
  // Queues `bucket` (holding timers, of level `level`) for release at
  // `release_tick`, unless it is queued under that tick already. Of buckets
  // released at the same tick, the lower level's comes out first: a level-0
  // bucket due at the tick at which a level-1 bucket is released early is
  // flushed first, which frees the slot that the level-1 bucket's last
  // timers cascade into (core/placement.h, kPastSpan).
  void Offer(CoreBucket* bucket, int level, int64_t release_tick) {
    if (bucket->queued_release != release_tick) {
      Push(bucket, level, release_tick);
    }
  }

  // The earliest release tick of a bucket that holds timers (stale entries
  // on top are dropped), or nullopt when none does.
  std::optional<int64_t> NextRelease();
  // True if no bucket is released by `tick`; false when one may be (the
  // earliest entry, perhaps stale, is). Reads the head only.
  bool NoneBy(int64_t tick) const {
    return heap_.empty() || heap_.front().release_tick > tick;
  }

  // Takes out the head bucket if it holds timers and is released by
  // `now_tick`, setting `*release_tick` and `*level`; else null (stale
  // entries on top are dropped). Taken out, the bucket is no longer queued.
  CoreBucket* PopDue(int64_t now_tick, int64_t* release_tick, int* level) {
    return PopDueBelow(now_tick, std::numeric_limits<int>::max(), release_tick,
                       level);
  }
  // PopDue of a bucket of a level below `below` only.
  CoreBucket* PopDueBelow(int64_t now_tick, int below, int64_t* release_tick,
                          int* level);
  // The bucket PopDueBelow would take, left queued; null if none.
  CoreBucket* PeekDueBelow(int64_t now_tick, int below);

  // Entries, stale ones included.
  size_t size() const { return heap_.size(); }

 private:
  struct Entry {
    int64_t release_tick;
    int level;
    CoreBucket* bucket;
  };
  static bool Live(const Entry& entry) {
    return entry.bucket->queued_release == entry.release_tick &&
           !entry.bucket->timers.empty();
  }
  // Queues a new entry for `bucket`.
  void Push(CoreBucket* bucket, int level, int64_t release_tick);
  // Drops stale entries from the top; false when the heap is then empty.
  bool DropStale();
  void PopTop();

  std::vector<Entry> heap_;  // min-heap on (release_tick, level)
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_CORE_RELEASE_QUEUE_H_
