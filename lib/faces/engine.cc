// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "faces/engine.h"

#include <algorithm>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "faces/options_check.h"
#include "threads/reentry.h"

namespace timingwheel::internal {
namespace {

// The Resets this thread is inside, innermost first (one may run a callback
// inline, through an executor, which then calls Shutdown or CancelAll: those
// must not wait for them).
struct ResetFrame {
  const Engine* engine;
  const ResetFrame* outer;
};
thread_local const ResetFrame* tls_resets = nullptr;

// This thread's last AfterFunc delay in nanoseconds (time_base.h), for every
// engine: a delay's nanoseconds do not depend on the wheel.
thread_local CeilNsCache tls_delays;

// Id generations (handles/timer_state.h: IdWordOf): process-wide, so that
// an id is never one of an earlier timer of its block (but after 2^31 of
// them), in any engine; taken by each thread kIdBatch at a time.
constexpr uint32_t kIdBatch = 1024;
constexpr uint32_t kIdGenerations = uint32_t{1} << 31;
std::atomic<uint32_t> id_batches{0};
thread_local uint32_t tls_id_next = 0;
thread_local uint32_t tls_id_end = 0;

uint32_t NextIdWord() {
  if (tls_id_next == tls_id_end) {
    tls_id_next = id_batches.fetch_add(1, std::memory_order_relaxed) *
                  kIdBatch % kIdGenerations;
    tls_id_end = tls_id_next + kIdBatch;
  }
  return IdWordOf(tls_id_next++);
}

// The id of a timer just made for `id_word` (no read of its node: it is
// handed on), or the error.
absl::StatusOr<uint64_t> IdValue(absl::StatusOr<TimerNode*> node,
                                 uint32_t id_word) {
  if (!node.ok()) return node.status();
  return uint64_t{id_word} << 32 | NodeLink::Of(*node);
}

// Whether `id` has an id's shape: the flag in its top half (IdWordOf), and
// a link below 2^31 (node_link.h) in the bottom half.
bool IdShaped(uint64_t id) {
  return (id >> 32 & IdWordOf(0)) != 0 && (id & (uint64_t{1} << 31)) == 0;
}

// How many of the Resets this thread is inside are `engine`'s.
int64_t ResetsOnThisThread(const Engine* engine) {
  int64_t resets = 0;
  for (const ResetFrame* frame = tls_resets; frame != nullptr;
       frame = frame->outer) {
    if (frame->engine == engine) ++resets;
  }
  return resets;
}

absl::Status ShutDownError(const char* caller) {
  return absl::FailedPreconditionError(
      absl::StrCat(caller, ": the wheel is shut down"));
}

}  // namespace

absl::StatusOr<Engine*> Engine::Create(Options options) {
  if (absl::Status status = CheckOptions(&options); !status.ok()) {
    return status;
  }
  auto* engine = new Engine(std::move(options));
  if (absl::Status status = engine->Start(); !status.ok()) {
    engine->Unref();  // the last reference: no thread of it runs
    return status;
  }
  return engine;
}

Engine::Engine(Options options)
    : time_(std::move(options.clock), options.tick),
      workers_(options.workers),
      executor_(std::move(options.executor)),
      failures_(std::move(options.on_failure)),
      thread_name_prefix_(std::move(options.thread_name_prefix)),
      on_thread_start_(std::move(options.on_thread_start)),
      counts_(options.max_pending),
      nodes_(options.spare_timers, NodePool::Tail::kGiveBackThread),
      inbox_(time_.tick_ns(), time_.steady()),
      runner_(&inbox_, &time_, &counts_, &failures_, &nodes_, this),
      advancer_(&time_, options.wheel_size, &inbox_, &runner_, &counts_,
                &nodes_) {
  for (int lane = 0; lane < inbox_.lanes(); ++lane) {
    homes_.push_back(std::make_unique<NodeHome>(&nodes_, this, this, lane));
  }
}

absl::Status Engine::Start() {
  absl::Status status = runner_.Start(workers_, &executor_, [this](int worker) {
    OnThreadStart(ThreadRole::kWorker, worker);
  });
  if (status.ok()) {
    status = advancer_.Start(
        this, [this](ThreadRole role) { OnThreadStart(role, 0); });
    if (!status.ok()) {
      runner_.Close();  // nothing was scheduled: no task comes back
      runner_.Join();
    }
  }
  if (status.ok()) return status;
  const std::string asked =
      executor_ ? "2 threads (a poller and an advancer; the executor runs "
                  "the callbacks)"
                : absl::StrCat(workers_ + 2,
                               " threads (Options::workers = ", workers_,
                               ", a poller and an advancer)");
  return absl::ResourceExhaustedError(absl::StrCat(
      "TimingWheel::Create: cannot start a thread, ", status.message(),
      "; the wheel asks for ", asked,
      " and has stopped those it started. Fewer workers, or a higher limit "
      "on the process's threads or memory, lets it start"));
}

void Engine::OnThreadStart(ThreadRole role, int index) const {
  ScopedWheelCode::MarkWheelThread();
  SetCurrentThreadName(ThreadName(thread_name_prefix_, role, index).c_str());
  if (on_thread_start_) on_thread_start_(role, index);
}

void Engine::ReleaseOwner() {
  // The last home's release may delete this engine: read the homes first.
  // One provisional reference per home, so that no home's release deletes
  // the engine while the others are still visited.
  std::vector<NodeHome*> homes;
  for (const std::unique_ptr<NodeHome>& home : homes_)
    homes.push_back(home.get());
  Ref(static_cast<int64_t>(homes.size()));
  Unref();  // the owner's own; the provisional ones keep it
  for (NodeHome* home : homes) home->ReleaseBias();
}

absl::StatusOr<TimerNode*> Engine::Schedule(absl::Duration d, CallbackRef f,
                                            const char* caller) {
  return ScheduleOneShot(d, f, caller, /*id_word=*/0);
}

absl::StatusOr<uint64_t> Engine::ScheduleId(absl::Duration d, CallbackRef f,
                                            const char* caller) {
  const uint32_t id_word = NextIdWord();
  return IdValue(ScheduleOneShot(d, f, caller, id_word), id_word);
}

absl::StatusOr<uint64_t> Engine::ScheduleAtId(absl::Duration when,
                                              CallbackRef f,
                                              const char* caller) {
  const uint32_t id_word = NextIdWord();
  return IdValue(ScheduleAt(when, f, caller, id_word), id_word);
}

absl::StatusOr<TimerNode*> Engine::ScheduleOneShot(absl::Duration d,
                                                   CallbackRef f,
                                                   const char* caller,
                                                   uint32_t id_word) {
  // While the advancer polls, no clock read here: it stamps the deadline
  // (handoff/inbox.h). Only a positive delay: one due at once runs at once.
  if (d > absl::ZeroDuration() && inbox_.Polling() && f.ops != nullptr &&
      !closed_.load(std::memory_order_acquire)) {
    const int64_t d_ns = tls_delays.Get(d);
    if (d_ns <= kMaxUnstampedNs) {
      return NewUnstamped(f, d_ns, d, caller, id_word);
    }
  }
  // Every check without a status on the way, which RefuseSchedule makes
  // when one fails.
  const int64_t now_ns = time_.NowNs();
  int64_t deadline_ns;
  if (d == absl::InfiniteDuration() || d == -absl::InfiniteDuration() ||
      f.ops == nullptr || closed_.load(std::memory_order_acquire) ||
      !time_.TryDeadlineAfter(now_ns, d, &deadline_ns, &tls_delays)) {
    return RefuseSchedule(d, f, now_ns, caller);
  }
  return NewArmed(f, nullptr, deadline_ns, now_ns, caller, id_word);
}

absl::Status Engine::RefuseSchedule(absl::Duration d, CallbackRef f,
                                    int64_t now_ns, const char* caller) const {
  if (d == absl::InfiniteDuration() || d == -absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        caller, ": duration is ", absl::FormatDuration(d),
        "; it must be finite (every duration up to 100 years works)"));
  }
  if (absl::Status status = CheckNew(f, caller); !status.ok()) return status;
  return time_.DeadlineAfter(now_ns, d, caller).status();
}

