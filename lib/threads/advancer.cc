// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "threads/advancer.h"

#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <algorithm>
#include <cassert>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "threads/task_queue.h"
#include "threads/thread_starter.h"

namespace timingwheel::internal {
namespace {

// Timers a round moves (down a level, or out as due) between two readings
// of the clock and two hand-offs to the runner: the workers start on a
// burst before all of it is moved.
constexpr int64_t kSlice = 1024;
// The most tasks the workers' queue holds before the advancer waits for
// them to start some (the queue's kept size: no chunk is allocated beyond
// it), and how long it sleeps between two looks at the queue.
constexpr int64_t kMaxQueued =
    static_cast<int64_t>(TaskQueue::kChunkTasks * TaskQueue::kKeptChunks);
constexpr absl::Duration kDrainWait = absl::Microseconds(50);
// How far ahead ApplyInbox fetches the nodes of the submissions.
constexpr size_t kPrefetch = 8;
// While submissions keep coming, the advancer looks at the inbox at least
// this often (advancer.h).
constexpr int64_t kLookEveryNs = Inbox::kHorizonNs;
// Polling (advancer.h): how long the advancer sleeps between two looks at
// the inbox, and at most after rounds in which fewer than one call in
// kEndedShare left an arm to claim; over what time it measures the rate of
// pushes; the rate at which it starts polling, and the one below which it
// stops (per second).
constexpr absl::Duration kPollEvery = absl::Microseconds(50);
constexpr absl::Duration kMaxPollEvery = absl::Microseconds(800);
constexpr size_t kEndedShare = 8;
constexpr int64_t kRateWindowNs = 10'000'000;
constexpr double kPollFromRate = 200'000;
constexpr double kPollUntilRate = 100'000;

}  // namespace

Advancer::Advancer(const TimeBase* time, int wheel_size, Inbox* inbox,
                   Runner* runner, TimerCounts* counts, NodePools* nodes)
    : time_(time),
      inbox_(inbox),
      runner_(runner),
      counts_(counts),
      nodes_(nodes),
      core_(wheel_size, time->tick_ns()),
      alarm_(time),
      look_ticks_(std::max<int64_t>(1, kLookEveryNs / time->tick_ns())),
      poll_from_rate_(kPollFromRate) {}

absl::Status Advancer::Start(
    RefCounted* owner, const std::function<void(ThreadRole)>& on_thread_start) {
  // Each thread's reference is released as it exits, or here if it could
  // not start.
  owner->Ref();
  absl::StatusOr<std::thread> poller =
      ThreadStarter::Start([this, owner, on_thread_start] {
        on_thread_start(ThreadRole::kPoller);
        PollerLoop();
        owner->Unref();
      });
  if (!poller.ok()) {
    owner->Unref();
    return absl::ResourceExhaustedError(
        absl::StrCat("the poller: ", poller.status().message()));
  }
  poller_ = *std::move(poller);
  owner->Ref();
  absl::StatusOr<std::thread> advancer =
      ThreadStarter::Start([this, owner, on_thread_start] {
        advancer_id_.store(std::this_thread::get_id(),
                           std::memory_order_release);
        on_thread_start(ThreadRole::kAdvancer);
        AdvancerLoop();
        owner->Unref();
      });
  if (!advancer.ok()) {
    owner->Unref();
    Stop();  // joins the poller
    return absl::ResourceExhaustedError(
        absl::StrCat("the advancer: ", advancer.status().message()));
  }
  advancer_ = *std::move(advancer);
  return absl::OkStatus();
}

void Advancer::Stop() {
  stopping_.store(true, std::memory_order_release);
  alarm_.Close();
  inbox_->Wake();
  {
    MutexLock lock(&request_mu_);
    requests_closed_ = true;
    request_cv_.NotifyAll();
  }
  // A task run inline on the advancer (the user's executor) may be the
  // caller: that thread cannot join itself. It is detached, and exits when
  // the task returns.
  for (std::thread* thread : {&poller_, &advancer_}) {
    if (!thread->joinable()) continue;
    if (thread->get_id() == std::this_thread::get_id()) {
      thread->detach();
    } else {
      thread->join();
    }
  }
}

void Advancer::PollerLoop() {
#ifdef __linux__
  // Linux lets a timed sleep overrun by the thread's timer slack, 50 us by
  // default, to batch wake-ups; every timer would be that much later. The
  // poller wakes once per due release, not per tick, so it asks for 1 us.
  prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
#endif
  while (alarm_.Wait()) inbox_->Wake();
}

void Advancer::AdvancerLoop() {
#ifdef __linux__
  // A polling advancer sleeps kPollEvery at a time, and each sleep's
  // overrun adds to the hand-off wait: as the poller, it asks for 1 us.
  prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
#endif
  while (!stopping_.load(std::memory_order_acquire)) {
    const uint64_t asked = rounds_asked_.load(std::memory_order_acquire);
    const bool worked = Round();
    const int64_t next = WakeTick();
    alarm_.Set(next);
    last_round_idle_.store(!worked, std::memory_order_relaxed);
    rounds_ended_.store(asked, std::memory_order_release);
    AfterRound();
    // Stopped, maybe by the code AfterRound ran on this thread: then the
    // core is no longer this thread's.
    if (stopping_.load(std::memory_order_acquire)) break;
    if (rounds_asked_.load(std::memory_order_acquire) != asked) continue;
    UpdatePolling();
    paused_ = false;
    if (inbox_->Idle(polling_ ? Inbox::kPolling : next, last_now_tick_)) {
      sleeps_.fetch_add(1, std::memory_order_relaxed);
      if (polling_) {
        // Twice as long after each round in whose calls few arms were
        // left: most ended before it looked (advancer.h).
        const absl::Duration sleep =
            round_claims_ * kEndedShare < round_pushes_
                ? std::clamp(2 * absl::Nanoseconds(poll_sleep_ns_.load(
                                     std::memory_order_relaxed)),
                             kPollEvery, kMaxPollEvery)
                : kPollEvery;
        poll_sleep_ns_.store(absl::ToInt64Nanoseconds(sleep),
                             std::memory_order_relaxed);
        inbox_->SleepFor(sleep);
      } else {
        inbox_->Sleep();
      }
    }
  }
}

bool Advancer::Round() {
  submissions_came_ = false;
  round_pushes_ = round_claims_ = 0;
  bool worked = ApplyInbox() > 0;
  RunRequests();
  if (AdvanceAll()) worked = true;
  return worked;
}

bool Advancer::AdvanceAll() {
  bool worked = false;
  std::vector<CoreNode*>& due = scratch_.due;
  for (;;) {
    // The clock is read again for each slice, so that the timers of a big
    // cascade that come due meanwhile run at once (WheelCore::AdvanceSome).
    last_now_ns_ = time_->NowNs();
    const int64_t now_tick = last_now_ns_ / time_->tick_ns();
    last_now_tick_ = now_tick;
    const bool done = core_.AdvanceSome(now_tick, &due, kSlice);
    for (size_t i = 0; i < due.size(); ++i) {
      // Dispatch writes each node's state: fetch them ahead, so that their
      // misses overlap.
      if (i + kPrefetch < due.size()) __builtin_prefetch(due[i + kPrefetch], 1);
      Dispatch(static_cast<TimerNode*>(due[i]));
    }
    due.clear();
    if (!scratch_.batch.empty()) worked = true;
    QueueBatch();
    if (done) return worked;
    // More than a slice: no submission waits unstamped for all of it.
    StopPolling();
    // Let the workers (or the executor) start on a burst before all of it
    // is moved. The code that runs may stop the advancer: then the core is
    // no longer this thread's.
    AfterRound();
    if (stopping_.load(std::memory_order_acquire)) return true;
    worked = true;
    WaitForWorkers();
    if (stopping_.load(std::memory_order_acquire)) return true;
  }
}

void Advancer::WaitForWorkers() {
  if (!runner_->OwnWorkers()) return;  // the executor's queue is its own
  while (runner_->QueueDepth() > kMaxQueued &&
         !stopping_.load(std::memory_order_acquire) && !RequestWaits()) {
    absl::SleepFor(kDrainWait);
  }
}

bool Advancer::RequestWaits() {
  MutexLock lock(&request_mu_);
  return !requests_.empty();
}

int64_t Advancer::WakeTick() {
  const int64_t release = core_.NextRelease().value_or(Inbox::kNever);
  if (!submissions_came_) return release;
  return std::min(release, last_now_tick_ + look_ticks_);
}

size_t Advancer::ApplyInbox() {
  Inbox::Taken& taken = scratch_.submissions;
  const size_t pushes = inbox_->Take(&taken, polling_ && !paused_);
  if (pushes > 0) submissions_came_ = true;
  round_pushes_ += pushes;
  window_pushes_ += pushes;
  const size_t count = taken.size();
  if (count == 0) return 0;
  // One reading for the whole take, after it: each arm waited until now,
  // and an unstamped one is stamped with it (never before its call).
  const int64_t now_ns = time_->NowNs();
  RecordHandOffs(taken, now_ns);
  taken.ForEachChunk([this, now_ns](const Submission* items, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      // The nodes were written on the callers' cores: fetch them ahead, so
      // that their misses overlap instead of following one another.
      if (i + kPrefetch < n) __builtin_prefetch(items[i + kPrefetch].node, 1);
      Apply(items[i], now_ns);
    }
  });
  inbox_->Recycle(&taken);
  return count;
}

