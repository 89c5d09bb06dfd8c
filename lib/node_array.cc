// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "node_array.h"

namespace timingwheel::internal {

void NodeArray::AddChunk() {
  // Uninitialized: push_back writes each element before anything reads it.
  chunks_.emplace_back(new TimerNode*[kChunk]);
}

}  // namespace timingwheel::internal
