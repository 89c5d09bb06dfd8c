// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "engine.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace timingwheel::internal {
namespace {

constexpr int kMaxWheelSize = 1 << 16;
constexpr int kMaxWorkers = 1024;
// Due timers the advancer hands to the workers at once from one bucket.
constexpr size_t kSubmitChunk = 1024;
// How far ahead the advancer prefetches the nodes of a flushed bucket.
constexpr size_t kPrefetch = 8;
// Nodes of a flushed bucket between two looks at the advancer's inbox.
constexpr size_t kFlushSlice = 4096;
// The advancer keeps its array for detached nodes up to this capacity.
constexpr size_t kKeptDetachedCapacity = size_t{1} << 16;
constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
// The engine and timer whose callback this thread is running, if any. A
// callback run inside another (an inline executor) sets them for its run and
// gives the outer run's back when it returns (ScopedCallback).
thread_local const Engine* tls_engine = nullptr;
thread_local TimerNode* tls_node = nullptr;

class ScopedCallback {
 public:
  ScopedCallback(const Engine* engine, TimerNode* node)
      : engine_(std::exchange(tls_engine, engine)),
        node_(std::exchange(tls_node, node)) {}
  ScopedCallback(const ScopedCallback&) = delete;
  ScopedCallback& operator=(const ScopedCallback&) = delete;
  ~ScopedCallback() {
    tls_engine = engine_;
    tls_node = node_;
  }

 private:
  const Engine* const engine_;
  TimerNode* const node_;
};
// Resets this thread is inside (one may run a callback inline, through an
// executor, which then calls Shutdown: Shutdown must not wait for those).
thread_local int64_t tls_resets_in_flight = 0;
// This thread's number for picking a lane; -1 until first needed.
thread_local int tls_lane_index = -1;
// Lanes: one per hardware thread, so that each thread scheduling timers
// usually has one of its own, at most kMaxLanes (each costs a set of levels
// and its own buckets in the delay queue).
constexpr int kMaxLanes = 16;
size_t LaneCount() {
  return static_cast<size_t>(std::clamp(
      static_cast<int>(std::thread::hardware_concurrency()), 1, kMaxLanes));
}

// The tick at which the timers of an entry's bucket start to come due.
int64_t ExpirationOf(const DelayQueue::Entry& entry) {
  return entry.release_tick + entry.bucket->level()->lead();
}

// `d` (> 0) in nanoseconds, rounded up: a deadline is never earlier than
// asked for. Saturates at kMaxInt64 (`d` of about 292 years or more).
int64_t CeilNs(absl::Duration d) {
  int64_t ns = absl::ToInt64Nanoseconds(d);
  if (ns < kMaxInt64 && absl::Nanoseconds(ns) < d) ++ns;
  return ns;
}

absl::Status ValidateOptions(const Options& options) {
  if (options.tick < absl::Microseconds(1) ||
      options.tick == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Options::tick is ", absl::FormatDuration(options.tick),
                     "; it must be finite and at least 1us"));
  }
  if (options.wheel_size < 2 || options.wheel_size > kMaxWheelSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("Options::wheel_size is ", options.wheel_size,
                     "; it must be from 2 to ", kMaxWheelSize));
  }
  if (options.workers < 0 || options.workers > kMaxWorkers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Options::workers is ", options.workers, "; it must be from 0 to ",
        kMaxWorkers, " (0 = one per hardware thread)"));
  }
  if (options.max_pending < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Options::max_pending is ", options.max_pending,
                     "; it must be >= 0 (0 = unlimited)"));
  }
  return absl::OkStatus();
}

// The prefix must leave room in Linux's 15 characters for the longest name
// the engine gives: `<prefix>-advancer` or `<prefix>-worker-<workers - 1>`.
absl::Status ValidateThreadNamePrefix(const Options& options) {
  constexpr size_t kMaxThreadName = 15;
  const std::string& prefix = options.thread_name_prefix;
  std::string longest = prefix + "-advancer";
  if (!options.executor && options.workers > 0) {
    const std::string worker =
        absl::StrCat(prefix, "-worker-", options.workers - 1);
    if (worker.size() > longest.size()) longest = worker;
  }
  if (!prefix.empty() && longest.size() <= kMaxThreadName) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "Options::thread_name_prefix is \"", prefix, "\" (", prefix.size(),
      " characters); it must not be empty, and the longest thread name (\"",
      longest, "\" with ", options.workers,
      " workers) must fit Linux's 15 characters, so at most ",
      kMaxThreadName - (longest.size() - prefix.size()), " characters here"));
}

}  // namespace

bool Engine::LaterExpiration::operator()(const DelayQueue::Entry& a,
                                         const DelayQueue::Entry& b) const {
  return ExpirationOf(a) > ExpirationOf(b);
}

absl::StatusOr<Engine*> Engine::Create(Options options) {
  if (absl::Status status = ValidateOptions(options); !status.ok()) {
    return status;
  }
  if (options.clock == nullptr) options.clock = SteadyClock();
  if (options.workers == 0) {
    options.workers =
        std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  }
  if (absl::Status status = ValidateThreadNamePrefix(options); !status.ok()) {
    return status;
  }
  const absl::Duration origin = options.clock->Now();
  auto* engine = new Engine(std::move(options), origin);
  engine->Start();
  return engine;
}

