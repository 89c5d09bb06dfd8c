// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// engine.h: the machine behind a TimingWheel: the levels, the delay queue, the
// poller and advancer threads, the worker pool, and the operations on timers.
//
// Pipeline of a timer:
//   AfterFunc ── deadline <= now ──────────────────────────────► worker pool
//      └── Place: level 0 .. n bucket ──► delay queue (bucket, once)
//   tw-poller:   Poll blocks until the head bucket is due; hands the due
//                buckets to the advancer's inbox.
//   tw-advancer: for each bucket: Advance(expiration) on every lane (each
//                level's current), Detach the bucket's array in O(1), then
//                one pass over it, per node under its node lock: Place again
//                (in the node's lane): due ->
//                a batch for the pool (submitted every 1024 and at the end),
//                otherwise a lower level (cascade). Every 4096 timers of a
//                big bucket it first flushes the buckets released meanwhile
//                that expire no later: a bucket of level >= 1 is released
//                early, so its timers can wait, while a level-0 bucket's are
//                due. Of the buckets released, the one that expires first
//                goes next.
//   tw-worker-N: RunTask: kDispatched -> kRunning by CAS, call the callback
//                with no lock held, then re-arm (periodic, or Reset while it
//                ran) or finish.
//
// Adds racing the advance (DESIGN.md, trap 3): Kafka makes adds share a
// read lock that the advance takes exclusively. Here an add needs no lock but
// the level's own: a level's `current` only grows, it is written under the
// level's mutex, and WheelLevel::Add re-checks the placement under that mutex
// and answers kRetry when the timer now fits a lower level. So a bucket never
// takes a timer of another rotation, and a timer is never placed in a bucket
// whose time has passed without that bucket being offered to the queue again.
//
// Lanes: the levels are replicated in `lanes_` (one per hardware thread, at
// most kMaxLanes), all on the one delay queue. A timer lives in the lane of
// the thread that created it, for every arm (cascades, Reset and re-arms
// too). Two threads creating timers at the same delay would otherwise share
// a level's lock and a bucket's tail; in their own lanes they share no cache
// line. The advancer moves every lane's `current` on each released bucket,
// so all lanes keep one time, as the levels of one lane do.
//
// Threads and locks:
//   * caller threads: Schedule, ScheduleAt, Stop, Reset, Pending, Shutdown,
//     and the Timer queries (TimerNode::PendingDeadlineNs).
//   * lock order, outer to inner: TimerNode::mu; WheelLevel::mu_; DelayQueue
//     mu_. Leaves: inbox_mu_, WorkerPool mu_, shutdown_mu_.
//   * no lock is held while a callback runs or a callback is destroyed.
//   * atomics: `closed_` (set by Shutdown, read by every operation; seq_cst
//     with `resets_in_flight_`, so that Shutdown waits for every Reset that
//     saw the wheel open); the counters are statistics and use relaxed
//     ordering, except where a CAS on a node's state already orders them.
//
// Lifetime: reference counted. The TimingWheel holds one reference, each
// thread one while it runs, and, once the TimingWheel has let go
// (ReleaseOwner), each lane that still has live TimerNodes one; nodes count
// themselves in their lane. The last Unref deletes the engine, possibly from
// a worker thread after the TimingWheel is gone. The nodes' memory comes from
// the engine's NodePool (node_pool.h) and goes with the engine.

#ifndef TIMINGWHEEL_LIB_ENGINE_H_
#define TIMINGWHEEL_LIB_ENGINE_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "delay_queue.h"
#include "failure_report.h"
#include "mutex.h"
#include "node_pool.h"
#include "stats.h"
#include "timer_state.h"
#include "timingwheel/options.h"
#include "timingwheel/scheduler.h"
#include "wheel_level.h"
#include "worker_pool.h"

namespace timingwheel::internal {

class Engine {
 public:
  // Validates `options` (InvalidArgument naming the option) and starts the
  // threads. The caller owns the result, and gives it up with ReleaseOwner.
  static absl::StatusOr<Engine*> Create(Options options);

  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  void Ref() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void Unref();
  // The owner (the TimingWheel) lets go: from now on each lane that still
  // has nodes holds one engine reference, until its last node goes.
  void ReleaseOwner();
  // A node's reference, counted by its lane. While the owner holds the
  // engine, every lane count carries a bias of 1, so a node's birth and
  // death write only their lane's count, never the engine's. ReleaseOwner
  // turns each bias into an engine reference held by a lane with nodes (or
  // drops it for an empty one); the lane's last node then releases it.
  // Memory ordering: the release is acq_rel, as for refs_.
  void RefLane(int lane) {
    lanes_[lane]->nodes.fetch_add(1, std::memory_order_relaxed);
  }
  void UnrefLane(int lane) {
    if (lanes_[lane]->nodes.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      Unref();
    }
  }

