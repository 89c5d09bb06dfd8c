// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "loop_node.h"

#include <algorithm>
#include <new>

namespace timingwheel::internal {

LoopNodePool::LoopNodePool(size_t block_size)
    : block_size_(block_size), alignment_(block_size == 64 ? 64 : 16) {}

LoopNodePool::~LoopNodePool() {
  for (char* chunk : chunks_) {
    ::operator delete(chunk, std::align_val_t(alignment_));
  }
}

void LoopNodePool::NewChunk() {
  const size_t bytes = next_chunk_blocks_ * block_size_;
  char* chunk =
      static_cast<char*>(::operator new(bytes, std::align_val_t(alignment_)));
  chunks_.push_back(chunk);
  carve_next_ = chunk;
  carve_end_ = chunk + bytes;
  bytes_ += bytes;
  next_chunk_blocks_ = std::min(next_chunk_blocks_ * 2, kMaxChunkBlocks);
}

}  // namespace timingwheel::internal