Engine::Engine(Options options, absl::Duration origin)
    : clock_(options.clock),
      origin_(origin),
      steady_(clock_ == SteadyClock()),
      origin_ns_(absl::ToInt64Nanoseconds(origin)),
      tick_ns_(absl::ToInt64Nanoseconds(options.tick)),
      max_deadline_ns_(kMaxInt64 / tick_ns_ * tick_ns_),
      max_pending_(options.max_pending),
      workers_(options.workers),
      executor_(std::move(options.executor)),
      failures_(std::move(options.on_failure)),
      thread_name_prefix_(std::move(options.thread_name_prefix)),
      on_thread_start_(std::move(options.on_thread_start)),
      queue_(clock_, origin_, tick_ns_),
      lanes_(LaneCount()) {
  for (std::unique_ptr<Lane>& lane : lanes_) {
    lane = std::make_unique<Lane>();
    lane->level0 = std::make_unique<WheelLevel>(1, options.wheel_size, 0,
                                                &queue_, /*closed=*/false);
  }
}

int Engine::ThisThreadLane() const {
  int index = tls_lane_index;
  if (index < 0) {
    static std::atomic<int> next{0};
    index = tls_lane_index = next.fetch_add(1, std::memory_order_relaxed) &
                             std::numeric_limits<int>::max();
  }
  return index % static_cast<int>(lanes_.size());
}

Engine::~Engine() = default;

Engine::HandedOffTask::~HandedOffTask() {
  if (engine_ == nullptr) return;  // ran, or moved from
  // The executor destroyed it unrun: the timer counts as stopped.
  if (std::optional<WorkerPool::Task> task =
          engine_->pool_->DropHandedOff(id_)) {
    uint64_t expected = MakeStateWord(task->generation, State::kDispatched);
    if (task->node->CasState(
            expected, MakeStateWord(task->generation, State::kStopped))) {
      engine_->CountStopped();
      engine_->executor_dropped_.fetch_add(1, std::memory_order_relaxed);
      engine_->failures_.Report(Failure::Kind::kTaskDropped,
                                "the task was destroyed without being called");
    }
    task->node->Unref();
  }
  engine_->Unref();
}

void Engine::HandedOffTask::operator()() {
  Engine* engine = std::exchange(engine_, nullptr);
  if (engine == nullptr) return;
  engine->pool_->RunHandedOff(id_);
  engine->Unref();
}

void Engine::Start() {
  auto run = [this](const WorkerPool::Task& task, int worker) {
    RunTask(task, worker);
  };
  if (executor_) {
    // The user's executor runs the callbacks: no worker threads.
    lateness_.push_back(std::make_unique<LatencyHistogram>());
    pool_ = std::make_unique<WorkerPool>(
        run, [this](uint64_t id) { HandOffToExecutor(id); });
  } else {
    for (int i = 0; i < workers_; ++i) {
      lateness_.push_back(std::make_unique<LatencyHistogram>());
    }
    refs_.fetch_add(workers_, std::memory_order_relaxed);  // one per thread
    pool_ = std::make_unique<WorkerPool>(
        workers_, run, [this] { Unref(); },
        [this](int worker) { OnThreadStart(ThreadRole::kWorker, worker); });
  }
  refs_.fetch_add(2, std::memory_order_relaxed);  // the poller and advancer
  poller_ = std::thread([this] {
    PollerLoop();
    Unref();
  });
  advancer_ = std::thread([this] {
    AdvancerLoop();
    Unref();
  });
}

void Engine::HandOffToExecutor(uint64_t id) {
  Ref();  // released by the HandedOffTask
  try {
    executor_(HandedOffTask(this, id));
  } catch (...) {
    // The task went with the exception (then its destructor dropped it), or
    // the executor kept it and will still call it.
    executor_threw_.fetch_add(1, std::memory_order_relaxed);
    failures_.Report(Failure::Kind::kExecutorThrew,
                     FailureReporter::CurrentExceptionText());
  }
}

void Engine::JoinOrDetach(std::thread* thread) {
  if (!thread->joinable()) return;
  if (thread->get_id() == std::this_thread::get_id()) {
    thread->detach();
  } else {
    thread->join();
  }
}

void Engine::Unref() {
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
}

void Engine::ReleaseOwner() {
  // One provisional reference per lane first, so that no lane's release
  // below can delete the engine while the others are still being visited.
  refs_.fetch_add(static_cast<int64_t>(lanes_.size()),
                  std::memory_order_relaxed);
  // The last visit may delete the engine: read the lanes before it.
  std::vector<Lane*> lanes;
  for (const std::unique_ptr<Lane>& lane : lanes_) lanes.push_back(lane.get());
  Unref();  // the owner's own; the provisional ones keep the engine
  for (Lane* lane : lanes) {
    // Drops the bias: for an empty lane that releases its provisional
    // reference now, otherwise its last node will.
    if (lane->nodes.fetch_sub(1, std::memory_order_acq_rel) == 1) Unref();
  }
}

int64_t Engine::NowNs() const {
  if (steady_) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
               .count() -
           origin_ns_;
  }
  return absl::ToInt64Nanoseconds(clock_->Now() - origin_);
}

