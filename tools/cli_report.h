// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// cli_report.h: the results of one `timingwheel_cli` load run, and the two
// ways of printing them: aligned text for people, one JSON object for scripts.
//
// Kept apart from timingwheel_cli.cc so that the load generator only measures
// and this file only derives and formats: rates, percentiles' units, and the
// pass/fail verdict are computed here, from raw counts and durations, so that
// the text and the JSON report can never disagree.

#ifndef TIMINGWHEEL_TOOLS_CLI_REPORT_H_
#define TIMINGWHEEL_TOOLS_CLI_REPORT_H_

#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "fire_log.h"

namespace timingwheel::cli {

// The options of the run, as given on the command line (after validation).
struct RunOptions {
  int64_t timers = 0;
  int threads = 0;
  absl::Duration tick;
  int wheel_size = 0;
  int workers = 0;           // As given: 0 = hardware concurrency.
  int workers_resolved = 0;  // What 0 resolved to on this machine.
  absl::Duration window;
  absl::Duration min_delay;
  absl::Duration grace;
  uint64_t seed = 0;
};

// Lateness percentiles, as BM_Fire reports them too (fire_log.h).
using tools::LatenessStats;

struct RunResults {
  RunOptions options;

  // Scheduling: AfterFunc calls from all threads, first start to last return.
  int64_t scheduled = 0;        // AfterFunc calls that succeeded.
  int64_t schedule_errors = 0;  // AfterFunc calls that failed.
  std::string first_schedule_error;
  absl::Duration schedule_time;

  // When the scheduled timers came due: their first deadline to their last.
  absl::Duration deadline_span;

  // Firing: over the timers that fired at least once.
  int64_t fired = 0;
  absl::Duration fire_span;  // First fire to last fire.
  bool gave_up = false;      // Stopped waiting before all had fired.
  LatenessStats lateness;

  // Correctness; each must be 0 for the run to pass.
  int64_t early = 0;    // Fired before their deadline.
  int64_t lost = 0;     // Scheduled, never fired.
  int64_t doubled = 0;  // Fired more than once.
  // Diagnostics for lost timers: what the wheel still held when we gave up.
  int64_t pending_before_shutdown = 0;  // TimingWheel::Pending().
  int64_t cancelled_by_shutdown = 0;    // TimingWheel::Shutdown().

  // Memory, from /proc/self/status; -1 if unavailable.
  int64_t baseline_rss_bytes = -1;  // VmRSS before creating the wheel.
  int64_t peak_rss_bytes = -1;      // VmHWM after Shutdown.
};

// True if nothing fired early, was lost, doubled, or failed to schedule.
bool Passed(const RunResults& results);

// "2.43M timers/s", "912.0k timers/s", "35 timers/s".
std::string FormatRate(double per_second);

// The report as aligned plain text, ending in a newline.
std::string FormatText(const RunResults& results);

// The report as one JSON object on one line, ending in a newline. Durations
// are integer nanoseconds (keys ending in `_ns`), rates are per second.
std::string FormatJson(const RunResults& results);

}  // namespace timingwheel::cli

#endif  // TIMINGWHEEL_TOOLS_CLI_REPORT_H_
