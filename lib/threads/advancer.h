// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// advancer.h: the two threads that move time, and the one owner of the
// wheel's core.
//
//   poller:   sleeps on the ReleaseAlarm until the clock reaches the core's
//             next release (no thread wakes for an empty tick), then wakes
//             the advancer.
//   advancer: owns the WheelCore (lib/core/): its levels, buckets and the
//             one release queue of buckets. Each round it takes the
//             submissions of the inbox (lib/handoff/inbox.h) and applies
//             them (link an arm, unlink a stopped one), moves the core to
//             the clock's tick, which releases every due bucket in release
//             order and cascades its timers down (Kafka's advanceClock and
//             addOrRun), hands the due timers to the runner in chunks, sets
//             the alarm to the next release and sleeps until a release, a
//             submission that needs it sooner, or a request. While
//             submissions keep coming, it sleeps at most kLookEvery (100
//             ms): a submission due later wakes nobody, and a thread that
//             makes and stops far timers at a low rate costs the wheel ten
//             wake-ups a second instead of one per call; an idle wheel
//             sleeps until its next release, however far.
//
// Polling: while callers push at kPollFromRate (200,000 a second, stamped
// or not, taken or retracted) or more, measured over kRateWindow (10 ms) of
// rounds, the advancer polls: it sleeps kPollEvery (50 us) at a time
// between rounds, not until a wake-up, and publishes it (Inbox::kPolling),
// so that AfterFunc hands it new arms unstamped, without reading the clock
// (handoff/inbox.h); it stamps each with the reading it takes after the
// take. So a deadline is late by the hand-off wait, which polling bounds
// by the poll's sleep, its overrun and a round. The sleep is kPollEvery,
// but twice the last one, up to kMaxPollEvery (800 us), after a round in
// which fewer than one call (push since the last take) in kEndedShare (8)
// left an arm to claim (to link or dispatch): calls that end before the
// advancer looks (AfterFunc + Stop pairs, whose Stop takes the arm back out
// of its ring or, when the advancer looked in between, makes it stale) do
// not cost two busy callers a wake-up every 50 us (they did: two threads
// made 1.42x the pairs of one, 1.7-1.9x with the longer sleep), and an arm
// among them waits at most that long. A round that found no call keeps
// kPollEvery: calls that come in bursts are taken as soon as before. A round
// that may be long (a cascade of more than a slice, the user's executor run
// inline, a request such as CancelAll) stops polling first (StopPolling), and
// the callers stamp their own until the next Idle. Below kPollUntilRate
// (100,000 a second) over a window it stops polling, so a pause in the calls
// shorter than a window (a caller's sleep that overran) keeps it polling,
// and calls that stop cost it a window of wake-ups. A quiet or slow wheel
// never polls (the low-rate CPU targets), and one that polls costs at most
// a wake-up per kPollEvery while the calls come. A clock other than
// SteadyClock() (a ManualClock) is read at each call anyway: the advancer
// never polls then.
//
// Bursts: when more timers come due at once than the workers start, the
// advancer hands them over as the workers take them. Between two slices of
// a flush it sleeps (kDrainWait at a time) while the workers' queue holds
// more than kMaxQueued tasks not started (64Ki, the queue's kept size). The
// timers not handed over yet stay linked in the core, where Stop, CancelAll
// and Shutdown find them as before, and are never early for the wait (it
// only delays them, as the queue would). A burst of 10M due at once then
// takes 1.5 MiB of queue instead of 240 MB, and the advancer no longer
// spends its time faulting in queue pages while the workers wait for the
// CPU it takes (BM_Burst). Arms that the advancer takes from the rings
// already due go to the workers at once, as before (a burst that callers
// make, rather than the clock). The hand-offs to an executor are not held
// back, and the wait ends while a request waits (a CancelAll, made perhaps
// by the very callback the workers run) or once Stop begins.
//
// Nobody else touches the core while the advancer runs: callers hand their
// arms and stops to it (so no level lock, no node lock on this path), and
// the two operations that must see every linked timer run on the advancer's
// thread: CancelAll as a request between rounds (RunOnOwner), Shutdown after
// the thread has stopped (Stop, then TakeAllLinked).
//
// Never early: the core's tick is the clock's reading rounded down to a
// tick, and a timer's expiration tick is its deadline rounded up
// (TimeBase::TickOf), so a timer the core finds due has a deadline at or
// before the reading. Each due timer is checked against its state word:
// (gen, kPending with the linked bit) -> kDispatched by compare-and-swap, so
// a Stop or a Reset that won the race (and cleared the bit) keeps it from
// running (DESIGN.md, traps 4 and 5). The advancer sets the bit itself, by
// compare-and-swap, when it links arm `gen` (timer_state.h).
//
// The hand-off's wait: for each arm it takes (kArm: a new timer, a Reset, a
// periodic timer's next run), the advancer records the wheel's clock at the
// take minus the clock reading of the call that made the arm
// (Submission::call_ns) in a histogram, read by GetStats
// (Stats::handoff_*). One clock reading per take, none per arm; an arm that
// a Stop took back out of its ring (Inbox::Retract) never reaches the
// advancer and is not counted. Of the unstamped arms, whose calls read no
// clock, one in Inbox::kSampleEvery of each ring is timed (its push reads
// the clock) and counted kSampleEvery times.
//
// References: a submission's reference becomes the bucket's when the arm is
// linked, the task's when it is due; every other one the advancer lets go
// of (a stale submission, an unlinked stopped arm) is released at once
// unless it is the last, which waits until the end of the round (its
// callback's destructor may call into the wheel), so that no user code runs
// in the middle of the core's work.
//
// User code on this thread: only the user's executor (and a task it runs
// inline), called after the round with the core consistent and nothing of
// the round outstanding. Such code may call CancelAll (run at once, on this
// thread) and Shutdown (the thread is then detached, and touches the core no
// more when the executor returns).
//
// Thread-safety: Start, Stop, TakeAllLinked: the engine, as documented.
// RunOnOwner and Sync: any thread. `request_mu_` guards the requests; the
// core and the round's scratch belong to the advancer thread (or to the
// thread that stopped it).

