// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// node_pool.h: the memory of an engine's timer nodes, without malloc on the
// hot path: each node's block, and the second block of a callable wider
// than a node's room. (What a periodic timer has beyond its node, its
// scheduler and callable, is on the heap: timer_state.h.)
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
//   * Each thread has a cache (thread_local) per slot (kCacheSlots), each
//     for one pool at a time: a `loaded` magazine it allocates from and frees
//     to, and a `previous` one, always full or empty, so that a thread
//     alternating between allocating and freeing at a magazine's edge does
//     not go to the depot each time. A pool names its slot: an engine's three
//     pools (nodes with their room, bare nodes, callables' second blocks:
//     timer_state.h) take one each, so that a thread making all kinds does
//     not switch between them.
//   * The pool's depot holds full magazines, a partial one of loose nodes
//     (freed by threads whose cache serves another pool), and the slabs the
//     nodes are carved from. A thread goes to the depot once per kMagazine
//     allocations or frees, not per node; a worker that only frees hands a
//     full magazine over with one lock, and the scheduling thread takes it
//     back the same way.
// A cache that served another pool is handed back to that pool (found by
// serial number in a process-wide registry, so that a pool destroyed
// meanwhile is never touched: its nodes went with its slabs) when its thread
// next allocates from this pool, or exits.
//
// Slabs, and memory that goes back. The nodes are carved from slabs of
// about kSlabBytes (SlabBytesFor: whole pages holding whole blocks, so no
// byte of a slab is left over; more for blocks over 1 KiB), in regions
// mapped in the node arena (node_arena.h, so that the core can name a node by
// 32 bits; given back to it when the pool goes): the first holds one slab, each
// next as many as the pool has so far, up to kMaxRegionSlabs. A slab is carved
// lazily, a magazine at a time, so a wheel with few timers touches a few pages.
// Besides the magazines, the depot keeps free nodes sorted by slab: each slab
// has its own free list and counts its free blocks (listed or never carved).
// The slabs are in lists by how full they are: eight classes of partly used
// slabs, fullest first; the empty slabs that hold memory; the empty slabs that
// hold none (never carved, or given back). Allocation takes the magazines first
// (cheap, and the nodes are likely in a cache), then nodes of the fullest
// slabs, then empty slabs: so live nodes gather in few slabs and the others
// empty.
//
// Who gives back, and when (the "give-back step"): a thread that hands a
// magazine to the depot (PutMagazine, a full loose magazine), if the depot
// then holds more than `spare_blocks` free nodes, sorts that magazine into
// its slabs' lists (its nodes are in the thread's cache: a microsecond or
// two). A step takes up to kReleasePerPut empty slabs out of the lists, as
// long as the depot keeps at least `spare_blocks` free nodes, gives their
// pages back with the lock released (so no other thread waits for the
// system call; neighbouring slabs in one call) and lists them as bare. A
// TimingWheel's pool leaves that to the give-back thread (below), so that
// no caller and no worker makes the system call, nor waits for the TLB
// flush it sends to every core; with the kOwnerCalls tail the put does it
// too (8 slabs, 512 KiB, at most).
//
// The tail: what a put leaves. The magazines handed over while the depot
// held no more than the spare are not sorted yet (sorting them costs a cache
// miss a node, so the freeing threads, a wheel's workers, do not do it), and
// frees in an order that empties many slabs at once (timers that fire in
// another order than they were made) leave more empty slabs than a put
// gives back. That leftover goes to the pool's `Tail`, once (`tail_busy_`
// until it is done), which runs steps of kSortPerTailStep magazines and
// kReleasePerPut slabs until none is left:
//   * kGiveBackThread (a TimingWheel's pool): the process's give-back
//     thread, `tw-giveback`, started the first time a pool needs it, which
//     takes the pools with leftover work in turn, one step each, through the
//     registry (so that a pool destroyed meanwhile is never touched), and
//     rests after each step as long as the step took. A step holds the
//     depot lock for most of it (a sort costs a cache miss a node); back to
//     back, steps kept the lock from the workers freeing nodes for
//     milliseconds while a million timers fired (each woken waiter found it
//     taken again), and the timers due then ran late;
//   * kOwnerCalls: the owner's calls of Tidy(), one step each, for a pool
//     whose owner has no thread to spare. No wheel uses it today (a
//     LoopWheel has a pool of its own, lib/faces/loop_node.h); node_pool_test
//     drives the tail through it step by step, deterministically.
//
// A burst of frees waits for its give-back. While magazines come back
// faster than kBurstPutsPerSecond (10,000 a second, 640,000 nodes: a wheel's
// workers running 10M timers due at once hand back about 150,000 a second,
// timingwheel_cli's million over a second 15,600), the give-back thread's
// step finds the pool in a burst (GiveBackThreadStep: the puts since its
// last step, over the time since), does nothing and looks again
// kBurstRecheckNs later; until a step finds the burst over, the puts sort
// nothing either. Why: on 2 cores the give-back took a third of a burst's
// time (BM_Burst 7.4-7.8M callbacks/s against 11.6-12.5M/s with no give-back
// at all): its thread took half a core from the workers, its steps and the
// workers' own sorts held the depot lock that the workers take once a
// magazine (they slept on it), and each madvise interrupts every core for
// its TLB flush. The burst's memory goes back once it ends (10M timers
// fired at once: 463 MiB back to 11 MiB 4 s after the last callback,
// where the give-back during the burst had it back 0.5 s after, having made
// the burst 40 % longer). A pool whose frees stay that fast for good gives
// nothing back meanwhile; its allocations take the unsorted magazines
// first (TakeMagazine), so what it holds beyond its spare is what it has
// freed faster than it allocated.
//
// Why madvise(MADV_DONTNEED) of an empty slab, not munmap, nor MADV_FREE:
// MADV_FREE leaves the pages counted in RSS until the system runs short,
// so a server's memory would not visibly fall; munmap would split the
// region's mapping (one more mapping per slab given back, and a process has
// a limit of them) and takes the address space's lock for writing, which
// stalls page faults of every other thread. MADV_DONTNEED drops the pages
// and keeps the addresses: the slab stays in the pool's tables as empty and
// holding no memory, and is carved again (its pages come back zeroed, one
// fault each) before a new region is mapped.
//
// What stays: nodes in threads' caches (at most two magazines per thread)
// keep their slabs, and a slab with one live node stays whole. So once all
// nodes are freed and the tail is done, a pool holds `spare_blocks` free
// nodes' memory (and less than a slab more) plus the slabs of the cached
// nodes.
//
// Under AddressSanitizer a free node is poisoned but for its link, so a use
// after Unref is still reported.
//
// fork(): the registry's and every depot's locks are held across fork()
// (pthread_atfork), so a child can make and use new pools (new wheels)
// whatever other threads of the parent were doing. The parent's pools are
// copied into the child as they were; the forking thread's cache, if it
// served one of them, goes back to that copy and is never used again there.
// A slab another thread was giving back at the fork (between the two locks)
// stays out of the copy's lists: it is never carved there again. The child
// has no give-back thread: it forgets the parent's (and its queue) and
// starts its own when one of its pools needs it.
//
// Thread-safety: thread-safe. A thread's cache is its own, touched without
// locks. `mu_` guards the depot and the slab tables; the registry's mutex is
// taken only when a cache changes pools or its thread exits, and by the
// fork handlers (their order: kNodeRegistry, kNodeDepot in the lock table of
// lib/base/mutex.h). Memory handed from one thread to another always passes
// through `mu_`, which orders the writes to a node before its reuse. A slab
// being given back is in no list while `mu_` is released for madvise, so no
// thread carves it meanwhile; it is listed again under `mu_` after. A pool
// hands its tail to the give-back thread with no depot lock held (the
// thread's queue is kNodeGiveBack, a leaf; the thread takes the registry's
// lock, then the depot's, for each step). `tidy_` is relaxed: only the
// owner of a kOwnerCalls pool frees into it and calls Tidy.