absl::StatusOr<int64_t> Engine::DeadlineAfter(int64_t now_ns, absl::Duration d,
                                              const char* caller) const {
  if (d <= absl::ZeroDuration()) return now_ns;
  // Saturated values (d of about 292 years or more) are out of range.
  const int64_t d_ns = CeilNs(d);
  if (d_ns < kMaxInt64 && d_ns <= max_deadline_ns_ - now_ns) {
    return now_ns + d_ns;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      caller, ": duration ", absl::FormatDuration(d),
      " is out of range; deadlines must lie within ",
      absl::FormatDuration(absl::Nanoseconds(max_deadline_ns_)),
      " of the wheel's start, so at most ",
      absl::FormatDuration(absl::Nanoseconds(max_deadline_ns_ - now_ns)),
      " from now (every duration up to 100 years works)"));
}

absl::StatusOr<int64_t> Engine::DeadlineAt(int64_t now_ns, absl::Duration when,
                                           const char* caller) const {
  const absl::Duration since_origin = when - origin_;
  if (since_origin <= absl::Nanoseconds(now_ns)) return now_ns;
  // Saturated values are out of range below.
  const int64_t deadline_ns = CeilNs(since_origin);
  if (deadline_ns <= max_deadline_ns_) return deadline_ns;
  return absl::InvalidArgumentError(absl::StrCat(
      caller, ": time ", absl::FormatDuration(when),
      " is out of range; deadlines must lie within ",
      absl::FormatDuration(absl::Nanoseconds(max_deadline_ns_)),
      " of the wheel's start (", absl::FormatDuration(origin_),
      " by its clock), so at most ",
      absl::FormatDuration(origin_ + absl::Nanoseconds(max_deadline_ns_))));
}

absl::StatusOr<TimerNode*> Engine::Schedule(absl::Duration d,
                                            absl::AnyInvocable<void()> f,
                                            const char* caller) {
  if (d == absl::InfiniteDuration() || d == -absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        caller, ": duration is ", absl::FormatDuration(d),
        "; it must be finite (every duration up to 100 years works)"));
  }
  if (absl::Status status = CheckNew(f, caller); !status.ok()) return status;
  const int64_t now_ns = NowNs();
  absl::StatusOr<int64_t> deadline = DeadlineAfter(now_ns, d, caller);
  if (!deadline.ok()) return deadline.status();
  return NewArmed(std::move(f), nullptr, *deadline, now_ns, caller);
}

absl::StatusOr<TimerNode*> Engine::Schedule(
    std::unique_ptr<Scheduler> scheduler, absl::AnyInvocable<void()> f,
    const char* caller) {
  if (scheduler == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        caller, ": the scheduler is null; pass one, e.g. FixedRate(d)"));
  }
  if (absl::Status status = CheckNew(f, caller); !status.ok()) return status;
  const int64_t now_ns = NowNs();
  const absl::Duration now = origin_ + absl::Nanoseconds(now_ns);
  // On the caller's thread: an exception reaches the caller.
  const std::optional<absl::Duration> first = scheduler->NextDelay({now, now});
  if (!first.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        caller,
        ": the scheduler ended before the first run (NextDelay returned "
        "nullopt); it must return a first delay"));
  }
  absl::StatusOr<int64_t> deadline = DeadlineAfter(now_ns, *first, caller);
  if (!deadline.ok()) return deadline.status();
  return NewArmed(std::move(f), std::move(scheduler), *deadline, now_ns,
                  caller);
}

absl::Status Engine::CheckNew(const absl::AnyInvocable<void()>& f,
                              const char* caller) const {
  if (!f) {
    return absl::InvalidArgumentError(
        absl::StrCat(caller, ": the callback is empty; pass a callable"));
  }
  if (closed_.load(std::memory_order_acquire)) {
    return absl::FailedPreconditionError(
        absl::StrCat(caller, ": the wheel is shut down"));
  }
  return absl::OkStatus();
}

absl::StatusOr<TimerNode*> Engine::ScheduleAt(absl::Duration when,
                                              absl::AnyInvocable<void()> f,
                                              const char* caller) {
  if (when == absl::InfiniteDuration() || when == -absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(caller, ": time is ",
                                                   absl::FormatDuration(when),
                                                   "; it must be finite"));
  }
  if (absl::Status status = CheckNew(f, caller); !status.ok()) return status;
  // Now only decides whether the point has passed; the deadline is the
  // point itself.
  const int64_t now_ns = NowNs();
  absl::StatusOr<int64_t> deadline = DeadlineAt(now_ns, when, caller);
  if (!deadline.ok()) return deadline.status();
  return NewArmed(std::move(f), nullptr, *deadline, now_ns, caller);
}

