// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "faces/loop_engine.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <new>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/placement.h"
#include "faces/options_check.h"

namespace timingwheel::internal {
namespace {

// How many due timers ahead RunDue fetches.
constexpr size_t kRunAhead = 8;
// The room for due timers that RunDue keeps once they ran (512 KiB).
constexpr size_t kKeepDue = size_t{64} * 1024;
// The most due timers OrderDue orders at once, and Stage takes.
constexpr size_t kMaxOrdered = size_t{64} * 1024;

// Where a new engine's id generations start: each engine of the process
// elsewhere (steps of 2^32 divided by the golden ratio, which spread the
// starts evenly over the 31 bits used), so that an id passed to a wheel that
// reused its giver's memory does not match by the two wheels counting alike.
uint32_t FirstIdGeneration() {
  static std::atomic<uint32_t> engines{0};
  return engines.fetch_add(1, std::memory_order_relaxed) * 0x9E3779B9u;
}

}  // namespace

absl::StatusOr<LoopEngine*> LoopEngine::Create(LoopOptions options) {
  if (absl::Status status = CheckLoopOptions(&options); !status.ok()) {
    return status;
  }
  return new LoopEngine(std::move(options));
}

LoopEngine::LoopEngine(LoopOptions options)
    : time_(std::move(options.clock), options.tick),
      origin_ns_(absl::ToInt64Nanoseconds(time_.origin())),
      by_tick_(time_.tick_ns()),
      max_deadline_ns_(kMaxTick / time_.tick_ns() * time_.tick_ns()),
      max_pending_(options.max_pending),
      id_generation_(FirstIdGeneration()),
      bare_nodes_(kBareLoopBlock, options.spare_timers, &chunks_,
                  static_cast<uint8_t>(LoopNode::Kind::kBare) + 1),
      small_nodes_(kSmallLoopBlock, options.spare_timers, &chunks_,
                   static_cast<uint8_t>(LoopNode::Kind::kSmall) + 1),
      wide_nodes_(kWideLoopBlock, options.spare_timers, &chunks_,
                  static_cast<uint8_t>(LoopNode::Kind::kWide) + 1),
      periodic_nodes_(kPeriodicLoopBlock, options.spare_timers),
      core_(options.wheel_size, time_.tick_ns()),
      next_tick_at_(NextTickAt()) {}

void LoopEngine::CheckThreadSlow(const char* what) {
  const std::thread::id self = std::this_thread::get_id();
  if (owner_ == std::thread::id()) owner_ = self;
  if (owner_ == self) return;
  std::ostringstream message;
  message << "timingwheel: " << what << " called on thread " << self
          << ", but this LoopWheel belongs to thread " << owner_
          << " (the first to call it): a LoopWheel and its LoopTimers are "
             "for the loop's thread only\n";
  std::fputs(message.str().c_str(), stderr);
  std::abort();
}

void LoopEngine::CloseAndRelease() {
  closed_ = true;
  std::vector<CoreNode*> cancelled;
  core_.TakeAll(&cancelled);
  for (size_t i = due_next_; i < due_.size(); ++i) {
    if (due_[i] != nullptr) cancelled.push_back(due_[i]);
  }
  ResetDue();
  for (size_t i = staged_next_; i < staged_.size(); ++i) {
    if (staged_[i] != nullptr) cancelled.push_back(staged_[i]);
  }
  staged_.clear();
  staged_next_ = 0;
  pending_ = 0;
  // Each callback is destroyed here, on the loop's thread; its destructor
  // may call into the wheel, which refuses new timers from now on.
  for (CoreNode* core_node : cancelled) {
    auto* node = static_cast<LoopNode*>(core_node);
    node->state = LoopNode::State::kCancelled;
    if (node->by_id()) {
      DropById(node);  // destroys the callable, frees the node
      continue;
    }
    const CallbackOps* ops = std::exchange(node->ops, nullptr);
    if (ops->destroy != nullptr) ops->destroy(node->callable());
    Unref(node);  // the wheel's; handles keep the node
  }
  UnrefEngine();
}

absl::Status LoopEngine::RefuseNew(CallbackRef f, const char* caller) const {
  if (f.ops == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(caller, ": the callback is empty; pass a callable"));
  }
  if (closed_) {
    return absl::FailedPreconditionError(
        absl::StrCat(caller, ": the LoopWheel is being destroyed"));
  }
  // The one reason left for MayAdd to refuse.
  return absl::ResourceExhaustedError(
      absl::StrCat(caller, ": ", pending_,
                   " timers are pending, LoopOptions::max_pending is ",
                   max_pending_, "; stop some or raise the limit"));
}

