// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// fire_log.h: which timer fired when, recorded by each thread that runs
// callbacks into records of its own, and the lateness figures derived from
// them. The one recorder of the programs that measure how late timers fire:
// timingwheel_cli (tools/, what ./tools/run.sh runs) and BM_Fire and BM_Burst
// of timingwheel_benchmark (benchmark/), so that their scheduling and
// lateness figures mean the same thing.
//
// How lateness is measured: timer `id`'s deadline is the log's clock read
// just before its AfterFunc, plus its delay (StampDeadline); its callback
// calls Record(id), which reads the same clock first; the lateness is that
// reading minus the deadline. The implementation under test reads its own
// clock inside AfterFunc, a little later, so its deadline is never earlier
// than ours: a negative lateness is a genuine early fire, and the lateness
// over-states the true one by at most the time it takes to enter AfterFunc.
//
// Why per thread: the callbacks must cost the same whatever the harness, and
// next to nothing. A callback that increments one shared counter, or writes
// a random slot of a big array, makes cache lines bounce between the threads
// running callbacks, and the harness then measures itself. Record appends
// (id, time) to its own thread's records, preallocated in cache-line-aligned
// chunks that no other thread writes; it shares no counter and no per-timer
// flag with other threads. Whether every timer fired exactly once and never
// early is decided afterwards, by Summarize, from all threads' records.
//
// Percentiles are nearest-rank (NearestRank): the p-th percentile of n sorted
// samples is the ceil(p * n)-th smallest, always a sample that occurred.
//
// Example (`wheel` runs its callbacks on up to `workers` threads):
//
//   FireLog log(n, workers, clock.get());
//   log.DrawUniformDelays(0, n, /*min_delay_ns=*/0,
//                         /*window_ns=*/1'000'000'000, /*seed=*/1);
//   for (int64_t id = 0; id < n; ++id) {
//     const int64_t delay_ns = log.StampDeadline(id);
//     wheel->AfterFunc(absl::Nanoseconds(delay_ns),
//                      [&log, id] { log.Record(id); });
//   }
//   while (log.Fires() < n) absl::SleepFor(absl::Milliseconds(10));
//   wheel->Shutdown();  // Joins the threads that ran the callbacks.
//   const FireSummary summary = log.Summarize();
//
// Threads: the delay and deadline of one id are set by one thread at a time,
// before its timer is scheduled (AfterFunc publishes them to the callback).
// Record and Fires may be called from any thread at any time. Summarize only
// once no callback can run any more (after the threads that ran them were
// joined, e.g. by Shutdown). Memory ordering: a thread's fire count is stored
// by that thread and loaded by Fires, both relaxed: it is a count for
// progress, and nothing is read through it; the records themselves reach
// Summarize through the join.

#ifndef TIMINGWHEEL_TOOLS_FIRE_LOG_H_
#define TIMINGWHEEL_TOOLS_FIRE_LOG_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "absl/time/time.h"
#include "timingwheel/clock.h"

namespace timingwheel::tools {

// The nearest-rank percentile of `sorted` (ascending, not empty), `p` in
// (0, 1]: the sample at rank ceil(p * n), counting from 1 (so p50 of 1..100 is
// 50, p99 is 99, p100 is 100).
int64_t NearestRank(const std::vector<int64_t>& sorted, double p);

// Lateness (callback start - deadline) over the timers that fired at least
// once, first fire only. Negative values are early fires. Meaningful only
// when `count > 0`.
struct LatenessStats {
  int64_t count = 0;
  absl::Duration min;
  absl::Duration p50;
  absl::Duration p99;
  absl::Duration p999;
  absl::Duration max;
};

// The nearest-rank percentiles of `sorted_ns` (ascending nanoseconds).
LatenessStats LatenessOf(const std::vector<int64_t>& sorted_ns);

// What a FireLog recorded, merged over all threads.
struct FireSummary {
  int64_t scheduled = 0;  // Ids given a deadline (and not Unscheduled).
  int64_t fired = 0;      // Of those, the ones that fired at least once.
  int64_t early = 0;      // First fire before the deadline.
  int64_t lost = 0;       // Never fired.
  int64_t doubled = 0;    // Fired more than once.
  // Over the scheduled ids (meaningful when scheduled > 0), and over their
  // first fires (when fired > 0).
  int64_t first_deadline_ns = std::numeric_limits<int64_t>::max();
  int64_t last_deadline_ns = std::numeric_limits<int64_t>::min();
  int64_t first_fire_ns = std::numeric_limits<int64_t>::max();
  int64_t last_fire_ns = std::numeric_limits<int64_t>::min();
  // Each fired timer's lateness (first fire - deadline), sorted ascending.
  std::vector<int64_t> lateness_ns;
  // The same, of the timers whose deadline is after Summarize's
  // `due_after_ns`, sorted ascending.
  std::vector<int64_t> lateness_due_after_ns;
};

class FireLog {
 public:
  // Bytes per timer of a log and its Summarize: the deadline, one (id, time)
  // record, and while summarizing a fire count, the first fire and a
  // lateness sample (and a second one for a timer due after `due_after_ns`).
  static constexpr int64_t kBytesPerTimer =
      3 * sizeof(int64_t) + sizeof(uint8_t) + 2 * sizeof(int64_t);