void Advancer::RecordHandOffs(const Inbox::Taken& taken, int64_t now_ns) {
  taken.ForEachChunk([&](const Submission* items, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      if (!items[i].arm() || items[i].call_ns == Submission::kNoCallTime) {
        continue;
      }
      if (handoffs_ == nullptr) {
        handoffs_ =
            std::make_unique<LatencyHistogram>(LatencyHistogram::Writers::kOne);
        handoffs_published_.store(handoffs_.get(), std::memory_order_release);
      }
      // A sampled unstamped arm stands for the kSampleEvery of its ring.
      handoffs_->Record(now_ns - items[i].call_ns,
                        items[i].kind == Submission::Kind::kArmUnstamped
                            ? Inbox::kSampleEvery
                            : 1);
    }
  });
}

void Advancer::UpdatePolling() {
  if (!time_->steady()) return;  // another clock is cheap to read
  const int64_t elapsed_ns = last_now_ns_ - window_start_ns_;
  if (elapsed_ns < kRateWindowNs) return;
  const double rate = static_cast<double>(window_pushes_) * 1e9 /
                      static_cast<double>(elapsed_ns);
  const double from = poll_from_rate_.load(std::memory_order_relaxed);
  polling_ = last_now_ns_ < kMaxUnstampedNs &&
             rate >= (polling_ ? std::min(kPollUntilRate, from) : from);
  window_start_ns_ = last_now_ns_;
  window_pushes_ = 0;
}

