// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "node_array.h"

namespace timingwheel::internal {

void NodeArray::NextChunk() {
  // The chunk after the tail's: size_ / kChunk, as the tail is at an edge.
  const size_t next = size_ / kChunk;
  if (next == chunks_.size()) {
    // Uninitialized: push_back writes each element before anything reads it.
    chunks_.emplace_back(new TimerNode*[kChunk]);
  }
  tail_ = chunks_[next].get();
  tail_end_ = tail_ + kChunk;
}

void NodeArray::PreviousChunk() {
  // size_ > 0 is a multiple of kChunk: its last element ends chunk
  // size_ / kChunk - 1, and the tail's chunk is the one after it.
  const size_t previous = size_ / kChunk - 1;
  if (chunks_.size() > previous + 2) chunks_.pop_back();
  tail_end_ = chunks_[previous].get() + kChunk;
  tail_ = tail_end_;
}

}  // namespace timingwheel::internal
