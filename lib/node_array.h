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
// is full; pop_back keeps at most one chunk beyond the tail's, so a bucket
// emptied by Stop keeps at most two, and Add and Stop alternating at a
// chunk's edge do not allocate each time. Element i is in chunk
// i / kChunk; operator[] is two loads. The array keeps a pointer to its tail,
// so that Add and Stop (push_back, back, pop_back) cost what they cost on a
// vector. Swap is O(1), which is how a flush detaches a bucket; clear keeps
// one chunk, so a bucket flushed every rotation does not allocate each time.
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
  // Chunks allocated (for the tests).
  size_t chunks() const { return chunks_.size(); }

  // Precondition: i < size().
  TimerNode*& operator[](size_t i) { return chunks_[i / kChunk][i % kChunk]; }
  TimerNode* operator[](size_t i) const {
    return chunks_[i / kChunk][i % kChunk];
  }
  // Precondition: !empty().
  TimerNode* back() const {
    return tail_ != tail_end_ - kChunk ? tail_[-1] : (*this)[size_ - 1];
  }

  void push_back(TimerNode* node) {
    if (tail_ == tail_end_) NextChunk();
    *tail_++ = node;
    ++size_;
  }
  // Precondition: !empty().
  void pop_back() {
    if (tail_ == tail_end_ - kChunk) PreviousChunk();
    --tail_;
    --size_;
  }
  // Empties the array and frees every chunk but the first, which it keeps
  // as a vector keeps its capacity: a flush detaches a bucket by swapping it
  // with the advancer's emptied array, so the bucket gets that chunk back and
  // its next Add allocates nothing, while a huge bucket's chunks go.
  void clear() {
    if (chunks_.size() > 1) chunks_.resize(1);
    size_ = 0;
    tail_ = chunks_.empty() ? nullptr : chunks_[0].get();
    tail_end_ = chunks_.empty() ? nullptr : tail_ + kChunk;
  }
  void swap(NodeArray& other) noexcept {
    chunks_.swap(other.chunks_);
    std::swap(size_, other.size_);
    std::swap(tail_, other.tail_);
    std::swap(tail_end_, other.tail_end_);
  }

 private:
  // The tail is at the end of its chunk: moves it to the start of the next
  // one, allocated if there is none.
  void NextChunk();
  // The tail is at the start of its chunk: moves it to the end of the
  // previous one, and frees the last chunk if two lie beyond that one.
  void PreviousChunk();

  size_t size_ = 0;
  // Where element size_ goes, and the end of the chunk that holds that place
  // (both null while there is no chunk). At a chunk's edge (size_ a multiple
  // of kChunk) the tail is at the end of one chunk or the start of the next.
  // With the tail at hand, push_back, back and pop_back read only this object
  // and the tail's chunk, as a vector's would, except at an edge.
  TimerNode** tail_ = nullptr;
  TimerNode** tail_end_ = nullptr;
  std::vector<std::unique_ptr<TimerNode*[]>> chunks_;
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_NODE_ARRAY_H_