#ifndef TIMINGWHEEL_LIB_HANDLES_NODE_POOL_H_
#define TIMINGWHEEL_LIB_HANDLES_NODE_POOL_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "base/mutex.h"

namespace timingwheel::internal {

class NodePool {
 public:
  // Nodes per magazine.
  static constexpr int kMagazine = 64;
  // About the bytes of a slab, for blocks of up to kSlabBytes / kMagazine
  // bytes (SlabBytesFor).
  static constexpr size_t kSlabBytes = size_t{64} << 10;
  // Slabs in the largest region (up to 16 MiB).
  static constexpr int kMaxRegionSlabs = 256;

  // The bytes of a slab of blocks of `block_size` (a multiple of 16): whole
  // pages that hold whole blocks, the most of them up to kSlabBytes (a
  // multiple of both the block and the page: 60 KiB for the 48-byte node,
  // 1,280 of them, where 64 KiB would leave 16 bytes over in each slab);
  // kSlabBytes where such a multiple is under half of it (a block whose
  // least common multiple with the page is large), and whole kSlabBytes
  // multiples for blocks over kSlabBytes / kMagazine.
  static size_t SlabBytesFor(size_t block_size);
  // The give-back step's bounds: magazines sorted by a step of the tail (a
  // put sorts its own only), and slabs given back by any step.
  static constexpr int kSortPerTailStep = 4;
  static constexpr int kReleasePerPut = 8;
  // The room for magazines in the depot that a step keeps (16 KiB); a
  // burst's larger room goes back once a step finds it a quarter used.
  static constexpr size_t kKeptFullRoom = 1024;