#ifndef TIMINGWHEEL_LIB_THREADS_ADVANCER_H_
#define TIMINGWHEEL_LIB_THREADS_ADVANCER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "base/mutex.h"
#include "base/ref_counted.h"
#include "base/stats.h"
#include "base/time_base.h"
#include "core/wheel_core.h"
#include "handles/timer_state.h"
#include "handoff/inbox.h"
#include "threads/release_alarm.h"
#include "threads/runner.h"
#include "timingwheel/options.h"

namespace timingwheel {
class EngineTestPeer;
}  // namespace timingwheel

namespace timingwheel::internal {

class Advancer {
 public:
  Advancer(const TimeBase* time, int wheel_size, Inbox* inbox, Runner* runner,
           TimerCounts* counts, NodePools* nodes);
  Advancer(const Advancer&) = delete;
  Advancer& operator=(const Advancer&) = delete;

  // Starts both threads; each first calls `on_thread_start` with its role
  // and holds a reference on `owner` until it exits. When the system refuses
  // one (ThreadStarter), stops the poller if it started, and returns
  // ResourceExhausted naming the thread ("the advancer: ...").
  absl::Status Start(RefCounted* owner,
                     const std::function<void(ThreadRole)>& on_thread_start);
  // Stops both threads and joins them (detaches the calling one, which
  // touches the core no more once the user code it runs returns). Requests
  // waiting in RunOnOwner return false. The caller owns the core from now
  // on.
  void Stop() ABSL_LOCKS_EXCLUDED(request_mu_);

