// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// node_pool.h: the memory of an engine's timer nodes, without malloc on the
// hot path. (A periodic timer's node, bigger by its scheduler, comes from the
// heap: see PeriodicNode in timer_state.h.)
//
// Why: with malloc, a node made by the thread calling AfterFunc and freed by
// a worker (every timer that fires) crosses glibc arenas: the worker's frees
// pile up in the scheduling thread's arena bins, and the next big allocation
// there (a bucket's array growing) runs malloc_consolidate over hundreds of
// thousands of them, stalling the advancer for milliseconds. malloc also adds
// a 16-byte header to each node.
//
// Design: magazines (Bonwick's slab allocator with per-CPU magazines, here
// per thread). Free nodes are kept in singly linked lists of at most
// kMagazine, threaded through the free nodes themselves.
//   * Each thread has one cache (thread_local) for one pool at a time: a
//     `loaded` magazine it allocates from and frees to, and a `previous` one,
//     always full or empty, so that a thread alternating between allocating
//     and freeing at a magazine's edge does not go to the depot each time.
//   * The pool's depot holds full magazines, a partial one of loose nodes
//     (freed by threads whose cache serves another pool), and the slabs the
//     nodes are carved from. A thread goes to the depot once per kMagazine
//     allocations or frees, not per node; a worker that only frees hands a
//     full magazine over with one lock, and the scheduling thread takes it
//     back the same way.
//   * Slabs are carved lazily, starting small (a wheel with few timers costs
//     little) and doubling up to a cap. They are returned to the system only
//     when the pool is destroyed, with its engine: the wheel keeps the memory
//     of its peak number of live nodes.
// A cache that served another pool is handed back to that pool (found by
// serial number in a process-wide registry, so that a pool destroyed
// meanwhile is never touched: its nodes went with its slabs) when its thread
// next allocates from this pool, or exits.
//
// Under AddressSanitizer a free node is poisoned but for its link, so a use
// after Unref is still reported.
//
// fork(): the registry's and every depot's locks are held across fork()
// (pthread_atfork), so a child can make and use new pools (new wheels)
// whatever other threads of the parent were doing. The parent's pools are
// copied into the child as they were; the forking thread's cache, if it
// served one of them, goes back to that copy and is never used again there.
//
// Thread-safety: thread-safe. A thread's cache is its own, touched without
// locks. `mu_` guards the depot; the registry's mutex is taken only when a
// cache changes pools or its thread exits, and by the fork handlers (their
// order: kNodeRegistry, kNodeDepot in the lock table of lib/mutex.h).
// Memory handed from one thread to another always passes through `mu_`,
// which orders the writes to a node before its reuse.

#ifndef TIMINGWHEEL_LIB_NODE_POOL_H_
#define TIMINGWHEEL_LIB_NODE_POOL_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "mutex.h"

namespace timingwheel::internal {

class NodePool {
 public:
  // Nodes per magazine.
  static constexpr int kMagazine = 64;

  // A pool of blocks of `size` bytes aligned to `alignment` (a power of two
  // of at most alignof(std::max_align_t)); `size` >= sizeof(void*).
  NodePool(size_t size, size_t alignment);
  NodePool(const NodePool&) = delete;
  NodePool& operator=(const NodePool&) = delete;
  // Returns the slabs to the system. Precondition: every block was freed (or
  // is never touched again).
  ~NodePool();

  // A block of `size` bytes, uninitialized.
  void* Allocate();
  // Returns a block that Allocate of this pool gave.
  void Free(void* block);

  // Bytes of slabs carved so far.
  size_t SlabBytes() const ABSL_LOCKS_EXCLUDED(mu_);

  // Links through free blocks; public for the thread caches in node_pool.cc.
  struct FreeBlock {
    FreeBlock* next;
  };
  struct Magazine {
    FreeBlock* head = nullptr;
    int count = 0;
  };

  // Hands a full magazine to the depot (also for a thread's cache that goes
  // back to its pool).
  void PutMagazine(Magazine magazine) ABSL_LOCKS_EXCLUDED(mu_);

  // For the registry's fork handlers only (see node_pool.cc): hold the
  // depot's lock across fork().
  void LockForFork() ABSL_EXCLUSIVE_LOCK_FUNCTION(mu_) { mu_.Lock(); }
  void UnlockAfterFork() ABSL_UNLOCK_FUNCTION(mu_) { mu_.Unlock(); }

  uint64_t serial() const { return serial_; }

 private:
  // One block into the depot's loose magazine.
  void PutLoose(FreeBlock* block) ABSL_LOCKS_EXCLUDED(mu_);
  // A full magazine, else the loose blocks, else freshly carved ones.
  Magazine TakeMagazine() ABSL_LOCKS_EXCLUDED(mu_);
  // Carves up to kMagazine new blocks, from a new slab if needed.
  Magazine Carve() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const size_t size_;       // a multiple of alignment_
  const size_t alignment_;  // at least alignof(FreeBlock)
  const uint64_t serial_;   // unique in the process, never 0

  mutable Mutex mu_{LockRank::kNodeDepot};
  std::vector<Magazine> full_ ABSL_GUARDED_BY(mu_);
  Magazine loose_ ABSL_GUARDED_BY(mu_);
  struct Slab {
    char* begin;
    size_t bytes;
  };
  std::vector<Slab> slabs_ ABSL_GUARDED_BY(mu_);
  char* carve_next_ ABSL_GUARDED_BY(mu_) = nullptr;
  char* carve_end_ ABSL_GUARDED_BY(mu_) = nullptr;
  size_t slab_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_NODE_POOL_H_
