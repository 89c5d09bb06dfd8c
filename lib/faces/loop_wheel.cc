// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// loop_wheel.cc: the facade of the event-loop wheel. LoopWheel and LoopTimer
// are thin handles onto internal::LoopEngine and internal::LoopNode
// (loop_engine.h, loop_node.h); each call first checks, in a debug build,
// that it comes from the loop's thread. The templated members in
// loop_wheel.h make the callable ready for a node (internal::LoopCallable)
// and come here with it; the hot path's members (At and AtId's, Stop's, a
// handle's release: TIMINGWHEEL_LOOP_HOT) are at the end of loop_engine.h,
// inline in the caller with a static library, compiled here with a shared
// one.

#include "timingwheel/loop_wheel.h"

#include <algorithm>
#include <utility>

#include "base/scheduler_internal.h"
// The hot path's members are defined here when they are not inline (a shared
// library): see the end of loop_engine.h.
#define TIMINGWHEEL_DEFINE_LOOP_HOT
#include "faces/loop_engine.h"

namespace timingwheel {

LoopTimer::LoopTimer(const LoopTimer& other)
    : engine_(other.engine_), node_(other.node_) {
  if (node_ == nullptr) return;
  engine_->CheckThread("LoopTimer's copy");
  internal::LoopEngine::Ref(node_);
}

LoopTimer& LoopTimer::operator=(const LoopTimer& other) {
  if (this == &other) return *this;
  if (other.node_ != nullptr) {
    other.engine_->CheckThread("LoopTimer's copy");
    internal::LoopEngine::Ref(other.node_);
  }
  if (node_ != nullptr) engine_->Unref(node_);
  engine_ = other.engine_;
  node_ = other.node_;
  return *this;
}

LoopTimer& LoopTimer::operator=(LoopTimer&& other) noexcept {
  if (this != &other) {
    if (node_ != nullptr) engine_->Unref(node_);
    engine_ = std::exchange(other.engine_, nullptr);
    node_ = std::exchange(other.node_, nullptr);
  }
  return *this;
}

bool LoopTimer::Reset(absl::Duration d) {
  if (node_ == nullptr) return false;
  engine_->CheckThread("LoopTimer::Reset");
  return engine_->Reset(node_, d);
}

bool LoopTimer::Pending() const {
  if (node_ == nullptr) return false;
  engine_->CheckThread("LoopTimer::Pending");
  return node_->pending();
}

std::optional<absl::Duration> LoopTimer::Deadline() const {
  if (node_ == nullptr) return std::nullopt;
  engine_->CheckThread("LoopTimer::Deadline");
  return engine_->Deadline(node_);
}

std::optional<absl::Duration> LoopTimer::TimeLeft() const {
  const std::optional<absl::Duration> deadline = Deadline();
  if (!deadline.has_value()) return std::nullopt;
  return std::max(absl::ZeroDuration(), *deadline - engine_->Now());
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

absl::StatusOr<LoopTimer> LoopWheel::ScheduleAfter(absl::Duration d,
                                                   internal::CallbackRef f) {
  engine_->CheckThread("LoopWheel::AfterFunc");
  if (internal::LoopNode* node = engine_->TryAfter(d, f)) {
    return LoopTimer(engine_, node);
  }
  return engine_->RefuseAfter(d, f, "AfterFunc");
}

absl::StatusOr<LoopTimerId> LoopWheel::ScheduleAfterId(
    absl::Duration d, internal::CallbackRef f) {
  engine_->CheckThread("LoopWheel::AfterFuncId");
  if (const uint64_t id = engine_->TryAfterId(d, f)) return LoopTimerId(id);
  return engine_->RefuseAfter(d, f, "AfterFuncId");
}

absl::StatusOr<LoopTimer> LoopWheel::ScheduleAt(absl::Duration when,
                                                internal::CallbackRef f) {
  engine_->CheckThread("LoopWheel::AtClockTime");
  return engine_->ScheduleAt(when, f, "AtClockTime");
}

absl::StatusOr<LoopTimerId> LoopWheel::ScheduleAtId(absl::Duration when,
                                                    internal::CallbackRef f) {
  engine_->CheckThread("LoopWheel::AtClockTimeId");
  return engine_->ScheduleAtId(when, f, "AtClockTimeId");
}

bool LoopWheel::Reset(LoopTimerId id, absl::Duration d) {
  engine_->CheckThread("LoopWheel::Reset");
  internal::LoopNode* node = engine_->Find(id);
  return node != nullptr && engine_->Reset(node, d);
}

bool LoopWheel::Pending(LoopTimerId id) const {
  engine_->CheckThread("LoopWheel::Pending");
  const internal::LoopNode* node = engine_->Find(id);
  return node != nullptr && node->pending();
}

std::optional<absl::Duration> LoopWheel::Deadline(LoopTimerId id) const {
  engine_->CheckThread("LoopWheel::Deadline");
  const internal::LoopNode* node = engine_->Find(id);
  if (node == nullptr) return std::nullopt;
  return engine_->Deadline(node);
}

std::optional<absl::Duration> LoopWheel::TimeLeft(LoopTimerId id) const {
  const std::optional<absl::Duration> deadline = Deadline(id);
  if (!deadline.has_value()) return std::nullopt;
  return std::max(absl::ZeroDuration(), *deadline - engine_->Now());
}

absl::StatusOr<LoopTimer> LoopWheel::AfterFunc(absl::Duration d,
                                               absl::AnyInvocable<void()> f) {
  return AfterFunc<absl::AnyInvocable<void()>>(d, std::move(f));
}

absl::StatusOr<LoopTimer> LoopWheel::At(
    std::chrono::steady_clock::time_point when, absl::AnyInvocable<void()> f) {
  return At<absl::AnyInvocable<void()>>(when, std::move(f));
}

absl::StatusOr<LoopTimer> LoopWheel::AtClockTime(absl::Duration when,
                                                 absl::AnyInvocable<void()> f) {
  return AtClockTime<absl::AnyInvocable<void()>>(when, std::move(f));
}

absl::StatusOr<LoopTimer> LoopWheel::Every(absl::Duration period,
                                           absl::AnyInvocable<void()> f) {
  engine_->CheckThread("LoopWheel::Every");
  absl::StatusOr<std::unique_ptr<Scheduler>> rate =
      internal::NewFixedRate(period, "Every");
  if (!rate.ok()) return rate.status();
  internal::LoopCallable<absl::AnyInvocable<void()>> callable(std::in_place,
                                                              std::move(f));
  return engine_->SchedulePeriodic(*std::move(rate), callable.Ref(), "Every");
}

absl::StatusOr<LoopTimer> LoopWheel::ScheduleFunc(
    absl::StatusOr<std::unique_ptr<Scheduler>> scheduler,
    absl::AnyInvocable<void()> f) {
  engine_->CheckThread("LoopWheel::ScheduleFunc");
  if (!scheduler.ok()) return scheduler.status();
  internal::LoopCallable<absl::AnyInvocable<void()>> callable(std::in_place,
                                                              std::move(f));
  return engine_->SchedulePeriodic(*std::move(scheduler), callable.Ref(),
                                   "ScheduleFunc");
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