  // Runs `fn` on the advancer's thread between two rounds, after every
  // submission pushed before this call was applied, and returns true once
  // it ran; false if the advancer stopped first. From the advancer's own
  // thread (an executor's task run inline) it applies the inbox and runs
  // `fn` at once.
  bool RunOnOwner(absl::FunctionRef<void()> fn)
      ABSL_LOCKS_EXCLUDED(request_mu_);
  // Waits until a round that began after this call has ended, and returns
  // whether it found nothing to do: no submission, nothing due by the clock.
  // False at once when stopped.
  bool Sync() const;

  // Adds the hand-off waits recorded so far (see the top of this file) into
  // `out`, which no one else writes. Any thread.
  void MergeHandOffs(LatencyHistogram* out) const;

  // Takes every timer linked in the core out of it, into `out`, each with
  // the core's reference. Only from `fn` of RunOnOwner, or after Stop.
  void TakeAllLinked(std::vector<TimerNode*>* out);

  // CancelAll's look, from `fn` of RunOnOwner. First the runner's tasks:
  // each one taken by a worker goes to `taken` (with a reference: the caller
  // ends its arm once this returns), each one queued is cancelled. Then the
  // inbox is applied again (a worker re-arms only a timer whose task it
  // took, and hands the arm on before it lets go of the task, so an arm
  // that the first look missed is in the inbox now), its due arms are
  // cancelled where they wait to be queued, and the core is emptied: each
  // pending arm cancelled. Each node cancelled goes to `cancelled` with a
  // reference, each other node taken out of the core to `released` with
  // the core's (for the caller to release: a callback must not be
  // destroyed on this thread in the middle of a round).
  void CancelEverything(std::vector<TimerNode*>* cancelled,
                        std::vector<TimerNode*>* taken,
                        std::vector<TimerNode*>* released);

  // Whether the calling thread is the advancer (user code it runs: the
  // executor, a hook, a dropped timer's destructor, included).
  bool OnAdvancerThread() const {
    return advancer_id_.load(std::memory_order_acquire) ==
           std::this_thread::get_id();
  }

 private:
  friend class timingwheel::EngineTestPeer;

  // A thread waiting in RunOnOwner.
  struct Request {
    absl::FunctionRef<void()> fn;
    bool taken = false;  // by the advancer, which runs it to its end
    bool done = false;
  };
  // What a round collects for after its core work.
  struct Scratch {
    Inbox::Taken submissions;    // recycled after each take
    std::vector<CoreNode*> due;  // a slice's, from the core
    std::vector<DueTimer> batch;
    std::vector<uint64_t> hand_offs;
    std::vector<TimerNode*> dropped;
  };

  void PollerLoop();
  void AdvancerLoop() ABSL_LOCKS_EXCLUDED(request_mu_);
  // Moves the core to the clock, applies the inbox, queues the due timers
  // and runs the requests; returns whether it found anything to do.
  bool Round() ABSL_LOCKS_EXCLUDED(request_mu_);
  // Moves the core to the clock in slices, queueing the due timers; returns
  // whether any were due or moved.
  bool AdvanceAll();
  // Between two slices: while the workers' queue holds more than kMaxQueued
  // tasks not started, waits for them to start some (not for an executor,
  // whose queue is its own). Not while a request waits for the round's end
  // (a CancelAll, maybe made by the callback that the workers run), nor
  // once Stop began.
  void WaitForWorkers() ABSL_LOCKS_EXCLUDED(request_mu_);
  bool RequestWaits() ABSL_LOCKS_EXCLUDED(request_mu_);
  // Takes the inbox and applies each submission; returns how many.
  size_t ApplyInbox();
  // Records the hand-off wait of each arm among `taken`, taken just before
  // `now_ns` (those whose call time was read).
  void RecordHandOffs(const Inbox::Taken& taken, int64_t now_ns);
  // At the end of a round: whether to poll from now on, by the rate of
  // pushes over the last kRateWindow (steady clock only).
  void UpdatePolling();
  // Before work that may take long: stops polling until the next Idle,
  // stamping what waits unstamped (Inbox::StopPolling).
  void StopPolling();
  // The tick to sleep until: the core's next release, or sooner while
  // submissions keep coming (kLookEvery).
  int64_t WakeTick();
  // `now_ns`: the reading taken after the take, which stamps an unstamped
  // arm.
  void Apply(const Submission& s, int64_t now_ns);
  // A node the core found due (or that was due when linked): to the batch
  // if its linked arm is still pending, else its reference goes.
  void Dispatch(TimerNode* node);
  // Lets go of one reference: at once unless it is the last.
  void Drop(TimerNode* node);
  // Queues the batch on the runner (no user code runs).
  void QueueBatch();
  // Hands the queued tasks to the executor, then releases the dropped
  // references: user code may run, and may stop the advancer (then the
  // core is no longer this thread's).
  void AfterRound();
  // Runs the requests waiting, on this thread.
  void RunRequests() ABSL_LOCKS_EXCLUDED(request_mu_);