absl::StatusOr<TimerNode*> Engine::Schedule(
    std::unique_ptr<Scheduler> scheduler, CallbackRef f, const char* caller) {
  if (scheduler == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        caller, ": the scheduler is null; pass one, e.g. FixedRate(d)"));
  }
  if (absl::Status status = CheckNew(f, caller); !status.ok()) return status;
  const int64_t now_ns = time_.NowNs();
  absl::StatusOr<int64_t> deadline =
      time_.FirstRunDeadline(*scheduler, now_ns, caller);
  if (!deadline.ok()) return deadline.status();
  return NewArmed(f, std::move(scheduler), *deadline, now_ns, caller);
}

absl::StatusOr<TimerNode*> Engine::ScheduleAt(absl::Duration when,
                                              CallbackRef f, const char* caller,
                                              uint32_t id_word) {
  if (when == absl::InfiniteDuration() || when == -absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(caller, ": time is ",
                                                   absl::FormatDuration(when),
                                                   "; it must be finite"));
  }
  if (absl::Status status = CheckNew(f, caller); !status.ok()) return status;
  // The deadline is the point itself, also when it has passed (Deadline()
  // and the lateness count from it); now only decides whether it is due.
  absl::StatusOr<int64_t> deadline = time_.DeadlineAt(when, caller);
  if (!deadline.ok()) return deadline.status();
  const int64_t now_ns = time_.NowNs();
  return NewArmed(f, nullptr, *deadline, now_ns, caller, id_word);
}

