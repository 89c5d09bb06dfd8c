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
        count += static_cast<int64_t>(
            level.buckets[static_cast<size_t>(slot)].timers.size());
      }
      counts.push_back(count);
    }
    return counts;
  }

 private:
  static bool Holds(const CoreBucket& bucket, const CoreNode* node) {
    return node->holder == bucket.timers.id();
  }
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_TEST_WHEEL_CORE_TEST_PEER_H_
