// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "base/failure_report.h"

#include <chrono>
#include <cstdio>
#include <utility>

namespace timingwheel::internal {
namespace {

constexpr int64_t kLineEveryNs = 1'000'000'000;

const char* KindText(Failure::Kind kind) {
  switch (kind) {
    case Failure::Kind::kCallbackThrew:
      return "a timer's callback threw";
    case Failure::Kind::kSchedulerThrew:
      return "a scheduler's NextDelay threw; its timer ends";
    case Failure::Kind::kExecutorThrew:
      return "Options::executor threw";
    case Failure::Kind::kTaskDropped:
      return "Options::executor destroyed a task unrun; its timer counts as "
             "stopped";
  }
  return "failure";
}

}  // namespace

FailureReporter::FailureReporter(
    absl::AnyInvocable<void(const Failure&) const> on_failure)
    : on_failure_(std::move(on_failure)) {}

void FailureReporter::Report(Failure::Kind kind, std::string what) const {
  if (on_failure_) {
    try {
      on_failure_(Failure{kind, std::move(what)});
    } catch (...) {  // NOLINT(bugprone-empty-catch): see the header
    }
    return;
  }
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  int64_t last = last_line_ns_.load(std::memory_order_relaxed);
  if (now - last < kLineEveryNs || !last_line_ns_.compare_exchange_strong(
                                       last, now, std::memory_order_relaxed)) {
    left_out_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const int64_t left_out = left_out_.exchange(0, std::memory_order_relaxed);
  if (left_out > 0) {
    std::fprintf(stderr, "timingwheel: %s: %s (and %lld more failures)\n",
                 KindText(kind), what.c_str(),
                 static_cast<long long>(left_out));
  } else {
    std::fprintf(stderr, "timingwheel: %s: %s\n", KindText(kind), what.c_str());
  }
}

std::string FailureReporter::CurrentExceptionText() {
  try {
    throw;
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an exception not derived from std::exception";
  }
}

}  // namespace timingwheel::internal
