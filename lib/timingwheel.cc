// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// timingwheel.cc: the facade. TimingWheel and Timer are thin handles onto
// internal::Engine and internal::TimerNode; everything with a lock or a thread
// is in engine.cc.

#include "timingwheel/timingwheel.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine.h"
#include "timer_state.h"

namespace timingwheel {

Timer::Timer() : node_(nullptr) {}

Timer::Timer(const Timer& other) : node_(other.node_) {
  if (node_ != nullptr) node_->Ref();
}

Timer::Timer(Timer&& other) noexcept : node_(other.node_) {
  other.node_ = nullptr;
}

Timer& Timer::operator=(const Timer& other) {
  if (this == &other) return *this;
  if (other.node_ != nullptr) other.node_->Ref();
  if (node_ != nullptr) node_->Unref();
  node_ = other.node_;
  return *this;
}

Timer& Timer::operator=(Timer&& other) noexcept {
  if (this != &other) {
    if (node_ != nullptr) node_->Unref();
    node_ = other.node_;
    other.node_ = nullptr;
  }
  return *this;
}

Timer::~Timer() {
  if (node_ != nullptr) node_->Unref();
}

Timer Timer::Current() {
  internal::TimerNode* node = internal::Engine::CurrentTimer();
  if (node == nullptr) return Timer();
  node->Ref();
  return Timer(node);
}

bool Timer::Stop() { return node_ != nullptr && node_->engine->Stop(node_); }

bool Timer::Reset(absl::Duration d) {
  return node_ != nullptr && node_->engine->Reset(node_, d);
}

absl::StatusOr<std::unique_ptr<TimingWheel>> TimingWheel::Create(
    Options options) {
  absl::StatusOr<internal::Engine*> engine =
      internal::Engine::Create(std::move(options));
  if (!engine.ok()) return engine.status();
  return std::unique_ptr<TimingWheel>(new TimingWheel(*engine));
}

TimingWheel::TimingWheel(internal::Engine* engine) : engine_(engine) {}

TimingWheel::~TimingWheel() {
  engine_->Shutdown();
  engine_->ReleaseOwner();
}

absl::StatusOr<Timer> TimingWheel::AfterFunc(absl::Duration d,
                                             absl::AnyInvocable<void()> f) {
  absl::StatusOr<internal::TimerNode*> node = engine_->Schedule(
      d, std::move(f), absl::ZeroDuration(), nullptr, "AfterFunc");
  if (!node.ok()) return node.status();
  return Timer(*node);
}

absl::StatusOr<Timer> TimingWheel::Every(absl::Duration period,
                                         absl::AnyInvocable<void()> f) {
  if (period <= absl::ZeroDuration() || period == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Every: period is ", absl::FormatDuration(period),
                     "; it must be finite and > 0"));
  }
  absl::StatusOr<internal::TimerNode*> node =
      engine_->Schedule(period, std::move(f), period, nullptr, "Every");
  if (!node.ok()) return node.status();
  return Timer(*node);
}

absl::StatusOr<Timer> TimingWheel::ScheduleFunc(
    std::unique_ptr<Scheduler> scheduler, absl::AnyInvocable<void()> f) {
  if (scheduler == nullptr) {
    return absl::InvalidArgumentError(
        "ScheduleFunc: the scheduler is null; pass one, e.g. FixedRate(d)");
  }
  const absl::Duration now = engine_->clock().Now();
  const std::optional<absl::Duration> first = scheduler->Next(now, now);
  if (!first.has_value()) {
    return absl::InvalidArgumentError(
        "ScheduleFunc: the scheduler ended before the first run (Next "
        "returned nullopt); it must return a first deadline");
  }
  absl::StatusOr<internal::TimerNode*> node =
      engine_->Schedule(*first - now, std::move(f), absl::ZeroDuration(),
                        std::move(scheduler), "ScheduleFunc");
  if (!node.ok()) return node.status();
  return Timer(*node);
}

int64_t TimingWheel::Pending() const { return engine_->Pending(); }

Stats TimingWheel::GetStats() const { return engine_->GetStats(); }

int64_t TimingWheel::Shutdown() { return engine_->Shutdown(); }

}  // namespace timingwheel
