// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// wheel_core_test_peer.h: reaches inside a WheelCore (lib/core/), for the
// tests that check where timers sit: the core's own test, and the engine's
// through EngineTestPeer (test_util.h), which calls it on the advancer's
// thread. The caller must be the core's owner.

#ifndef TIMINGWHEEL_TEST_WHEEL_CORE_TEST_PEER_H_
#define TIMINGWHEEL_TEST_WHEEL_CORE_TEST_PEER_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/wheel_core.h"

namespace timingwheel::internal {

class WheelCoreTestPeer {
 public:
  // The level whose bucket holds `node`, or -1.
  static int LevelOf(const WheelCore& core, const CoreNode* node) {
    for (size_t k = 0; k < core.levels_.size(); ++k) {
      const WheelCore::Level& level = core.levels_[k];
      for (int slot = 0; slot < level.geometry.wheel_size; ++slot) {
        const CoreBucket& bucket = level.buckets[static_cast<size_t>(slot)];
        if (Holds(bucket, node)) return static_cast<int>(k);
      }
    }
    return -1;
  }
  // The slot of the bucket that holds `node` in its level, or -1.
  static int SlotOf(const WheelCore& core, const CoreNode* node) {
    for (const WheelCore::Level& level : core.levels_) {
      for (int slot = 0; slot < level.geometry.wheel_size; ++slot) {
        if (Holds(level.buckets[static_cast<size_t>(slot)], node)) return slot;
      }
    }
    return -1;
  }
  // The tick width of level `k`.
  static int64_t TickWidth(const WheelCore& core, int k) {
    return core.levels_[static_cast<size_t>(k)].geometry.tick_width;
  }
  static size_t QueueEntries(const WheelCore& core) {
    return core.queue_.size();
  }
  // The timers each level holds, lowest first, for the levels created so
  // far.
  static std::vector<int64_t> CountsByLevel(const WheelCore& core) {
    std::vector<int64_t> counts;
    for (const WheelCore::Level& level : core.levels_) {
      int64_t count = 0;
      for (int slot = 0; slot < level.geometry.wheel_size; ++slot) {
        count += Count(level.buckets[static_cast<size_t>(slot)].timers);
      }
      counts.push_back(count);
    }
    return counts;
  }

 private:
  // Whether `node` is in the bucket: the tag at the front of its strand
  // names the bucket's list.
  static bool Holds(const CoreBucket& bucket, const CoreNode* node) {
    if (!node->linked()) return false;
    uint32_t prev = node->prev;
    while (!NodeList::IsTag(prev)) prev = NodeList::At(prev)->prev;
    return NodeList::ListOf(prev) == bucket.timers.id();
  }
  // The nodes of `list`, counted along its strands.
  static int64_t Count(const NodeList& list) {
    int64_t count = 0;
    for (uint32_t link : list.heads_) {
      for (; link != 0 && !NodeList::IsTag(link);
           link = NodeList::At(link)->next) {
        ++count;
      }
    }
    return count;
  }
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_TEST_WHEEL_CORE_TEST_PEER_H_