absl::StatusOr<TimerNode*> Engine::NewArmed(
    absl::AnyInvocable<void()> f, std::unique_ptr<Scheduler> scheduler,
    int64_t deadline_ns, int64_t now_ns, const char* caller) {
  if (max_pending_ > 0) {
    int64_t pending = pending_exact_.load(std::memory_order_relaxed);
    do {
      if (pending >= max_pending_) {
        return absl::ResourceExhaustedError(
            absl::StrCat(caller, ": ", pending,
                         " timers are pending, Options::max_pending is ",
                         max_pending_, "; stop some or raise the limit"));
      }
    } while (!pending_exact_.compare_exchange_weak(pending, pending + 1,
                                                   std::memory_order_relaxed));
  }
  scheduled_.Add(1);

  // Two references: the handle's and the wheel's.
  TimerNode* node = TimerNode::New(this, std::move(f), std::move(scheduler),
                                   /*refs=*/2, ThisThreadLane());
  std::vector<WorkerPool::Task> due;  // allocates only when due at once
  const ArmResult result = ArmNew(node, deadline_ns, now_ns, &due);
  if (result == ArmResult::kArmed && (due.empty() || pool_->Submit(&due))) {
    return node;
  }
  if (!due.empty()) CancelPending(node, 0);  // the pool is closed
  if (result == ArmResult::kClosed) CancelUnplaced(node, 0, /*count=*/false);
  // Never armed after all: undo the count, and the retirement the cancel
  // just counted.
  scheduled_.Add(-1);
  if (max_pending_ == 0) retired_.Add(-1);
  node->Unref();  // the wheel's
  node->Unref();  // the handle's: it is never returned
  return absl::FailedPreconditionError(
      absl::StrCat(caller, ": the wheel is shut down"));
}

Engine::ArmResult Engine::Arm(TimerNode* node, int64_t deadline_ns,
                              int64_t now_ns, uint64_t gen,
                              std::vector<WorkerPool::Task>* batch,
                              bool recheck) {
  node->deadline_ns = deadline_ns;
  if (deadline_ns <= now_ns) return Dispatch(node, gen, batch);
  return Place(node, CeilDiv(deadline_ns, tick_ns_), gen, recheck, batch);
}

Engine::ArmResult Engine::Place(TimerNode* node, int64_t expiration_tick,
                                uint64_t gen, bool recheck,
                                std::vector<WorkerPool::Task>* batch) {
  WheelLevel* const lowest = lanes_[node->lane]->level0.get();
  WheelLevel* level = lowest;
  for (;;) {
    level = level->Locate(expiration_tick);
    switch (level->Add(node, expiration_tick, gen)) {
      case WheelLevel::AddResult::kAdded:
        return recheck ? ConfirmLinked(node, gen) : ArmResult::kArmed;
      case WheelLevel::AddResult::kDue:
        return Dispatch(node, gen, batch);
      case WheelLevel::AddResult::kClosed:
        return ArmResult::kClosed;
      case WheelLevel::AddResult::kRetry:
        level = lowest;
        break;
      case WheelLevel::AddResult::kTooFar:
        level = level->GetOrCreateOverflow();
        break;
    }
  }
}

Engine::ArmResult Engine::ConfirmLinked(TimerNode* node, uint64_t gen) {
  // A Stop changes the state, then reads `where`; this linker set `where`,
  // then reads the state here. Both are read-modify-writes or follow one on
  // the same atomic (Stop's CAS, this fetch_or), which the state's
  // modification order puts one before the other: if the Stop came first,
  // this sees it; if this came first, the Stop's CAS reads from it
  // (acquire) and so sees `where`, set before it (release). Either way one
  // of the two unlinks a stopped node: no stopped callback stays in a bucket
  // until its flush, up to an upper level's tick later.
  const uint64_t word = node->state.fetch_or(0, std::memory_order_acq_rel);
  if (word == MakeStateWord(gen, State::kPending)) return ArmResult::kArmed;
  Bucket* bucket = node->where.load(std::memory_order_acquire);
  if (bucket != nullptr && bucket->level()->Remove(node, bucket, gen)) {
    return ArmResult::kDropped;  // the caller's reference comes back
  }
  return ArmResult::kArmed;  // the Stop unlinked it, with its reference
}

Engine::ArmResult Engine::Dispatch(TimerNode* node, uint64_t gen,
                                   std::vector<WorkerPool::Task>* batch) {
  node->where.store(nullptr, std::memory_order_release);
  uint64_t expected = MakeStateWord(gen, State::kPending);
  if (!node->CasState(expected, MakeStateWord(gen, State::kDispatched))) {
    return ArmResult::kDropped;  // stopped meanwhile
  }
  batch->push_back({node, gen, node->deadline_ns});
  return ArmResult::kArmed;
}

void Engine::SubmitBatch(std::vector<WorkerPool::Task>* batch) {
  if (batch->empty() || pool_->Submit(batch)) return;
  // Shut down meanwhile: these were pending, so Shutdown counts them.
  for (const WorkerPool::Task& task : *batch) {
    if (CancelPending(task.node, task.generation)) {
      cancelled_after_run_.fetch_add(1, std::memory_order_relaxed);
    }
    task.node->Unref();
  }
  batch->clear();
}

void Engine::CancelUnplaced(TimerNode* node, uint64_t gen, bool count) {
  uint64_t expected = MakeStateWord(gen, State::kPending);
  if (node->CasState(expected, MakeStateWord(gen, State::kCancelled))) {
    CountRetired();
    if (count) cancelled_after_run_.fetch_add(1, std::memory_order_relaxed);
  }
}

