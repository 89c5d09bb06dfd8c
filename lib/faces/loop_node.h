// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// loop_node.h: a LoopWheel's timer node, and the pool its memory comes from.
//
// A node is a 32-byte header followed, in the same block, by its callable:
//
//   offset  size  field
//   0       16    CoreNode: prev, next (the core's), expiration (the
//                 deadline)
//   16      8     ops: how to run, move and destroy the callable
//   24      4     refs: one per LoopTimer handle, one while the wheel holds it;
//                 or, for a timer held by id, its id's generation (below)
//   28      4     state, kind, has_rearm (and a byte unused)
//   32      16    the callable (kSmall: a block of 48 bytes)
//           32    or (kWide: a block of 64 bytes, one cache line, e.g. an
//                 absl::AnyInvocable)
//           0     or nothing (kBare: a block of 32 bytes, for a stateless
//                 callable, a lambda capturing nothing: callback.h)
//
// The deadline is the core's expiration (nanoseconds since the engine's
// origin): one thread owns both, so the node keeps it once. It stays the
// deadline while the node is out of the core: due, running (that run's), or
// running with a re-arm a Reset set (`has_rearm`: the re-arm's).
//
// A stateless callable (CallbackOps::stateless) is not kept at all: any
// object of its type runs the same, so it runs on one begun in a shared
// buffer of no state. Another callable is kept inline when it fits 32
// bytes, is aligned to at most 8 and moves without throwing; any other is boxed
// on the heap by the template that takes it (loop_wheel.h:
// internal::LoopCallable), leaving an 8-byte pointer inline. A periodic timer's
// node (kPeriodic) also holds its scheduler, in a block of a pool of its own
// (80 bytes).
//
// The pool is the engine's alone (one owner, the loop's thread: no lock, no
// thread cache). Its memory comes in chunks of 4 MiB, each mapped in the
// node arena (node_arena.h: the core names nodes by 32 bits) at a 4 MiB
// boundary: a block finds its chunk by masking its address, and the chunk's
// first block holds the chunk's header (its free list and live count).
// Blocks are carved lazily, so a small wheel touches only the pages it uses.
// Every chunk but the first is advised to use huge pages (madvise): a wheel
// of a million timers walks nodes spread over 64 MiB.
//
// A timer held by id (LoopWheel::AfterFuncId and the like) has no handle:
// the wheel alone holds its node, while it is pending or running, and frees
// it when it ends. Its `refs` field holds kByIdBit | the generation of its id
// instead of a count (negative, so by_id() tells the two apart), and
// Destroy clears it before anything else, so that an id of an ended timer
// never matches its block again, whatever the block holds next. An id (the
// engine's: loop_engine.h) names the node's link, its pool and the
// generation; before it reads a node, the engine asks its LoopChunkTable
// whether the chunk there is still one of its own pools' of that block size
// (a chunk of an ended timer may have gone back to the arena, and from there
// to another wheel). A free block's `refs` stays readable under
// AddressSanitizer for that check (ReadIdWord).
//
// Memory goes back after a spike: new blocks come from one chunk until it
// has none left, then from the fullest chunk that has room (freed blocks are
// reused last in, first out within it, so a loop that adds and stops timers
// keeps reusing one warm block), which lets the others empty as timers end; a
// chunk left empty by a Free goes back to the node arena at once (one mmap
// over it: well under a millisecond; the Free sums the chunks' live counts,
// 256 chunks a GiB) if the pool still keeps `spare_blocks` free blocks
// without it. After a spike the pool keeps the chunks that hold live blocks,
// plus at most `spare_blocks` and one chunk's worth of free ones. A whole
// chunk back, not madvise(MADV_DONTNEED) of its pages as NodePool does
// (node_pool.h): the pool keeps no table of its chunks' addresses for reuse,
// and the address space's lock is taken once per 4 MiB given back. Under
// AddressSanitizer a free block is poisoned but for its link.
//
// Thread-safety: thread-compatible; the loop's thread only.

#ifndef TIMINGWHEEL_LIB_FACES_LOOP_NODE_H_
#define TIMINGWHEEL_LIB_FACES_LOOP_NODE_H_

#include <sanitizer/asan_interface.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/no_sanitize.h"
#include "core/bucket.h"
#include "core/node_link.h"
#include "timingwheel/callback.h"
#include "timingwheel/scheduler.h"

