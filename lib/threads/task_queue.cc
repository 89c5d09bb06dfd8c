// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "threads/task_queue.h"

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <utility>

namespace timingwheel::internal {

void TaskQueue::Append(const std::vector<Task>& tasks) {
  size_t done = 0;
  while (done < tasks.size()) {
    if (first_chunk_ == chunks_.size() || tail_ == kChunkTasks) {
      if (spare_.empty()) {
        // Not value-initialized: a task is written before it is read.
        chunks_.emplace_back(new Chunk);
      } else {
        chunks_.push_back(std::move(spare_.back()));
        spare_.pop_back();
      }
      tail_ = 0;
    }
    const size_t n = std::min(tasks.size() - done, kChunkTasks - tail_);
    std::copy_n(tasks.data() + done, n, chunks_.back()->tasks + tail_);
    tail_ += n;
    done += n;
  }
  size_ += tasks.size();
}

TaskQueue::Task TaskQueue::TakeFront() {
  const Task task = chunks_[first_chunk_]->tasks[head_];
  if (--size_ == 0 || ++head_ == kChunkTasks) {
    RetireFront();
    head_ = 0;
  }
  return task;
}

void TaskQueue::TakeFront(size_t k, std::vector<Task>* out) {
  size_ -= k;
  while (k > 0) {
    const Task* front = chunks_[first_chunk_]->tasks;
    const size_t end = first_chunk_ + 1 == chunks_.size() ? tail_ : kChunkTasks;
    const size_t n = std::min(k, end - head_);
    out->insert(out->end(), front + head_, front + head_ + n);
    head_ += n;
    k -= n;
    if (head_ == kChunkTasks) {
      RetireFront();
      head_ = 0;
    }
  }
  if (size_ == 0) {
    if (first_chunk_ < chunks_.size()) RetireFront();  // the back one, not full
    head_ = 0;
  }
}

void TaskQueue::ForEach(absl::FunctionRef<void(const Task&)> visit) const {
  size_t head = head_;
  for (size_t chunk = first_chunk_; chunk < chunks_.size(); ++chunk) {
    const size_t end = chunk + 1 == chunks_.size() ? tail_ : kChunkTasks;
    for (size_t i = head; i < end; ++i) visit(chunks_[chunk]->tasks[i]);
    head = 0;
  }
}

TaskQueue::Chunks TaskQueue::ShrinkIfEmpty() {
  Chunks released;
  if (size_ != 0 || spare_.size() <= kKeptChunks) return released;
  // The least recently used ones.
  const auto kept_end = spare_.end() - kKeptChunks;
  released.assign(std::make_move_iterator(spare_.begin()),
                  std::make_move_iterator(kept_end));
  spare_.erase(spare_.begin(), kept_end);
  return released;
}

void TaskQueue::RetireFront() {
  spare_.push_back(std::move(chunks_[first_chunk_++]));
  if (first_chunk_ == chunks_.size()) {
    chunks_.clear();
    first_chunk_ = 0;
  } else if (2 * first_chunk_ >= chunks_.size()) {
    // Drop the moved-from entries: O(1) amortized per chunk.
    chunks_.erase(chunks_.begin(),
                  chunks_.begin() + static_cast<ptrdiff_t>(first_chunk_));
    first_chunk_ = 0;
  }
}

}  // namespace timingwheel::internal