bool Engine::CancelPending(TimerNode* node, uint64_t gen) {
  for (;;) {
    uint64_t word = node->LoadState();
    const State state = StateOf(word);
    if (state != State::kPending && state != State::kDispatched) return false;
    if (gen != WheelLevel::kAnyGeneration && GenerationOf(word) != gen) {
      return false;
    }
    if (node->CasState(word,
                       MakeStateWord(GenerationOf(word), State::kCancelled))) {
      CountRetired();
      return true;
    }
  }
}

TimerNode* Engine::CurrentTimer() { return tls_node; }

bool Engine::Stop(TimerNode* node) {
  for (;;) {
    uint64_t word = node->LoadState();
    const uint64_t gen = GenerationOf(word);
    switch (StateOf(word)) {
      case State::kPending: {
        if (!node->CasState(word, MakeStateWord(gen, State::kStopped))) break;
        CountStopped();
        // Unlink it now if it sits in a bucket; a node in transit is dropped
        // by the advancer when it sees the state.
        Bucket* bucket = node->where.load(std::memory_order_acquire);
        if (bucket != nullptr && bucket->level()->Remove(node, bucket, gen)) {
          node->Unref();  // the bucket's reference
        }
        return true;
      }
      case State::kDispatched:
        if (!node->CasState(word, MakeStateWord(gen, State::kStopped))) break;
        CountStopped();
        return true;  // the worker drops its task
      case State::kRunningArmed:
        if (!node->CasState(word, MakeStateWord(gen, State::kRunning))) break;
        CountStopped();
        return true;  // AfterRun sees kRunning and does not re-arm
      default:
        return false;
    }
  }
}

bool Engine::Reset(TimerNode* node, absl::Duration d) {
  if (d == absl::InfiniteDuration()) return Stop(node);
  // Shutdown waits for the Resets that got past this check, so the timers
  // they arm are cancelled and counted by it, never after it returned. Both
  // sides are seq_cst: either Shutdown sees this Reset in flight, or this
  // Reset sees the wheel closed.
  resets_in_flight_.Add(1, std::memory_order_seq_cst);
  ++tls_resets_in_flight;
  struct Done {
    Engine* engine;
    ~Done() {
      --tls_resets_in_flight;
      engine->resets_in_flight_.Add(-1, std::memory_order_seq_cst);
    }
  } done{this};
  if (closed_.load(std::memory_order_seq_cst)) return false;
  const int64_t now_ns = NowNs();
  absl::StatusOr<int64_t> deadline = DeadlineAfter(now_ns, d, "Reset");
  if (!deadline.ok()) return Stop(node);

  bool was_pending = false;
  bool drop_reference = false;
  std::vector<WorkerPool::Task> due;
  {
    SpinLockHolder lock(&node->mu);
    for (;;) {
      uint64_t word = node->LoadState();
      const uint64_t gen = GenerationOf(word);
      const State state = StateOf(word);
      if (state == State::kCancelled) return false;
      if (state == State::kRunningArmed || state == State::kRunning) {
        // Re-armed when the callback returns (AfterRun), so runs never
        // overlap. The CAS confirms the state (kRunningArmed: unchanged).
        const uint64_t armed = MakeStateWord(gen, State::kRunningArmed);
        if (!node->CasState(word, armed)) continue;
        node->has_rearm = true;
        node->rearm_deadline_ns = *deadline;
        if (state == State::kRunning) {
          CountArmed();
        }
        return state == State::kRunningArmed;
      }
      // kPending, kDispatched, kDone or kStopped: a new arm, generation + 1,
      // which makes a stale worker task or Stop of the old arm do nothing.
      if (!node->CasState(word, MakeStateWord(gen + 1, State::kPending))) {
        continue;
      }
      was_pending = IsPending(state);
      if (!was_pending) {
        CountArmed();
      }
      node->has_rearm = false;
      // Take the node out of its bucket (a stopped node may still sit in
      // one); the bucket's reference then carries the new arm.
      Bucket* bucket = node->where.load(std::memory_order_acquire);
      const bool own_reference =
          bucket != nullptr &&
          bucket->level()->Remove(node, bucket, WheelLevel::kAnyGeneration);
      if (!own_reference && bucket != nullptr &&
          node->where.load(std::memory_order_acquire) == bucket) {
        // Still naming the bucket but not in it: a flush detached it,
        // and the advancer will place it by this deadline. (A Stop that
        // unlinked it meanwhile cleared `where`; only linkers, which hold
        // this node lock, set it.)
        node->deadline_ns = *deadline;
        return was_pending;
      }
      if (!own_reference) node->Ref();
      switch (Arm(node, *deadline, now_ns, gen + 1, &due)) {
        case ArmResult::kArmed:
          break;
        case ArmResult::kClosed:
          // Shutdown raced this Reset; a timer that was pending counts as
          // cancelled by it.
          CancelUnplaced(node, gen + 1, /*count=*/was_pending);
          drop_reference = true;
          was_pending = false;
          break;
        case ArmResult::kDropped:
          drop_reference = true;
          break;
      }
      break;
    }
  }
  SubmitBatch(&due);
  if (drop_reference) node->Unref();
  return was_pending;
}

int64_t Engine::Pending() const {
  if (closed_.load(std::memory_order_acquire)) return 0;
  // Momentarily negative when a Stop counts before the Reset it raced.
  const int64_t pending =
      max_pending_ > 0 ? pending_exact_.load(std::memory_order_relaxed)
                       : scheduled_.Sum() - stopped_.Sum() - retired_.Sum();
  return std::max<int64_t>(0, pending);
}