  // Who finishes the give-back work that a call leaves (see the top
  // comment).
  enum class Tail {
    kGiveBackThread,  // the process's give-back thread
    kOwnerCalls,      // the owner's calls of Tidy()
  };

  // The thread caches per thread: one per pool a thread uses at once.
  static constexpr int kCacheSlots = 3;

  // A pool of blocks of `size` bytes aligned to `alignment` (a power of two
  // of at most alignof(std::max_align_t)); `size` >= sizeof(void*). It keeps
  // at least `spare_blocks` (>= 0) free blocks' memory when blocks are
  // freed, and gives the empty slabs beyond them back to the system. Its
  // blocks go through each thread's cache number `cache_slot` (below
  // kCacheSlots).
  NodePool(size_t size, size_t alignment, int64_t spare_blocks, Tail tail,
           int cache_slot = 0);
  NodePool(const NodePool&) = delete;
  NodePool& operator=(const NodePool&) = delete;
  // Unmaps the regions. Precondition: every block was freed (or is never
  // touched again), and no call of this pool is under way.
  ~NodePool();

  // A block of `size` bytes, uninitialized. Throws std::bad_alloc if the
  // system refuses a new region.
  void* Allocate();
  // Returns a block that Allocate of this pool gave.
  void Free(void* block);

  // Whether `address` is where a block of this pool begins, in memory the
  // pool holds (so mapped: its words may be read, whatever the block holds).
  // For a timer id's check; lock-free: the node arena's owner words.
  bool HoldsBlock(const void* address) const;

  // For Tail::kOwnerCalls: one give-back step if a call left work, else
  // nothing (one relaxed load). Bounded as a step of Free is.
  void Tidy();
  // One give-back step; whether work is left. For Tidy.
  bool GiveBackStep() ABSL_LOCKS_EXCLUDED(mu_);

  // A burst of frees: more magazines than this a second (see the top).
  static constexpr int64_t kBurstPutsPerSecond = 10'000;
  // How long the give-back thread waits before it looks again at a pool
  // in a burst, in ns.
  static constexpr int64_t kBurstRecheckNs = 10'000'000;
  // What the give-back thread's step did.
  enum class ThreadStep {
    kDone,   // no work left
    kMore,   // a step; work is left (rest as long as it took)
    kBurst,  // nothing: a burst of frees (look again kBurstRecheckNs later)
  };
  // The give-back thread's step at `now_ns` (its steady clock, in ns):
  // kDone if there is no work (allocations may have taken the free nodes
  // back), else a step, unless the puts since the last such call came
  // faster than kBurstPutsPerSecond.
  ThreadStep GiveBackThreadStep(int64_t now_ns) ABSL_LOCKS_EXCLUDED(mu_);

  // Bytes of the slabs' memory held: the carved part of each slab not given
  // back, in whole pages (what may be resident).
  size_t HeldBytes() const ABSL_LOCKS_EXCLUDED(mu_);

  // Links through free blocks; public for the thread caches in node_pool.cc.
  struct FreeBlock {
    FreeBlock* next;
  };
  struct Magazine {
    FreeBlock* head = nullptr;
    int count = 0;
  };

  // Hands a full magazine to the depot (also for a thread's cache that goes
  // back to its pool), then runs the give-back step.
  void PutMagazine(Magazine magazine) ABSL_LOCKS_EXCLUDED(mu_);

  // For the registry's fork handlers only (see node_pool.cc): hold the
  // depot's lock across fork().
  void LockForFork() ABSL_EXCLUSIVE_LOCK_FUNCTION(mu_) { mu_.Lock(); }
  void UnlockAfterFork() ABSL_UNLOCK_FUNCTION(mu_) { mu_.Unlock(); }

  uint64_t serial() const { return serial_; }

 private:
  // The slab lists, in the order Allocate takes from them: kPartialLists
  // classes of partly used slabs (class k: k/8 to (k+1)/8 of the blocks
  // free), then kEmptyList (every block free, some carved: it holds
  // memory), then kBareList (none carved: never used, or given back).
  static constexpr int kPartialLists = 8;
  static constexpr int kEmptyList = kPartialLists;
  static constexpr int kBareList = kPartialLists + 1;
  static constexpr int kLists = kPartialLists + 2;
  static constexpr int kNoList = -1;  // full, or being given back

  struct Slab {
    char* begin;
    FreeBlock* free = nullptr;  // sorted free blocks (carved)
    int32_t free_count = 0;     // those plus the blocks not carved yet
    int32_t carved = 0;         // blocks carved, from `begin` on
    int32_t prev = -1;          // neighbours in list `list`, by index
    int32_t next = -1;
    int list = kNoList;
  };
  // A mapping of consecutive slabs, `first_slab` on.
  struct Region {
    char* begin;
    size_t bytes;
    int32_t first_slab;
  };