  // Memory for a TimerNode, and its return (see TimerNode::New).
  void* AllocateNode() { return nodes_.Allocate(); }
  void FreeNode(void* node) { nodes_.Free(node); }

  // Arms a new one-shot timer `d` from now. On success the node has one
  // reference for the caller's handle. `caller` names the API function in
  // error messages.
  absl::StatusOr<TimerNode*> Schedule(absl::Duration d,
                                      absl::AnyInvocable<void()> f,
                                      const char* caller);
  // Arms a new periodic timer: `scheduler` is asked now for the delay until
  // the first run, and after each run for the next (NextRun). Every is this
  // with a FixedRate. As above otherwise.
  absl::StatusOr<TimerNode*> Schedule(std::unique_ptr<Scheduler> scheduler,
                                      absl::AnyInvocable<void()> f,
                                      const char* caller);

  // Arms a new one-shot timer at `when`, a reading of the clock (Now()): the
  // deadline is `when` itself, rounded up to the nanosecond; one already
  // passed runs as soon as possible. Errors as Schedule.
  absl::StatusOr<TimerNode*> ScheduleAt(absl::Duration when,
                                        absl::AnyInvocable<void()> f,
                                        const char* caller);

  // The clock's time at which this engine's tick 0 lies.
  absl::Duration origin() const { return origin_; }
  const Clock& clock() const { return *clock_; }
  // Whether the clock is SteadyClock(), whose time is steady_clock's.
  bool steady() const { return steady_; }

  bool Stop(TimerNode* node);
  // The timer whose callback runs on this thread, or nullptr.
  static TimerNode* CurrentTimer();
  bool Reset(TimerNode* node, absl::Duration d);

  int64_t Pending() const;
  int64_t Shutdown();

  // Blocks until nothing is due by the clock, every due bucket is flushed and
  // every due callback returned (or the engine is shut down). For tests: with
  // a ManualClock this makes "advance, then check" exact.
  void WaitIdle() const;

  Stats GetStats() const;
  // The lowest level of the calling thread's lane, which holds the timers
  // this thread creates; tests walk the levels from it.
  const WheelLevel& level0() const { return *lanes_[ThisThreadLane()]->level0; }
  // Buckets waiting in the delay queue.
  int64_t QueuedBuckets() const { return queue_.size(); }

 private:
  // What the user's executor gets for one due timer: runs it, or, destroyed
  // unrun, stops it. Holds a reference to the engine.
  class HandedOffTask {
   public:
    HandedOffTask(Engine* engine, uint64_t id) : engine_(engine), id_(id) {}
    HandedOffTask(HandedOffTask&& other) noexcept
        : engine_(std::exchange(other.engine_, nullptr)), id_(other.id_) {}
    HandedOffTask& operator=(HandedOffTask&&) = delete;
    ~HandedOffTask();
    void operator()();

   private:
    Engine* engine_;
    uint64_t id_;
  };

  enum class ArmResult {
    kArmed,    // linked into a bucket or handed to the workers
    kDropped,  // stopped meanwhile: the caller releases its reference
    kClosed,   // shut down: the node is unarmed, still (gen, kPending)
  };

  Engine(Options options, absl::Duration origin);
  ~Engine();