namespace timingwheel::internal {

struct LoopNode : CoreNode {
  enum class State : uint8_t {
    kPending,       // in the core or in the engine's `due_`
    kRunning,       // its callback runs, no re-arm
    kRunningArmed,  // its callback runs, re-armed after (periodic, or Reset)
    kDone,          // ran; Reset arms it again
    kStopped,       // stopped; Reset arms it again
    kCancelled,     // the wheel is gone
  };
  // Which block holds the node: how much room its callable has, and where
  // its memory goes back to.
  enum class Kind : uint8_t { kBare, kSmall, kWide, kPeriodic };
  static constexpr size_t kSmallCallable = 16;
  static constexpr size_t kWideCallable = kLoopInlineCallable;

  // The top bit of `refs` for a timer held by id: the rest is its id's
  // generation.
  static constexpr uint32_t kByIdBit = uint32_t{1} << 31;

  LoopNode(Kind kind, const CallbackOps* ops) : ops(ops), kind(kind) {}

  bool pending() const {
    return state == State::kPending || state == State::kRunningArmed;
  }
  // The callable: right after the header, or, for a stateless one, the
  // shared buffer it runs on.
  void* callable() {
    if (kind == Kind::kBare) return stateless_callable;
    return reinterpret_cast<char*>(this) + sizeof(LoopNode);
  }
  // The deadline (see the top): the core's expiration.
  int64_t deadline_ns() const { return expiration(); }
  // Held by id: the wheel alone holds it, and `refs` is its generation.
  bool by_id() const { return refs < 0; }

  // The callable's operations; null once it was destroyed (the wheel went).
  const CallbackOps* ops;
  // References (handles, and the wheel's), or kByIdBit | the generation.
  int32_t refs = 0;
  State state = State::kPending;
  const Kind kind;
  bool has_rearm = false;
};
static_assert(sizeof(LoopNode) == 32, "the header of a node, as drawn above");

// The blocks of the pool, multiples of 16 (as the pool and the node arena
// ask): a bare one of 32 bytes, a small one of 48, a wide one of 64, one
// cache line.
inline constexpr size_t kBareLoopBlock = sizeof(LoopNode);
inline constexpr size_t kSmallLoopBlock =
    sizeof(LoopNode) + LoopNode::kSmallCallable;
inline constexpr size_t kWideLoopBlock =
    (sizeof(LoopNode) + LoopNode::kWideCallable + 15) / 16 * 16;
static_assert(kSmallLoopBlock == 48, "a small block, as drawn above");
static_assert(kWideLoopBlock == 64, "a wide block is one cache line");

// A periodic timer's node: the header, room for a wide callable, then its
// scheduler.
struct PeriodicLoopNode : LoopNode {
  explicit PeriodicLoopNode(const CallbackOps* ops,
                            std::unique_ptr<Scheduler> scheduler)
      : LoopNode(Kind::kPeriodic, ops), scheduler(std::move(scheduler)) {}

  alignas(alignof(void*)) unsigned char room[kWideCallable];
  const std::unique_ptr<Scheduler> scheduler;
};

inline constexpr size_t kPeriodicLoopBlock =
    (sizeof(PeriodicLoopNode) + 15) / 16 * 16;

// The `refs` word of the block at `address`, which may be free (poisoned
// under AddressSanitizer: the id check reads it all the same). The block
// must lie in a chunk that is mapped.
TIMINGWHEEL_NO_SANITIZE_ADDRESS inline int32_t ReadIdWord(const void* address) {
  return static_cast<const LoopNode*>(address)->refs;
}

// Which 4 MiB chunks of the node arena hold blocks of one engine's pools,
// and of which (a tag, 1 to 3; 0: not this engine's). One byte per chunk the
// arena can hold (8 KiB): a timer id is checked here before the node it
// names is read (see the top).
class LoopChunkTable {
 public:
  LoopChunkTable() : tags_(new uint8_t[kChunks]()) {}

  // The tag of the chunk holding the node at `link`.
  uint8_t TagAt(uint32_t link) const { return tags_[link >> kLinkShift]; }
  // Marks the chunk at `chunk` as the pool's `tag`.
  void Set(const void* chunk, uint8_t tag) {
    tags_[NodeLink::Of(chunk) >> kLinkShift] = tag;
  }

 private:
  // A chunk is 4 MiB, aligned to its size, as the arena's base is: the
  // links of one chunk share link >> kLinkShift.
  static constexpr size_t kChunkBytes = size_t{4} << 20;
  static_assert(kChunkBytes == NodeLink::kBaseAlign);
  static constexpr int kLinkShift = 22 - 4;
  static_assert(size_t{1} << kLinkShift == kChunkBytes / NodeLink::kUnit);
  // Links are below 2^31 (node_link.h).
  static constexpr size_t kChunks = size_t{1} << (31 - kLinkShift);

