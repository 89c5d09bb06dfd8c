// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// timingwheel.cc: the facade. TimingWheel and Timer are thin handles onto
// internal::Engine and internal::TimerNode; everything with a lock or a thread
// is below the engine (engine.h lists the parts).

#include "timingwheel/timingwheel.h"

#include <algorithm>
#include <optional>
#include <ostream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/scheduler_internal.h"
#include "faces/engine.h"
#include "handles/timer_state.h"

namespace timingwheel {

Timer::Timer() : node_(nullptr), home_(nullptr) {}

Timer::Timer(internal::TimerNode* node, internal::NodeHome* home)
    : node_(node), home_(home) {
  home_->AddHandle();
}

Timer::Timer(const Timer& other) : node_(other.node_), home_(other.home_) {
  if (node_ != nullptr) node_->RefHandle(home_);
}

Timer::Timer(Timer&& other) noexcept
    : node_(std::exchange(other.node_, nullptr)),
      home_(std::exchange(other.home_, nullptr)) {}

Timer& Timer::operator=(const Timer& other) {
  if (this == &other) return *this;
  if (other.node_ != nullptr) other.node_->RefHandle(other.home_);
  if (node_ != nullptr) node_->ReleaseHandle(home_);
  node_ = other.node_;
  home_ = other.home_;
  return *this;
}

Timer& Timer::operator=(Timer&& other) noexcept {
  if (this != &other) {
    if (node_ != nullptr) node_->ReleaseHandle(home_);
    node_ = std::exchange(other.node_, nullptr);
    home_ = std::exchange(other.home_, nullptr);
  }
  return *this;
}

Timer::~Timer() {
  if (node_ != nullptr) node_->ReleaseHandle(home_);
}

Timer Timer::Current() {
  internal::TimerNode* node = internal::Engine::CurrentTimer();
  if (node == nullptr) return Timer();
  node->Ref();
  return Timer(node, internal::Engine::Current()->HomeOfThisThread());
}

bool Timer::Stop() { return node_ != nullptr && home_->engine()->Stop(node_); }

bool Timer::Reset(absl::Duration d) {
  return node_ != nullptr && home_->engine()->Reset(node_, d);
}

bool Timer::Pending() const {
  return node_ != nullptr &&
         internal::IsPending(internal::StateOf(node_->LoadState()));
}

std::ostream& operator<<(std::ostream& os, TimerState state) {
  switch (state) {
    case TimerState::kNone:
      return os << "kNone";
    case TimerState::kPending:
      return os << "kPending";
    case TimerState::kRunning:
      return os << "kRunning";
    case TimerState::kFired:
      return os << "kFired";
    case TimerState::kStopped:
      return os << "kStopped";
    case TimerState::kEnded:
      return os << "kEnded";
    case TimerState::kCancelled:
      return os << "kCancelled";
  }
  return os << "TimerState(" << static_cast<int>(state) << ")";
}

TimerState Timer::State() const {
  if (node_ == nullptr) return TimerState::kNone;
  using internal::State;
  switch (internal::StateOf(node_->LoadState())) {
    case State::kPending:
    case State::kDispatched:
    case State::kRunningArmed:
      return TimerState::kPending;
    case State::kRunning:
    case State::kRunningStopped:
    case State::kRunningCancelled:
      return TimerState::kRunning;
    case State::kDone:
      return TimerState::kFired;
    case State::kStopped:
      return TimerState::kStopped;
    case State::kEnded:
      return TimerState::kEnded;
    case State::kCancelled:
      return TimerState::kCancelled;
  }
  return TimerState::kNone;  // not reached: every state is above
}

int64_t Timer::Runs() const { return node_ == nullptr ? 0 : node_->runs(); }

std::optional<absl::Duration> Timer::Deadline() const {
  if (node_ == nullptr) return std::nullopt;
  const internal::TimeBase& time = home_->engine()->time();
  const std::optional<int64_t> deadline_ns =
      node_->PendingDeadlineNs([&time] { return time.NowNs(); });
  if (!deadline_ns.has_value()) return std::nullopt;
  return time.ToClock(*deadline_ns);
}

std::optional<absl::Duration> Timer::TimeLeft() const {
  const std::optional<absl::Duration> deadline = Deadline();
  if (!deadline.has_value()) return std::nullopt;
  // The clock is read after the deadline, so a time left is never more than
  // the arm it belongs to had left.
  return std::max(absl::ZeroDuration(),
                  *deadline - home_->engine()->time().clock().Now());
}

absl::StatusOr<std::unique_ptr<TimingWheel>> TimingWheel::Create(
    Options options) {
  absl::StatusOr<internal::Engine*> engine =
      internal::Engine::Create(std::move(options));
  if (!engine.ok()) return engine.status();
  return std::unique_ptr<TimingWheel>(new TimingWheel(*engine));
}

// Only Create makes a TimingWheel, and only this file reaches its engine_:
// the class has no friend. Whoever needs the engine behind a wheel (the
// tests, through test_util.h's EngineOf) finds it from a callback of the
// wheel (Engine::Current()), never through the handle.
TimingWheel::TimingWheel(internal::Engine* engine) : engine_(engine) {}

absl::StatusOr<Timer> TimingWheel::ToTimer(
    absl::StatusOr<internal::TimerNode*> node) {
  if (!node.ok()) return node.status();
  return Timer(*node, engine_->HomeOfThisThread());
}

TimingWheel::~TimingWheel() {
  engine_->Shutdown();
  engine_->ReleaseOwner();
}

absl::StatusOr<Timer> TimingWheel::AfterFunc(absl::Duration d,
                                             absl::AnyInvocable<void()> f) {
  return AfterFunc<absl::AnyInvocable<void()>>(d, std::move(f));
}

absl::StatusOr<Timer> TimingWheel::ScheduleAfter(absl::Duration d,
                                                 internal::CallbackRef f) {
  return ToTimer(engine_->Schedule(d, f, "AfterFunc"));
}

absl::StatusOr<Timer> TimingWheel::Every(absl::Duration period,
                                         absl::AnyInvocable<void()> f) {
  return Every<absl::AnyInvocable<void()>>(period, std::move(f));
}

absl::StatusOr<Timer> TimingWheel::ScheduleEvery(absl::Duration period,
                                                 internal::CallbackRef f) {
  absl::StatusOr<std::unique_ptr<Scheduler>> rate =
      internal::NewFixedRate(period, "Every");
  if (!rate.ok()) return rate.status();
  return ToTimer(engine_->Schedule(*std::move(rate), f, "Every"));
}

absl::StatusOr<Timer> TimingWheel::ScheduleFunc(
    absl::StatusOr<std::unique_ptr<Scheduler>> scheduler,
    absl::AnyInvocable<void()> f) {
  return ScheduleFunc<absl::AnyInvocable<void()>>(std::move(scheduler),
                                                  std::move(f));
}

absl::StatusOr<Timer> TimingWheel::ScheduleWith(
    absl::StatusOr<std::unique_ptr<Scheduler>> scheduler,
    internal::CallbackRef f) {
  if (!scheduler.ok()) return scheduler.status();
  return ToTimer(engine_->Schedule(*std::move(scheduler), f, "ScheduleFunc"));
}

absl::StatusOr<TimerId> TimingWheel::ToTimerId(absl::StatusOr<uint64_t> id) {
  if (!id.ok()) return id.status();
  return TimerId(*id);
}

absl::StatusOr<TimerId> TimingWheel::ScheduleAfterId(absl::Duration d,
                                                     internal::CallbackRef f) {
  return ToTimerId(engine_->ScheduleId(d, f, "AfterFuncId"));
}

absl::StatusOr<TimerId> TimingWheel::ScheduleSteadyId(
    std::chrono::steady_clock::time_point when, internal::CallbackRef f) {
  if (absl::Status status = CheckSteady("AtId", "AtClockTimeId"); !status.ok())
    return status;
  return ToTimerId(engine_->ScheduleAtId(
      absl::FromChrono(when.time_since_epoch()), f, "AtId"));
}

absl::StatusOr<TimerId> TimingWheel::ScheduleAtClockId(
    absl::Duration when, internal::CallbackRef f) {
  return ToTimerId(engine_->ScheduleAtId(when, f, "AtClockTimeId"));
}

bool TimingWheel::Stop(TimerId id) { return engine_->StopId(id.value()); }

bool TimingWheel::Reset(TimerId id, absl::Duration d) {
  return engine_->ResetId(id.value(), d);
}

bool TimingWheel::Pending(TimerId id) const {
  return engine_->PendingId(id.value());
}

std::optional<absl::Duration> TimingWheel::Deadline(TimerId id) const {
  const std::optional<int64_t> deadline_ns = engine_->DeadlineIdNs(id.value());
  if (!deadline_ns.has_value()) return std::nullopt;
  return engine_->time().ToClock(*deadline_ns);
}

std::optional<absl::Duration> TimingWheel::TimeLeft(TimerId id) const {
  const std::optional<absl::Duration> deadline = Deadline(id);
  if (!deadline.has_value()) return std::nullopt;
  // The clock is read after the deadline, as Timer::TimeLeft does.
  return std::max(absl::ZeroDuration(),
                  *deadline - engine_->time().clock().Now());
}

int64_t TimingWheel::Pending() const { return engine_->Pending(); }

Stats TimingWheel::GetStats() const { return engine_->GetStats(); }

void TimingWheel::WaitIdle() const { engine_->WaitIdle(); }

int64_t TimingWheel::Shutdown() { return engine_->Shutdown(); }

int64_t TimingWheel::CancelAll() { return engine_->CancelAll(); }

absl::StatusOr<Timer> TimingWheel::At(
    std::chrono::steady_clock::time_point when, absl::AnyInvocable<void()> f) {
  return At<absl::AnyInvocable<void()>>(when, std::move(f));
}

absl::StatusOr<Timer> TimingWheel::ScheduleSteady(
    std::chrono::steady_clock::time_point when, internal::CallbackRef f) {
  if (absl::Status status = CheckSteady("At", "AtClockTime"); !status.ok())
    return status;
  return ToTimer(
      engine_->ScheduleAt(absl::FromChrono(when.time_since_epoch()), f, "At"));
}

absl::Status TimingWheel::CheckSteady(const char* caller,
                                      const char* instead) const {
  if (engine_->time().steady()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      caller,
      ": the time point is steady_clock's, but this wheel's clock is not "
      "SteadyClock(); give ",
      instead, " a time of the wheel's own clock (as its Now() returns it)"));
}

absl::StatusOr<Timer> TimingWheel::AtClockTime(absl::Duration when,
                                               absl::AnyInvocable<void()> f) {
  return AtClockTime<absl::AnyInvocable<void()>>(when, std::move(f));
}

absl::StatusOr<Timer> TimingWheel::ScheduleAtClock(absl::Duration when,
                                                   internal::CallbackRef f) {
  return ToTimer(engine_->ScheduleAt(when, f, "AtClockTime"));
}

}  // namespace timingwheel