absl::Status LoopEngine::RefuseAfter(absl::Duration d, CallbackRef f,
                                     const char* caller) const {
  if (d == absl::InfiniteDuration() || d == -absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        caller, ": duration is ", absl::FormatDuration(d),
        "; it must be finite (every duration up to 100 years works)"));
  }
  if (!MayAdd(f)) return RefuseNew(f, caller);
  // Past the supported range.
  return time_.DeadlineAfter(time_.NowNs(), d, caller).status();
}

absl::Status LoopEngine::RefuseSteady(int64_t steady_ns, CallbackRef f) const {
  if (!time_.steady()) {
    return absl::InvalidArgumentError(
        "At: the time point is steady_clock's, but this wheel's clock is not "
        "SteadyClock(); give AtClockTime a time of the wheel's own clock "
        "(as its Now() returns it)");
  }
  if (!MayAdd(f)) return RefuseNew(f, "At");
  // Past the supported range.
  return time_.DeadlineAt(absl::Nanoseconds(steady_ns), "At").status();
}

absl::StatusOr<int64_t> LoopEngine::AtDeadline(absl::Duration when,
                                               CallbackRef f,
                                               const char* caller) const {
  if (when == absl::InfiniteDuration() || when == -absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(caller, ": time is ",
                                                   absl::FormatDuration(when),
                                                   "; it must be finite"));
  }
  if (!MayAdd(f)) return RefuseNew(f, caller);
  return time_.DeadlineAt(when, caller);
}

absl::StatusOr<LoopTimer> LoopEngine::ScheduleAt(absl::Duration when,
                                                 CallbackRef f,
                                                 const char* caller) {
  absl::StatusOr<int64_t> deadline = AtDeadline(when, f, caller);
  if (!deadline.ok()) return deadline.status();
  return NewOneShot(f, *deadline);
}

absl::StatusOr<LoopTimerId> LoopEngine::ScheduleAtId(absl::Duration when,
                                                     CallbackRef f,
                                                     const char* caller) {
  absl::StatusOr<int64_t> deadline = AtDeadline(when, f, caller);
  if (!deadline.ok()) return deadline.status();
  return NewOneShotId(f, *deadline);
}

absl::StatusOr<LoopTimer> LoopEngine::SchedulePeriodic(
    std::unique_ptr<Scheduler> scheduler, CallbackRef f, const char* caller) {
  if (scheduler == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        caller, ": the scheduler is null; pass one, e.g. FixedRate(d)"));
  }
  if (!MayAdd(f)) return RefuseNew(f, caller);
  const int64_t now_ns = time_.NowNs();
  absl::StatusOr<int64_t> deadline =
      time_.FirstRunDeadline(*scheduler, now_ns, caller);
  if (!deadline.ok()) return deadline.status();
  return NewPeriodic(f, std::move(scheduler), *deadline);
}

LoopTimer LoopEngine::NewPeriodic(CallbackRef f,
                                  std::unique_ptr<Scheduler> scheduler,
                                  int64_t deadline_ns) {
  return LoopTimer(this,
                   ArmNew(new (periodic_nodes_.Allocate())
                              PeriodicLoopNode(f.ops, std::move(scheduler)),
                          f, deadline_ns, 2));
}

void LoopEngine::ResetDue() {
  due_.clear();
  due_next_ = 0;
  // A burst's worth of room goes back.
  if (due_.capacity() > kKeepDue) std::vector<CoreNode*>().swap(due_);
}

void LoopEngine::Destroy(LoopNode* node) {
  // The callable's destructor may call into the wheel (and so may free
  // other nodes), but not this node: no handle refers to it any more.
  if (node->ops != nullptr && node->ops->destroy != nullptr) {
    node->ops->destroy(node->callable());
  }
  if (node->kind == LoopNode::Kind::kPeriodic) {
    static_cast<PeriodicLoopNode*>(node)->~PeriodicLoopNode();
    periodic_nodes_.Free(node);
  } else {
    static_assert(std::is_trivially_destructible_v<LoopNode>);
    (this->*kOneShotPools[static_cast<int>(node->kind)]).Free(node);
  }
  UnrefEngine();  // the node's
}

std::optional<absl::Duration> LoopEngine::TimeUntilNext() {
  for (; due_next_ < due_.size(); ++due_next_) {
    if (due_[due_next_] != nullptr) return absl::ZeroDuration();
  }
  std::optional<int64_t> release = core_.NextRelease();
  while (staged_next_ < staged_.size() && staged_[staged_next_] == nullptr) {
    ++staged_next_;  // stopped, or moved to `due_`
  }
  if (staged_next_ < staged_.size() &&
      (!release.has_value() || staged_tick_ < *release)) {
    release = staged_tick_;  // the rest of the staged timers are due then
  }
  if (!release.has_value()) return std::nullopt;
  const int64_t release_ns = *release > kMaxTick / time_.tick_ns()
                                 ? kMaxTick
                                 : *release * time_.tick_ns();
  return absl::Nanoseconds(std::max<int64_t>(0, release_ns - time_.NowNs()));
}

