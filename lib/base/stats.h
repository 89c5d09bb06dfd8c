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
// of the true value), with their sum and maximum; mergeable, with
// percentiles.
//
// WindowedHistogram: a LatencyHistogram of every value, and of the values of
// the recent window (Stats::recent, kRecentWindow), placed in time by the
// reading of the wheel's clock that comes with each. Each worker thread
// records into its own; an executor's threads share one.
//
// The window: time is cut into slots of kRecentSlot from the wheel's origin.
// A ring of kRingSlots entries keeps, for each of the latest slots in which a
// value was recorded, the histogram's counts as they were when it began (a
// copy the writer makes at its first value of the slot) and the greatest
// value recorded in it. The window of a reader in slot E begins with slot
// F = E - kWindowSlots; the values recorded since F began are the counts now
// minus those when the first slot at or after F that has an entry began,
// because no value was recorded between the two starts (it would have made
// an entry of its own). So the writer's hot path is Record plus one compare
// (is the slot over?) and the slot's maximum; once a slot it copies the
// counts (4 KB). Deterministic under a ManualClock. The ring holds the
// window's kWindowSlots + 1 slots and one more for a writer that has moved on
// to the next slot while a reader reads.
//
// Thread-safety: thread-safe. Cells are relaxed atomics by default (as
// statistics they are ordered with nothing else); a counter that must be
// ordered with other atomics (Engine's resets in flight) passes seq_cst, and
// its adds are then read-modify-writes in the shared cell. A ShardedCounter
// slot passes from an exiting thread to the next claimer with release /
// acquire, so the new owner continues from the old one's last store.
//
// Memory ordering of the window: each ring entry is a seqlock whose word is
// the slot's number (with no fences, which g++'s ThreadSanitizer does not
// support). The writer that starts a slot (with several writers, the one
// whose compare-and-swap moves the end of the current slot) marks the entry
// kWriting by compare-and-swap, copies the counts and resets the maximum
// with release stores, then stores the slot's number with release; the
// slot's maximum is raised with release stores too. A reader loads the word
// with acquire (kWriting: it yields and loads it again, as a copy of 4 KB is
// under way), the entry with acquire loads, then the word again: if it
// changed, a copy began meanwhile and the reader reads again. (Any value the
// reader loads that was stored after the kWriting mark synchronizes with its
// store, so the reader's second load of the word sees the mark or later.) A
// reader reads the entries before the histogram's counts, after the acquire
// of the word stored after the copy, so every count it reads is at least the
// copy's: the differences are never negative. Release and acquire cost
// nothing more than relaxed on x86. With several writers (an executor's
// threads), a value recorded while a slot's copy is made may count in the
// slot before, and its maximum may go to the slot before: the window's first
// edge is then off by those values (and all_ stays exact).

#ifndef TIMINGWHEEL_LIB_BASE_STATS_H_
#define TIMINGWHEEL_LIB_BASE_STATS_H_

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
  // CancelAll cancelled `n` pending arms (each counted retired already).
  void AddCancelAllCancelled(int64_t n) {
    cancelled_.fetch_add(n, std::memory_order_relaxed);
  }

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
  std::atomic<int64_t> cancelled_{0};  // by Shutdown and CancelAll
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

  // Counts one value `weight` times (a sample standing for that many);
  // negative values count as 0.
  void Record(int64_t ns, int64_t weight = 1);
  // Adds the counts of `other` into this one (which no one else writes).
  void MergeFrom(const LatencyHistogram& other);
  int64_t Count() const;
  // The smallest bucket bound at or above the q-quantile (0 <= q <= 1) of the
  // values recorded, in nanoseconds; 0 when nothing was recorded.
  int64_t Percentile(double q) const;
  int64_t Max() const { return max_.load(std::memory_order_relaxed); }
  // The values added up, in nanoseconds: a double, which does not overflow
  // (exact up to 2^53 ns, 104 days, then within 2^-52 of the sum).
  double Sum() const { return sum_.load(std::memory_order_relaxed); }
  // How many values were at most `ns`, a bucket's upper bound: 2^k - 1 for
  // any k in 0..63 is one.
  int64_t CountAtMost(int64_t ns) const;

 private:
  friend class WindowedHistogram;

  static constexpr int kSubBits = 3;  // 8 sub-buckets per power of two
  static constexpr int kBuckets = (64 - kSubBits + 1) << kSubBits;
  static int BucketOf(uint64_t ns);
  static int64_t UpperBoundOf(int bucket);
  // Raises `max` to `value` with `order`: a load and a store with one
  // writer, else a compare-and-swap loop.
  void RaiseMax(std::atomic<int64_t>* max, int64_t value,
                std::memory_order order = std::memory_order_relaxed) const;

  const bool one_writer_;
  std::array<std::atomic<int64_t>, kBuckets> counts_{};
  std::atomic<int64_t> max_{0};
  std::atomic<double> sum_{0};
};

class WindowedHistogram {
 public:
  explicit WindowedHistogram(LatencyHistogram::Writers writers)
      : all_(writers) {}
  WindowedHistogram(const WindowedHistogram&) = delete;
  WindowedHistogram& operator=(const WindowedHistogram&) = delete;

  // Counts `ns` (negative as 0), recorded at `now_ns` of the wheel's clock.
  // One writer's `now_ns` never decreases (TimeBase::NowNs).
  void Record(int64_t now_ns, int64_t ns);
  // Adds every value recorded into `all`, and those recorded since
  // RecentStart(now_ns) into `recent`; no one else writes either.
  void MergeInto(int64_t now_ns, LatencyHistogram* all,
                 LatencyHistogram* recent) const;
  // Where the window of a reader at `now_ns` begins: the start of the slot
  // kRecentWindow before the one of `now_ns`, or 0.
  static int64_t RecentStart(int64_t now_ns);

  static constexpr int64_t kSlotNs = 10'000'000'000;  // kRecentSlot
  static constexpr int kWindowSlots = 6;              // slots in kRecentWindow

 private:
  static constexpr int kRingSlots = kWindowSlots + 2;
  static constexpr int64_t kNever = -1;    // an entry no slot has used yet
  static constexpr int64_t kWriting = -2;  // an entry being copied into
  using Counts = std::array<int64_t, LatencyHistogram::kBuckets>;
  struct Slot {
    std::atomic<int64_t> number{kNever};  // the seqlock word
    std::atomic<int64_t> max{0};          // the greatest value of the slot
    // The counts when the slot began.
    std::array<std::atomic<int64_t>, LatencyHistogram::kBuckets> start{};
  };

  // At the first value of a slot: copies the counts into its ring entry.
  void StartSlot(int64_t now_ns);
  // Reads `slot` consistently: returns its number, and its maximum and (if
  // `start` is not null) its start counts.
  static int64_t ReadSlot(const Slot& slot, int64_t* max, Counts* start);

  LatencyHistogram all_;
  // The end of the latest slot started (0: none yet), and its ring entry.
  std::atomic<int64_t> slot_end_ns_{0};
  std::atomic<int> current_{0};
  std::array<Slot, kRingSlots> ring_;
};

// Fills the lateness of `stats` (fired, lateness_*, recent) from that of
// every callback, `all`, and of the recent window, `recent`, which spans
// `recent_span_ns`.
void FillLateness(const LatencyHistogram& all, const LatencyHistogram& recent,
                  int64_t recent_span_ns, Stats* stats);

// Fills the hand-off of `stats` (handoffs, handoff_*) from the waits of the
// arms the advancer took, `waits`.
void FillHandOffs(const LatencyHistogram& waits, Stats* stats);

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_BASE_STATS_H_