absl::Status Engine::CheckNew(CallbackRef f, const char* caller) const {
  if (f.ops == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(caller, ": the callback is empty; pass a callable"));
  }
  if (closed_.load(std::memory_order_acquire)) return ShutDownError(caller);
  return absl::OkStatus();
}

absl::Status Engine::CountNew(const char* caller) {
  int64_t pending = 0;
  if (counts_.AddNew(&pending)) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      caller, ": ", pending, " timers are pending, Options::max_pending is ",
      counts_.max_pending(), "; stop some or raise the limit"));
}

absl::StatusOr<TimerNode*> Engine::NewUnstamped(CallbackRef f, int64_t d_ns,
                                                absl::Duration d,
                                                const char* caller,
                                                uint32_t id_word) {
  if (absl::Status status = CountNew(caller); !status.ok()) return status;
  // The submission's reference, and the handle's (none for an id).
  const bool handle = id_word == 0;
  TimerNode* node =
      TimerNode::New(&nodes_, f, nullptr, /*refs=*/handle ? 2 : 1, id_word);
  const uint64_t gen = FirstArmOf(id_word);
  node->set_unstamped(d_ns);
  const Inbox::Unstamped pushed =
      inbox_.PushUnstamped(node, gen, [this] { return time_.NowNs(); });
  if (pushed == Inbox::Unstamped::kPushed) return node;
  int64_t now_ns = 0;
  int64_t deadline_ns = 0;
  if (pushed == Inbox::Unstamped::kStampFirst) {
    // The advancer stopped polling meanwhile: stamped here, as any arm.
    now_ns = time_.NowNs();
    if (time_.TryDeadlineAfter(now_ns, d, &deadline_ns)) {
      node->set_expiration(deadline_ns);  // no other thread has the node
      if (HandOn(node, gen, /*was_pending=*/false, deadline_ns, now_ns)) {
        return node;
      }
      // Shut down: HandOn let go of the submission's reference, and counted.
      counts_.UndoNew();
      if (handle) node->Unref(&nodes_);  // the handle's
      return ShutDownError(caller);
    }
  }
  // Never armed: undone as HandOn's refusal and NewArmed's would.
  if (node->Cancel(gen)) counts_.Retired();
  counts_.UndoNew();
  if (handle) node->Unref(&nodes_);  // the handle's
  node->Unref(&nodes_);              // the submission's
  if (pushed == Inbox::Unstamped::kClosed) return ShutDownError(caller);
  return RefuseSchedule(d, f, now_ns, caller);
}

absl::StatusOr<TimerNode*> Engine::NewArmed(
    CallbackRef f, std::unique_ptr<Scheduler> scheduler, int64_t deadline_ns,
    int64_t now_ns, const char* caller, uint32_t id_word) {
  if (absl::Status status = CountNew(caller); !status.ok()) return status;
  // The wheel's reference (the submission's, or the task's), and the
  // handle's (none for an id).
  const bool handle = id_word == 0;
  TimerNode* node = TimerNode::New(&nodes_, f, std::move(scheduler),
                                   /*refs=*/handle ? 2 : 1, id_word);
  node->set_expiration(deadline_ns);  // no other thread has the node yet
  if (HandOn(node, FirstArmOf(id_word), /*was_pending=*/false, deadline_ns,
             now_ns)) {
    return node;
  }
  // Shut down meanwhile: never armed after all. Undo the counts (HandOn
  // counted the cancel as a retirement).
  counts_.UndoNew();
  if (handle) node->Unref(&nodes_);  // the handle's: it is never returned
  return ShutDownError(caller);
}

