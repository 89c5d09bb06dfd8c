// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "options_check.h"

#include <algorithm>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"

namespace timingwheel::internal {
namespace {

absl::Status ValidateOptions(const Options& options) {
  if (options.tick < kMinTick || options.tick > kMaxTick) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Options::tick is ", absl::FormatDuration(options.tick),
        "; it must be from ", absl::FormatDuration(kMinTick), " to ",
        absl::FormatDuration(kMaxTick)));
  }
  if (options.wheel_size < kMinWheelSize ||
      options.wheel_size > kMaxWheelSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("Options::wheel_size is ", options.wheel_size,
                     "; it must be from ", kMinWheelSize, " to ",
                     kMaxWheelSize));
  }
  if (options.workers < 0 || options.workers > kMaxWorkers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Options::workers is ", options.workers, "; it must be from 0 to ",
        kMaxWorkers, " (0 = one per hardware thread)"));
  }
  if (options.max_pending < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Options::max_pending is ", options.max_pending,
                     "; it must be >= 0 (0 = unlimited)"));
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
