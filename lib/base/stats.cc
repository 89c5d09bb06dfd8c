// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "base/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>

namespace timingwheel::internal {

namespace {

// Bit i set: owned slot i has a live thread.
std::atomic<uint64_t> owned_slots{0};
static_assert(ShardedCounter::kOwnedCells <= 64);

// Stats::lateness_buckets: 2^k - 1 ns for k in [kFirstBoundBits,
// kLastBoundBits], about 1us to 69s.
constexpr int kFirstBoundBits = 10;
constexpr int kLastBoundBits = 36;

static_assert(absl::Nanoseconds(WindowedHistogram::kSlotNs) == kRecentSlot);
static_assert(absl::Nanoseconds(WindowedHistogram::kSlotNs *
                                WindowedHistogram::kWindowSlots) ==
              kRecentWindow);

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

void LatencyHistogram::RaiseMax(std::atomic<int64_t>* max, int64_t value,
                                std::memory_order order) const {
  int64_t seen = max->load(std::memory_order_relaxed);
  if (one_writer_) {
    if (value > seen) max->store(value, order);
    return;
  }
  while (value > seen && !max->compare_exchange_weak(
                             seen, value, order, std::memory_order_relaxed)) {
  }
}

void LatencyHistogram::Record(int64_t ns, int64_t weight) {
  const uint64_t value = ns < 0 ? 0 : static_cast<uint64_t>(ns);
  std::atomic<int64_t>& count = counts_[BucketOf(value)];
  const auto as_double =
      static_cast<double>(value) * static_cast<double>(weight);
  if (one_writer_) {
    // Readers only load: a store of the writer's own sum is enough.
    count.store(count.load(std::memory_order_relaxed) + weight,
                std::memory_order_relaxed);
    sum_.store(sum_.load(std::memory_order_relaxed) + as_double,
               std::memory_order_relaxed);
  } else {
    count.fetch_add(weight, std::memory_order_relaxed);
    double sum = sum_.load(std::memory_order_relaxed);
    while (!sum_.compare_exchange_weak(sum, sum + as_double,
                                       std::memory_order_relaxed)) {
    }
  }
  RaiseMax(&max_, static_cast<int64_t>(value));
}

void LatencyHistogram::MergeFrom(const LatencyHistogram& other) {
  for (int i = 0; i < kBuckets; ++i) {
    counts_[i].fetch_add(other.counts_[i].load(std::memory_order_relaxed),
                         std::memory_order_relaxed);
  }
  max_.store(std::max(Max(), other.Max()), std::memory_order_relaxed);
  sum_.store(Sum() + other.Sum(), std::memory_order_relaxed);
}

int64_t LatencyHistogram::Count() const {
  int64_t n = 0;
  for (const auto& count : counts_) n += count.load(std::memory_order_relaxed);
  return n;
}

int64_t LatencyHistogram::CountAtMost(int64_t ns) const {
  int64_t n = 0;
  const int last = BucketOf(static_cast<uint64_t>(ns));
  for (int i = 0; i <= last; ++i) {
    n += counts_[i].load(std::memory_order_relaxed);
  }
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

void WindowedHistogram::Record(int64_t now_ns, int64_t ns) {
  if (now_ns >= slot_end_ns_.load(std::memory_order_relaxed)) {
    StartSlot(now_ns);
  }
  all_.Record(ns);
  // Release: see ReadSlot.
  all_.RaiseMax(&ring_[current_.load(std::memory_order_relaxed)].max,
                std::max<int64_t>(ns, 0), std::memory_order_release);
}

void WindowedHistogram::StartSlot(int64_t now_ns) {
  const int64_t number = now_ns / kSlotNs;
  // The last slot ends at INT64_MAX (the clock's time cannot pass it).
  const int64_t end = number < std::numeric_limits<int64_t>::max() / kSlotNs
                          ? (number + 1) * kSlotNs
                          : std::numeric_limits<int64_t>::max();
  int64_t seen_end = slot_end_ns_.load(std::memory_order_relaxed);
  do {
    if (now_ns < seen_end) return;  // another writer started it
  } while (!slot_end_ns_.compare_exchange_weak(seen_end, end,
                                               std::memory_order_relaxed));
  const int index = static_cast<int>(number % kRingSlots);
  Slot& slot = ring_[index];
  // Exclusive: a writer still copying into this entry (a slot kRingSlots
  // before, with several writers) keeps it.
  int64_t word = slot.number.load(std::memory_order_relaxed);
  if (word == kWriting || !slot.number.compare_exchange_strong(
                              word, kWriting, std::memory_order_relaxed)) {
    return;
  }
  // Release: a reader that reads any of these stores sees kWriting after.
  for (int i = 0; i < LatencyHistogram::kBuckets; ++i) {
    slot.start[i].store(all_.counts_[i].load(std::memory_order_relaxed),
                        std::memory_order_release);
  }
  slot.max.store(0, std::memory_order_release);
  current_.store(index, std::memory_order_relaxed);
  slot.number.store(number, std::memory_order_release);
}

int64_t WindowedHistogram::ReadSlot(const Slot& slot, int64_t* max,
                                    Counts* start) {
  for (;;) {
    const int64_t number = slot.number.load(std::memory_order_acquire);
    if (number == kWriting) {
      std::this_thread::yield();  // a copy of 4 KB is under way
      continue;
    }
    // Acquire: a value stored after the number was (by a copy for another
    // slot, or a maximum of that slot) makes the load below see the change.
    *max = slot.max.load(std::memory_order_acquire);
    if (start != nullptr) {
      for (int i = 0; i < LatencyHistogram::kBuckets; ++i) {
        (*start)[i] = slot.start[i].load(std::memory_order_acquire);
      }
    }
    if (slot.number.load(std::memory_order_relaxed) == number) return number;
  }
}

int64_t WindowedHistogram::RecentStart(int64_t now_ns) {
  return std::max<int64_t>(0, now_ns / kSlotNs - kWindowSlots) * kSlotNs;
}

void WindowedHistogram::MergeInto(int64_t now_ns, LatencyHistogram* all,
                                  LatencyHistogram* recent) const {
  const int64_t first = RecentStart(now_ns) / kSlotNs;
  Counts start{};
  int64_t earliest;
  int64_t recent_max;
  for (;;) {
    // The earliest slot with an entry at or after the window's first, and
    // the greatest value of those slots.
    earliest = -1;
    recent_max = 0;
    for (const Slot& slot : ring_) {
      int64_t max = 0;
      const int64_t number = ReadSlot(slot, &max, nullptr);
      if (number < first) continue;  // kNever too
      recent_max = std::max(recent_max, max);
      if (earliest < 0 || number < earliest) earliest = number;
    }
    if (earliest < 0) break;  // nothing recorded in the window
    int64_t unused_max = 0;
    // Reused meanwhile (the writer went kRingSlots slots on): again.
    if (ReadSlot(ring_[earliest % kRingSlots], &unused_max, &start) ==
        earliest) {
      break;
    }
  }
  for (int i = 0; i < LatencyHistogram::kBuckets; ++i) {
    const int64_t count = all_.counts_[i].load(std::memory_order_relaxed);
    all->counts_[i].fetch_add(count, std::memory_order_relaxed);
    if (earliest >= 0) {
      recent->counts_[i].fetch_add(count - start[i], std::memory_order_relaxed);
    }
  }
  all->max_.store(std::max(all->Max(), all_.Max()), std::memory_order_relaxed);
  all->sum_.store(all->Sum() + all_.Sum(), std::memory_order_relaxed);
  recent->max_.store(std::max(recent->Max(), recent_max),
                     std::memory_order_relaxed);
}

void FillLateness(const LatencyHistogram& all, const LatencyHistogram& recent,
                  int64_t recent_span_ns, Stats* stats) {
  stats->fired = all.Count();
  stats->lateness_p50 = absl::Nanoseconds(all.Percentile(0.5));
  stats->lateness_p99 = absl::Nanoseconds(all.Percentile(0.99));
  stats->lateness_p999 = absl::Nanoseconds(all.Percentile(0.999));
  stats->lateness_max = absl::Nanoseconds(all.Max());
  stats->lateness_sum = absl::Nanoseconds(all.Sum());
  stats->lateness_buckets.clear();
  for (int k = kFirstBoundBits; k <= kLastBoundBits; ++k) {
    const int64_t bound = (int64_t{1} << k) - 1;
    stats->lateness_buckets.push_back(
        {absl::Nanoseconds(bound), all.CountAtMost(bound)});
  }
  stats->lateness_buckets.push_back({absl::InfiniteDuration(), stats->fired});
  RecentStats& r = stats->recent;
  r.span = absl::Nanoseconds(recent_span_ns);
  r.fired = recent.Count();
  r.lateness_p50 = absl::Nanoseconds(recent.Percentile(0.5));
  r.lateness_p99 = absl::Nanoseconds(recent.Percentile(0.99));
  r.lateness_p999 = absl::Nanoseconds(recent.Percentile(0.999));
  r.lateness_max = absl::Nanoseconds(recent.Max());
}

void FillHandOffs(const LatencyHistogram& waits, Stats* stats) {
  stats->handoffs = waits.Count();
  stats->handoff_p50 = absl::Nanoseconds(waits.Percentile(0.5));
  stats->handoff_p99 = absl::Nanoseconds(waits.Percentile(0.99));
  stats->handoff_max = absl::Nanoseconds(waits.Max());
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