bool Engine::HandOn(TimerNode* node, uint64_t gen, bool was_pending,
                    int64_t deadline_ns, int64_t now_ns) {
  if (deadline_ns <= now_ns) {
    uint64_t expected = MakeStateWord(gen, State::kPending);
    if (!node->CasState(expected, MakeStateWord(gen, State::kDispatched))) {
      node->Unref(&nodes_);  // a Stop took it first
      return true;
    }
    std::vector<DueTimer> due{{node, gen, deadline_ns}};
    if (runner_.TrySubmit(&due)) return true;
  } else if (inbox_.Push(node, gen, Submission::Kind::kArm, now_ns,
                         time_.TickOf(deadline_ns))) {
    return true;
  }
  // Shut down: a timer that was pending counts as cancelled by Shutdown.
  if (node->Cancel(gen)) {
    was_pending ? counts_.CancelledInTransit() : counts_.Retired();
  }
  node->Unref(&nodes_);
  return false;
}

void Engine::Unlink(TimerNode* node, uint64_t gen) {
  // Not taken yet, and the node's first arm: it is in no bucket.
  if (inbox_.Retract(node, gen)) {
    node->Unref(&nodes_);  // the submission's; the caller holds another
    if (IsFirstArm(gen)) return;
  }
  node->Ref();  // the submission's
  if (!inbox_.Push(node, gen, Submission::Kind::kUnlink, 0, Inbox::kNever)) {
    node->Unref(&nodes_);  // shut down: Shutdown empties the core itself
  }
}

Engine::Ended Engine::EndArm(TimerNode* node, State ended,
                             State ended_running) {
  for (;;) {
    uint64_t word = node->LoadState();
    const uint64_t gen = GenerationOf(word);
    switch (StateOf(word)) {
      case State::kPending: {
        if (!node->CasState(word, MakeStateWord(gen, ended))) break;
        Unlink(node, gen);
        return Ended::kArm;
      }
      case State::kDispatched:
        if (!node->CasState(word, MakeStateWord(gen, ended))) break;
        return Ended::kArm;  // the worker drops its task
      case State::kRunningArmed:
        if (!node->CasState(word, MakeStateWord(gen, ended_running))) break;
        return Ended::kRearm;  // the runner sees it and does not re-arm
      default:
        return Ended::kNotPending;
    }
  }
}

bool Engine::Stop(TimerNode* node) {
  if (EndArm(node, State::kStopped, State::kRunningStopped) ==
      Ended::kNotPending) {
    return false;
  }
  counts_.Stopped();
  return true;
}

void* Engine::BlockOfId(uint64_t id) const {
  if (!IdShaped(id)) return nullptr;
  void* block = NodeLink::At(static_cast<uint32_t>(id));
  if (!nodes_.nodes.HoldsBlock(block) && !nodes_.bare.HoldsBlock(block)) {
    return nullptr;
  }
  return block;
}

TimerNode* Engine::HoldId(uint64_t id) {
  void* block = BlockOfId(id);
  if (block == nullptr) return nullptr;
  return TimerNode::TryRefId(block, static_cast<uint32_t>(id >> 32), &nodes_);
}

bool Engine::StopId(uint64_t id) {
  // The pair's fast path: a Stop on the thread that made the timer, before
  // the advancer took its first arm, takes the arm back from this thread's
  // ring. Retract compares the name with the ring's submissions and reads
  // no node; once it is back, its reference is the caller's, and the node is
  // in no bucket.
  if (IdShaped(id)) {
    const uint64_t first = FirstArmOf(static_cast<uint32_t>(id >> 32));
    auto* node =
        static_cast<TimerNode*>(NodeLink::At(static_cast<uint32_t>(id)));
    if (inbox_.Retract(node, first)) {
      // The usual case: no other thread holds the node, so it is this
      // thread's to stop and free, with one compare-and-swap.
      switch (node->StopIfSole(first, &nodes_)) {
        case TimerNode::SoleStop::kStopped:
          counts_.Stopped();
          return true;
        case TimerNode::SoleStop::kNotPending:
          return false;
        case TimerNode::SoleStop::kNotSole:
          break;
      }
      uint64_t expected = MakeStateWord(first, State::kPending);
      bool stopped =
          node->CasState(expected, MakeStateWord(first, State::kStopped));
      if (stopped) {
        counts_.Stopped();
      } else {
        // Another thread's Stop or Reset of the id came first (a Reset's
        // arm is on its way: ended as any).
        stopped = Stop(node);
      }
      node->Unref(&nodes_);  // the submission's
      return stopped;
    }
  }
  TimerNode* node = HoldId(id);
  if (node == nullptr) return false;
  const bool stopped = Stop(node);
  node->Unref(&nodes_);
  return stopped;
}

