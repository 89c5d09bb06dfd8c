// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace timingwheel::internal {

namespace {

// Bit i set: owned slot i has a live thread.
std::atomic<uint64_t> owned_slots{0};
static_assert(ShardedCounter::kOwnedCells <= 64);

// Gives the thread's slot back when it exits; later adds of the exiting
// thread (from other thread_local destructors) go to the shared cell.
struct SlotRelease {
  int slot = -1;
  int* tls_slot = nullptr;
  ~SlotRelease() {
    if (slot < 0) return;
    *tls_slot = ShardedCounter::kOwnedCells;
    owned_slots.fetch_and(~(uint64_t{1} << slot), std::memory_order_release);
  }
};

}  // namespace

int ShardedCounter::ClaimSlot() {
  uint64_t owned = owned_slots.load(std::memory_order_relaxed);
  for (;;) {
    int slot = 0;
    while (slot < kOwnedCells && (owned >> slot & 1) != 0) ++slot;
    if (slot == kOwnedCells) return kSharedCell;
    if (owned_slots.compare_exchange_weak(owned, owned | uint64_t{1} << slot,
                                          std::memory_order_acquire,
                                          std::memory_order_relaxed)) {
      thread_local SlotRelease release;
      release.slot = slot;
      release.tls_slot = &tls_slot;
      return slot;
    }
  }
}

int64_t ShardedCounter::Sum(std::memory_order order) const {
  int64_t sum = 0;
  for (const Cell& cell : cells_) sum += cell.value.load(order);
  return sum;
}

// Values below 2^kSubBits get a bucket each; above, a value with highest bit
// h goes to group h - kSubBits + 1, sub-bucket = the kSubBits bits below h.
int LatencyHistogram::BucketOf(uint64_t ns) {
  if (ns < (uint64_t{1} << kSubBits)) return static_cast<int>(ns);
  const int high = 63 - __builtin_clzll(ns);
  const int group = high - kSubBits + 1;
  const int sub = static_cast<int>((ns >> (high - kSubBits)) &
                                   ((uint64_t{1} << kSubBits) - 1));
  return (group << kSubBits) + sub;
}

int64_t LatencyHistogram::UpperBoundOf(int bucket) {
  const int group = bucket >> kSubBits;
  const int sub = bucket & ((1 << kSubBits) - 1);
  if (group == 0) return sub;
  const int high = group + kSubBits - 1;
  // Bucket covers [(8 + sub) << (high - 3), (9 + sub) << (high - 3)).
  const int shift = high - kSubBits;
  const uint64_t upper = ((uint64_t{1} << kSubBits) + sub + 1) << shift;
  if (upper - 1 > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return std::numeric_limits<int64_t>::max();
  }
  return static_cast<int64_t>(upper - 1);
}

void LatencyHistogram::Record(int64_t ns) {
  const uint64_t value = ns < 0 ? 0 : static_cast<uint64_t>(ns);
  std::atomic<int64_t>& count = counts_[BucketOf(value)];
  int64_t max = max_.load(std::memory_order_relaxed);
  if (one_writer_) {
    // Readers only load: a store of the writer's own sum is enough.
    count.store(count.load(std::memory_order_relaxed) + 1,
                std::memory_order_relaxed);
    if (static_cast<int64_t>(value) > max) {
      max_.store(static_cast<int64_t>(value), std::memory_order_relaxed);
    }
    return;
  }
  count.fetch_add(1, std::memory_order_relaxed);
  while (static_cast<int64_t>(value) > max &&
         !max_.compare_exchange_weak(max, static_cast<int64_t>(value),
                                     std::memory_order_relaxed)) {
  }
}

void LatencyHistogram::MergeFrom(const LatencyHistogram& other) {
  for (int i = 0; i < kBuckets; ++i) {
    counts_[i].fetch_add(other.counts_[i].load(std::memory_order_relaxed),
                         std::memory_order_relaxed);
  }
  max_.store(std::max(Max(), other.Max()), std::memory_order_relaxed);
}

int64_t LatencyHistogram::Count() const {
  int64_t n = 0;
  for (const auto& count : counts_) n += count.load(std::memory_order_relaxed);
  return n;
}

int64_t LatencyHistogram::Percentile(double q) const {
  const int64_t total = Count();
  if (total == 0) return 0;
  const int64_t rank = std::max<int64_t>(
      1, static_cast<int64_t>(
             std::ceil(std::clamp(q, 0.0, 1.0) * static_cast<double>(total))));
  int64_t seen = 0;
  for (int i = 0; i < kBuckets; ++i) {
    seen += counts_[i].load(std::memory_order_relaxed);
    if (seen >= rank) return std::min(UpperBoundOf(i), Max());
  }
  return Max();
}

bool TimerCounts::ReservePending(int64_t* pending) {
  int64_t now = pending_exact_.load(std::memory_order_relaxed);
  do {
    if (now >= max_pending_) {
      *pending = now;
      return false;
    }
  } while (!pending_exact_.compare_exchange_weak(now, now + 1,
                                                 std::memory_order_relaxed));
  return true;
}

void TimerCounts::UndoNew() {
  scheduled_.Add(-1);
  // With max_pending, the retirement already gave back the reservation.
  if (max_pending_ == 0) retired_.Add(-1);
}

int64_t TimerCounts::Pending() const {
  // Momentarily negative when a Stop counts before the Reset it raced.
  const int64_t pending =
      max_pending_ > 0 ? pending_exact_.load(std::memory_order_relaxed)
                       : scheduled_.Sum() - stopped_.Sum() - retired_.Sum();
  return std::max<int64_t>(0, pending);
}

int64_t TimerCounts::AddShutdownCancelled(int64_t n) {
  n += cancelled_in_transit_.exchange(0, std::memory_order_relaxed);
  cancelled_.fetch_add(n, std::memory_order_relaxed);
  return n;
}

void TimerCounts::Fill(Stats* stats) const {
  stats->scheduled = scheduled_.Sum();
  stats->stopped = stopped_.Sum();
  // Those cancelled in transit after the last Shutdown (by a detached
  // advancer) count too.
  stats->cancelled = cancelled_.load(std::memory_order_relaxed) +
                     cancelled_in_transit_.load(std::memory_order_relaxed);
  stats->callbacks_thrown = callbacks_thrown_.Sum();
  stats->schedulers_thrown = schedulers_thrown_.load(std::memory_order_relaxed);
  stats->executor_threw = executor_threw_.load(std::memory_order_relaxed);
  stats->executor_dropped = executor_dropped_.load(std::memory_order_relaxed);
}

}  // namespace timingwheel::internal