  const TimeBase* const time_;
  Inbox* const inbox_;
  Runner* const runner_;
  TimerCounts* const counts_;
  NodePools* const nodes_;  // where the nodes' memory goes back
  std::atomic<bool> stopping_{false};

  WheelCore core_;
  Scratch scratch_;
  ReleaseAlarm alarm_;
  // kLookEvery in ticks (at least 1); the tick of the last clock reading;
  // whether the last take found that submissions came since the one before.
  const int64_t look_ticks_;
  int64_t last_now_tick_ = 0;
  bool submissions_came_ = false;
  // Polling (see the top): whether the advancer polls; the reading of the
  // last AdvanceAll; the pushes counted since the rate window began, and
  // when it began.
  bool polling_ = false;
  // Polling stopped for the rest of the round (StopPolling): a take in it
  // publishes kAwake, not kPolling.
  bool paused_ = false;
  // The round's pushes found, and arms claimed (linked or dispatched: the
  // arm of a pair whose Stop came before the take is stale); the poll's
  // last sleep in ns (kPollEvery to kMaxPollEvery, see the top; 0 before
  // the first).
  size_t round_pushes_ = 0;
  size_t round_claims_ = 0;
  // Written by the advancer only; atomic for tests, which read it.
  std::atomic<int64_t> poll_sleep_ns_{0};
  // The rate from which it polls, kPollFromRate (a test may lower it, to 0:
  // from the first window on, whatever the rate).
  std::atomic<double> poll_from_rate_;
  int64_t last_now_ns_ = 0;
  size_t window_pushes_ = 0;
  int64_t window_start_ns_ = 0;
  // The hand-off waits: made at the first arm taken, so that a wheel that
  // never takes one does not carry its 4 KB (BM_Instances); written by the
  // advancer's thread only, and published once to readers with release /
  // acquire (the histogram's own fields are relaxed atomics).
  std::unique_ptr<LatencyHistogram> handoffs_;
  std::atomic<const LatencyHistogram*> handoffs_published_{nullptr};
  // Times the advancer went to sleep (for tests: each ended in a wake-up).
  std::atomic<uint64_t> sleeps_{0};

  // Sync: the rounds asked for, and the last one ended (with whether it was
  // idle); a round ends the requests made before it began.
  mutable std::atomic<uint64_t> rounds_asked_{0};
  std::atomic<uint64_t> rounds_ended_{0};
  std::atomic<bool> last_round_idle_{false};

  Mutex request_mu_{LockRank::kRequests};
  CondVar request_cv_;
  std::vector<Request*> requests_ ABSL_GUARDED_BY(request_mu_);
  bool requests_closed_ ABSL_GUARDED_BY(request_mu_) = false;

  std::atomic<std::thread::id> advancer_id_{};
  std::thread poller_;
  std::thread advancer_;
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_THREADS_ADVANCER_H_