bool Engine::ResetId(uint64_t id, absl::Duration d) {
  TimerNode* node = HoldId(id);
  if (node == nullptr) return false;
  const bool was_pending = Reset(node, d, /*by_id=*/true);
  node->Unref(&nodes_);
  return was_pending;
}

bool Engine::PendingId(uint64_t id) const {
  const void* block = BlockOfId(id);
  if (block == nullptr) return false;
  const uint64_t word = TimerNode::LoadStateAt(block);
  return IdOf(word) == static_cast<uint32_t>(id >> 32) &&
         IsPending(StateOf(word));
}

std::optional<int64_t> Engine::DeadlineIdNs(uint64_t id) {
  TimerNode* node = HoldId(id);
  if (node == nullptr) return std::nullopt;
  std::optional<int64_t> deadline_ns =
      node->PendingDeadlineNs([this] { return time_.NowNs(); });
  node->Unref(&nodes_);
  return deadline_ns;
}

void Engine::EnterReset() {
  for (;;) {
    resets_in_flight_.Add(1, std::memory_order_seq_cst);
    // A CancelAll waits for the Resets of this thread (one ran an executor
    // inline that called CancelAll) and for the advancer, on which it looks
    // for timers: a Reset there cannot come between, and must not wait.
    if (ResetsOnThisThread(this) > 0 || advancer_.OnAdvancerThread() ||
        cancel_alls_.load(std::memory_order_seq_cst) == 0) {
      return;
    }
    resets_in_flight_.Add(-1, std::memory_order_seq_cst);
    MutexLock lock(&cancel_all_mu_);
    while (cancel_alls_.load(std::memory_order_acquire) > 0) {
      cancel_all_cv_.Wait(&cancel_all_mu_);
    }
  }
}

bool Engine::Reset(TimerNode* node, absl::Duration d, bool by_id) {
  // -inf too: it is no deadline either (AfterFunc refuses both).
  if (d == absl::InfiniteDuration() || d == -absl::InfiniteDuration()) {
    return Stop(node);
  }
  // Shutdown waits for the Resets that got past this check, so the timers
  // they arm are cancelled and counted by it, never after it returned. Both
  // sides are seq_cst: either Shutdown sees this Reset in flight, or this
  // Reset sees the wheel closed. CancelAll waits for them too, and a Reset
  // that finds a CancelAll under way waits for it first (EnterReset), so
  // that no Reset moves a timer while CancelAll looks for it.
  EnterReset();
  const ResetFrame frame{this, tls_resets};
  tls_resets = &frame;
  const ScopedWheelCode wheel_code;  // Shutdown waits for it
  struct Done {
    Engine* engine;
    const ResetFrame* outer;
    ~Done() {
      tls_resets = outer;
      engine->resets_in_flight_.Add(-1, std::memory_order_seq_cst);
    }
  } done{this, frame.outer};
  if (closed_.load(std::memory_order_seq_cst)) return false;
  const int64_t now_ns = time_.NowNs();
  absl::StatusOr<int64_t> deadline = time_.DeadlineAfter(now_ns, d, "Reset");
  if (!deadline.ok()) return Stop(node);
  std::optional<uint64_t> armed;
  ResetResult result;
  {
    SpinLockHolder lock(&node->mu);
    result = ResetLocked(node, *deadline, by_id, &armed);
  }
  if (armed.has_value()) {
    // The new arm, with a reference of its own (the old arm's submission,
    // bucket or task lets go of its own).
    node->Ref();
    if (!HandOn(node, *armed, result.was_pending, *deadline, now_ns)) {
      return false;
    }
    // A Reset of an arm that may sit in a bucket: it moves when the
    // advancer takes the new arm, unless that is due now.
    if (result.was_pending && *deadline <= now_ns) Unlink(node, *armed);
  }
  return result.was_pending;
}