void Engine::OnThreadStart(ThreadRole role, int index) const {
  switch (role) {
    case ThreadRole::kPoller:
      SetCurrentThreadName((thread_name_prefix_ + "-poller").c_str());
      break;
    case ThreadRole::kAdvancer:
      SetCurrentThreadName((thread_name_prefix_ + "-advancer").c_str());
      break;
    case ThreadRole::kWorker:
      SetCurrentThreadName(
          absl::StrCat(thread_name_prefix_, "-worker-", index).c_str());
      break;
  }
  if (on_thread_start_) on_thread_start_(role, index);
}

void Engine::PollerLoop() {
  OnThreadStart(ThreadRole::kPoller, 0);
  std::vector<DelayQueue::Entry> due;
  while (queue_.Poll(&due)) {
    MutexLock lock(&inbox_mu_);
    if (inbox_closed_) break;
    inbox_.insert(inbox_.end(), due.begin(), due.end());
    inbox_cv_.NotifyOne();
    due.clear();
  }
}

void Engine::AdvancerLoop() {
  OnThreadStart(ThreadRole::kAdvancer, 0);
  ReadyBuckets ready;  // released, not yet flushed
  FlushScratch outer;
  FlushScratch nested;
  // Shut down, the advancer stops even with buckets left: Shutdown cancels
  // their timers (when a callback inline on this thread shut the wheel
  // down, Shutdown returned meanwhile).
  while (!closed_.load(std::memory_order_acquire)) {
    if (ready.empty()) {
      MutexLock lock(&inbox_mu_);
      while (inbox_.empty() && !inbox_closed_) inbox_cv_.Wait(&inbox_mu_);
      if (inbox_closed_) break;
      for (const DelayQueue::Entry& entry : inbox_) ready.push(entry);
      inbox_.clear();
    }
    const DelayQueue::Entry entry = ready.top();
    ready.pop();
    Flush(entry, &outer, &nested, &ready);
  }
}

void Engine::TakeInbox(ReadyBuckets* ready) {
  MutexLock lock(&inbox_mu_);
  if (inbox_closed_) return;
  for (const DelayQueue::Entry& entry : inbox_) ready->push(entry);
  inbox_.clear();
}

void Engine::Flush(const DelayQueue::Entry& entry, FlushScratch* scratch,
                   FlushScratch* nested, ReadyBuckets* ready) {
  for (const std::unique_ptr<Lane>& lane : lanes_) {
    lane->level0->Advance(entry.release_tick);
  }
  std::vector<TimerNode*>& detached = scratch->detached;
  entry.bucket->level()->Detach(entry.bucket, &detached);
  int64_t now_ns = NowNs();
  // One pass over the detached nodes, fetching the ones kPrefetch ahead
  // into the cache meanwhile: a big bucket is mostly cache misses.
  const size_t count = detached.size();
  for (size_t i = 0; i < count; ++i) {
    if (i + kPrefetch < count) {
      const char* ahead =
          reinterpret_cast<const char*>(detached[i + kPrefetch]);
      __builtin_prefetch(ahead, 1);
      __builtin_prefetch(ahead + 64, 1);
      __builtin_prefetch(ahead + sizeof(TimerNode) - 1, 1);
    }
    if (ready != nullptr && i > 0 && i % kFlushSlice == 0) {
      // A big bucket takes milliseconds, while none of its timers is due
      // before its expiration (it was released early, see wheel_level.h):
      // the buckets released meanwhile whose timers come due no later go
      // first, each in full. Later ones wait: a big bucket of a higher level
      // flushed in full here would hold up the level-0 buckets.
      SubmitBatch(&scratch->batch);
      TakeInbox(ready);
      const int64_t expiration = ExpirationOf(entry);
      bool flushed = false;
      while (!ready->empty() && ExpirationOf(ready->top()) <= expiration) {
        const DelayQueue::Entry due = ready->top();
        ready->pop();
        Flush(due, nested, nullptr, nullptr);
        flushed = true;
      }
      if (flushed) now_ns = NowNs();
    }
    PlaceAgain(detached[i], now_ns, scratch);
    // Let the workers start on a huge bucket before it is all moved. No node
    // lock is held here: a worker may run and free a node of the batch at
    // once.
    if (scratch->batch.size() >= kSubmitChunk) SubmitBatch(&scratch->batch);
  }
  SubmitBatch(&scratch->batch);
  // A huge bucket's array is not kept for the next, small ones.
  detached.clear();
  if (detached.capacity() > kKeptDetachedCapacity) detached.shrink_to_fit();
  // Released with no node lock held: the last reference frees the node.
  for (TimerNode* node : scratch->dropped) node->Unref();
  scratch->dropped.clear();
  queue_.Done(1);
}

