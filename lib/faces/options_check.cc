// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "faces/options_check.h"

#include <algorithm>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"

namespace timingwheel::internal {
namespace {

// The options a TimingWheel and a LoopWheel share; `type` ("Options",
// "LoopOptions") names them in the message.
absl::Status ValidateShared(const char* type, absl::Duration tick,
                            int wheel_size, int64_t max_pending) {
  if (tick < timingwheel::kMinTick || tick > timingwheel::kMaxTick) {
    return absl::InvalidArgumentError(absl::StrCat(
        type, "::tick is ", absl::FormatDuration(tick), "; it must be from ",
        absl::FormatDuration(timingwheel::kMinTick), " to ",
        absl::FormatDuration(timingwheel::kMaxTick)));
  }
  if (wheel_size < kMinWheelSize || wheel_size > kMaxWheelSize) {
    return absl::InvalidArgumentError(
        absl::StrCat(type, "::wheel_size is ", wheel_size, "; it must be from ",
                     kMinWheelSize, " to ", kMaxWheelSize));
  }
  if (max_pending < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(type, "::max_pending is ", max_pending,
                     "; it must be >= 0 (0 = unlimited)"));
  }
  return absl::OkStatus();
}

// Options::spare_timers, LoopOptions::spare_timers.
absl::Status ValidateSpareTimers(const char* type, int64_t spare_timers) {
  if (spare_timers < 0 || spare_timers > kMaxSpareTimers) {
    return absl::InvalidArgumentError(absl::StrCat(
        type, "::spare_timers is ", spare_timers, "; it must be from 0 to ",
        kMaxSpareTimers, " (kMaxSpareTimers: keep all memory)"));
  }
  return absl::OkStatus();
}

absl::Status ValidateOptions(const Options& options) {
  if (absl::Status status = ValidateShared(
          "Options", options.tick, options.wheel_size, options.max_pending);
      !status.ok()) {
    return status;
  }
  if (absl::Status status =
          ValidateSpareTimers("Options", options.spare_timers);
      !status.ok()) {
    return status;
  }
  if (options.workers < 0 || options.workers > kMaxWorkers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Options::workers is ", options.workers, "; it must be from 0 to ",
        kMaxWorkers, " (0 = one per hardware thread)"));
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

absl::Status CheckOptions(Options* options) {
  if (absl::Status status = ValidateOptions(*options); !status.ok()) {
    return status;
  }
  if (options->clock == nullptr) options->clock = SteadyClock();
  if (options->workers == 0) {
    options->workers =
        std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  }
  return ValidateThreadNamePrefix(*options);
}

absl::Status CheckLoopOptions(LoopOptions* options) {
  if (absl::Status status =
          ValidateShared("LoopOptions", options->tick, options->wheel_size,
                         options->max_pending);
      !status.ok()) {
    return status;
  }
  if (absl::Status status =
          ValidateSpareTimers("LoopOptions", options->spare_timers);
      !status.ok()) {
    return status;
  }
  if (options->clock == nullptr) options->clock = SteadyClock();
  return absl::OkStatus();
}

std::string ThreadName(const std::string& prefix, ThreadRole role, int index) {
  switch (role) {
    case ThreadRole::kPoller:
      return prefix + "-poller";
    case ThreadRole::kAdvancer:
      return prefix + "-advancer";
    case ThreadRole::kWorker:
      break;
  }
  return absl::StrCat(prefix, "-worker-", index);
}

}  // namespace timingwheel::internal
