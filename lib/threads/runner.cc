// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "threads/runner.h"

#include <utility>

#include "threads/reentry.h"

namespace timingwheel::internal {
namespace {

// The runner and timer whose callback this thread is running, if any.
thread_local const Runner* tls_runner = nullptr;
thread_local TimerNode* tls_node = nullptr;

// Sets them for one run and gives the outer run's back when it returns.
class ScopedCallback {
 public:
  ScopedCallback(const Runner* runner, TimerNode* node)
      : runner_(std::exchange(tls_runner, runner)),
        node_(std::exchange(tls_node, node)) {}
  ScopedCallback(const ScopedCallback&) = delete;
  ScopedCallback& operator=(const ScopedCallback&) = delete;
  ~ScopedCallback() {
    tls_runner = runner_;
    tls_node = node_;
  }

 private:
  const Runner* const runner_;
  TimerNode* const node_;
};

}  // namespace

// What the user's executor gets for one due timer: runs it, or, destroyed
// unrun, stops it. Holds a reference on the engine.
class Runner::HandedOffTask {
 public:
  HandedOffTask(Runner* runner, uint64_t id) : runner_(runner), id_(id) {
    runner_->owner_->Ref();
  }
  HandedOffTask(HandedOffTask&& other) noexcept
      : runner_(std::exchange(other.runner_, nullptr)), id_(other.id_) {}
  HandedOffTask& operator=(HandedOffTask&&) = delete;
  ~HandedOffTask() {
    if (runner_ == nullptr) return;    // ran, or moved from
    const ScopedWheelCode wheel_code;  // the hook may call Shutdown
    runner_->Drop(id_);
    runner_->owner_->Unref();
  }
  void operator()() {
    Runner* runner = std::exchange(runner_, nullptr);
    if (runner == nullptr) return;
    const ScopedWheelCode wheel_code;  // Shutdown waits for a running task
    runner->pool_->RunHandedOff(id_);
    runner->owner_->Unref();
  }

