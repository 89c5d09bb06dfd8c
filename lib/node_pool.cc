// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "node_pool.h"

#include <pthread.h>
#include <sanitizer/asan_interface.h>

#include <algorithm>
#include <atomic>
#include <new>
#include <unordered_map>
#include <utility>

namespace timingwheel::internal {
namespace {

// Blocks per slab: the first slab holds one magazine, each next one twice
// the last, up to kMaxSlabBlocks (about 1.8 MiB of 112-byte nodes).
constexpr size_t kMaxSlabBlocks = 16384;

using FreeBlock = NodePool::FreeBlock;
using Magazine = NodePool::Magazine;

void Push(Magazine* magazine, FreeBlock* block) {
  block->next = magazine->head;
  magazine->head = block;
  ++magazine->count;
}

FreeBlock* Pop(Magazine* magazine) {
  FreeBlock* block = magazine->head;
  magazine->head = block->next;
  --magazine->count;
  return block;
}

// Poisons a free block but for its link (no-ops without AddressSanitizer).
void PoisonFree(FreeBlock* block, size_t size) {
  ASAN_POISON_MEMORY_REGION(reinterpret_cast<char*>(block) + sizeof(FreeBlock),
                            size - sizeof(FreeBlock));
}
void UnpoisonBlock(void* block, size_t size) {
  ASAN_UNPOISON_MEMORY_REGION(block, size);
}

// The live pools by serial, so that a cache hands its nodes back only to a
// pool that still exists. Never destroyed: threads may exit after main.
class Registry {
 public:
  static Registry& Get() {
    static auto* registry = [] {
      auto* created = new Registry;
      pthread_atfork(&BeforeFork, &AfterFork, &AfterFork);
      return created;
    }();
    return *registry;
  }
  void Add(NodePool* pool) ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    pools_.emplace(pool->serial(), pool);
  }
  void Remove(const NodePool* pool) ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    pools_.erase(pool->serial());
  }
  // Hands `loaded` and `previous` to the pool with `serial` if it still
  // exists; otherwise they went with its slabs.
  void GiveBack(uint64_t serial, Magazine loaded, Magazine previous)
      ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);  // held: the pool cannot go meanwhile
    auto it = pools_.find(serial);
    if (it == pools_.end()) return;
    if (loaded.count > 0) it->second->PutMagazine(loaded);
    if (previous.count > 0) it->second->PutMagazine(previous);
  }

 private:
  // fork() copies only the calling thread, so a lock another thread holds at
  // that instant would stay locked in the child for good: the child's first
  // wheel would wait for it when its pool registers, or when the forking
  // thread's cache goes back to its pool. So the prepare handler takes the
  // registry's lock and then every live pool's depot lock (GiveBack's order;
  // pools cannot come or go meanwhile), and both processes release them
  // after the fork, the child as the same thread that took them.
  static void BeforeFork() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    Registry& registry = Get();
    registry.mu_.Lock();
    for (const auto& entry : registry.pools_) entry.second->LockForFork();
  }
  static void AfterFork() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    Registry& registry = Get();
    for (const auto& entry : registry.pools_) entry.second->UnlockAfterFork();
    registry.mu_.Unlock();
  }

  Mutex mu_{LockRank::kNodeRegistry};
  std::unordered_map<uint64_t, NodePool*> pools_ ABSL_GUARDED_BY(mu_);
};

// A thread's cache, for the pool with `serial` (0: none).
struct ThreadCache {
  uint64_t serial = 0;
  Magazine loaded;
  Magazine previous;  // full or empty

  ~ThreadCache() { Release(); }
  // Gives the magazines back to their pool and serves no pool.
  void Release() {
    if (serial != 0) {
      Registry::Get().GiveBack(serial, std::exchange(loaded, {}),
                               std::exchange(previous, {}));
    }
    serial = 0;
  }
};
thread_local ThreadCache tls_cache;

size_t RoundUp(size_t n, size_t multiple) {
  return (n + multiple - 1) / multiple * multiple;
}

uint64_t NextSerial() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

NodePool::NodePool(size_t size, size_t alignment)
    : size_(RoundUp(std::max(size, sizeof(FreeBlock)),
                    std::max(alignment, alignof(FreeBlock)))),
      alignment_(std::max(alignment, alignof(FreeBlock))),
      serial_(NextSerial()) {
  Registry::Get().Add(this);
}

NodePool::~NodePool() {
  Registry::Get().Remove(this);
  MutexLock lock(&mu_);
  for (const Slab& slab : slabs_) {
    UnpoisonBlock(slab.begin, slab.bytes);
    ::operator delete (slab.begin, std::align_val_t{alignment_});
  }
}

void* NodePool::Allocate() {
  ThreadCache& cache = tls_cache;
  if (cache.serial != serial_) {
    cache.Release();
    cache.serial = serial_;
  }
  if (cache.loaded.count == 0) {
    if (cache.previous.count > 0) {
      std::swap(cache.loaded, cache.previous);
    } else {
      cache.loaded = TakeMagazine();
    }
  }
  FreeBlock* block = Pop(&cache.loaded);
  UnpoisonBlock(block, size_);
  return block;
}

void NodePool::Free(void* memory) {
  auto* block = static_cast<FreeBlock*>(memory);
  ThreadCache& cache = tls_cache;
  if (cache.serial != serial_) {
    if (cache.serial != 0) {
      // This thread caches another pool's blocks: no switching back and
      // forth for a free.
      PutLoose(block);
      return;
    }
    cache.serial = serial_;  // a thread that has only freed so far
  }
  if (cache.loaded.count == kMagazine) {
    if (cache.previous.count > 0) PutMagazine(cache.previous);
    cache.previous = std::exchange(cache.loaded, {});
  }
  Push(&cache.loaded, block);
  PoisonFree(block, size_);
}

void NodePool::PutMagazine(Magazine magazine) {
  MutexLock lock(&mu_);
  full_.push_back(magazine);
}

void NodePool::PutLoose(FreeBlock* block) {
  MutexLock lock(&mu_);
  Push(&loose_, block);
  PoisonFree(block, size_);
  if (loose_.count == kMagazine) full_.push_back(std::exchange(loose_, {}));
}

NodePool::Magazine NodePool::TakeMagazine() {
  MutexLock lock(&mu_);
  if (!full_.empty()) {
    const Magazine magazine = full_.back();
    full_.pop_back();
    return magazine;
  }
  if (loose_.count > 0) return std::exchange(loose_, {});
  return Carve();
}

NodePool::Magazine NodePool::Carve() {
  if (carve_next_ == carve_end_) {
    const size_t blocks =
        slabs_.empty()
            ? kMagazine
            : std::min(kMaxSlabBlocks, 2 * slabs_.back().bytes / size_);
    const size_t bytes = blocks * size_;
    char* slab = static_cast<char*>(
        ::operator new (bytes, std::align_val_t{alignment_}));
    slabs_.push_back({slab, bytes});
    slab_bytes_ += bytes;
    carve_next_ = slab;
    carve_end_ = slab + bytes;
  }
  Magazine magazine;
  while (magazine.count < kMagazine && carve_next_ != carve_end_) {
    auto* block = reinterpret_cast<FreeBlock*>(carve_next_);
    carve_next_ += size_;
    Push(&magazine, block);
    PoisonFree(block, size_);
  }
  return magazine;
}

size_t NodePool::SlabBytes() const {
  MutexLock lock(&mu_);
  return slab_bytes_;
}

}  // namespace timingwheel::internal
