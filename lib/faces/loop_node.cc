// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "faces/loop_node.h"

#include <sys/mman.h>

#include <cassert>
#include <cstdint>

#include "handles/node_arena.h"

namespace timingwheel::internal {

LoopNodePool::LoopNodePool(size_t block_size, int64_t spare_blocks,
                           LoopChunkTable* table, uint8_t tag)
    : block_size_(block_size),
      spare_blocks_(spare_blocks),
      table_(table),
      tag_(tag),
      chunk_blocks_(static_cast<int64_t>(kChunkBytes / block_size)) {
  UpdateReleaseBelow();
}

LoopNodePool::~LoopNodePool() {
  for (Chunk* chunk : chunks_) {
    if (table_ != nullptr) table_->Set(chunk, 0);
    ASAN_UNPOISON_MEMORY_REGION(chunk, kChunkBytes);
    NodeArena::Get().Unmap(chunk, kChunkBytes);
  }
}

void* LoopNodePool::AllocateSlow() {
  if (current_ == nullptr || current_->carve_next == ChunkEnd(current_)) {
    // The fullest chunk with room: the emptiest are left to empty.
    Chunk* fullest = nullptr;
    for (Chunk* chunk : chunks_) {
      const bool room =
          chunk->free != nullptr || chunk->carve_next != ChunkEnd(chunk);
      if (room && (fullest == nullptr || chunk->live > fullest->live)) {
        fullest = chunk;
      }
    }
    if (fullest == nullptr) {
      NewChunk();
    } else {
      SetCurrent(fullest);
    }
    if (current_->free != nullptr) return Allocate();
  }
  void* block = current_->carve_next;
  current_->carve_next += block_size_;
  bytes_ += block_size_;
  ++current_->live;
  return block;
}

void LoopNodePool::SetCurrent(Chunk* chunk) {
  current_ = chunk;
  others_live_ = 0;
  for (const Chunk* each : chunks_) {
    if (each != chunk) others_live_ += each->live;
  }
}

void LoopNodePool::ReleaseIfSpare(Chunk* chunk) {
  const int64_t live =
      others_live_ + (current_ != nullptr ? current_->live : 0);
#ifndef NDEBUG
  int64_t summed = 0;
  for (const Chunk* each : chunks_) summed += each->live;
  assert(live == summed && "others_live_ is off");
#endif
  if (live < release_below_) Release(chunk);
}

void LoopNodePool::NewChunk() {
  // In the node arena (so that the core can name a node by 32 bits),
  // aligned to kChunkBytes (so that a block finds its chunk's header).
  char* begin =
      static_cast<char*>(NodeArena::Get().Map(kChunkBytes, kChunkBytes));
  // Every chunk but the first asks for huge pages: a cascade or a run of due
  // timers walks nodes that lie far apart (a bucket's timers were made among
  // a million others), and with 4 KiB pages each node is a TLB miss as well
  // as a cache miss. The first is left to small wheels.
  if (!chunks_.empty()) {
    madvise(begin, kChunkBytes, MADV_HUGEPAGE);  // advice: may be refused
  }
  auto* chunk = reinterpret_cast<Chunk*>(begin);
  chunk->free = nullptr;
  chunk->carve_next = begin + block_size_;
  chunk->live = 0;
  chunk->index = chunks_.size();
  chunks_.push_back(chunk);
  if (table_ != nullptr) table_->Set(chunk, tag_);
  SetCurrent(chunk);
  bytes_ += block_size_;
  UpdateReleaseBelow();
}

void LoopNodePool::Release(Chunk* chunk) {
  bytes_ -=
      static_cast<size_t>(chunk->carve_next - reinterpret_cast<char*>(chunk));
  Chunk* last = chunks_.back();
  last->index = chunk->index;
  chunks_[chunk->index] = last;
  chunks_.pop_back();
  // Empty: the others' count stays as it is, unless they are all others now.
  if (current_ == chunk) SetCurrent(nullptr);
  if (table_ != nullptr) table_->Set(chunk, 0);
  ASAN_UNPOISON_MEMORY_REGION(chunk, kChunkBytes);
  NodeArena::Get().Unmap(chunk, kChunkBytes);
  UpdateReleaseBelow();
}

void LoopNodePool::UpdateReleaseBelow() {
  // Without one chunk the others hold (chunks - 1) * (chunk_blocks_ - 1)
  // blocks; with fewer than this in use, at least spare_blocks_ are free.
  const auto others = static_cast<int64_t>(chunks_.size()) - 1;
  release_below_ = others * (chunk_blocks_ - 1) - spare_blocks_ + 1;
}

}  // namespace timingwheel::internal
