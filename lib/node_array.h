// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// node_array.h: the node pointers of one bucket, an array that grows one
// fixed-size chunk at a time and never copies what it holds.
//
// Why not std::vector: a vector doubles, copying every pointer into fresh
// memory the kernel must fault in and zero, and a bucket grows under its
// level's lock (a SpinLock that the advancer takes to move the level's time).
// In BM_Burst the advancer cascades 10M timers into one level-1 bucket; the
// doubling at 2^23 pointers copied 64 MiB into 128 MiB of new pages and held
// the cascade 80 ms, right across the burst's deadline, so the first callback
// ran 81 ms late. In `./tools/run.sh` a level-2 bucket of 400,000 timers
// doubles under the lock while a caller adds, and the advancer spins on it.
// A doubled vector also carries up to half its memory unused.
//
// Design: chunks of kChunk pointers (512, one 4 KiB page), held by a small
// vector of chunk pointers (which still doubles, but is 512 times smaller).
// push_back writes behind the last pointer, allocating a chunk when the last
// is full; pop_back frees the last chunk once two chunks' worth is unused, so
// a bucket emptied by Stop keeps one chunk, and one alternating Add and Stop
// at a chunk's edge does not allocate each time. Element i is in chunk
// i / kChunk; operator[] is two loads. Swap is O(1), which is how a flush
// detaches a bucket.
//
// Thread-safety: thread-compatible; the bucket's level lock guards a bucket's
// array, and a detached one belongs to the advancer.

#ifndef TIMINGWHEEL_LIB_NODE_ARRAY_H_
#define TIMINGWHEEL_LIB_NODE_ARRAY_H_

#include <cstddef>
#include <memory>
#include <vector>

namespace timingwheel::internal {

class TimerNode;

class NodeArray {
 public:
  // Pointers per chunk: 4 KiB.
  static constexpr size_t kChunk = 512;

  NodeArray() = default;
  NodeArray(const NodeArray&) = delete;
  NodeArray& operator=(const NodeArray&) = delete;
  NodeArray(NodeArray&& other) noexcept { swap(other); }
  NodeArray& operator=(NodeArray&& other) noexcept {
    NodeArray moved(std::move(other));
    swap(moved);
    return *this;
  }
  ~NodeArray() = default;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Chunks allocated (for the tests and the memory accounting).
  size_t chunks() const { return chunks_.size(); }

  // Precondition: i < size().
  TimerNode*& operator[](size_t i) { return chunks_[i / kChunk][i % kChunk]; }
  TimerNode* operator[](size_t i) const {
    return chunks_[i / kChunk][i % kChunk];
  }
  // Precondition: !empty().
  TimerNode* back() const { return (*this)[size_ - 1]; }

  void push_back(TimerNode* node) {
    if (size_ == chunks_.size() * kChunk) AddChunk();
    (*this)[size_++] = node;
  }
  // Precondition: !empty().
  void pop_back() {
    --size_;
    if (chunks_.size() * kChunk >= size_ + 2 * kChunk) chunks_.pop_back();
  }
  // Empties the array and frees every chunk.
  void clear() {
    chunks_.clear();
    size_ = 0;
  }
  void swap(NodeArray& other) noexcept {
    chunks_.swap(other.chunks_);
    std::swap(size_, other.size_);
  }

 private:
  void AddChunk();

  std::vector<std::unique_ptr<TimerNode*[]>> chunks_;
  size_t size_ = 0;
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_NODE_ARRAY_H_
