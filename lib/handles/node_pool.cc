// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "handles/node_pool.h"

#include <pthread.h>
#include <sanitizer/asan_interface.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <iterator>
#include <new>
#include <numeric>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>

#include "handles/node_arena.h"

namespace timingwheel::internal {
namespace {

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
      // The arena's fork handlers first, so that its prepare handler runs
      // after this one's (the arena's lock is inner to the depots').
      NodeArena::Get();
      auto* created = new Registry;
      pthread_atfork(&BeforeFork, &AfterFork, &AfterForkInChild);
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
  // The give-back thread's step of the pool with `serial`, if it still
  // exists (held: it cannot go meanwhile).
  NodePool::ThreadStep GiveBackStep(uint64_t serial, int64_t now_ns)
      ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    auto it = pools_.find(serial);
    return it == pools_.end() ? NodePool::ThreadStep::kDone
                              : it->second->GiveBackThreadStep(now_ns);
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
  static void AfterForkInChild();

  Mutex mu_{LockRank::kNodeRegistry};
  std::unordered_map<uint64_t, NodePool*> pools_ ABSL_GUARDED_BY(mu_);
};

// The give-back thread: one per process, started the first time a pool of
// Tail::kGiveBackThread hands it work. It sleeps until a pool queues its
// serial, then does that pool's give-back steps one at a time, each pool's
// in turn, until none has work left. Never destroyed (threads may exit
// after main); the thread is detached.
class GiveBackThread {
 public:
  static GiveBackThread& Get() {
    static const bool made = (instance_ = new GiveBackThread, true);
    static_cast<void>(made);
    return *instance_;
  }
  void Queue(uint64_t serial) ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    queue_.push_back(serial);
    if (!started_) {
      try {
        std::thread([this] { Run(); }).detach();
        started_ = true;
      } catch (const std::system_error&) {
        // No thread to be had: the work stays queued, and the next pool
        // that queues some tries again.
      } catch (const std::bad_alloc&) {
        // No memory for the thread's state: likewise.
      }
    }
    cv_.NotifyOne();
  }
  // In a child after fork(): the parent's thread is not there, and its queue
  // names the parent's work. A fresh one starts when a pool needs it.
  static void Forget() {
    if (instance_ != nullptr) instance_ = new GiveBackThread;
  }

 private:
  void Run() ABSL_LOCKS_EXCLUDED(mu_) {
    pthread_setname_np(pthread_self(), "tw-giveback");
    for (;;) {
      uint64_t serial = 0;
      {
        MutexLock lock(&mu_);
        while (queue_.empty()) cv_.Wait(&mu_);
        serial = queue_.front();
        queue_.pop_front();
      }
      // The pool's next step after the other pools' (no lock held here).
      const auto start = std::chrono::steady_clock::now();
      switch (Registry::Get().GiveBackStep(
          serial, std::chrono::duration_cast<std::chrono::nanoseconds>(
                      start.time_since_epoch())
                      .count())) {
        case NodePool::ThreadStep::kDone:
          continue;
        case NodePool::ThreadStep::kMore:
          // Rest as long as the step took: a step holds the pool's depot
          // lock for most of it (sorting costs a cache miss a node), and
          // back to back steps would keep the lock from a wheel's workers,
          // whose frees take it once a magazine, for milliseconds (each
          // woken waiter finds it taken again). So the lock is free at least
          // half the time, and the thread takes at most half a core.
          std::this_thread::sleep_for(std::chrono::steady_clock::now() - start);
          break;
        case NodePool::ThreadStep::kBurst:
          // Other pools' steps wait meanwhile: a burst's workers need the
          // cores, whichever pool the thread would sort.
          std::this_thread::sleep_for(
              std::chrono::nanoseconds(NodePool::kBurstRecheckNs));
          break;
      }
      Queue(serial);
    }
  }