  // Preallocates (and touches) the records of `timers` fires, ids 0 to
  // timers - 1, on up to `threads` threads running callbacks; more threads or
  // more fires (a doubled timer) take more memory as they go. Every id starts
  // unscheduled. `clock` must outlive the log. Throws std::bad_alloc.
  FireLog(int64_t timers, int threads, const Clock* clock);
  ~FireLog();
  FireLog(const FireLog&) = delete;
  FireLog& operator=(const FireLog&) = delete;

  // The log's clock, in nanoseconds.
  int64_t NowNs() const { return absl::ToInt64Nanoseconds(clock_->Now()); }

  // Before scheduling: the delays of ids [begin, end), uniformly random in
  // [min_delay_ns, min_delay_ns + window_ns) (just min_delay_ns if window_ns
  // is 0), drawn in id order by std::mt19937_64(seed). Held in the deadlines'
  // place until StampDeadline reads them, so that they cost no memory of
  // their own and no time while AfterFunc is timed.
  void DrawUniformDelays(int64_t begin, int64_t end, int64_t min_delay_ns,
                         int64_t window_ns, uint64_t seed);

  // Just before timer `id`'s AfterFunc: its deadline becomes the clock now
  // plus its delay (DrawUniformDelays). Returns that delay, for AfterFunc.
  int64_t StampDeadline(int64_t id) {
    const int64_t delay_ns = deadline_ns_[id];
    deadline_ns_[id] = NowNs() + delay_ns;
    return delay_ns;
  }

  // Before timer `id`'s AfterFunc: its deadline, in NowNs's time.
  void SetDeadline(int64_t id, int64_t deadline_ns) {
    deadline_ns_[id] = deadline_ns;
  }
  int64_t Deadline(int64_t id) const { return deadline_ns_[id]; }

  // After timer `id`'s AfterFunc failed: no callback will run, and Summarize
  // leaves the id out.
  void Unschedule(int64_t id) { deadline_ns_[id] = kUnscheduled; }

  // Timer `id`'s callback, on the thread running it: reads the clock first,
  // then appends (id, time) to this thread's own records. No lock and no
  // read-modify-write of memory another thread writes, except on a thread's
  // first fire and once per chunk of records.
  void Record(int64_t id) {
    const int64_t now_ns = NowNs();
    Recorder& r = ThisThreadsRecorder();
    if (r.next == r.end) Refill(r);
    *r.next++ = Fire{id, now_ns};
    r.fires.store(r.fires.load(std::memory_order_relaxed) + 1,
                  std::memory_order_relaxed);
  }

  // Callbacks recorded so far (a doubled timer counts twice), from each
  // thread's own count.
  int64_t Fires() const;

  // Merges every thread's records: which scheduled timers fired, early,
  // never or more than once, and how late; lateness_due_after_ns keeps the
  // timers due after `due_after_ns`. Only once no callback can run any more.
  FireSummary Summarize(
      int64_t due_after_ns = std::numeric_limits<int64_t>::max()) const;

 private:
  static constexpr int64_t kUnscheduled = std::numeric_limits<int64_t>::min();
  // What the threads running callbacks write is kept this far apart.
  static constexpr size_t kCacheLine = 64;
  // Records per chunk; a chunk belongs to one thread at a time.
  static constexpr int64_t kChunkFires = 4096;

  // One callback run: which timer, and when its callback started.
  struct Fire {
    int64_t id;
    int64_t ns;
  };
  struct alignas(kCacheLine) FireChunk {
    Fire fires[kChunkFires];
  };

  // One thread's records, on cache lines of its own. `chunks`, `next` and
  // `end` are touched by the owning thread only, and read by Summarize after
  // that thread was joined; `fires` is stored by the owner and loaded by
  // Fires().
  struct alignas(kCacheLine) Recorder {
    std::vector<std::unique_ptr<FireChunk>> chunks;  // The last is filling.
    Fire* next = nullptr;
    Fire* end = nullptr;
    std::atomic<int64_t> fires{0};
  };

  // The recorders and the spare chunks, under a lock (fire_log.cc).
  struct Shared;

  Recorder& ThisThreadsRecorder() {
    // Per thread, tagged with the log it belongs to: a pointer alone could
    // outlive its log, and a later log could sit at the same address.
    thread_local uint64_t owner = 0;
    thread_local Recorder* mine = nullptr;
    if (owner != id_) {
      mine = Register();
      owner = id_;
    }
    return *mine;
  }

  Recorder* Register();
  void Refill(Recorder& r);

  const Clock* const clock_;
  const uint64_t id_;  // Never 0, unique in the process.
  std::vector<int64_t> deadline_ns_;
  const std::unique_ptr<Shared> shared_;
};

}  // namespace timingwheel::tools

#endif  // TIMINGWHEEL_TOOLS_FIRE_LOG_H_
