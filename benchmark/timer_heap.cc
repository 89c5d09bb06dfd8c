// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// timer_heap.cc: the indexed binary min-heap over pooled nodes of
// timer_heap.h.

#include "timer_heap.h"

#include <memory>
#include <utility>

namespace timingwheel {
namespace bench {

TimerHeap::Id TimerHeap::Push(int64_t deadline_ns,
                              absl::AnyInvocable<void()> f) {
  const uint32_t slot = AllocateSlot();
  Node& node = NodeAt(slot);
  node.callback = std::move(f);
  heap_.push_back(Entry{deadline_ns, slot});
  SiftUp(heap_.size() - 1);
  return Id{slot, node.generation};
}

bool TimerHeap::Remove(Id id, absl::AnyInvocable<void()>* callback) {
  if (id.slot >= slots_used_) return false;
  Node& node = NodeAt(id.slot);
  if (node.generation != id.generation || node.heap_index == kNone) {
    return false;
  }
  RemoveAt(node.heap_index);
  *callback = FreeSlot(id.slot);
  return true;
}

absl::AnyInvocable<void()> TimerHeap::Pop() {
  const uint32_t slot = heap_[0].slot;
  RemoveAt(0);
  return FreeSlot(slot);
}

uint32_t TimerHeap::AllocateSlot() {
  if (free_head_ != kNone) {
    const uint32_t slot = free_head_;
    free_head_ = NodeAt(slot).next_free;
    return slot;
  }
  if ((slots_used_ & (kChunkSize - 1)) == 0) {
    chunks_.push_back(std::make_unique<Node[]>(kChunkSize));
  }
  return slots_used_++;
}

absl::AnyInvocable<void()> TimerHeap::FreeSlot(uint32_t slot) {
  Node& node = NodeAt(slot);
  absl::AnyInvocable<void()> callback = std::move(node.callback);
  node.callback = nullptr;
  node.heap_index = kNone;
  ++node.generation;
  node.next_free = free_head_;
  free_head_ = slot;
  return callback;
}

void TimerHeap::Place(size_t i, Entry e) {
  heap_[i] = e;
  NodeAt(e.slot).heap_index = static_cast<uint32_t>(i);
}

void TimerHeap::SiftUp(size_t i) {
  const Entry e = heap_[i];
  while (i > 0) {
    const size_t parent = (i - 1) / 2;
    if (heap_[parent].deadline_ns <= e.deadline_ns) break;
    Place(i, heap_[parent]);
    i = parent;
  }
  Place(i, e);
}

void TimerHeap::SiftDown(size_t i) {
  const Entry e = heap_[i];
  const size_t n = heap_.size();
  for (;;) {
    size_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n &&
        heap_[child + 1].deadline_ns < heap_[child].deadline_ns)
      ++child;
    if (heap_[child].deadline_ns >= e.deadline_ns) break;
    Place(i, heap_[child]);
    i = child;
  }
  Place(i, e);
}

void TimerHeap::RemoveAt(size_t i) {
  const Entry last = heap_.back();
  heap_.pop_back();
  if (i == heap_.size()) return;  // Removed the last entry itself.
  Place(i, last);
  if (i > 0 && heap_[(i - 1) / 2].deadline_ns > last.deadline_ns) {
    SiftUp(i);
  } else {
    SiftDown(i);
  }
}

}  // namespace bench
}  // namespace timingwheel