  const std::unique_ptr<uint8_t[]> tags_;
};

class LoopNodePool {
 public:
  // Blocks of `block_size` bytes (a multiple of 16, at least 32), aligned to
  // 16, or to 64 for blocks of 64 bytes; keeps `spare_blocks` free blocks
  // when chunks empty (kMaxSpareTimers: keeps every chunk). With a `table`,
  // marks its chunks there as `tag` while it holds them.
  LoopNodePool(size_t block_size, int64_t spare_blocks,
               LoopChunkTable* table = nullptr, uint8_t tag = 0);
  LoopNodePool(const LoopNodePool&) = delete;
  LoopNodePool& operator=(const LoopNodePool&) = delete;
  // Returns the chunks. Precondition: no block is in use any more.
  ~LoopNodePool();

  // A block, uninitialized.
  void* Allocate() {
    Chunk* chunk = current_;
    if (chunk == nullptr || chunk->free == nullptr) return AllocateSlow();
    FreeBlock* block = chunk->free;
    Unpoison(block);
    chunk->free = block->next;
    ++chunk->live;
    return block;
  }
  // Returns a block that Allocate gave; unmaps its chunk if that leaves it
  // empty and the pool keeps `spare_blocks` free blocks without it.
  void Free(void* block) {
    auto* free_block = static_cast<FreeBlock*>(block);
    Chunk* chunk = ChunkOf(block);
    free_block->next = chunk->free;
    chunk->free = free_block;
    Poison(free_block);
    if (chunk != current_) --others_live_;
    if (--chunk->live == 0) ReleaseIfSpare(chunk);
  }

  // Bytes of chunks carved so far and still mapped.
  size_t bytes() const { return bytes_; }

  static constexpr size_t kChunkBytes = size_t{4} << 20;
  static_assert(kChunkBytes == NodeLink::kBaseAlign,
                "a chunk is a range of links (LoopChunkTable)");

 private:
  struct FreeBlock {
    FreeBlock* next;
  };
  // The first block of each chunk.
  struct Chunk {
    FreeBlock* free;  // freed blocks, last in first out
    char* carve_next;
    int64_t live;  // blocks handed out and not freed
    size_t index;  // in chunks_
  };
  static_assert(sizeof(Chunk) <= 32, "a chunk's header fits its first block");

  static Chunk* ChunkOf(void* block) {
    const uintptr_t offset =
        reinterpret_cast<uintptr_t>(block) & (uintptr_t{kChunkBytes} - 1);
    return reinterpret_cast<Chunk*>(static_cast<char*>(block) - offset);
  }
  char* ChunkEnd(Chunk* chunk) const {
    return reinterpret_cast<char*>(chunk) + chunk_blocks_ * block_size_;
  }
  // Allocate when the current chunk has no free block: carves one, or moves
  // to the fullest chunk with room, or maps a new chunk.
  void* AllocateSlow();
  void NewChunk();
  // Makes `chunk` (null: none) the current chunk, and counts the others'
  // live blocks.
  void SetCurrent(Chunk* chunk);
  // Unmaps an empty chunk if the others keep spare_blocks_ free blocks.
  void ReleaseIfSpare(Chunk* chunk);
  // Unmaps an empty chunk.
  void Release(Chunk* chunk);
  // Keeps release_below_ in step with the chunks held.
  void UpdateReleaseBelow();
  // Poisons a free block but for its link (no-ops without AddressSanitizer).
  void Poison(FreeBlock* block) const {
    ASAN_POISON_MEMORY_REGION(
        reinterpret_cast<char*>(block) + sizeof(FreeBlock),
        block_size_ - sizeof(FreeBlock));
  }
  void Unpoison(FreeBlock* block) const {
    ASAN_UNPOISON_MEMORY_REGION(block, block_size_);
  }

  const size_t block_size_;
  const int64_t spare_blocks_;
  LoopChunkTable* const table_;  // may be null
  const uint8_t tag_;
  // Blocks in a chunk, its header's included.
  const int64_t chunk_blocks_;
  Chunk* current_ = nullptr;  // where Allocate takes blocks from
  // The live blocks of the chunks other than current_. Only current_ hands
  // out blocks, so the others' count only goes down (a Free elsewhere)
  // until current_ changes (SetCurrent counts again, once per chunk used
  // up): an AfterFunc + Stop pair in current_ does not touch it, and a
  // chunk that empties is checked without a pass over the chunks.
  int64_t others_live_ = 0;
  // An empty chunk goes back while the live blocks are below this: the free
  // blocks of the other chunks are then at least spare_blocks_.
  int64_t release_below_ = 0;
  size_t bytes_ = 0;
  std::vector<Chunk*> chunks_;
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_FACES_LOOP_NODE_H_
