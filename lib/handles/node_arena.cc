// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "handles/node_arena.h"

#include <pthread.h>
#include <sys/mman.h>

#include <cstdint>
#include <iterator>
#include <new>

namespace timingwheel::internal {

NodeArena& NodeArena::Get() {
  static auto* arena = [] {
    auto* created = new NodeArena;
    pthread_atfork(&BeforeFork, &AfterFork, &AfterFork);
    return created;
  }();
  return *arena;
}

NodeArena::NodeArena() {
  constexpr size_t kAlign = NodeLink::kBaseAlign;
  for (size_t bytes = kMaxBytes; bytes >= kMinBytes; bytes /= 2) {
    // kAlign more, to start on a multiple of kAlign; the ends are given
    // back.
    void* reserved = mmap(nullptr, bytes + kAlign, PROT_NONE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (reserved == MAP_FAILED) continue;
    char* const start = static_cast<char*>(reserved);
    char* const base =
        start + (kAlign - reinterpret_cast<uintptr_t>(start) % kAlign) % kAlign;
    if (base != start) munmap(start, static_cast<size_t>(base - start));
    char* const end = start + bytes + kAlign;
    if (base + bytes != end) {
      munmap(base + bytes, static_cast<size_t>(end - (base + bytes)));
    }
    NodeLink::base_ = base;
    reserved_ = bytes;
    break;
  }
  if (reserved_ > 0) {
    void* owners = mmap(nullptr, reserved_ / kGrain * sizeof(uint64_t),
                        PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    // Without it, no grain is handed out (Map throws).
    if (owners == MAP_FAILED) {
      reserved_ = 0;
    } else {
      owners_ = static_cast<std::atomic<uint64_t>*>(owners);
    }
  }
  // The first grain is never handed out, so that no link is 0.
  MutexLock lock(&mu_);
  if (reserved_ > kGrain) free_.emplace(kGrain, reserved_ - kGrain);
}

void* NodeArena::Map(size_t bytes, size_t align) {
  char* begin = nullptr;
  {
    MutexLock lock(&mu_);
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      const uintptr_t start =
          reinterpret_cast<uintptr_t>(NodeLink::base_ + it->first);
      const uintptr_t aligned = (start + align - 1) & ~(uintptr_t{align} - 1);
      const size_t skip = aligned - start;
      if (skip + bytes > it->second) continue;
      const size_t offset = it->first + skip;
      const size_t after = it->second - skip - bytes;
      free_.erase(it);
      if (skip > 0) free_.emplace(offset - skip, skip);
      if (after > 0) free_.emplace(offset + bytes, after);
      begin = NodeLink::base_ + offset;
      break;
    }
  }
  if (begin == nullptr) throw std::bad_alloc();
  if (mprotect(begin, bytes, PROT_READ | PROT_WRITE) != 0) {
    // Refused (the commit limit, or the process's count of mappings).
    Unmap(begin, bytes);
    throw std::bad_alloc();
  }
  return begin;
}

void NodeArena::Unmap(void* begin, size_t bytes) {
  // Back to reserved address space: the pages go, the range stays ours.
  void* reserved =
      mmap(begin, bytes, PROT_NONE,
           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  if (reserved == MAP_FAILED) {
    // Refused (the process's count of mappings): the pages go all the same,
    // and the range stays writable until it is mapped again.
    madvise(begin, bytes, MADV_DONTNEED);
  }
  size_t offset =
      static_cast<size_t>(static_cast<char*>(begin) - NodeLink::base_);
  MutexLock lock(&mu_);
  auto next = free_.lower_bound(offset);
  if (next != free_.begin()) {
    auto previous = std::prev(next);
    if (previous->first + previous->second == offset) {
      offset = previous->first;
      bytes += previous->second;
      free_.erase(previous);
    }
  }
  if (next != free_.end() && offset + bytes == next->first) {
    bytes += next->second;
    free_.erase(next);
  }
  free_.emplace(offset, bytes);
}

void NodeArena::SetOwner(void* begin, size_t bytes, uint64_t owner) {
  const size_t first =
      static_cast<size_t>(static_cast<char*>(begin) - NodeLink::base_) / kGrain;
  for (size_t i = 0; i < bytes / kGrain; ++i) {
    owners_[first + i].store(owner, std::memory_order_release);
  }
}

uint64_t NodeArena::OwnerAt(const void* address) const {
  const uintptr_t at = reinterpret_cast<uintptr_t>(address);
  const uintptr_t base = reinterpret_cast<uintptr_t>(NodeLink::base_);
  if (at < base || at - base >= reserved_) return 0;
  return owners_[(at - base) / kGrain].load(std::memory_order_acquire);
}

void NodeArena::BeforeFork() ABSL_NO_THREAD_SAFETY_ANALYSIS {
  Get().mu_.Lock();
}

void NodeArena::AfterFork() ABSL_NO_THREAD_SAFETY_ANALYSIS {
  Get().mu_.Unlock();
}

}  // namespace timingwheel::internal