Engine::ResetResult Engine::ResetLocked(TimerNode* node, int64_t deadline_ns,
                                        bool by_id,
                                        std::optional<uint64_t>* armed) {
  for (;;) {
    uint64_t word = node->LoadState();
    const uint64_t gen = GenerationOf(word);
    const State state = StateOf(word);
    // Cancelled (by Shutdown or CancelAll) is final; so, for an id, is a
    // run that ended or a Stop (kRunningStopped too: its id is spent).
    if (state == State::kCancelled || state == State::kRunningCancelled ||
        (by_id && !IsPending(state) && state != State::kRunning)) {
      return {false};
    }
    if (IsRunning(state)) {
      // kRunning, kRunningArmed or kRunningStopped: re-armed when the
      // callback returns (Runner), so runs never overlap. The CAS confirms
      // the state (kRunningArmed: unchanged).
      const uint64_t rearmed = MakeStateWord(gen, State::kRunningArmed);
      if (!node->CasState(word, rearmed)) continue;
      node->mu.set_has_rearm(true);
      node->set_expiration(deadline_ns);  // where to re-arm
      if (state != State::kRunningArmed) counts_.Armed();
      return {state == State::kRunningArmed};
    }
    // kPending, kDispatched, kDone, kStopped or kEnded: a new arm,
    // generation + 1, which makes a stale worker task, submission or Stop
    // of the old arm do nothing.
    const uint64_t next = NextGeneration(gen);
    if (node->CasState(word, MakeStateWord(next, State::kPending))) {
      // Under the node lock with the state, so that a Deadline() never
      // reads the new arm's state with the old arm's deadline (or delay).
      node->set_expiration(deadline_ns);
      node->mu.set_has_rearm(false);
      if (!IsPending(state)) counts_.Armed();
      *armed = next;
      return {IsPending(state)};
    }
  }
}

int64_t Engine::Pending() const {
  if (closed_.load(std::memory_order_acquire)) return 0;
  return counts_.Pending();
}

int64_t Engine::Shutdown() {
  if (!FirstShutdown()) return 0;
  // A destructor of a callback cancelled below may call Shutdown again.
  const ScopedWheelCode wheel_code;
  closed_.store(true, std::memory_order_seq_cst);
  const int64_t own_resets = ResetsOnThisThread(this);
  while (resets_in_flight_.Sum(std::memory_order_seq_cst) > own_resets) {
    std::this_thread::yield();  // a Reset holds no lock for long
  }
  advancer_.Stop();
  // Nothing moves timers any more but callers' Stop and Reset, which the
  // node states arbitrate.
  int64_t cancelled = CancelClosed();
  runner_.Join();
  // The caller's own periodic timer, when a callback shuts its wheel down.
  if (runner_.CancelOwnRearm()) ++cancelled;
  cancelled = counts_.AddShutdownCancelled(cancelled);
  MutexLock lock(&shutdown_mu_);
  shutdown_done_ = true;
  shutdown_cv_.NotifyAll();
  return cancelled;
}

bool Engine::FirstShutdown() {
  {
    MutexLock lock(&shutdown_mu_);
    if (!shutdown_started_) {
      shutdown_started_ = true;
      return true;
    }
    // Code the first Shutdown may be waiting for must not wait for it
    // (reentry.h): a wheel thread, a callback, a hook, an executor, a Reset,
    // the first Shutdown itself.
    if (ScopedWheelCode::Active()) return false;
    while (!shutdown_done_) shutdown_cv_.Wait(&shutdown_mu_);
  }
  // The first Shutdown may have come from a callback, which it could not
  // wait for; this caller can.
  runner_.WaitNoneRunning();
  return false;
}