int64_t LoopEngine::RunDue(std::optional<absl::Duration> now) {
  if (closed_) return 0;
  const size_t first_due = due_.size();
  // A time the loop read itself (its cached time) in the wheel's tick, with
  // no bucket released by that tick: Advance would find nothing, and the
  // turn reads no clock and converts no time.
  if (!now.has_value() || *now >= next_tick_at_ ||
      !core_.NoneReleasedBy(core_.now_tick())) {
    // Never past the clock's reading, since a deadline is only due once
    // the clock reached it.
    int64_t now_ns = time_.NowNs();
    if (now.has_value()) {
      now_ns =
          std::min(now_ns, absl::ToInt64Nanoseconds(*now - time_.origin()));
    }
    const int64_t now_tick = TickAt(now_ns);
    // The staged tick came: its timers are due, before its newcomers.
    if (!staged_.empty() && now_tick >= staged_tick_) UnstageAll();
    core_.Advance(now_tick, &due_, WheelCore::Cascades::kSpread);
    next_tick_at_ = NextTickAt();
    Stage(now_ns);
  }
  if (due_.empty()) {
    // A turn with nothing due (the common one: a loop's turns outnumber its
    // due ticks) only places its share of the cascades.
    core_.CascadeSome();
    return 0;
  }
  OrderDue(first_due);
  // A callback may destroy the LoopWheel, or throw.
  struct Hold {
    explicit Hold(LoopEngine* engine) : engine(engine) { engine->RefEngine(); }
    ~Hold() { engine->UnrefEngine(); }
    LoopEngine* const engine;
  } hold(this);
  int64_t ran = 0;
  // By index: a callback may append to `due_`, or run RunDue itself.
  while (!closed_ && due_next_ < due_.size()) {
    // Due timers lie far apart in memory: fetch some ahead while this runs.
    if (due_next_ + kRunAhead < due_.size() &&
        due_[due_next_ + kRunAhead] != nullptr) {
      __builtin_prefetch(due_[due_next_ + kRunAhead], 1);
    }
    CoreNode* const core_node = due_[due_next_++];
    if (core_node == nullptr) continue;  // stopped while due
    auto* node = static_cast<LoopNode*>(core_node);
    ++ran;
    Run(node);
  }
  if (due_next_ == due_.size()) ResetDue();
  // The due callbacks ran on time; now a share of the cascades pending.
  if (!closed_) core_.CascadeSome();
  return ran;
}

void LoopEngine::OrderDue(size_t first) {
  // A burst runs as it came: ordering it would read every node once more,
  // and far more than a cache holds.
  if (due_.size() - first > kMaxOrdered) return;
  // Advance appended the due timers bucket by bucket, so tick by tick.
  size_t begin = first;
  while (begin < due_.size()) {
    const int64_t tick = core_.TickOf(due_[begin]->expiration());
    size_t end = begin + 1;
    while (end < due_.size() && core_.TickOf(due_[end]->expiration()) == tick) {
      ++end;
    }
    if (end - begin > 1) OrderTick(&due_, begin, end, tick, 0, nullptr);
    begin = end;
  }
}

void LoopEngine::OrderTick(std::vector<CoreNode*>* list, size_t begin,
                           size_t end, int64_t tick, uint32_t index_bit,
                           size_t* part_ends) {
  // A counting sort by the part of the tick a deadline falls in.
  const TickParts part(tick, time_.tick_ns());
  std::vector<CoreNode*>& nodes = *list;
  size_t at[kTickParts + 1] = {};
  for (size_t i = begin; i < end; ++i) {
    ++at[part(nodes[i]->expiration()) + 1];
  }
  for (int k = 1; k <= kTickParts; ++k) at[k] += at[k - 1];
  ordered_.resize(end - begin);
  for (size_t i = begin; i < end; ++i) {
    ordered_[at[part(nodes[i]->expiration())]++] = nodes[i];
  }
  // Each at[k] is now the end of part k.
  if (part_ends != nullptr) {
    for (int k = 0; k < kTickParts; ++k) part_ends[k] = begin + at[k];
  }
  for (size_t i = begin; i < end; ++i) {
    CoreNode* const node = ordered_[i - begin];
    node->next = static_cast<uint32_t>(i) | index_bit;  // its place
    nodes[i] = node;
  }
  ordered_.clear();
}

