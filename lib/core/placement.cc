// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "core/placement.h"

namespace timingwheel::internal {

LevelGeometry GeometryOfLevel(int wheel_size, int level) {
  LevelGeometry geometry = GeometryFor(1, wheel_size);
  for (int k = 0; k < level; ++k) geometry = OverflowOf(geometry);
  return geometry;
}

int LevelFor(int wheel_size, int64_t now_tick, int64_t expiration_tick) {
  LevelGeometry geometry = GeometryFor(1, wheel_size);
  int level = 0;
  while (NeedsHigherLevel(geometry, geometry.CurrentAt(now_tick),
                          expiration_tick)) {
    geometry = OverflowOf(geometry);
    ++level;
  }
  return level;
}

}  // namespace timingwheel::internal
