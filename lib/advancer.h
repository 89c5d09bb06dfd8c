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
// Thread-safety: Start and Stop are called by the engine (Stop by Shutdown,
// possibly from a callback run inline on the advancer: then that thread is
// detached, not joined, and exits when the callback returns). `inbox_mu_`
// guards the inbox; everything else in a flush belongs to the advancer
// thread. Each thread holds a reference on the engine while it runs.

#ifndef TIMINGWHEEL_LIB_ADVANCER_H_
#define TIMINGWHEEL_LIB_ADVANCER_H_

#include <atomic>
#include <deque>
#include <functional>
#include <queue>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
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
  void Stop() ABSL_LOCKS_EXCLUDED(inbox_mu_);

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
  // The advancer's arrays for one bucket's flush, kept between flushes.
  struct Scratch {
    NodeArray detached;
    std::vector<TimerNode*> dropped;
    std::vector<DueTimer> batch;
  };

  void PollerLoop() ABSL_LOCKS_EXCLUDED(inbox_mu_);
  void AdvancerLoop() ABSL_LOCKS_EXCLUDED(inbox_mu_);
  // Waits for the inbox and moves it into `ready`; false once it is closed.
  bool WaitInbox(ReadyBuckets* ready) ABSL_LOCKS_EXCLUDED(inbox_mu_);
  // Moves the inbox's entries into `ready` (none once it is closed).
  void TakeInbox(ReadyBuckets* ready) ABSL_LOCKS_EXCLUDED(inbox_mu_);
  void MoveInbox(ReadyBuckets* ready) ABSL_EXCLUSIVE_LOCKS_REQUIRED(inbox_mu_);
  // Flushes the entry's bucket. With `ready` (the outer flush), slices it as
  // above, flushing the earlier buckets with `nested`'s arrays.
  void Flush(const DelayQueue::Entry& entry, Scratch* scratch, Scratch* nested,
             ReadyBuckets* ready);
  // The slice break: the buckets of `ready` that expire no later than
  // `expiration`, each flushed in full.
  void FlushEarlier(int64_t expiration, Scratch* nested, ReadyBuckets* ready);
  // Kafka's addOrRun for one timer of a flushed bucket: armed again at its
  // deadline if still pending (due: into the batch; else a lower level),
  // else dropped. A reference the advancer lets go of is released at once
  // unless it is the last, which waits in `dropped` for the end of the flush.
  void AddOrRun(TimerNode* node, int64_t now_ns, Scratch* scratch);

  Wheel* const wheel_;
  Runner* const runner_;
  const TimeBase* const time_;
  TimerCounts* const counts_;
  std::atomic<bool> stopping_{false};

  Mutex inbox_mu_{LockRank::kInbox};
  CondVar inbox_cv_;
  std::deque<DelayQueue::Entry> inbox_ ABSL_GUARDED_BY(inbox_mu_);
  bool inbox_closed_ ABSL_GUARDED_BY(inbox_mu_) = false;

  std::thread poller_;
  std::thread advancer_;
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_ADVANCER_H_