void LoopEngine::Stage(int64_t now_ns) {
  if (staged_next_ == staged_.size()) {
    staged_.clear();
    staged_next_ = 0;
    if (core_.TakeNextBucket(static_cast<int64_t>(kMaxOrdered), &staged_) ==
        0) {
      return;
    }
    staged_tick_ = core_.now_tick() + 1;
    OrderTick(&staged_, 0, staged_.size(), staged_tick_, kStagedBit,
              staged_ends_);
    stage_again_ns_ = std::numeric_limits<int64_t>::min();
  }
  // A loop that turns often (RunDue reading the clock) looks again only
  // once a staged deadline may have passed.
  if (now_ns < stage_again_ns_) return;
  // Every timer of the parts before now's is due (a part is non-decreasing
  // in the deadline); of now's part, those whose deadline passed.
  const TickParts part(staged_tick_, time_.tick_ns());
  const int now_part = part(now_ns);
  const size_t now_end = staged_ends_[now_part];
  // The next part starts no earlier than this.
  stage_again_ns_ =
      part.start_ns + (now_part + 1) * (time_.tick_ns() / kTickParts);
  for (size_t i = staged_next_; i < now_end; ++i) {
    CoreNode* const node = staged_[i];
    if (node == nullptr) continue;
    if (node->expiration() > now_ns) {
      stage_again_ns_ = std::min(stage_again_ns_, node->expiration());
      continue;
    }
    staged_[i] = nullptr;
    AppendDue(node);
  }
  staged_next_ =
      std::max(staged_next_, now_part > 0 ? staged_ends_[now_part - 1] : 0);
}

void LoopEngine::UnstageAll() {
  for (size_t i = staged_next_; i < staged_.size(); ++i) {
    CoreNode* const node = staged_[i];
    if (node != nullptr) AppendDue(node);
  }
  staged_.clear();
  staged_next_ = 0;
}

void LoopEngine::Run(LoopNode* node) {
  const bool periodic = node->kind == LoopNode::Kind::kPeriodic;
  node->state =
      periodic ? LoopNode::State::kRunningArmed : LoopNode::State::kRunning;
  if (!periodic) --pending_;
  const int64_t run_deadline_ns = node->deadline_ns();
  try {
    node->ops->run(node->callable());
  } catch (...) {
    // The exception reaches the caller of RunDue; the timer is finished
    // first, and the other due timers run in the next RunDue.
    AfterRun(node, run_deadline_ns);
    throw;
  }
  AfterRun(node, run_deadline_ns);
}

void LoopEngine::AfterRun(LoopNode* node, int64_t run_deadline_ns) {
  using State = LoopNode::State;
  if (node->state == State::kCancelled) return;  // closed during the run
  if (closed_) {
    node->state = State::kCancelled;
    Drop(node);
    return;
  }
  if (node->state == State::kRunningArmed) {
    if (node->has_rearm) {
      Arm(node, node->deadline_ns());
      return;
    }
    // A periodic timer not stopped during its run: its scheduler says when
    // it runs next.
    const int64_t now_ns = time_.NowNs();
    std::optional<absl::Duration> delay;
    try {
      delay = static_cast<PeriodicLoopNode*>(node)->scheduler->NextDelay(
          {time_.ToClock(run_deadline_ns), time_.ToClock(now_ns)});
    } catch (...) {
      node->state = State::kDone;
      --pending_;
      Drop(node);
      throw;
    }
    const std::optional<int64_t> next =
        delay.has_value() ? time_.NextRunAfter(now_ns, *delay) : std::nullopt;
    if (next.has_value()) {
      Arm(node, *next);
      return;
    }
    --pending_;  // the schedule ended
  }
  node->state = State::kDone;
  Drop(node);
}

bool LoopEngine::Reset(LoopNode* node, absl::Duration d) {
  using State = LoopNode::State;
  if (closed_ || node->state == State::kCancelled) return false;
  if (d == absl::InfiniteDuration() || d == -absl::InfiniteDuration()) {
    return Stop(node);
  }
  absl::StatusOr<int64_t> deadline =
      time_.DeadlineAfter(time_.NowNs(), d, "Reset");
  if (!deadline.ok()) return Stop(node);
  switch (node->state) {
    case State::kPending:
      Unlink(node);
      Arm(node, *deadline);
      return true;
    case State::kRunningArmed:
      node->has_rearm = true;
      node->set_expiration(*deadline);  // the re-arm's deadline
      return true;
    case State::kRunning:
      // Re-armed when the callback returns, so runs never overlap.
      node->state = State::kRunningArmed;
      node->has_rearm = true;
      node->set_expiration(*deadline);  // the re-arm's deadline
      ++pending_;
      return false;
    default:  // kDone, kStopped: armed anew, held by the wheel again
      ++pending_;
      Ref(node);
      Arm(node, *deadline);
      return false;
  }
}

std::optional<absl::Duration> LoopEngine::Deadline(const LoopNode* node) const {
  if (!node->pending()) return std::nullopt;
  return time_.ToClock(node->deadline_ns());
}

}  // namespace timingwheel::internal
