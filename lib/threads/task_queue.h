// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// task_queue.h: the worker pool's FIFO queue of due timers, in fixed-size
// chunks that it recycles, so that queueing a task and taking it allocate
// nothing once the queue has had its peak size.
//
// Why not std::deque: the advancer appends batches of up to 1024 tasks and
// the workers take up to 32 at a time from the front, so a deque's blocks
// (21 tasks each in libstdc++) are malloc'd by the advancer and freed by the
// workers: every block crosses glibc arenas, and both sides contend on the
// arena lock (about 5% of the workers' time in a burst of 10M due timers).
// Why not one ring buffer that doubles when full: in a burst the advancer
// queues millions of tasks before the workers take many (8M of 10M due timers
// in BM_Burst), and each doubling copies them all, under the pool's lock,
// into fresh memory that the kernel must fault in and zero: in that burst the
// last doublings held the lock 16, 37 and 69 ms while the workers waited, and
// a ring has up to twice the memory its tasks need.
//
// Design: the tasks sit in a FIFO of chunks of kChunkTasks (4096 tasks,
// 96 KiB): Append copies a batch behind the last task, starting a new chunk
// when the last is full; TakeFront copies the first k out, and a chunk whose
// tasks are all taken goes to the spares, which Append reuses before it
// allocates. So the queue allocates a chunk only when it holds more tasks than
// ever before, never copies a task twice, and touches no more memory than its
// peak size (rounded up to a chunk, plus one).
//
// Memory: the spares are kept while the queue holds tasks, and up to
// kKeptChunks (16 chunks, 64Ki tasks, 1.5 MiB) when it is empty, so a steady
// load and the bursts of ordinary buckets allocate nothing. Beyond that they
// are released when the queue drains: a burst of 10M due timers, queued
// faster than the workers run them, takes some 2000 chunks (200 MB), which
// should not stay pinned after the burst. The owner asks for that with
// ShrinkIfEmpty after draining, which hands the chunks to the caller, to free
// with no lock held.
//
// Example:
//   TaskQueue queue;
//   queue.Append(batch);                 // the advancer
//   Task first = queue.TakeFront();      // a worker takes a batch of k
//   queue.TakeFront(k - 1, &stash);
//   TaskQueue::Chunks spare = queue.ShrinkIfEmpty();  // freed after unlocking
//
// Thread-safety: thread-compatible. The WorkerPool that owns the queue guards
// it with its `mu_`.

#ifndef TIMINGWHEEL_LIB_THREADS_TASK_QUEUE_H_
#define TIMINGWHEEL_LIB_THREADS_TASK_QUEUE_H_

#include <cstddef>
#include <memory>
#include <vector>

#include "absl/functional/function_ref.h"
#include "handles/timer_state.h"

namespace timingwheel::internal {

class TaskQueue {
 public:
  using Task = DueTimer;

  // Tasks per chunk.
  static constexpr size_t kChunkTasks = 4096;
  // Spare chunks an empty queue keeps (see "Memory" above).
  static constexpr size_t kKeptChunks = 16;

  struct Chunk {
    Task tasks[kChunkTasks];
  };
  // Chunks that ShrinkIfEmpty hands back.
  using Chunks = std::vector<std::unique_ptr<Chunk>>;

  TaskQueue() = default;
  TaskQueue(const TaskQueue&) = delete;
  TaskQueue& operator=(const TaskQueue&) = delete;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Chunks allocated: in use and spare.
  size_t chunks() const {
    return chunks_.size() - first_chunk_ + spare_.size();
  }

  // Appends `tasks` at the back, in order.
  void Append(const std::vector<Task>& tasks);

  // Removes the task at the front and returns it. Precondition: !empty().
  Task TakeFront();
  // Removes the first `k` tasks and appends them to `*out`, in order.
  // Precondition: k <= size().
  void TakeFront(size_t k, std::vector<Task>* out);

  // Calls `visit` for each task, front to back.
  void ForEach(absl::FunctionRef<void(const Task&)> visit) const;

  // If the queue is empty and has more than kKeptChunks spare chunks, returns
  // the others, for the caller to free (outside its lock). Otherwise returns
  // none.
  [[nodiscard]] Chunks ShrinkIfEmpty();

 private:
  // The front chunk's tasks are all taken: it becomes a spare.
  void RetireFront();

  // The chunks in use, front first, are `chunks_[first_chunk_..]` (those
  // before `first_chunk_` were moved to the spares); the first task is at
  // `head_` in the front chunk, the last before `tail_` in the back chunk. An
  // empty queue has no chunk in use and `head_` == 0.
  Chunks chunks_;
  size_t first_chunk_ = 0;
  size_t head_ = 0;
  size_t tail_ = 0;
  size_t size_ = 0;
  // Chunks not in use, the most recently used last (reused first).
  Chunks spare_;
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_THREADS_TASK_QUEUE_H_