  static GiveBackThread* instance_;
  Mutex mu_{LockRank::kNodeGiveBack};
  CondVar cv_;
  std::deque<uint64_t> queue_ ABSL_GUARDED_BY(mu_);
  bool started_ ABSL_GUARDED_BY(mu_) = false;
};
GiveBackThread* GiveBackThread::instance_ = nullptr;

void Registry::AfterForkInChild() {
  AfterFork();
  GiveBackThread::Forget();
}

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
thread_local ThreadCache tls_caches[NodePool::kCacheSlots];

size_t RoundUp(size_t n, size_t multiple) {
  return (n + multiple - 1) / multiple * multiple;
}

uint64_t NextSerial() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

// The least unit of memory given back: madvise needs whole pages, and the
// slabs are multiples of the system's page (SlabBytesFor), at least this.
constexpr size_t kPageBytes = 4096;

size_t BlockSize(size_t size, size_t alignment) {
  return RoundUp(std::max(size, sizeof(FreeBlock)),
                 std::max(alignment, alignof(FreeBlock)));
}

}  // namespace

size_t NodePool::SlabBytesFor(size_t block_size) {
  const size_t magazine_bytes = kMagazine * block_size;
  if (magazine_bytes > kSlabBytes) return RoundUp(magazine_bytes, kSlabBytes);
  const size_t page =
      std::max(kPageBytes, static_cast<size_t>(sysconf(_SC_PAGESIZE)));
  const size_t unit = std::lcm(block_size, page);
  const size_t fitted = kSlabBytes / unit * unit;
  return fitted >= std::max(kSlabBytes / 2, magazine_bytes) ? fitted
                                                            : kSlabBytes;
}

NodePool::NodePool(size_t size, size_t alignment, int64_t spare_blocks,
                   Tail tail, int cache_slot)
    : size_(BlockSize(size, alignment)),
      slab_bytes_(SlabBytesFor(size_)),
      blocks_per_slab_(static_cast<int32_t>(slab_bytes_ / size_)),
      spare_blocks_(spare_blocks),
      serial_(NextSerial()),
      tail_(tail),
      cache_slot_(cache_slot) {
  {
    MutexLock lock(&mu_);
    std::fill(std::begin(lists_), std::end(lists_), -1);
  }
  Registry::Get().Add(this);
}

NodePool::~NodePool() {
  Registry::Get().Remove(this);
  MutexLock lock(&mu_);
  for (const Region& region : regions_) {
    // Unpoisoned first: the addresses may serve other memory next.
    UnpoisonBlock(region.begin, region.bytes);
    NodeArena::Get().SetOwner(region.begin, region.bytes, 0);
    NodeArena::Get().Unmap(region.begin, region.bytes);
  }
}

void* NodePool::Allocate() {
  ThreadCache& cache = tls_caches[cache_slot_];
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
  ThreadCache& cache = tls_caches[cache_slot_];
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
  int32_t releasing[kReleasePerPut];
  int n = 0;
  bool tail = false;
  {
    MutexLock lock(&mu_);
    unsorted_blocks_ += magazine.count;
    n = QueueFull(magazine, releasing, &tail);
  }
  Release(releasing, n);
  if (tail) HandToTail();
}

void NodePool::PutLoose(FreeBlock* block) {
  int32_t releasing[kReleasePerPut];
  int n = 0;
  bool tail = false;
  {
    MutexLock lock(&mu_);
    Push(&loose_, block);
    PoisonFree(block, size_);
    ++unsorted_blocks_;
    if (loose_.count < kMagazine) return;
    n = QueueFull(std::exchange(loose_, {}), releasing, &tail);
  }
  Release(releasing, n);
  if (tail) HandToTail();
}

int NodePool::QueueFull(Magazine magazine, int32_t releasing[kReleasePerPut],
                        bool* tail) {
  full_.push_back(magazine);
  ++puts_;
  const int n =
      in_burst_ ? 0 : SortAndPickReleases(1, ReleasesPerPut(), releasing);
  *tail = TakeTail();
  return n;
}