void Engine::PlaceAgain(TimerNode* node, int64_t now_ns,
                        FlushScratch* scratch) {
  SpinLockHolder lock(&node->mu);
  const uint64_t word = node->LoadState();
  if (StateOf(word) != State::kPending) {
    node->where.store(nullptr, std::memory_order_release);
    scratch->dropped.push_back(node);  // stopped or cancelled
    return;
  }
  const uint64_t gen = GenerationOf(word);
  switch (Arm(node, node->deadline_ns, now_ns, gen, &scratch->batch)) {
    case ArmResult::kArmed:
      break;
    case ArmResult::kClosed:
      CancelUnplaced(node, gen, /*count=*/true);
      scratch->dropped.push_back(node);
      break;
    case ArmResult::kDropped:
      scratch->dropped.push_back(node);
      break;
  }
}

void Engine::RunTask(const WorkerPool::Task& task, int worker) {
  TimerNode* node = task.node;
  const bool periodic = node->periodic();
  uint64_t expected = MakeStateWord(task.generation, State::kDispatched);
  if (!node->CasState(expected, MakeStateWord(task.generation,
                                              periodic ? State::kRunningArmed
                                                       : State::kRunning))) {
    node->Unref();  // stopped, reset or cancelled since it was dispatched
    return;
  }
  if (!periodic) CountRetired();
  lateness_[worker]->Record(NowNs() - task.deadline_ns);
  try {
    ScopedCallback current(this, node);
    node->callback();
  } catch (...) {
    thrown_.Add(1);
    failures_.Report(Failure::Kind::kCallbackThrew,
                     FailureReporter::CurrentExceptionText());
  }
  std::optional<int64_t> next_ns;
  if (periodic) next_ns = NextRun(node, task.deadline_ns);
  if (!AfterRun(node, task.generation, next_ns)) node->Unref();
}

std::optional<int64_t> Engine::NextRun(TimerNode* node, int64_t deadline_ns) {
  const int64_t now_ns = NowNs();
  std::optional<absl::Duration> delay;
  try {
    // Only the worker that ran the callback gets here, so calls to one
    // scheduler never overlap.
    delay =
        node->scheduler->NextDelay({origin_ + absl::Nanoseconds(deadline_ns),
                                    origin_ + absl::Nanoseconds(now_ns)});
  } catch (...) {
    schedulers_thrown_.fetch_add(1, std::memory_order_relaxed);
    failures_.Report(Failure::Kind::kSchedulerThrew,
                     FailureReporter::CurrentExceptionText());
    return std::nullopt;
  }
  if (!delay.has_value()) return std::nullopt;
  if (*delay <= absl::ZeroDuration()) {
    // As soon as possible, but never in a loop on this worker: at the next
    // tick boundary after now (scheduler.h says so).
    const int64_t tick_start_ns = now_ns - now_ns % tick_ns_;
    if (tick_start_ns > max_deadline_ns_ - tick_ns_) return std::nullopt;
    return tick_start_ns + tick_ns_;
  }
  const int64_t delay_ns = CeilNs(*delay);
  if (delay_ns > max_deadline_ns_ - now_ns) {
    return std::nullopt;  // out of range: the schedule ends
  }
  return now_ns + delay_ns;
}

bool Engine::AfterRun(TimerNode* node, uint64_t gen,
                      std::optional<int64_t> next_ns) {
  if (!node->periodic()) {
    // A one-shot timer that no Reset re-armed while it ran is done: one CAS,
    // no node lock. Otherwise (kRunningArmed) Rearm, under the lock, reads
    // the deadline the Reset left. A Stop that turned kRunningArmed back into
    // kRunning leaves has_rearm set; a one-shot node reads it only in
    // kRunningArmed, which only a Reset, setting it anew, leads to.
    uint64_t expected = MakeStateWord(gen, State::kRunning);
    if (node->CasState(expected, MakeStateWord(gen, State::kDone))) {
      return false;
    }
  }
  std::vector<WorkerPool::Task> due;
  bool handed_on;
  {
    SpinLockHolder lock(&node->mu);
    handed_on = Rearm(node, gen, next_ns, &due);
  }
  SubmitBatch(&due);  // with no lock held: an executor may run it inline
  return handed_on;
}

bool Engine::Rearm(TimerNode* node, uint64_t gen,
                   std::optional<int64_t> next_ns,
                   std::vector<WorkerPool::Task>* due) {
  for (;;) {
    uint64_t word = node->LoadState();
    if (StateOf(word) != State::kRunningArmed) {
      node->has_rearm = false;
      if (node->CasState(word, MakeStateWord(gen, State::kDone))) return false;
      continue;
    }
    if (!node->has_rearm && !next_ns.has_value()) {
      // The schedule ended: the timer is no longer pending.
      if (node->CasState(word, MakeStateWord(gen, State::kDone))) {
        CountRetired();
        return false;
      }
      continue;
    }
    const int64_t deadline_ns =
        node->has_rearm ? node->rearm_deadline_ns : *next_ns;
    if (!node->CasState(word, MakeStateWord(gen + 1, State::kPending))) {
      continue;  // a Stop won: re-read
    }
    node->has_rearm = false;
    switch (Arm(node, deadline_ns, NowNs(), gen + 1, due)) {
      case ArmResult::kArmed:
        return true;
      case ArmResult::kClosed:
        CancelUnplaced(node, gen + 1, /*count=*/true);
        return false;
      case ArmResult::kDropped:
        return false;
    }
  }
}

