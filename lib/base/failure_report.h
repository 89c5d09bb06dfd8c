// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// failure_report.h: where a wheel tells of what went wrong where no caller
// can be told: a callback or a scheduler that threw on a worker, an executor
// that threw, or a task an executor destroyed unrun.
//
// Each is counted in Stats and handed to `Options::on_failure`. Without one,
// the wheel writes a line to stderr, at most one a second per wheel (a
// callback that throws on every run of a 1 ms timer must not flood the log);
// the next line says how many were left out meanwhile.
//
// Threads and locks: Report is called on whichever thread saw the failure (a
// worker, the advancer, the thread an executor dropped a task on), with no
// lock of the wheel held. The rate limit is two atomics (relaxed: a race
// between two reports costs at most one extra or one fewer line).

#ifndef TIMINGWHEEL_LIB_BASE_FAILURE_REPORT_H_
#define TIMINGWHEEL_LIB_BASE_FAILURE_REPORT_H_

#include <atomic>
#include <cstdint>
#include <exception>
#include <string>

#include "absl/functional/any_invocable.h"
#include "timingwheel/options.h"

namespace timingwheel::internal {

class FailureReporter {
 public:
  explicit FailureReporter(
      absl::AnyInvocable<void(const Failure&) const> on_failure);

  // Hands `failure` to the user's hook, or logs it (rate-limited).
  // Exceptions thrown by the hook are swallowed: a failure report must not
  // take down the thread that made it.
  void Report(Failure::Kind kind, std::string what) const;

  // What the exception in flight says: its what(), or a placeholder. Call
  // only from a catch block.
  static std::string CurrentExceptionText();

 private:
  const absl::AnyInvocable<void(const Failure&) const> on_failure_;
  mutable std::atomic<int64_t> last_line_ns_{INT64_MIN / 2};
  mutable std::atomic<int64_t> left_out_{0};
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_BASE_FAILURE_REPORT_H_
