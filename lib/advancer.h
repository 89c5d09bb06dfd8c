// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// advancer.h: the two threads that move time: the poller, which waits on the
// delay queue, and the advancer, which flushes each released bucket.
//
//   poller:   DelayQueue::Poll blocks until the head bucket is due (no thread
//             wakes for an empty tick) and moves the due buckets into the
//             advancer's inbox.
//   advancer: for each bucket: Wheel::AdvanceTo(its release tick) on every
//             lane, Detach the bucket's array in O(1), then one pass over it,
//             per node under its node lock: Arm again at its deadline
//             (Kafka's addOrRun, in the node's lane): due -> a batch for the
//             runner (submitted every kSubmitChunk and at the end),
//             otherwise a lower level (a cascade).
//
// Order of flushes. A bucket of level >= 1 is released early (placement.h),
// so release order is not expiration order: the buckets released and not yet
// flushed wait in a heap (ReadyBuckets), the one whose timers come due first
// on top, so that thousands released at once (a clock jump, a stalled
// process) cost O(log n) each.
//
// Slicing. A big bucket takes milliseconds, while none of its timers is due
// before its expiration. Every kFlushSlice timers of a bucket the advancer
// takes the inbox into the heap and first flushes, in full, the buckets that
// expire no later than the one in progress; later ones wait. So a big bucket
// of a higher level never holds up the level-0 buckets due meanwhile. Every
// kClockEvery timers (a quarter of a slice) any flush also reads the clock
// again, so that the bucket's timers that came due while it was moved go to
// the runner at once (Wheel::Arm: deadline <= now) rather than into a
// level-0 bucket flushed after this one: when a cascade of millions runs past
// their deadline, the first of them runs about a thousand timers after the
// deadline, not after the whole cascade.
//
// Chunks and pauses. The advancer moves timers in chunks of kClockEvery,
// each under `transit_mu_`: the detach, or the arms of a chunk's timers and
// the queueing of the due ones for the workers. Between chunks it holds no
// timer that the pool or a level does not hold too, except those of
// `detached_` not yet handled, which ForEachInTransit shows. So a thread
// that pauses it (CancelAll) sees every timer the advancer holds, and none
// moves meanwhile. User code never runs under `transit_mu_`: the executor
// gets its tasks (HandOff) after the chunk, and the references that may be
// the last are released after the flush.
//
// Thread-safety: Start and Stop are called by the engine (Stop by Shutdown,
// possibly from a callback run inline on the advancer: then that thread is
// detached, not joined, and exits when the callback returns). `inbox_mu_`
// guards the inbox, `transit_mu_` the timers in transit; the rest of a
// flush belongs to the advancer thread. Each thread holds a reference on the
// engine while it runs.

#ifndef TIMINGWHEEL_LIB_ADVANCER_H_
#define TIMINGWHEEL_LIB_ADVANCER_H_

#include <atomic>
#include <deque>
#include <functional>
#include <queue>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "delay_queue.h"
#include "mutex.h"
#include "node_array.h"
#include "ref_counted.h"
#include "runner.h"
#include "stats.h"
#include "time_base.h"
#include "timer_state.h"
#include "timingwheel/options.h"
#include "wheel.h"

namespace timingwheel::internal {

class Advancer {
 public:
  Advancer(Wheel* wheel, Runner* runner, const TimeBase* time,
           TimerCounts* counts);
  Advancer(const Advancer&) = delete;
  Advancer& operator=(const Advancer&) = delete;

  // Starts both threads; each first calls `on_thread_start` with its role
  // and holds a reference on `owner` until it exits. When the system refuses
  // one (ThreadStarter), stops the poller if it started, and returns
  // ResourceExhausted naming the thread ("the advancer: ...").
  absl::Status Start(RefCounted* owner,
                     const std::function<void(ThreadRole)>& on_thread_start);
  // Closes the delay queue and the inbox, and joins both threads (detaches
  // the calling one). Buckets not flushed stay in their levels.
  void Stop() ABSL_LOCKS_EXCLUDED(inbox_mu_, transit_mu_);