int64_t Engine::CancelAll() {
  if (closed_.load(std::memory_order_acquire)) return 0;
  // The nodes this call cancelled, with a reference each: their callbacks go
  // once nothing is locked. The nodes a worker or the executor has taken,
  // with a reference each, ended once the pause is over.
  std::vector<TimerNode*> cancelled;
  std::vector<TimerNode*> taken;
  // Resets that started before stepping back for this CancelAll finish
  // first (but this thread's own, which wait for it to return: a callback
  // run inline by an executor inside a Reset). Both sides are seq_cst, as for
  // Shutdown.
  cancel_alls_.fetch_add(1, std::memory_order_seq_cst);
  const int64_t own_resets = ResetsOnThisThread(this);
  while (resets_in_flight_.Sum(std::memory_order_seq_cst) > own_resets) {
    std::this_thread::yield();  // a Reset holds no lock for long
  }
  // Nothing moves timers between the places looked at: they are looked at
  // from the advancer's thread, between two rounds (see the top of
  // engine.h). The references of the nodes taken out of the core that were
  // not pending are released here, after that: the last one destroys a
  // callback, and no user code runs inside the advancer's work.
  std::vector<TimerNode*> released;
  advancer_.RunOnOwner(
      [&] { advancer_.CancelEverything(&cancelled, &taken, &released); });
  cancel_alls_.fetch_sub(1, std::memory_order_seq_cst);
  {
    MutexLock lock(&cancel_all_mu_);
    cancel_all_cv_.NotifyAll();
  }
  // Only now, with this CancelAll no longer under way: a destructor that
  // runs here may call Reset, which would wait for it.
  for (TimerNode* node : released) node->Unref(&nodes_);
  int64_t count = static_cast<int64_t>(cancelled.size());
  for (TimerNode* node : taken) {
    switch (EndArm(node, State::kCancelled, State::kRunningCancelled)) {
      case Ended::kArm:
        cancelled.push_back(node);
        ++count;
        break;
      case Ended::kRearm:
        ++count;  // its callback runs: the runner destroys it after the run
        node->Unref(&nodes_);
        break;
      case Ended::kNotPending:
        node->Unref(&nodes_);
        break;
    }
  }
  for (int64_t i = 0; i < count; ++i) counts_.Retired();
  counts_.AddCancelAllCancelled(count);
  // Nobody will run these: destroy their callbacks now, with no lock held
  // (a callback's destructor may call into the wheel).
  for (TimerNode* node : cancelled) {
    node->DestroyCallback(&nodes_);
    node->Unref(&nodes_);
  }
  return count;
}

int64_t Engine::CancelClosed() {
  std::vector<TimerNode*> cancelled;
  // Arms not taken by the advancer yet: each counts once, whatever else
  // holds the node (a stale link, another submission).
  std::vector<Submission> submissions;
  inbox_.Close(&submissions);
  for (const Submission& s : submissions) {
    if (s.arm() && s.node->Cancel(s.gen)) {
      counts_.Retired();
      cancelled.push_back(s.node);
    } else {
      s.node->Unref(&nodes_);  // stale, or a kUnlink
    }
  }
  std::vector<TimerNode*> linked;
  advancer_.TakeAllLinked(&linked);
  for (TimerNode* node : linked) {
    if (node->Cancel(kAnyGeneration)) {
      counts_.Retired();
      cancelled.push_back(node);
    } else {
      node->Unref(
          &nodes_);  // stopped, only waiting in its bucket to be dropped
    }
  }
  for (const DueTimer& task : runner_.Close()) {
    if (task.node->Cancel(task.generation)) {
      counts_.Retired();
      cancelled.push_back(task.node);
    } else {
      task.node->Unref(&nodes_);  // a stale task: stopped or reset since
    }
  }
  // Nobody will run these: destroy their callbacks now, with no lock held
  // (a callback's destructor may call into the wheel).
  for (TimerNode* node : cancelled) {
    node->DestroyCallback(&nodes_);
    node->Unref(&nodes_);
  }
  return static_cast<int64_t>(cancelled.size());
}

Stats Engine::GetStats() const {
  Stats stats;
  stats.pending = Pending();
  counts_.Fill(&stats);
  stats.worker_queue_depth = runner_.QueueDepth();
  const int64_t now_ns = time_.NowNs();
  LatencyHistogram all;
  LatencyHistogram recent;
  runner_.MergeLateness(now_ns, &all, &recent);
  FillLateness(all, recent, now_ns - WindowedHistogram::RecentStart(now_ns),
               &stats);
  LatencyHistogram handoffs;
  advancer_.MergeHandOffs(&handoffs);
  FillHandOffs(handoffs, &stats);
  return stats;
}

void Engine::WaitIdle() const {
  // From a callback (or any code the wheel runs) it would wait for itself.
  if (ScopedWheelCode::Active()) return;
  while (!closed_.load(std::memory_order_acquire)) {
    // A round with nothing to do, no callback outstanding, and again a
    // round with nothing to do (a callback may have handed on a new arm).
    if (advancer_.Sync() && runner_.Outstanding() == 0 && advancer_.Sync()) {
      return;
    }
    std::this_thread::yield();
  }
}

}  // namespace timingwheel::internal
