// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// stats.h: the wheel's counters and its lateness histogram, built so that
// counting costs the hot path no shared cache line.
//
// ShardedCounter: an int64 split into cache-line-sized cells, so two threads
// scheduling timers at once never write the same line. On its first Add a
// thread claims one of kOwnedCells slots, process-wide (the same cell in
// every counter), and gives it back when it exits. The only writer of its
// cell, it adds with a load and a store: no locked read-modify-write on the
// hot path. Threads beyond kOwnedCells, and ordered adds, share one more cell
// with fetch_add. Reading sums the cells: exact when no thread is adding, a
// momentary value otherwise.
//
// TimerCounts: what the engine counts of its timers (Stats). The pending
// count is one exact atomic with Options::max_pending, which must be checked
// on every new timer; without, it is derived, scheduled - stopped - retired,
// so that an AfterFunc and a Stop each touch one sharded counter, not two.
//
// LatencyHistogram: counts of non-negative nanosecond values in log-linear
// buckets (8 sub-buckets per power of two, so a percentile is within 12.5%
// of the true value), mergeable, with percentiles. Each worker thread records
// into its own histogram.
//
// Thread-safety: thread-safe. Cells are relaxed atomics by default (as
// statistics they are ordered with nothing else); a counter that must be
// ordered with other atomics (Engine's resets in flight) passes seq_cst, and
// its adds are then read-modify-writes in the shared cell. A slot passes from
// an exiting thread to the next claimer with release / acquire, so the new
// owner continues from the old one's last store.

#ifndef TIMINGWHEEL_LIB_STATS_H_
#define TIMINGWHEEL_LIB_STATS_H_

#include <array>
#include <atomic>
#include <cstdint>

#include "timingwheel/options.h"

namespace timingwheel::internal {

class ShardedCounter {
 public:
  void Add(int64_t n, std::memory_order order = std::memory_order_relaxed) {
    int slot = tls_slot;
    if (slot < 0) slot = tls_slot = ClaimSlot();
    std::atomic<int64_t>& cell = cells_[slot].value;
    if (slot != kSharedCell && order == std::memory_order_relaxed) {
      cell.store(cell.load(std::memory_order_relaxed) + n,
                 std::memory_order_relaxed);
    } else {
      cells_[kSharedCell].value.fetch_add(n, order);
    }
  }
  int64_t Sum(std::memory_order order = std::memory_order_relaxed) const;

  // Threads that get a cell of their own; the rest share one.
  static constexpr int kOwnedCells = 32;

 private:
  static constexpr int kSharedCell = kOwnedCells;
  struct alignas(64) Cell {
    std::atomic<int64_t> value{0};
  };
  // This thread's cell, -1 until its first Add: constant-initialized, so
  // reading it costs no thread_local initialization check.
  static inline thread_local int tls_slot = -1;
  // A free owned slot for this thread (released when it exits), or
  // kSharedCell.
  static int ClaimSlot();

  std::array<Cell, kOwnedCells + 1> cells_;
};

class TimerCounts {
 public:
  // `max_pending` as in Options: 0 for no limit.
  explicit TimerCounts(int64_t max_pending) : max_pending_(max_pending) {}
  TimerCounts(const TimerCounts&) = delete;
  TimerCounts& operator=(const TimerCounts&) = delete;

  int64_t max_pending() const { return max_pending_; }
  // A new timer (AfterFunc, Every, ...): counts it scheduled and pending.
  // With max_pending timers pending already it counts nothing and returns
  // false, with their number in `*pending`.
  bool AddNew(int64_t* pending) {
    if (max_pending_ > 0 && !ReservePending(pending)) return false;
    scheduled_.Add(1);
    return true;
  }
  // A new timer that was never armed after all (the wheel shut down while
  // it was made), after its cancel counted it retired: undoes both.
  void UndoNew();
  // An arm that is not a new timer's (a Reset of a timer not pending).
  void Armed() {
    scheduled_.Add(1);
    if (max_pending_ > 0) {
      pending_exact_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  // A Stop (or a task the executor dropped) that ended a pending arm.
  void Stopped() {
    stopped_.Add(1);
    if (max_pending_ > 0) {
      pending_exact_.fetch_sub(1, std::memory_order_relaxed);
    }
  }
  // A pending arm that ended otherwise: it started (one-shot), its schedule
  // ended, or it was cancelled.
  void Retired() {
    if (max_pending_ > 0) {
      pending_exact_.fetch_sub(1, std::memory_order_relaxed);
    } else {
      retired_.Add(1);
    }
  }
  // Pending, as Stats::pending; momentarily off while counts race.
  int64_t Pending() const;

  // A pending arm cancelled because the wheel was shut down while the engine
  // moved it (in no bucket when Shutdown looked): retired, and counted as
  // cancelled by Shutdown.
  void CancelledInTransit() {
    Retired();
    cancelled_in_transit_.fetch_add(1, std::memory_order_relaxed);
  }
  // Shutdown cancelled `n` timers itself; returns them plus those cancelled
  // in transit since the last call, which now count as Shutdown's.
  int64_t AddShutdownCancelled(int64_t n);

  void CallbackThrew() { callbacks_thrown_.Add(1); }
  void SchedulerThrew() {
    schedulers_thrown_.fetch_add(1, std::memory_order_relaxed);
  }
  void ExecutorThrew() {
    executor_threw_.fetch_add(1, std::memory_order_relaxed);
  }
  void ExecutorDropped() {
    executor_dropped_.fetch_add(1, std::memory_order_relaxed);
  }

  // Fills the counts of `stats` (not pending, levels, queues or lateness).
  void Fill(Stats* stats) const;

 private:
  // With max_pending: one more pending timer, unless there are max_pending
  // already (then their number goes to `*pending`).
  bool ReservePending(int64_t* pending);

  const int64_t max_pending_;
  std::atomic<int64_t> pending_exact_{0};  // with max_pending only
  ShardedCounter scheduled_;
  ShardedCounter stopped_;
  ShardedCounter retired_;  // without max_pending only
  ShardedCounter callbacks_thrown_;
  std::atomic<int64_t> schedulers_thrown_{0};
  std::atomic<int64_t> executor_threw_{0};
  std::atomic<int64_t> executor_dropped_{0};
  std::atomic<int64_t> cancelled_{0};  // by Shutdown
  std::atomic<int64_t> cancelled_in_transit_{0};
};

// Cache-line aligned: the workers' histograms, allocated one after another,
// share no line.
class alignas(64) LatencyHistogram {
 public:
  // Who calls Record: one thread only (a worker's own histogram), which then
  // needs no read-modify-write, or any thread.
  enum class Writers { kOne, kMany };
  explicit LatencyHistogram(Writers writers = Writers::kMany)
      : one_writer_(writers == Writers::kOne) {}

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

  const bool one_writer_;
  std::array<std::atomic<int64_t>, kBuckets> counts_{};
  std::atomic<int64_t> max_{0};
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_STATS_H_
