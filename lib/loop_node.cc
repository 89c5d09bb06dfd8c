// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "loop_node.h"

#include <sys/mman.h>

#include <algorithm>
#include <new>

namespace timingwheel::internal {

LoopNodePool::LoopNodePool(size_t block_size)
    : block_size_(block_size), alignment_(block_size == 64 ? 64 : 16) {}

LoopNodePool::~LoopNodePool() {
  for (const Chunk& chunk : chunks_) {
    ::operator delete(chunk.begin, std::align_val_t(chunk.alignment));
  }
}

void LoopNodePool::NewChunk() {
  const size_t bytes = next_chunk_blocks_ * block_size_;
  // A chunk of 2 MiB or more is aligned to a huge page and asks for huge
  // pages: a cascade or a run of due timers walks nodes that lie far apart
  // (a bucket's timers were made among a million others), and with 4 KiB
  // pages each node is a TLB miss as well as a cache miss.
  const bool huge = bytes >= kHugePage;
  const size_t alignment = huge ? kHugePage : alignment_;
  char* chunk =
      static_cast<char*>(::operator new(bytes, std::align_val_t(alignment)));
  if (huge) madvise(chunk, bytes, MADV_HUGEPAGE);  // advice: may be refused
  chunks_.push_back({chunk, alignment});
  carve_next_ = chunk;
  carve_end_ = chunk + bytes;
  bytes_ += bytes;
  next_chunk_blocks_ =
      std::min(next_chunk_blocks_ * 2, kMaxChunkBytes / block_size_);
}

}  // namespace timingwheel::internal
