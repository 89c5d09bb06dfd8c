// Copyright 2026 The timingwheel Authors.
//
// stats.h: the wheel's counters and its lateness histogram, built so that
// counting costs the hot path no shared cache line.
//
// ShardedCounter: an int64 split into cache-line-sized cells; each thread adds
// to the cell of its own shard (threads are numbered round-robin on first
// use), so two threads scheduling timers at once never write the same line.
// Reading sums the cells: exact when no thread is adding, a momentary value
// otherwise.
//
// LatencyHistogram: counts of non-negative nanosecond values in log-linear
// buckets (8 sub-buckets per power of two, so a percentile is within 12.5%
// of the true value), mergeable, with percentiles. Each worker thread records
// into its own histogram.
//
// Thread-safety: thread-safe. Cells are relaxed atomics by default (as
// statistics they are ordered with nothing else); a counter that must be
// ordered with other atomics (Engine's resets in flight) passes seq_cst.

#ifndef TIMINGWHEEL_LIB_STATS_H_
#define TIMINGWHEEL_LIB_STATS_H_

#include <array>
#include <atomic>
#include <cstdint>

namespace timingwheel::internal {

class ShardedCounter {
 public:
  void Add(int64_t n, std::memory_order order = std::memory_order_relaxed) {
    int shard = tls_shard;
    if (shard < 0) shard = tls_shard = NextShard();
    cells_[shard].value.fetch_add(n, order);
  }
  int64_t Sum(std::memory_order order = std::memory_order_relaxed) const;

 private:
  static constexpr int kShards = 16;
  struct alignas(64) Cell {
    std::atomic<int64_t> value{0};
  };
  // This thread's shard, -1 until its first Add: constant-initialized, so
  // reading it costs no thread_local initialization check.
  static inline thread_local int tls_shard = -1;
  static int NextShard();

  std::array<Cell, kShards> cells_;
};

class LatencyHistogram {
 public:
  // Counts one value; negative values count as 0.
  void Record(int64_t ns);
  // Adds the counts of `other` into this one (which no one else writes).
  void MergeFrom(const LatencyHistogram& other);
  int64_t Count() const;
  // The smallest bucket bound at or above the q-quantile (0 <= q <= 1) of the
  // values recorded, in nanoseconds; 0 when nothing was recorded.
  int64_t Percentile(double q) const;
  int64_t Max() const { return max_.load(std::memory_order_relaxed); }

 private:
  static constexpr int kSubBits = 3;  // 8 sub-buckets per power of two
  static constexpr int kBuckets = (64 - kSubBits + 1) << kSubBits;
  static int BucketOf(uint64_t ns);
  static int64_t UpperBoundOf(int bucket);

  std::array<std::atomic<int64_t>, kBuckets> counts_{};
  std::atomic<int64_t> max_{0};
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_STATS_H_
