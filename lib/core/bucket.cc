// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "core/bucket.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <new>

namespace timingwheel::internal {

void NodeVector::Resize(size_t capacity) {
  const size_t bytes = capacity * kSlotBytes;
  void* room = nullptr;
#ifdef __linux__
  if (Mapped(capacity_) && Mapped(capacity)) {
    // Both mapped: the kernel moves the pages (or cuts the tail), no copy.
    // Mapped capacities are whole pages: powers of two of at least
    // kMapBytes / 8 nodes, doubled, or less whole steps (Shrink).
    room = mremap(data_, capacity_ * kSlotBytes, bytes, MREMAP_MAYMOVE);
    if (room == MAP_FAILED) throw std::bad_alloc();
    data_ = static_cast<CoreNode**>(room);
    capacity_ = capacity;
    return;
  }
#endif
  if (Mapped(capacity)) {
    room = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (room == MAP_FAILED) throw std::bad_alloc();
  } else {
    room = std::malloc(bytes);
    if (room == nullptr) throw std::bad_alloc();
  }
  if (end_ > 0) std::memcpy(room, data_, end_ * kSlotBytes);
  Free();
  data_ = static_cast<CoreNode**>(room);
  capacity_ = capacity;
}

void NodeVector::Shrink() {
  size_t capacity = capacity_ / 2;
  if (Mapped(capacity_) && capacity_ - capacity > kStepNodes) {
    // Whole pages: capacities of mapped room are multiples of kStepNodes
    // once they are past it (doubled from a power of two, less steps).
    capacity = capacity_ - kStepNodes;
  }
  Resize(capacity);
}

void NodeVector::ReleasePopped() {
#ifdef __linux__
  // The pages stay mapped and read as zeros if touched again (they are
  // not: popped room is only reused after Clear).
  madvise(data_ + front_ - kStepNodes, kStepBytes, MADV_DONTNEED);
#endif
}

void NodeVector::Free() {
  if (data_ == nullptr) return;
  if (Mapped(capacity_)) {
    munmap(data_, capacity_ * kSlotBytes);
  } else {
    std::free(data_);
  }
  data_ = nullptr;
  capacity_ = 0;
}

}  // namespace timingwheel::internal
