// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// loop_engine.h: the machine behind a LoopWheel (a face: the event-loop
// wheel). It drives the single-owner core (lib/core/wheel_core.h) from the
// caller's thread: the caller is the core's owner, so nothing here is
// atomic or locked, and the core's Advance runs inside RunDue.
//
// A timer is a LoopNode: the core's links and expiration tick (CoreNode),
// the callback, the scheduler of a periodic timer, the deadline and a
// state. Where a pending node is: linked in the core (not due yet), or in
// `due_`, the list of due timers RunDue works through (Advance appends to
// it; so do arms made due by a callback, which therefore run in the same
// RunDue, after it, never recursively).
//
//   state           what it means                       pending (API)
//   kPending        in the core or in `due_`            yes
//   kRunning        its callback runs, no re-arm        no
//   kRunningArmed   its callback runs, re-armed after   yes
//                   (periodic, or Reset during the run)
//   kDone, kStopped ran, or stopped; Reset arms again   no
//   kCancelled      the wheel is gone                   no
//
// Lifetime: a node is counted (`refs`): one per LoopTimer handle, one while
// the wheel holds it (pending or running); the last release destroys it and
// gives its memory back to the engine's NodePool (node_pool.h). The
// engine is counted too: one for the LoopWheel, one per live node and one
// for a RunDue in progress, so a callback may destroy the LoopWheel (Close
// cancels every pending timer; RunDue returns after that callback) and a
// handle may outlive the wheel.
//
// Thread-safety: thread-compatible: one thread, the loop's, for everything
// (CheckThread verifies it in debug builds).

#ifndef TIMINGWHEEL_LIB_LOOP_ENGINE_H_
#define TIMINGWHEEL_LIB_LOOP_ENGINE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <thread>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/bucket_list.h"
#include "core/wheel_core.h"
#include "node_pool.h"
#include "time_base.h"
#include "timingwheel/loop_wheel.h"
#include "timingwheel/scheduler.h"

namespace timingwheel::internal {

struct LoopNode : CoreNode {
  enum class State : uint8_t {
    kPending,
    kRunning,
    kRunningArmed,
    kDone,
    kStopped,
    kCancelled,
  };

  LoopNode(LoopEngine* engine, absl::AnyInvocable<void()> callback,
           std::unique_ptr<Scheduler> scheduler)
      : engine(engine),
        callback(std::move(callback)),
        scheduler(std::move(scheduler)) {}

  bool pending() const {
    return state == State::kPending || state == State::kRunningArmed;
  }

  LoopEngine* const engine;
  absl::AnyInvocable<void()> callback;
  const std::unique_ptr<Scheduler> scheduler;  // periodic timers only
  // The pending arm's deadline, ns since the engine's origin; while the
  // callback runs, that run's, unless `has_rearm` (a Reset during the run).
  int64_t deadline_ns = 0;
  int32_t refs = 0;
  State state = State::kPending;
  bool in_due = false;  // linked in the engine's `due_`, not in the core
  bool has_rearm = false;
};

class LoopEngine {
 public:
  static absl::StatusOr<LoopEngine*> Create(LoopOptions options);
  LoopEngine(const LoopEngine&) = delete;
  LoopEngine& operator=(const LoopEngine&) = delete;

  // The LoopWheel goes: cancels every pending timer, then lets go.
  void CloseAndRelease();

  // A new timer at `deadline`, or due (`now`) for a delay <= 0; `caller`
  // names the member in errors.
  absl::StatusOr<LoopNode*> ScheduleAfter(absl::Duration d,
                                          absl::AnyInvocable<void()> f,
                                          const char* caller);
  absl::StatusOr<LoopNode*> ScheduleAt(absl::Duration when,
                                       absl::AnyInvocable<void()> f,
                                       const char* caller);
  absl::StatusOr<LoopNode*> SchedulePeriodic(
      std::unique_ptr<Scheduler> scheduler, absl::AnyInvocable<void()> f,
      const char* caller);

  std::optional<absl::Duration> TimeUntilNext();
  int64_t RunDue(std::optional<absl::Duration> now);
  int64_t Pending() const { return pending_; }
  bool steady() const { return time_.steady(); }

  // The operations of a LoopTimer on `node`, one of this engine's.
  bool Stop(LoopNode* node);
  bool Reset(LoopNode* node, absl::Duration d);
  std::optional<absl::Duration> Deadline(const LoopNode* node) const;
  absl::Duration Now() const { return time_.clock().Now(); }

  // A handle adopting one reference to `node`.
  static LoopTimer Handle(LoopNode* node) { return LoopTimer(node); }
  // Node references, for the handles.
  static void Ref(LoopNode* node) { ++node->refs; }
  static void Unref(LoopNode* node);

  // In a debug build, aborts with a message unless the calling thread is
  // the wheel's (the first to call a member); `what` names the member.
  void CheckThread(const char* what);

 private:
  explicit LoopEngine(LoopOptions options);
  ~LoopEngine() = default;

  void RefEngine() { ++refs_; }
  void UnrefEngine() {
    if (--refs_ == 0) delete this;
  }

  absl::Status CheckNew(const absl::AnyInvocable<void()>& f,
                        const char* caller) const;
  // A new node armed at `deadline_ns`, with a reference for the handle.
  absl::StatusOr<LoopNode*> NewArmed(absl::AnyInvocable<void()> f,
                                     std::unique_ptr<Scheduler> scheduler,
                                     int64_t deadline_ns, const char* caller);
  // Links `node` (the wheel holds it) at `deadline_ns`, into `due_` if due.
  void Arm(LoopNode* node, int64_t deadline_ns);
  // Takes a kPending node out of the core or `due_`.
  void Unlink(LoopNode* node);
  // One run, and what follows it (done, re-arm, the schedule's next run).
  void Run(LoopNode* node);
  void AfterRun(LoopNode* node, int64_t run_deadline_ns);

  TimeBase time_;
  const int64_t max_pending_;
  // The nodes' memory: a node's neighbours in a bucket were mostly made one
  // after another, so a flush walks memory that is mostly contiguous (and
  // no malloc header per node). Freed only with the engine.
  NodePool nodes_{sizeof(LoopNode), alignof(LoopNode)};
  WheelCore core_;
  NodeList due_;
  int64_t pending_ = 0;
  int64_t refs_ = 1;  // the LoopWheel's
  bool closed_ = false;
#ifndef NDEBUG
  std::thread::id owner_;
#endif
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_LOOP_ENGINE_H_