bool NodePool::GiveBackStep() {
  int32_t releasing[kReleasePerPut];
  int n = 0;
  bool more = false;
  std::vector<Magazine> room;  // freed with no lock held
  {
    MutexLock lock(&mu_);
    n = SortAndPickReleases(kSortPerTailStep, kReleasePerPut, releasing);
    more = HasGiveBackWork();
    tail_busy_ = more;
    // A burst's magazines wait in `full_` (see the top): once they are
    // mostly sorted, its room for them goes too (2.5 MB for 10M nodes).
    if (full_.capacity() > kKeptFullRoom &&
        full_.size() < full_.capacity() / 4) {
      room.assign(full_.begin(), full_.end());
      full_.swap(room);
    }
  }
  Release(releasing, n);
  return more;
}

NodePool::ThreadStep NodePool::GiveBackThreadStep(int64_t now_ns) {
  {
    MutexLock lock(&mu_);
    const int64_t puts = puts_ - looked_puts_;
    const int64_t elapsed_ns = std::max<int64_t>(now_ns - looked_ns_, 1);
    looked_puts_ = puts_;
    looked_ns_ = now_ns;
    if (!HasGiveBackWork()) {
      // The allocations took what the burst freed: nothing to wait for.
      in_burst_ = tail_busy_ = false;
      return ThreadStep::kDone;
    }
    // puts / elapsed > kBurstPutsPerSecond / 1 s (in doubles: the product
    // of a long wait and the rate may not fit in 64 bits).
    in_burst_ = puts > 0 && static_cast<double>(puts) * 1e9 >
                                static_cast<double>(kBurstPutsPerSecond) *
                                    static_cast<double>(elapsed_ns);
    if (in_burst_) return ThreadStep::kBurst;
  }
  return GiveBackStep() ? ThreadStep::kMore : ThreadStep::kDone;
}

void NodePool::Tidy() {
  if (!tidy_.load(std::memory_order_relaxed)) return;
  tidy_.store(GiveBackStep(), std::memory_order_relaxed);
}

bool NodePool::HasGiveBackWork() const {
  const int64_t free_blocks = unsorted_blocks_ + sorted_blocks_;
  if (free_blocks <= spare_blocks_) return false;
  if (!full_.empty()) return true;
  const int32_t empty = lists_[kEmptyList];
  return empty != -1 && free_blocks - slabs_[empty].carved >= spare_blocks_;
}

bool NodePool::TakeTail() {
  if (tail_busy_ || !HasGiveBackWork()) return false;
  tail_busy_ = true;
  return true;
}

void NodePool::HandToTail() {
  if (tail_ == Tail::kGiveBackThread) {
    GiveBackThread::Get().Queue(serial_);
  } else {
    tidy_.store(true, std::memory_order_relaxed);
  }
}

NodePool::Magazine NodePool::TakeMagazine() {
  MutexLock lock(&mu_);
  Magazine magazine;
  if (!full_.empty()) {
    magazine = full_.back();
    full_.pop_back();
  } else if (loose_.count > 0) {
    magazine = std::exchange(loose_, {});
  } else {
    return TakeFromSlabs();
  }
  unsorted_blocks_ -= magazine.count;
  return magazine;
}

int NodePool::SortAndPickReleases(int magazines, int max_releases,
                                  int32_t releasing[kReleasePerPut]) {
  if (unsorted_blocks_ + sorted_blocks_ <= spare_blocks_) return 0;
  // The last magazine handed over first: after a put, its nodes are in this
  // thread's cache.
  for (int i = 0; i < magazines && !full_.empty(); ++i) {
    Sort(full_.back());
    full_.pop_back();
  }
  int n = 0;
  while (n < max_releases && lists_[kEmptyList] != -1) {
    const int32_t index = lists_[kEmptyList];
    const Slab& slab = slabs_[index];
    if (unsorted_blocks_ + sorted_blocks_ - slab.carved < spare_blocks_) break;
    Unlink(index);  // in no list until Release lists it as bare
    sorted_blocks_ -= slab.carved;
    releasing[n++] = index;
  }
  return n;
}