  void Start();
  // Joins `thread`, or detaches it when it is the calling thread (a callback
  // run inline on the advancer by the user's executor shut the wheel down).
  static void JoinOrDetach(std::thread* thread);
  // Hands one due timer to the user's executor (executor mode).
  void HandOffToExecutor(uint64_t id);
  // The lane of the calling thread: threads are numbered round-robin on
  // first use.
  int ThisThreadLane() const;
  // The first act of each thread the engine starts: names it after the
  // Options::thread_name_prefix and calls Options::on_thread_start.
  void OnThreadStart(ThreadRole role, int index) const;
  void PollerLoop();
  void AdvancerLoop();
  // The buckets released and not yet flushed, the one whose timers come due
  // first on top: a level >= 1 bucket is released early, so release order is
  // not expiration order. A heap, so that thousands released at once (a
  // clock jump, a stalled process) cost O(log n) each.
  struct LaterExpiration {
    bool operator()(const DelayQueue::Entry& a,
                    const DelayQueue::Entry& b) const;
  };
  using ReadyBuckets =
      std::priority_queue<DelayQueue::Entry, std::vector<DelayQueue::Entry>,
                          LaterExpiration>;
  // The advancer's arrays for one bucket's flush, kept between flushes.
  struct FlushScratch {
    std::vector<TimerNode*> detached;
    std::vector<TimerNode*> dropped;
    std::vector<WorkerPool::Task> batch;
  };
  // Advances every lane to the entry's release tick and places again (or
  // dispatches) each timer of its bucket. With `ready` (the buckets released
  // and not yet flushed), every kFlushSlice timers it first takes the inbox
  // into `ready` and flushes those of them that expire no later than this
  // one, each in full with `nested`'s arrays.
  void Flush(const DelayQueue::Entry& entry, FlushScratch* scratch,
             FlushScratch* nested, ReadyBuckets* ready);
  // One timer of a flushed bucket, in transit: placed again or dispatched
  // (into the scratch batch) if still pending, else into the scratch's
  // dropped list. Takes the node lock.
  void PlaceAgain(TimerNode* node, int64_t now_ns, FlushScratch* scratch);
  // Moves the inbox's entries into `ready` (none once it is closed).
  void TakeInbox(ReadyBuckets* ready);
  void RunTask(const WorkerPool::Task& task, int worker);
  // The pending count. With max_pending it is one exact atomic; without, it
  // is derived, scheduled - stopped - retired, so that an AfterFunc and a
  // Stop each touch one sharded counter, not two.
  // An arm that is not a new AfterFunc (a Reset of an unarmed timer).
  void CountArmed() {
    scheduled_.Add(1);
    if (max_pending_ > 0)
      pending_exact_.fetch_add(1, std::memory_order_relaxed);
  }
  // A Stop (or a dropped executor task) that ended a pending arm.
  void CountStopped() {
    stopped_.Add(1);
    if (max_pending_ > 0)
      pending_exact_.fetch_sub(1, std::memory_order_relaxed);
  }
  // A pending arm that ended otherwise: it started (one-shot), its schedule
  // ended, or Shutdown cancelled it.
  void CountRetired() {
    if (max_pending_ > 0) {
      pending_exact_.fetch_sub(1, std::memory_order_relaxed);
    } else {
      retired_.Add(1);
    }
  }

  // Nanoseconds since the origin, now. For the SteadyClock it reads
  // std::chrono::steady_clock directly: one vDSO call, no Duration math.
  int64_t NowNs() const;
  // `now_ns + d` as a deadline, or InvalidArgument when it is out of range.
  absl::StatusOr<int64_t> DeadlineAfter(int64_t now_ns, absl::Duration d,
                                        const char* caller) const;
  // The clock time `when` as a deadline: nanoseconds since the origin,
  // rounded up, and `now_ns` for a time already passed; InvalidArgument when
  // it is out of range.
  absl::StatusOr<int64_t> DeadlineAt(int64_t now_ns, absl::Duration when,
                                     const char* caller) const;
  // What a new timer needs first: a callback, and a wheel not shut down.
  absl::Status CheckNew(const absl::AnyInvocable<void()>& f,
                        const char* caller) const;
  // Makes a timer (one-shot without a `scheduler`) and arms it at
  // `deadline_ns`, within Options::max_pending; counts it scheduled.
  absl::StatusOr<TimerNode*> NewArmed(absl::AnyInvocable<void()> f,
                                      std::unique_ptr<Scheduler> scheduler,
                                      int64_t deadline_ns, int64_t now_ns,
                                      const char* caller);

