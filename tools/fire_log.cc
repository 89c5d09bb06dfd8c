// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// fire_log.cc: the cold half of FireLog (fire_log.h): preallocating the
// records, registering a thread's first fire, handing out chunks, and
// merging the threads' records once the run is over. Record, the hot half,
// is inline in the header.

#include "fire_log.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "base/mutex.h"

namespace timingwheel::tools {

int64_t NearestRank(const std::vector<int64_t>& sorted, double p) {
  const auto rank = static_cast<size_t>(std::ceil(p * sorted.size()));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

LatenessStats LatenessOf(const std::vector<int64_t>& sorted_ns) {
  LatenessStats l;
  l.count = static_cast<int64_t>(sorted_ns.size());
  if (sorted_ns.empty()) return l;
  l.min = absl::Nanoseconds(sorted_ns.front());
  l.p50 = absl::Nanoseconds(NearestRank(sorted_ns, 0.50));
  l.p99 = absl::Nanoseconds(NearestRank(sorted_ns, 0.99));
  l.p999 = absl::Nanoseconds(NearestRank(sorted_ns, 0.999));
  l.max = absl::Nanoseconds(sorted_ns.back());
  return l;
}

// Taken by a thread's first fire, once per chunk of records, by Fires and by
// Summarize; never while the library holds a lock of its own.
struct FireLog::Shared {
  mutable internal::Mutex mu{internal::LockRank::kOutsideLibrary};
  std::vector<std::unique_ptr<Recorder>> recorders ABSL_GUARDED_BY(mu);
  std::vector<std::unique_ptr<FireChunk>> spare ABSL_GUARDED_BY(mu);
};

namespace {

uint64_t NextLogId() {
  static std::atomic<uint64_t> last{0};
  return last.fetch_add(1, std::memory_order_relaxed) + 1;
}

}  // namespace

FireLog::FireLog(int64_t timers, int threads, const Clock* clock)
    : clock_(clock),
      id_(NextLogId()),
      deadline_ns_(timers, kUnscheduled),
      shared_(std::make_unique<Shared>()) {
  // Each thread leaves at most one chunk part-filled.
  const int64_t chunks = (timers + kChunkFires - 1) / kChunkFires + threads;
  internal::MutexLock lock(&shared_->mu);
  shared_->spare.reserve(chunks);
  // Value-initialized: zeroed, so its pages are in memory before the run.
  for (int64_t i = 0; i < chunks; ++i) {
    shared_->spare.push_back(std::make_unique<FireChunk>());
  }
}

FireLog::~FireLog() = default;

void FireLog::DrawUniformDelays(int64_t begin, int64_t end,
                                int64_t min_delay_ns, int64_t window_ns,
                                uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> offset_ns(
      0, std::max<int64_t>(0, window_ns - 1));
  for (int64_t id = begin; id < end; ++id) {
    deadline_ns_[id] = min_delay_ns + offset_ns(rng);
  }
}

FireLog::Recorder* FireLog::Register() {
  auto r = std::make_unique<Recorder>();
  internal::MutexLock lock(&shared_->mu);
  r->chunks.reserve(shared_->spare.size());
  shared_->recorders.push_back(std::move(r));
  return shared_->recorders.back().get();
}

void FireLog::Refill(Recorder& r) {
  std::unique_ptr<FireChunk> chunk;
  {
    internal::MutexLock lock(&shared_->mu);
    if (!shared_->spare.empty()) {
      chunk = std::move(shared_->spare.back());
      shared_->spare.pop_back();
    }
  }
  if (chunk == nullptr) chunk = std::make_unique<FireChunk>();
  r.next = chunk->fires;
  r.end = chunk->fires + kChunkFires;
  r.chunks.push_back(std::move(chunk));
}

int64_t FireLog::Fires() const {
  int64_t fires = 0;
  internal::MutexLock lock(&shared_->mu);
  for (const std::unique_ptr<Recorder>& r : shared_->recorders) {
    fires += r->fires.load(std::memory_order_relaxed);
  }
  return fires;
}

FireSummary FireLog::Summarize(int64_t due_after_ns) const {
  // Each timer's fire count (saturating: 2 means "more than once") and first
  // fire, merged from every thread's records.
  const size_t timers = deadline_ns_.size();
  std::vector<uint8_t> count(timers, 0);
  std::vector<int64_t> first_ns(timers, std::numeric_limits<int64_t>::max());
  {
    internal::MutexLock lock(&shared_->mu);
    for (const std::unique_ptr<Recorder>& rec : shared_->recorders) {
      for (const std::unique_ptr<FireChunk>& chunk : rec->chunks) {
        const Fire* const end = chunk.get() == rec->chunks.back().get()
                                    ? rec->next
                                    : chunk->fires + kChunkFires;
        for (const Fire* f = chunk->fires; f != end; ++f) {
          const auto id = static_cast<size_t>(f->id);
          if (count[id] < 2) ++count[id];
          first_ns[id] = std::min(first_ns[id], f->ns);
        }
      }
    }
  }

  FireSummary s;
  s.lateness_ns.reserve(timers);
  for (size_t id = 0; id < timers; ++id) {
    const int64_t deadline_ns = deadline_ns_[id];
    if (deadline_ns == kUnscheduled) continue;
    ++s.scheduled;
    s.first_deadline_ns = std::min(s.first_deadline_ns, deadline_ns);
    s.last_deadline_ns = std::max(s.last_deadline_ns, deadline_ns);
    if (count[id] == 0) {
      ++s.lost;
      continue;
    }
    if (count[id] > 1) ++s.doubled;
    const int64_t late_ns = first_ns[id] - deadline_ns;
    if (late_ns < 0) ++s.early;
    s.lateness_ns.push_back(late_ns);
    if (deadline_ns > due_after_ns) s.lateness_due_after_ns.push_back(late_ns);
    s.first_fire_ns = std::min(s.first_fire_ns, first_ns[id]);
    s.last_fire_ns = std::max(s.last_fire_ns, first_ns[id]);
  }
  s.fired = static_cast<int64_t>(s.lateness_ns.size());
  std::sort(s.lateness_ns.begin(), s.lateness_ns.end());
  std::sort(s.lateness_due_after_ns.begin(), s.lateness_due_after_ns.end());
  return s;
}

}  // namespace timingwheel::tools