  // Waits until the advancer is between two chunks (or idle) and keeps it
  // there until Resume. Not from code the advancer runs under it (none).
  void Pause() ABSL_EXCLUSIVE_LOCK_FUNCTION(transit_mu_) { transit_mu_.Lock(); }
  void Resume() ABSL_UNLOCK_FUNCTION(transit_mu_) { transit_mu_.Unlock(); }
  // Calls `visit` with each timer the advancer holds in transit: detached
  // from a bucket and not handled yet (pending, or stopped since). The
  // advancer holds a reference on each; `visit` may take one of its own.
  void ForEachInTransit(absl::FunctionRef<void(TimerNode*)> visit) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(transit_mu_);

 private:
  struct LaterExpiration {
    bool operator()(const DelayQueue::Entry& a,
                    const DelayQueue::Entry& b) const {
      return Wheel::ExpirationOf(a) > Wheel::ExpirationOf(b);
    }
  };
  using ReadyBuckets =
      std::priority_queue<DelayQueue::Entry, std::vector<DelayQueue::Entry>,
                          LaterExpiration>;
  // The outer flush, and one nested in its slice break (FlushEarlier).
  static constexpr int kDepths = 2;
  // The advancer thread's arrays for one bucket's flush, kept between
  // flushes: the references to release after it, the due timers of a chunk,
  // and the executor's ids to hand off after it.
  struct Scratch {
    std::vector<TimerNode*> dropped;
    std::vector<DueTimer> batch;
    std::vector<uint64_t> hand_offs;
  };

  void PollerLoop() ABSL_LOCKS_EXCLUDED(inbox_mu_);
  void AdvancerLoop() ABSL_LOCKS_EXCLUDED(inbox_mu_);
  // Waits for the inbox and moves it into `ready`; false once it is closed.
  bool WaitInbox(ReadyBuckets* ready) ABSL_LOCKS_EXCLUDED(inbox_mu_);
  // Moves the inbox's entries into `ready` (none once it is closed).
  void TakeInbox(ReadyBuckets* ready) ABSL_LOCKS_EXCLUDED(inbox_mu_);
  void MoveInbox(ReadyBuckets* ready) ABSL_EXCLUSIVE_LOCKS_REQUIRED(inbox_mu_);
  // Flushes the entry's bucket at `depth`. With `ready` (the outer flush),
  // slices it as above.
  void Flush(const DelayQueue::Entry& entry, int depth, ReadyBuckets* ready)
      ABSL_LOCKS_EXCLUDED(transit_mu_);
  // Handles the next chunk of `detached_[depth]` at `now_ns` and queues its
  // due timers. Returns whether the bucket is done.
  bool FlushChunk(int depth, int64_t now_ns)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(transit_mu_);
  // The slice break: the buckets of `ready` that expire no later than
  // `expiration`, each flushed in full.
  void FlushEarlier(int64_t expiration, ReadyBuckets* ready)
      ABSL_LOCKS_EXCLUDED(transit_mu_);
  // Kafka's addOrRun for one timer of a flushed bucket: armed again at its
  // deadline if still pending (due: into the batch; else a lower level),
  // else dropped. A reference the advancer lets go of is released at once
  // unless it is the last, which waits in `dropped` for the end of the flush.
  void AddOrRun(TimerNode* node, int64_t now_ns, Scratch* scratch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(transit_mu_);

  Wheel* const wheel_;
  Runner* const runner_;
  const TimeBase* const time_;
  TimerCounts* const counts_;
  std::atomic<bool> stopping_{false};

  Mutex inbox_mu_{LockRank::kInbox};
  CondVar inbox_cv_;
  std::deque<DelayQueue::Entry> inbox_ ABSL_GUARDED_BY(inbox_mu_);
  bool inbox_closed_ ABSL_GUARDED_BY(inbox_mu_) = false;

  mutable Mutex transit_mu_{LockRank::kTransit};
  // The bucket being flushed at each depth, and the index of its first timer
  // not handled yet.
  NodeArray detached_[kDepths] ABSL_GUARDED_BY(transit_mu_);
  size_t next_[kDepths] ABSL_GUARDED_BY(transit_mu_) = {};
  Scratch scratch_[kDepths];

  std::thread poller_;
  std::thread advancer_;
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_ADVANCER_H_