  // Sets the node's deadline and links it into the wheel, or dispatches it if
  // it is due (into `batch`, which the caller submits with SubmitBatch once
  // it holds no lock). The node is in state (gen, kPending) and the caller
  // hands over one reference.
  ArmResult Arm(TimerNode* node, int64_t deadline_ns, int64_t now_ns,
                uint64_t gen, std::vector<WorkerPool::Task>* batch,
                bool recheck = true) ABSL_EXCLUSIVE_LOCKS_REQUIRED(node->mu);
  // Arm for a node that no other thread can see yet: it needs no node lock,
  // since it becomes visible only through the level (or pool) mutex that
  // publishes it, and the caller touches it no more after that.
  ArmResult ArmNew(TimerNode* node, int64_t deadline_ns, int64_t now_ns,
                   std::vector<WorkerPool::Task>* batch)
      ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return Arm(node, deadline_ns, now_ns, 0, batch, /*recheck=*/false);
  }
  // Hands due timers to the workers; if the wheel was shut down meanwhile,
  // cancels them (Shutdown counts them). Call with no lock held.
  void SubmitBatch(std::vector<WorkerPool::Task>* batch);
  // Links the node at `expiration_tick`, or dispatches it when due.
  // In the node's lane. With `recheck` (a node whose handle is out: a Stop
  // or Shutdown may end this arm while it is being linked) it confirms the
  // arm after linking and unlinks it again if it ended (kDropped), so that
  // no stopped node stays in a bucket.
  ArmResult Place(TimerNode* node, int64_t expiration_tick, uint64_t gen,
                  bool recheck, std::vector<WorkerPool::Task>* batch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(node->mu);
  // After Place linked the node for arm `gen`: kArmed if that arm is still
  // pending (or a Stop took the node out), kDropped if it ended meanwhile
  // and this call took it out of its bucket again.
  ArmResult ConfirmLinked(TimerNode* node, uint64_t gen)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(node->mu);
  ArmResult Dispatch(TimerNode* node, uint64_t gen,
                     std::vector<WorkerPool::Task>* batch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(node->mu);
  // Moves a node whose arm `gen` could not be placed (shut down) to
  // kCancelled. `count` adds it to Shutdown's count of cancelled timers.
  void CancelUnplaced(TimerNode* node, uint64_t gen, bool count);
  // (gen, kPending or kDispatched) -> kCancelled, any generation for
  // kAnyGeneration; true if this call cancelled it.
  bool CancelPending(TimerNode* node, uint64_t gen);
  // After the callback of `node` returned: re-arm or finish. Returns whether
  // the worker's reference was handed on to the wheel.
  // `next_ns` is the next deadline by the timer's schedule, or nullopt when
  // it is one-shot or its schedule ended.
  bool AfterRun(TimerNode* node, uint64_t gen, std::optional<int64_t> next_ns);
  // AfterRun's work under the node lock; due re-arms go to `due`.
  bool Rearm(TimerNode* node, uint64_t gen, std::optional<int64_t> next_ns,
             std::vector<WorkerPool::Task>* due)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(node->mu);
  // A periodic timer's next deadline after the run for `deadline_ns`, by its
  // scheduler's NextDelay from now (rounded up; <= 0: the next tick); nullopt
  // when its schedule ends or leaves the supported range. Called with no lock
  // held.
  std::optional<int64_t> NextRun(TimerNode* node, int64_t deadline_ns);

  const std::shared_ptr<Clock> clock_;
  const absl::Duration origin_;
  const bool steady_;        // clock_ is SteadyClock()
  const int64_t origin_ns_;  // origin_ in nanoseconds
  const int64_t tick_ns_;
  const int64_t max_deadline_ns_;
  const int64_t max_pending_;
  const int workers_;
  const absl::AnyInvocable<void(absl::AnyInvocable<void()>) const> executor_;
  const FailureReporter failures_;
  const std::string thread_name_prefix_;
  const absl::AnyInvocable<void(ThreadRole, int) const> on_thread_start_;

  // The memory of this engine's nodes; it goes with the engine, after the
  // last node.
  NodePool nodes_{sizeof(TimerNode), alignof(TimerNode)};
  std::atomic<int64_t> refs_{1};
  std::atomic<bool> closed_{false};
  std::atomic<int64_t> pending_exact_{0};  // with max_pending only
  ShardedCounter scheduled_;  // arms: AfterFunc, Every, Reset of an unarmed one
  ShardedCounter stopped_;    // Stop() calls that returned true
  ShardedCounter retired_;    // see CountRetired; without max_pending only
  ShardedCounter thrown_;
  std::atomic<int64_t> schedulers_thrown_{0};
  std::atomic<int64_t> executor_threw_{0};
  std::atomic<int64_t> executor_dropped_{0};
  ShardedCounter resets_in_flight_;    // seq_cst; see Reset and Shutdown
  std::atomic<int64_t> cancelled_{0};  // by Shutdown
  // Lateness (start - deadline) of every callback started, one per worker.
  std::vector<std::unique_ptr<LatencyHistogram>> lateness_;
  // Periodic or re-armed timers a worker found it could not re-arm because
  // Shutdown had closed the levels; added to Shutdown's count.
  std::atomic<int64_t> cancelled_after_run_{0};

  DelayQueue queue_;
  // See "Lanes" above; each on cache lines of its own.
  struct alignas(64) Lane {
    std::unique_ptr<WheelLevel> level0;  // the lane's lowest level
    std::atomic<int64_t> nodes{1};       // live nodes, + 1 while owned
  };
  std::vector<std::unique_ptr<Lane>> lanes_;

  Mutex inbox_mu_;
  CondVar inbox_cv_;
  std::deque<DelayQueue::Entry> inbox_ ABSL_GUARDED_BY(inbox_mu_);
  bool inbox_closed_ ABSL_GUARDED_BY(inbox_mu_) = false;

  std::unique_ptr<WorkerPool> pool_;
  std::thread poller_;
  std::thread advancer_;

  Mutex shutdown_mu_;
  CondVar shutdown_cv_;
  bool shutdown_started_ ABSL_GUARDED_BY(shutdown_mu_) = false;
  bool shutdown_done_ ABSL_GUARDED_BY(shutdown_mu_) = false;
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_ENGINE_H_