void Advancer::StopPolling() {
  paused_ = true;
  inbox_->StopPolling(
      [this] { return time_->NowNs(); },
      [](TimerNode* node, int64_t now_ns) { node->StampDeadline(now_ns); });
}

void Advancer::MergeHandOffs(LatencyHistogram* out) const {
  const LatencyHistogram* handoffs =
      handoffs_published_.load(std::memory_order_acquire);
  if (handoffs != nullptr) out->MergeFrom(*handoffs);
}

void Advancer::Apply(const Submission& s, int64_t now_ns) {
  TimerNode* node = s.node;
  // Before the claim below: a linked arm is stamped (timer_state.h).
  if (s.kind == Submission::Kind::kArmUnstamped) node->StampDeadline(now_ns);
  // A link whose arm ended goes: the kUnlink of a Stop, or the kArm of a
  // Reset that moves a linked timer (its old arm's link bit went with it).
  if (node->linked() && !IsLinkedPending(node->LoadState())) {
    core_.Remove(node);
    node->Unref(nodes_);  // the bucket's; the submission's is still held
  }
  // Each arm is pushed once, so the node is in no bucket now. Claim the
  // arm's link; a Stop, Reset or cancel since the push makes it stale.
  const uint64_t claimed = MakeStateWord(s.gen, State::kPending) | kLinkedBit;
  uint64_t expected = MakeStateWord(s.gen, State::kPending);
  if (s.kind == Submission::Kind::kUnlink ||
      !node->CasState(expected, claimed)) {
    // This arm linked or dispatched already: the inbox handed it on twice.
    // The state word makes the second claim fail (no double run), but the
    // Drop would take a reference that the bucket or the task holds.
    assert(s.kind == Submission::Kind::kUnlink ||
           (expected != claimed &&
            expected != MakeStateWord(s.gen, State::kDispatched)) ||
           !"an arm taken twice from the inbox");
    Drop(node);  // stale: the submission's reference goes
    return;
  }
  ++round_claims_;
  // The submission's reference becomes the bucket's, or the task's. The
  // deadline read after the claim: this arm's, or a later one's, whose
  // compare-and-swap Dispatch's then meets (timer_state.h, Locking).
  if (!core_.Add(node)) Dispatch(node);
}