int64_t Engine::Shutdown() {
  bool first;
  {
    MutexLock lock(&shutdown_mu_);
    first = !shutdown_started_;
    shutdown_started_ = true;
    if (!first) {
      // A callback must not wait for the Shutdown that waits for it.
      if (tls_engine == this) return 0;
      while (!shutdown_done_) shutdown_cv_.Wait(&shutdown_mu_);
    }
  }
  if (!first) {
    // The first Shutdown may have come from a callback, which it could not
    // wait for; this caller can.
    pool_->WaitNoneRunning();
    return 0;
  }
  closed_.store(true, std::memory_order_seq_cst);
  while (resets_in_flight_.Sum(std::memory_order_seq_cst) >
         tls_resets_in_flight) {
    std::this_thread::yield();  // a Reset holds no lock for long
  }
  queue_.Close();
  {
    MutexLock lock(&inbox_mu_);
    inbox_closed_ = true;
    inbox_cv_.NotifyAll();
  }
  // A callback run inline on the advancer (the user's executor) may be the
  // caller: that thread cannot join itself. It is detached; it finds the
  // wheel closed when the callback returns, cancels what it still holds
  // (counted in Stats::cancelled) and exits.
  JoinOrDetach(&poller_);
  JoinOrDetach(&advancer_);

  // Nothing moves timers any more but callers' Stop and Reset, which the
  // node states arbitrate. Cancel what is in the buckets and the pool queue.
  std::vector<TimerNode*> nodes;
  for (const std::unique_ptr<Lane>& lane : lanes_) {
    for (WheelLevel* level = lane->level0.get(); level != nullptr;
         level = level->overflow()) {
      level->Close(&nodes);
    }
  }
  std::vector<TimerNode*> cancelled_nodes;
  for (TimerNode* node : nodes) {
    {
      SpinLockHolder lock(&node->mu);
      node->where.store(nullptr, std::memory_order_release);
    }
    if (CancelPending(node, WheelLevel::kAnyGeneration)) {
      cancelled_nodes.push_back(node);
    } else {
      node->Unref();  // stopped, only waiting in its bucket to be dropped
    }
  }
  for (const WorkerPool::Task& task : pool_->Close()) {
    if (CancelPending(task.node, task.generation)) {
      cancelled_nodes.push_back(task.node);
    } else {
      task.node->Unref();  // a stale task: stopped or reset since
    }
  }
  // Nobody will run these: destroy their callbacks now, with no lock held
  // (a callback's destructor may call into the wheel).
  int64_t cancelled = static_cast<int64_t>(cancelled_nodes.size());
  for (TimerNode* node : cancelled_nodes) {
    node->callback = nullptr;
    node->Unref();
  }
  pool_->Join();
  // The caller's own periodic timer, when a callback shuts its wheel down.
  if (tls_engine == this && tls_node != nullptr) {
    uint64_t word = tls_node->LoadState();
    if (StateOf(word) == State::kRunningArmed &&
        tls_node->CasState(
            word, MakeStateWord(GenerationOf(word), State::kRunning))) {
      CountRetired();
      ++cancelled;
    }
  }
  cancelled += cancelled_after_run_.exchange(0, std::memory_order_relaxed);
  cancelled_.fetch_add(cancelled, std::memory_order_relaxed);
  {
    MutexLock lock(&shutdown_mu_);
    shutdown_done_ = true;
    shutdown_cv_.NotifyAll();
  }
  return cancelled;
}

Stats Engine::GetStats() const {
  Stats stats;
  stats.pending = Pending();
  stats.scheduled = scheduled_.Sum();
  stats.stopped = stopped_.Sum();
  // Shutdown moves the cancels made after it closed the wheel into
  // cancelled_; those a detached advancer makes later stay in the other.
  stats.cancelled = cancelled_.load(std::memory_order_relaxed) +
                    cancelled_after_run_.load(std::memory_order_relaxed);
  stats.callbacks_thrown = thrown_.Sum();
  stats.schedulers_thrown = schedulers_thrown_.load(std::memory_order_relaxed);
  stats.executor_threw = executor_threw_.load(std::memory_order_relaxed);
  stats.executor_dropped = executor_dropped_.load(std::memory_order_relaxed);
  stats.worker_queue_depth = pool_->QueueDepth();
  for (const std::unique_ptr<Lane>& lane : lanes_) {
    int levels = 0;
    for (const WheelLevel* level = lane->level0.get(); level != nullptr;
         level = level->overflow()) {
      ++levels;
    }
    stats.levels = std::max(stats.levels, levels);
  }
  stats.queued_buckets = queue_.size();
  LatencyHistogram lateness;
  for (const auto& histogram : lateness_) lateness.MergeFrom(*histogram);
  stats.fired = lateness.Count();
  stats.lateness_p50 = absl::Nanoseconds(lateness.Percentile(0.5));
  stats.lateness_p99 = absl::Nanoseconds(lateness.Percentile(0.99));
  stats.lateness_p999 = absl::Nanoseconds(lateness.Percentile(0.999));
  stats.lateness_max = absl::Nanoseconds(lateness.Max());
  return stats;
}

void Engine::WaitIdle() const {
  while (!closed_.load(std::memory_order_acquire)) {
    if (queue_.IsIdle() && pool_->Outstanding() == 0 && queue_.IsIdle()) {
      return;
    }
    std::this_thread::yield();
  }
}

}  // namespace timingwheel::internal