  // One block into the depot's loose magazine (a full one goes to the
  // magazines, and runs the give-back step).
  void PutLoose(FreeBlock* block) ABSL_LOCKS_EXCLUDED(mu_);
  // A full magazine, else the loose blocks, else blocks of the fullest slabs.
  Magazine TakeMagazine() ABSL_LOCKS_EXCLUDED(mu_);

  // The give-back step's part under the lock: sorts up to `magazines`
  // magazines, the last handed over first, and takes empty slabs out of the
  // lists into `releasing`; returns how many.
  int SortAndPickReleases(int magazines, int max_releases,
                          int32_t releasing[kReleasePerPut])
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The empty slabs a put may give back itself: none when the give-back
  // thread does it (no system call on a caller's or a worker's path).
  int ReleasesPerPut() const {
    return tail_ == Tail::kGiveBackThread ? 0 : kReleasePerPut;
  }
  // Whether a step would do something: magazines to sort, or an empty slab
  // to give back, with more than the spare free.
  bool HasGiveBackWork() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // After a put's step: whether its leftover work must be handed to the
  // tail now (not handed yet); marks it handed.
  bool TakeTail() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A put's part under the lock once it has a full magazine: queues it,
  // counts the put, sorts one magazine unless a burst of frees is under way
  // (see the top), and sets `*tail` as TakeTail does; returns how many
  // empty slabs it took into `releasing`.
  int QueueFull(Magazine magazine, int32_t releasing[kReleasePerPut],
                bool* tail) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Hands leftover work to the tail (the give-back thread, or Tidy).
  void HandToTail() ABSL_LOCKS_EXCLUDED(mu_);
  // Its part after: gives the slabs' pages back, then lists them as bare.
  void Release(const int32_t releasing[], int n) ABSL_LOCKS_EXCLUDED(mu_);
  // Moves the blocks of `magazine` to their slabs' free lists.
  void Sort(Magazine magazine) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Up to kMagazine blocks from the slabs, mapping a region if none is free.
  Magazine TakeFromSlabs() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MapRegion() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The index of the slab that holds `block`.
  int32_t SlabOf(const FreeBlock* block) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The list a slab belongs in, by its counts.
  int ListFor(const Slab& slab) const;
  // Puts slab `index` in the list its counts say (out of its current one).
  void Relist(int32_t index) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Unlink(int32_t index) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void LinkFront(int32_t index, int list) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // The low bits of a grain's owner word (NodeArena::SetOwner): the
  // grain's place in its region; the serial above them.
  static constexpr int kGrainBits = 16;

  const size_t size_;              // a multiple of the alignment
  const size_t slab_bytes_;        // SlabBytesFor(size_)
  const int32_t blocks_per_slab_;  // slab_bytes_ / size_
  const int64_t spare_blocks_;     // kept free when giving back
  const uint64_t serial_;          // unique in the process, never 0
  const Tail tail_;
  const int cache_slot_;  // which of a thread's caches serves it
  // Tail::kOwnerCalls: a call left work for Tidy. Relaxed: the pool's owner
  // sets and reads it (a stale read only delays a step).
  std::atomic<bool> tidy_{false};

  mutable Mutex mu_{LockRank::kNodeDepot};
  std::vector<Magazine> full_ ABSL_GUARDED_BY(mu_);
  Magazine loose_ ABSL_GUARDED_BY(mu_);
  // Blocks in `full_` and `loose_`; in the slabs' free lists.
  int64_t unsorted_blocks_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t sorted_blocks_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<Region> regions_ ABSL_GUARDED_BY(mu_);  // by address
  // By index. A deque: growing it copies nothing (a vector's doubling
  // copied the whole table under this lock, and left the old copies in the
  // malloc heap), so the table costs its 40 bytes a slab and no more: 0.03
  // bytes a 48-byte node.
  std::deque<Slab> slabs_ ABSL_GUARDED_BY(mu_);
  int32_t lists_[kLists] ABSL_GUARDED_BY(mu_);  // heads, -1: empty
  // Leftover work was handed to the tail, which has not finished it.
  bool tail_busy_ ABSL_GUARDED_BY(mu_) = false;
  // Magazines handed to the depot (puts of full and loose ones), and their
  // count and the time at the give-back thread's last step.
  int64_t puts_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t looked_puts_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t looked_ns_ ABSL_GUARDED_BY(mu_) = 0;
  // That step found a burst of frees: puts sort nothing until one does not.
  bool in_burst_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_HANDLES_NODE_POOL_H_
