// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// loop_wheel.cc: the facade of the event-loop wheel. LoopWheel and LoopTimer
// are thin handles onto internal::LoopEngine and internal::LoopNode
// (loop_engine.h); each call first checks, in a debug build, that it comes
// from the loop's thread.

#include "timingwheel/loop_wheel.h"

#include <algorithm>
#include <utility>

#include "loop_engine.h"
#include "scheduler_internal.h"

namespace timingwheel {
namespace {

absl::StatusOr<LoopTimer> Adopt(absl::StatusOr<internal::LoopNode*> node) {
  if (!node.ok()) return node.status();
  return internal::LoopEngine::Handle(*node);
}

}  // namespace

LoopTimer::LoopTimer(const LoopTimer& other) : node_(other.node_) {
  if (node_ == nullptr) return;
  node_->engine->CheckThread("LoopTimer's copy");
  internal::LoopEngine::Ref(node_);
}

LoopTimer::LoopTimer(LoopTimer&& other) noexcept : node_(other.node_) {
  other.node_ = nullptr;
}

LoopTimer& LoopTimer::operator=(const LoopTimer& other) {
  if (this == &other) return *this;
  if (other.node_ != nullptr) {
    other.node_->engine->CheckThread("LoopTimer's copy");
    internal::LoopEngine::Ref(other.node_);
  }
  if (node_ != nullptr) internal::LoopEngine::Unref(node_);
  node_ = other.node_;
  return *this;
}

LoopTimer& LoopTimer::operator=(LoopTimer&& other) noexcept {
  if (this != &other) {
    if (node_ != nullptr) internal::LoopEngine::Unref(node_);
    node_ = std::exchange(other.node_, nullptr);
  }
  return *this;
}

LoopTimer::~LoopTimer() {
  if (node_ == nullptr) return;
  node_->engine->CheckThread("~LoopTimer");
  internal::LoopEngine::Unref(node_);
}

bool LoopTimer::Stop() {
  if (node_ == nullptr) return false;
  node_->engine->CheckThread("LoopTimer::Stop");
  return node_->engine->Stop(node_);
}

bool LoopTimer::Reset(absl::Duration d) {
  if (node_ == nullptr) return false;
  node_->engine->CheckThread("LoopTimer::Reset");
  return node_->engine->Reset(node_, d);
}

bool LoopTimer::Pending() const {
  if (node_ == nullptr) return false;
  node_->engine->CheckThread("LoopTimer::Pending");
  return node_->pending();
}

std::optional<absl::Duration> LoopTimer::Deadline() const {
  if (node_ == nullptr) return std::nullopt;
  node_->engine->CheckThread("LoopTimer::Deadline");
  return node_->engine->Deadline(node_);
}

std::optional<absl::Duration> LoopTimer::TimeLeft() const {
  const std::optional<absl::Duration> deadline = Deadline();
  if (!deadline.has_value()) return std::nullopt;
  return std::max(absl::ZeroDuration(), *deadline - node_->engine->Now());
}

absl::StatusOr<std::unique_ptr<LoopWheel>> LoopWheel::Create(
    LoopOptions options) {
  absl::StatusOr<internal::LoopEngine*> engine =
      internal::LoopEngine::Create(std::move(options));
  if (!engine.ok()) return engine.status();
  return std::unique_ptr<LoopWheel>(new LoopWheel(*engine));
}

LoopWheel::~LoopWheel() {
  engine_->CheckThread("~LoopWheel");
  engine_->CloseAndRelease();
}

absl::StatusOr<LoopTimer> LoopWheel::AfterFunc(absl::Duration d,
                                               absl::AnyInvocable<void()> f) {
  engine_->CheckThread("LoopWheel::AfterFunc");
  return Adopt(engine_->ScheduleAfter(d, std::move(f), "AfterFunc"));
}

absl::StatusOr<LoopTimer> LoopWheel::At(
    std::chrono::steady_clock::time_point when, absl::AnyInvocable<void()> f) {
  engine_->CheckThread("LoopWheel::At");
  if (!engine_->steady()) {
    return absl::InvalidArgumentError(
        "At: the time point is steady_clock's, but this wheel's clock is not "
        "SteadyClock(); give AtClockTime a time of the wheel's own clock "
        "(as its Now() returns it)");
  }
  return Adopt(engine_->ScheduleAt(absl::FromChrono(when.time_since_epoch()),
                                   std::move(f), "At"));
}

absl::StatusOr<LoopTimer> LoopWheel::AtClockTime(absl::Duration when,
                                                 absl::AnyInvocable<void()> f) {
  engine_->CheckThread("LoopWheel::AtClockTime");
  return Adopt(engine_->ScheduleAt(when, std::move(f), "AtClockTime"));
}

absl::StatusOr<LoopTimer> LoopWheel::Every(absl::Duration period,
                                           absl::AnyInvocable<void()> f) {
  engine_->CheckThread("LoopWheel::Every");
  absl::StatusOr<std::unique_ptr<Scheduler>> rate =
      internal::NewFixedRate(period, "Every");
  if (!rate.ok()) return rate.status();
  return Adopt(
      engine_->SchedulePeriodic(*std::move(rate), std::move(f), "Every"));
}

absl::StatusOr<LoopTimer> LoopWheel::ScheduleFunc(
    absl::StatusOr<std::unique_ptr<Scheduler>> scheduler,
    absl::AnyInvocable<void()> f) {
  engine_->CheckThread("LoopWheel::ScheduleFunc");
  if (!scheduler.ok()) return scheduler.status();
  return Adopt(engine_->SchedulePeriodic(*std::move(scheduler), std::move(f),
                                         "ScheduleFunc"));
}

std::optional<absl::Duration> LoopWheel::TimeUntilNext() {
  engine_->CheckThread("LoopWheel::TimeUntilNext");
  return engine_->TimeUntilNext();
}

int64_t LoopWheel::RunDue() {
  engine_->CheckThread("LoopWheel::RunDue");
  return engine_->RunDue(std::nullopt);
}

int64_t LoopWheel::RunDueAt(absl::Duration now) {
  engine_->CheckThread("LoopWheel::RunDueAt");
  return engine_->RunDue(now);
}

int64_t LoopWheel::Pending() const {
  engine_->CheckThread("LoopWheel::Pending");
  return engine_->Pending();
}

}  // namespace timingwheel