void NodePool::Release(const int32_t releasing[], int n) {
  if (n == 0) return;
  // The slabs are in no list: no thread carves them meanwhile, and their
  // `begin` never changes, so reading it without the lock is safe.
  char* begins[kReleasePerPut];
  {
    MutexLock lock(&mu_);
    for (int i = 0; i < n; ++i) begins[i] = slabs_[releasing[i]].begin;
  }
  // Neighbouring slabs in one call: each call flushes the TLBs of every
  // core the process runs on (an interrupt each), so fewer calls disturb
  // the other threads less.
  // At most kReleasePerPut of them: an insertion sort (g++ 12 at -O3 warns
  // of bounds in std::sort's unrolled one for an array this small).
  for (int i = 1; i < n; ++i) {
    for (int j = i; j > 0 && begins[j] < begins[j - 1]; --j) {
      std::swap(begins[j], begins[j - 1]);
    }
  }
  for (int i = 0; i < n;) {
    int j = i + 1;
    while (j < n && begins[j] == begins[j - 1] + slab_bytes_) ++j;
    // Cannot fail for a range of our own mapping; if it did, the pages would
    // only stay resident.
    madvise(begins[i], slab_bytes_ * static_cast<size_t>(j - i), MADV_DONTNEED);
    i = j;
  }
  MutexLock lock(&mu_);
  for (int i = 0; i < n; ++i) {
    Slab& slab = slabs_[releasing[i]];
    slab.free = nullptr;
    slab.carved = 0;
    slab.free_count = blocks_per_slab_;
    LinkFront(releasing[i], kBareList);
  }
}

void NodePool::Sort(Magazine magazine) {
  unsorted_blocks_ -= magazine.count;
  sorted_blocks_ += magazine.count;
  while (magazine.count > 0) {
    FreeBlock* block = Pop(&magazine);
    const int32_t index = SlabOf(block);
    Slab& slab = slabs_[index];
    block->next = slab.free;
    slab.free = block;
    ++slab.free_count;
    Relist(index);
  }
}

NodePool::Magazine NodePool::TakeFromSlabs() {
  Magazine magazine;
  while (magazine.count < kMagazine) {
    const int32_t* head = std::find_if(std::begin(lists_), std::end(lists_),
                                       [](int32_t i) { return i != -1; });
    if (head == std::end(lists_)) {
      if (magazine.count > 0) break;
      MapRegion();
      continue;
    }
    const int32_t index = *head;
    Slab& slab = slabs_[index];
    while (magazine.count < kMagazine && slab.free_count > 0) {
      FreeBlock* block;
      if (slab.free != nullptr) {
        block = slab.free;
        slab.free = block->next;
        --sorted_blocks_;
      } else {
        block = reinterpret_cast<FreeBlock*>(slab.begin + slab.carved * size_);
        ++slab.carved;
        PoisonFree(block, size_);
      }
      --slab.free_count;
      Push(&magazine, block);
    }
    Relist(index);
  }
  return magazine;
}