void Advancer::Dispatch(TimerNode* node) {
  // Read before the compare-and-swap: if that succeeds, no later arm's
  // deadline was written before this read (each is written after its own
  // compare-and-swap), so this is the arm's.
  const int64_t deadline_ns = node->expiration();
  uint64_t word = node->LoadState();
  const uint64_t gen = GenerationOf(word);
  if (!IsLinkedPending(word) ||
      !node->CasState(word, MakeStateWord(gen, State::kDispatched))) {
    Drop(node);  // stopped, reset or cancelled meanwhile
    return;
  }
  scratch_.batch.push_back({node, gen, deadline_ns});  // the reference too
}

void Advancer::Drop(TimerNode* node) {
  if (!node->UnrefIfNotLast()) scratch_.dropped.push_back(node);
}

void Advancer::QueueBatch() {
  runner_->Queue(&scratch_.batch, &scratch_.hand_offs, &scratch_.dropped);
}

void Advancer::AfterRound() {
  // The user's executor may run the tasks here, for as long as they take.
  if (!scratch_.hand_offs.empty()) StopPolling();
  // Each loop runs user code, which may queue more (CancelAll run inline).
  while (!scratch_.hand_offs.empty() || !scratch_.dropped.empty()) {
    std::vector<uint64_t> hand_offs;
    hand_offs.swap(scratch_.hand_offs);
    runner_->HandOff(&hand_offs);
    std::vector<TimerNode*> dropped;
    dropped.swap(scratch_.dropped);
    for (TimerNode* node : dropped) node->Unref(nodes_);
  }
}

void Advancer::RunRequests() {
  std::vector<Request*> requests;
  {
    MutexLock lock(&request_mu_);
    requests.swap(requests_);
    for (Request* request : requests) request->taken = true;
  }
  if (requests.empty()) return;
  StopPolling();  // they may take long
  // What was pushed before the requests were made, too.
  ApplyInbox();
  QueueBatch();
  for (Request* request : requests) request->fn();
  MutexLock lock(&request_mu_);
  for (Request* request : requests) request->done = true;
  request_cv_.NotifyAll();
}

bool Advancer::RunOnOwner(absl::FunctionRef<void()> fn) {
  if (OnAdvancerThread()) {
    if (stopping_.load(std::memory_order_acquire)) return false;
    ApplyInbox();
    QueueBatch();
    fn();
    return true;
  }
  Request request{fn};
  {
    MutexLock lock(&request_mu_);
    if (requests_closed_) return false;
    requests_.push_back(&request);
  }
  inbox_->Wake();
  MutexLock lock(&request_mu_);
  // A request the advancer has taken runs to its end, even when stopping.
  while (!request.done && !(requests_closed_ && !request.taken)) {
    request_cv_.Wait(&request_mu_);
  }
  if (request.done) return true;
  // Stopped first: take the request back (the advancer runs it no more).
  for (auto it = requests_.begin(); it != requests_.end(); ++it) {
    if (*it == &request) {
      requests_.erase(it);
      break;
    }
  }
  return false;
}

bool Advancer::Sync() const {
  const uint64_t asked =
      rounds_asked_.fetch_add(1, std::memory_order_acq_rel) + 1;
  inbox_->Wake();
  while (rounds_ended_.load(std::memory_order_acquire) < asked) {
    if (stopping_.load(std::memory_order_acquire)) return false;
    std::this_thread::yield();
  }
  return last_round_idle_.load(std::memory_order_relaxed);
}

void Advancer::CancelEverything(std::vector<TimerNode*>* cancelled,
                                std::vector<TimerNode*>* taken,
                                std::vector<TimerNode*>* released) {
  runner_->ForEachTask([&](const DueTimer& task, bool is_taken) {
    if (is_taken) {
      task.node->Ref();
      taken->push_back(task.node);
    } else if (task.node->Cancel(task.generation)) {
      task.node->Ref();  // the task keeps its own: a worker drops it later
      cancelled->push_back(task.node);
    }
  });
  ApplyInbox();
  for (const DueTimer& task : scratch_.batch) {
    if (task.node->Cancel(task.generation)) {
      task.node->Ref();  // as above: the task is queued, and does nothing
      cancelled->push_back(task.node);
    }
  }
  QueueBatch();
  std::vector<TimerNode*> linked;
  TakeAllLinked(&linked);
  for (TimerNode* node : linked) {
    // With the core's reference.
    (node->Cancel(kAnyGeneration) ? cancelled : released)->push_back(node);
  }
}

void Advancer::TakeAllLinked(std::vector<TimerNode*>* out) {
  std::vector<CoreNode*> linked;
  core_.TakeAll(&linked);
  for (CoreNode* node : linked) out->push_back(static_cast<TimerNode*>(node));
}

}  // namespace timingwheel::internal