 private:
  Runner* runner_;
  uint64_t id_;
};

Runner::Runner(Inbox* inbox, const TimeBase* time, TimerCounts* counts,
               const FailureReporter* failures, NodePools* nodes,
               RefCounted* owner)
    : inbox_(inbox),
      time_(time),
      counts_(counts),
      failures_(failures),
      nodes_(nodes),
      owner_(owner) {}

absl::Status Runner::Start(int workers, const Executor* executor,
                           std::function<void(int worker)> on_worker_start) {
  auto run = [this](const DueTimer& task, int worker) { Run(task, worker); };
  if (executor != nullptr && *executor) {
    executor_ = executor;
    lateness_.push_back(
        std::make_unique<WindowedHistogram>(LatencyHistogram::Writers::kMany));
    pool_ = std::make_unique<WorkerPool>(
        run, [this](uint64_t id) { HandOff(id); },
        [this](const DueTimer& task) { Release(task); });
    return absl::OkStatus();
  }
  for (int i = 0; i < workers; ++i) {
    lateness_.push_back(
        std::make_unique<WindowedHistogram>(LatencyHistogram::Writers::kOne));
  }
  owner_->Ref(workers);  // one per thread, released as it exits
  pool_ = std::make_unique<WorkerPool>(
      workers, run, [this] { owner_->Unref(); }, std::move(on_worker_start),
      [this](const DueTimer& task) { Release(task); });
  absl::Status status = pool_->Start();
  // The references of the threads that never started (none on success).
  for (int i = pool_->started(); i < workers; ++i) owner_->Unref();
  return status;
}

void Runner::HandOff(uint64_t id) {
  const ScopedWheelCode wheel_code;  // the user's executor, then the hook
  try {
    (*executor_)(HandedOffTask(this, id));
  } catch (...) {
    // The task went with the exception (then its destructor dropped it), or
    // the executor kept it and will still call it.
    counts_->ExecutorThrew();
    failures_->Report(Failure::Kind::kExecutorThrew,
                      FailureReporter::CurrentExceptionText());
  }
}

void Runner::Drop(uint64_t id) {
  std::optional<DueTimer> task = pool_->DropHandedOff(id);
  if (!task.has_value()) return;  // Close took it back
  uint64_t expected = MakeStateWord(task->generation, State::kDispatched);
  if (task->node->CasState(expected,
                           MakeStateWord(task->generation, State::kStopped))) {
    counts_->Stopped();
    counts_->ExecutorDropped();
    failures_->Report(Failure::Kind::kTaskDropped,
                      "the task was destroyed without being called");
  }
  task->node->Unref(nodes_);
}

void Runner::Submit(std::vector<DueTimer>* batch) {
  if (batch->empty() || pool_->Submit(batch)) return;
  // Shut down meanwhile: these were pending, so Shutdown counts them.
  for (const DueTimer& task : *batch) {
    if (task.node->Cancel(task.generation)) counts_->CancelledInTransit();
    task.node->Unref(nodes_);
  }
  batch->clear();
}

void Runner::Queue(std::vector<DueTimer>* batch,
                   std::vector<uint64_t>* hand_offs,
                   std::vector<TimerNode*>* released) {
  if (batch->empty() || pool_->Submit(batch, hand_offs)) return;
  for (const DueTimer& task : *batch) {
    if (task.node->Cancel(task.generation)) counts_->CancelledInTransit();
    released->push_back(task.node);
  }
  batch->clear();
}

TimerNode* Runner::Current() { return tls_node; }

RefCounted* Runner::CurrentOwner() {
  return tls_runner == nullptr ? nullptr : tls_runner->owner_;
}

bool Runner::CancelOwnRearm() {
  if (tls_runner != this || tls_node == nullptr) return false;
  uint64_t word = tls_node->LoadState();
  if (StateOf(word) != State::kRunningArmed ||
      !tls_node->CasState(
          word, MakeStateWord(GenerationOf(word), State::kRunningCancelled))) {
    return false;
  }
  counts_->Retired();
  return true;
}

void Runner::MergeLateness(int64_t now_ns, LatencyHistogram* all,
                           LatencyHistogram* recent) const {
  for (const auto& histogram : lateness_) {
    histogram->MergeInto(now_ns, all, recent);
  }
}

void Runner::Run(const DueTimer& task, int worker) {
  TimerNode* node = task.node;
  const bool periodic = node->periodic();
  uint64_t expected = MakeStateWord(task.generation, State::kDispatched);
  if (!node->CasState(expected, MakeStateWord(task.generation,
                                              periodic ? State::kRunningArmed
                                                       : State::kRunning))) {
    return;  // stopped, reset or cancelled since it was dispatched
  }
  if (periodic) {
    node->CountRun();
  } else {
    counts_->Retired();
  }
  const int64_t now_ns = time_->NowNs();
  lateness_[worker]->Record(now_ns, LatenessNs(now_ns, task.deadline_ns));
  try {
    ScopedCallback current(this, node);
    node->RunCallback();
  } catch (...) {
    counts_->CallbackThrew();
    failures_->Report(Failure::Kind::kCallbackThrew,
                      FailureReporter::CurrentExceptionText());
  }
  std::optional<int64_t> next_ns;
  if (periodic && AsksScheduler(node)) {
    next_ns = NextRun(node, task.deadline_ns);
  }
  // The task's reference is held until the pool is done with it (Release).
  AfterRun(node, task.generation, next_ns);
}

bool Runner::AsksScheduler(TimerNode* node) {
  // Not after a Stop made during the run (the schedule will not go on), nor
  // when a Reset during the run set the next deadline itself: a scheduler
  // with side effects (a retry budget, a log line) sees only the runs that
  // happen.
  SpinLockHolder lock(&node->mu);
  return StateOf(node->LoadState()) == State::kRunningArmed &&
         !node->mu.has_rearm();
}

std::optional<int64_t> Runner::NextRun(TimerNode* node, int64_t deadline_ns) {
  const int64_t now_ns = time_->NowNs();
  std::optional<absl::Duration> delay;
  try {
    // Only the worker that ran the callback gets here, so calls to one
    // scheduler never overlap.
    delay = node->scheduler().NextDelay(
        {time_->ToClock(deadline_ns), time_->ToClock(now_ns)});
  } catch (...) {
    counts_->SchedulerThrew();
    failures_->Report(Failure::Kind::kSchedulerThrew,
                      FailureReporter::CurrentExceptionText());
    return std::nullopt;
  }
  if (!delay.has_value()) return std::nullopt;
  return time_->NextRunAfter(now_ns, *delay);
}

void Runner::AfterRun(TimerNode* node, uint64_t gen,
                      std::optional<int64_t> next_ns) {
  if (!node->periodic()) {
    // A one-shot timer that no Reset re-armed while it ran is done: one CAS,
    // no node lock. Otherwise (kRunningArmed) Rearm, under the lock, reads
    // the deadline the Reset left. A Stop or cancel that took the re-arm
    // back (kRunningStopped, kRunningCancelled) leaves has_rearm set; a
    // one-shot node reads it only in kRunningArmed, which only a Reset,
    // setting it anew, leads to.
    uint64_t expected = MakeStateWord(gen, State::kRunning);
    if (node->CasState(expected, MakeStateWord(gen, State::kDone))) return;
  }
  State ended;
  int64_t rearm_ns = 0;
  {
    SpinLockHolder lock(&node->mu);
    ended = Rearm(node, gen, next_ns, &rearm_ns);
  }
  // Cancelled (CancelAll or Shutdown) while it ran: nothing runs or re-arms
  // it any more, so its callback goes now, with no lock held (its destructor
  // may call into the wheel), while the task's reference keeps the node.
  if (ended == State::kCancelled) node->DestroyCallback(nodes_);
  if (ended != State::kPending) return;
  // The new arm, generation + 1, with a reference of its own (the task's is
  // released when the pool is done with it): to the pool if due, else to
  // the wheel's owner. No lock is held: an executor may run it inline.
  node->Ref();
  const uint64_t next = NextGeneration(gen);
  const int64_t now_ns = time_->NowNs();
  if (rearm_ns <= now_ns) {
    uint64_t expected = MakeStateWord(next, State::kPending);
    if (node->CasState(expected, MakeStateWord(next, State::kDispatched))) {
      std::vector<DueTimer> due{{node, next, rearm_ns}};
      Submit(&due);
      return;
    }
  } else if (inbox_->Push(node, next, Submission::Kind::kArm, now_ns,
                          time_->TickOf(rearm_ns))) {
    return;
  } else if (node->Cancel(next)) {
    // Shut down meanwhile: it was pending, so Shutdown counts it.
    counts_->CancelledInTransit();
  }
  node->Unref(nodes_);  // a Stop or a cancel took the new arm first
}

State Runner::Rearm(TimerNode* node, uint64_t gen,
                    std::optional<int64_t> next_ns, int64_t* rearm_ns) {
  for (;;) {
    uint64_t word = node->LoadState();
    if (StateOf(word) != State::kRunningArmed) {
      // Not armed again: kRunning, or a Stop or cancel took the re-arm.
      node->mu.set_has_rearm(false);
      const State end = EndOfRun(StateOf(word));
      if (node->CasState(word, MakeStateWord(gen, end))) return end;
      continue;
    }
    if (!node->mu.has_rearm() && !next_ns.has_value()) {
      // The schedule ended: the timer is no longer pending.
      if (node->CasState(word, MakeStateWord(gen, State::kEnded))) {
        counts_->Retired();
        return State::kEnded;
      }
      continue;
    }
    const int64_t deadline_ns =
        node->mu.has_rearm() ? node->expiration() : *next_ns;
    if (!node->CasState(word,
                        MakeStateWord(NextGeneration(gen), State::kPending))) {
      continue;  // a Stop won: re-read
    }
    node->mu.set_has_rearm(false);
    node->set_expiration(deadline_ns);  // the new arm's
    *rearm_ns = deadline_ns;
    return State::kPending;
  }
}

}  // namespace timingwheel::internal