void NodePool::MapRegion() {
  // As many slabs as there are (the first region one), up to a cap.
  const int32_t slabs = std::max<int32_t>(
      1,
      std::min<int32_t>(kMaxRegionSlabs, static_cast<int32_t>(slabs_.size())));
  // Whole grains of the arena; the slabs' bytes may end short of them (a
  // tail never touched, so never resident).
  const size_t bytes =
      RoundUp(static_cast<size_t>(slabs) * slab_bytes_, NodeArena::kGrain);
  // In the node arena, so that the core can name a node by 32 bits.
  char* begin = static_cast<char*>(NodeArena::Get().Map(bytes));
  // Each grain's owner word: the serial, and the grain's place in the region
  // (at most kMaxRegionSlabs slabs of a few grains), for HoldsBlock.
  static_assert(kMaxRegionSlabs * 4 < (1 << kGrainBits));
  for (size_t grain = 0; grain < bytes / NodeArena::kGrain; ++grain) {
    NodeArena::Get().SetOwner(begin + grain * NodeArena::kGrain,
                              NodeArena::kGrain, serial_ << kGrainBits | grain);
  }
  const Region region{begin, bytes, static_cast<int32_t>(slabs_.size())};
  regions_.insert(std::upper_bound(regions_.begin(), regions_.end(), region,
                                   [](const Region& a, const Region& b) {
                                     return a.begin < b.begin;
                                   }),
                  region);
  for (int32_t i = 0; i < slabs; ++i) {
    Slab slab;
    slab.begin = begin + static_cast<size_t>(i) * slab_bytes_;
    slab.free_count = blocks_per_slab_;
    slabs_.push_back(slab);
  }
  // Linked last to first, so that the lowest address is carved first.
  for (int32_t i = slabs; i-- > 0;) {
    LinkFront(region.first_slab + i, kBareList);
  }
}

bool NodePool::HoldsBlock(const void* address) const {
  const uint64_t owner = NodeArena::Get().OwnerAt(address);
  if (owner >> kGrainBits != serial_) return false;
  const uintptr_t at = reinterpret_cast<uintptr_t>(address);
  const uintptr_t region =
      at - at % NodeArena::kGrain -
      (owner & ((uint64_t{1} << kGrainBits) - 1)) * NodeArena::kGrain;
  const size_t in_slab = (at - region) % slab_bytes_;
  return in_slab % size_ == 0 &&
         in_slab < static_cast<size_t>(blocks_per_slab_) * size_;
}

int32_t NodePool::SlabOf(const FreeBlock* block) const {
  const char* address = reinterpret_cast<const char*>(block);
  // The last region that begins at or before `address`.
  auto it = std::upper_bound(
      regions_.begin(), regions_.end(), address,
      [](const char* a, const Region& region) { return a < region.begin; });
  --it;
  return it->first_slab +
         static_cast<int32_t>(static_cast<size_t>(address - it->begin) /
                              slab_bytes_);
}

int NodePool::ListFor(const Slab& slab) const {
  if (slab.free_count == 0) return kNoList;
  if (slab.free_count == blocks_per_slab_) {
    return slab.carved == 0 ? kBareList : kEmptyList;
  }
  return static_cast<int>(int64_t{slab.free_count} * kPartialLists /
                          blocks_per_slab_);
}

void NodePool::Relist(int32_t index) {
  const int list = ListFor(slabs_[index]);
  if (list == slabs_[index].list) return;
  Unlink(index);
  if (list != kNoList) LinkFront(index, list);
}

void NodePool::Unlink(int32_t index) {
  Slab& slab = slabs_[index];
  if (slab.list == kNoList) return;
  if (slab.prev != -1) {
    slabs_[slab.prev].next = slab.next;
  } else {
    lists_[slab.list] = slab.next;
  }
  if (slab.next != -1) slabs_[slab.next].prev = slab.prev;
  slab.prev = slab.next = -1;
  slab.list = kNoList;
}

void NodePool::LinkFront(int32_t index, int list) {
  Slab& slab = slabs_[index];
  slab.list = list;
  slab.prev = -1;
  slab.next = lists_[list];
  if (slab.next != -1) slabs_[slab.next].prev = index;
  lists_[list] = index;
}

size_t NodePool::HeldBytes() const {
  MutexLock lock(&mu_);
  size_t bytes = 0;
  for (const Slab& slab : slabs_) {
    bytes += RoundUp(static_cast<size_t>(slab.carved) * size_, kPageBytes);
  }
  return bytes;
}

}  // namespace timingwheel::internal
