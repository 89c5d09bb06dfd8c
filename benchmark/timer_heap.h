// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// timer_heap.h: `TimerHeap`, the heap of timers that both heap baselines
// keep: HeapTimer (heap_timer.h) under its mutex, for threads, and
// LoopHeapTimer (loop_heap_timer.h) on an event loop's thread.
//
// What a careful engineer builds when no timer library is at hand:
//   * one binary min-heap of (deadline, slot) entries; each node knows its
//     heap position, so Remove takes a timer out in O(log n) instead of
//     leaving a tombstone behind. The deadline is copied next to the slot so
//     that sifting compares entries of one contiguous array instead of
//     chasing node pointers;
//   * nodes live in a pool (chunks of 64Ki, never moved, recycled through a
//     free list): no allocation per timer once the pool is warm, and a timer
//     is named by a (slot, generation) pair, so a stale name never removes a
//     newer timer that reuses its slot.
// Push and Remove cost O(log n); Pop of the earliest O(log n).
//
// Example:
//
//   TimerHeap heap;
//   TimerHeap::Id id = heap.Push(deadline_ns, [] { Retry(); });
//   absl::AnyInvocable<void()> dropped;
//   heap.Remove(id, &dropped);  // true: Retry() will never be popped
//   while (!heap.empty() && heap.top_deadline_ns() <= now_ns) heap.Pop()();
//
// Thread-safety: thread-compatible: its owner serializes every call.

#ifndef TIMINGWHEEL_BENCHMARK_TIMER_HEAP_H_
#define TIMINGWHEEL_BENCHMARK_TIMER_HEAP_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/functional/any_invocable.h"

namespace timingwheel {
namespace bench {

class TimerHeap {
 public:
  // Names one timer of the heap.
  struct Id {
    uint32_t slot = 0;
    uint32_t generation = 0;
  };

  TimerHeap() = default;
  TimerHeap(TimerHeap&&) = default;
  TimerHeap& operator=(TimerHeap&&) = default;

  // Adds a timer running `f` at `deadline_ns`.
  Id Push(int64_t deadline_ns, absl::AnyInvocable<void()> f);

  // Takes timer `id` out if it is still in the heap and moves its callback
  // into `*callback` (for the caller to destroy where it likes); false if
  // it left the heap already (popped or removed).
  bool Remove(Id id, absl::AnyInvocable<void()>* callback);

  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  // The earliest deadline. Precondition: !empty().
  int64_t top_deadline_ns() const { return heap_[0].deadline_ns; }
  // Takes the earliest timer out and returns its callback. Precondition:
  // !empty().
  absl::AnyInvocable<void()> Pop();

 private:
  static constexpr uint32_t kNone = ~uint32_t{0};
  static constexpr int kChunkBits = 16;
  static constexpr uint32_t kChunkSize = uint32_t{1} << kChunkBits;

  struct Node {
    absl::AnyInvocable<void()> callback;
    uint32_t heap_index = kNone;  // Position in heap_; kNone if not in it.
    uint32_t generation = 0;      // Bumped each time the slot is freed.
    uint32_t next_free = kNone;   // Free-list link while the slot is free.
  };
  struct Entry {
    int64_t deadline_ns;
    uint32_t slot;
  };

  Node& NodeAt(uint32_t slot) {
    return chunks_[slot >> kChunkBits][slot & (kChunkSize - 1)];
  }
  uint32_t AllocateSlot();
  // Moves the callback out, bumps the generation, returns the slot to the
  // free list.
  absl::AnyInvocable<void()> FreeSlot(uint32_t slot);

  // Heap primitives; each keeps Node::heap_index in step with heap_.
  void Place(size_t i, Entry e);
  void SiftUp(size_t i);
  void SiftDown(size_t i);
  void RemoveAt(size_t i);

  std::vector<std::unique_ptr<Node[]>> chunks_;
  uint32_t slots_used_ = 0;  // Slots ever handed out.
  uint32_t free_head_ = kNone;
  std::vector<Entry> heap_;
};

}  // namespace bench
}  // namespace timingwheel

#endif  // TIMINGWHEEL_BENCHMARK_TIMER_HEAP_H_
