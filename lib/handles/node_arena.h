// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// node_arena.h: one range of address space for every timer node of the
// process, so that a node can be named by 32 bits.
//
// Why: the core links its timers into buckets through the nodes themselves
// (core/bucket.h). A pointer is 8 bytes, and a node needs two links: 16
// bytes of a 64-byte node. Named by its offset in one arena, in units of 16
// bytes, a node takes 4 bytes a link, and 31 bits name any node of a 32 GiB
// arena (the top bit of a link is the core's: a bucket, not a node).
//
// Design: the arena is reserved once, at first use, as address space only
// (PROT_NONE, MAP_NORESERVE: no memory, no commit charge), from an address
// aligned to NodeLink::kBaseAlign (4 MiB). The node pools
// (node_pool.h, loop_node.h) map their regions and chunks inside it (Map:
// the pages become readable and writable, and are touched only when used)
// and give them back (Unmap: the pages go back to the system and the range
// to the arena's free list, where it is reused, first fit, and merged with
// its free neighbours). Where the system refuses a 32 GiB reservation (an
// address-space limit, RLIMIT_AS), the arena takes the largest of 32 GiB
// halved down to 64 MiB that it can get; a Map beyond it throws
// std::bad_alloc, as a failed mmap does.
//
// fork(): the arena's lock is held across fork() (pthread_atfork), so that
// a child can map from it whatever other threads of the parent were doing.
// It is a leaf (kNodeArena, under a pool's depot lock), and its prepare
// handler runs after the node pools' (it is registered before theirs), so
// the forking thread takes it last.
//
// The 32-bit name of a node is the core's (core/node_link.h: its offset from
// the arena's base, which the arena sets there once reserved).
//
// Thread-safety: thread-safe; `mu_` guards the free list.

#ifndef TIMINGWHEEL_LIB_HANDLES_NODE_ARENA_H_
#define TIMINGWHEEL_LIB_HANDLES_NODE_ARENA_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>

#include "absl/base/thread_annotations.h"
#include "base/mutex.h"
#include "core/node_link.h"

namespace timingwheel::internal {

class NodeArena {
 public:
  // The most it reserves: what 31 bits of NodeLink::kUnit address.
  static constexpr size_t kMaxBytes = size_t{32} << 30;
  static_assert(kMaxBytes / NodeLink::kUnit <= size_t{1} << 31);
  // The least it settles for, before it gives up reserving.
  static constexpr size_t kMinBytes = size_t{64} << 20;
  // Ranges are handed out in multiples of this (a node pool's slab).
  static constexpr size_t kGrain = size_t{64} << 10;

  // The process's arena, reserved on first use. Never destroyed.
  static NodeArena& Get();

  NodeArena(const NodeArena&) = delete;
  NodeArena& operator=(const NodeArena&) = delete;

  // `bytes` (a multiple of kGrain) of memory aligned to `align` (a power of
  // two, at least kGrain), zeroed. Throws std::bad_alloc when the arena has
  // no such range free.
  void* Map(size_t bytes, size_t align = kGrain) ABSL_LOCKS_EXCLUDED(mu_);
  // Gives back a range Map returned: its pages go back to the system.
  void Unmap(void* begin, size_t bytes) ABSL_LOCKS_EXCLUDED(mu_);

  // Bytes reserved (kMaxBytes, or less where the system refused it).
  size_t reserved() const { return reserved_; }

  // Who holds each grain of the range: a word per grain, 0 for none, that
  // the holder sets after Map (and clears before Unmap) and anyone reads,
  // to check an address before touching it (a node pool checks a timer id
  // so: node_pool.h). Release and acquire. `bytes` a multiple of kGrain.
  void SetOwner(void* begin, size_t bytes, uint64_t owner);
  // The word of the grain holding `address`; 0 outside the range.
  uint64_t OwnerAt(const void* address) const;

 private:
  friend class NodeArenaTestPeer;

  NodeArena();

  static void BeforeFork();
  static void AfterFork();

  // The range's base is NodeLink's, set once by the constructor, before any
  // range is handed out.
  size_t reserved_ = 0;
  // A word per grain of `reserved_` (SetOwner), mapped once: its pages are
  // touched only where a pool maps memory (8 bytes a 64 KiB grain).
  std::atomic<uint64_t>* owners_ = nullptr;
  Mutex mu_{LockRank::kNodeArena};
  // Free ranges: offset from the base -> bytes.
  std::map<size_t, size_t> free_ ABSL_GUARDED_BY(mu_);
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_HANDLES_NODE_ARENA_H_
