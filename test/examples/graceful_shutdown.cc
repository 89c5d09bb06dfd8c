// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// Example: graceful shutdown of a server's timers.
//
// Shutdown() stops accepting timers, cancels the pending ones (their
// callbacks never run and are destroyed, releasing what they captured), waits
// for callbacks that are running, and returns how many it cancelled. Later
// calls fail fast with FailedPrecondition instead of blocking. Run by ctest
// as example_graceful_shutdown.

#include <atomic>
#include <cstdio>
#include <memory>

#include "timingwheel/timingwheel.h"

int main() {
  timingwheel::Options options;
  options.workers = 2;
  auto wheel = timingwheel::TimingWheel::Create(std::move(options)).value();

  // 1000 delayed jobs, each holding a resource that must be released.
  auto resource = std::make_shared<int>(0);
  for (int i = 0; i < 1000; ++i) {
    if (!wheel->AfterFunc(absl::Hours(1), [resource] { ++*resource; }).ok()) {
      return 1;
    }
  }
  const long long in_use = resource.use_count() - 1;

  const int64_t cancelled = wheel->Shutdown();
  absl::StatusOr<timingwheel::Timer> late =
      wheel->AfterFunc(absl::Seconds(1), [] {});

  std::printf(
      "held by timers: %lld, cancelled: %lld, held after Shutdown: %ld, "
      "AfterFunc after Shutdown: %s\n",
      in_use, static_cast<long long>(cancelled), resource.use_count() - 1,
      late.status().ToString().c_str());
  return cancelled == 1000 && resource.use_count() == 1 &&
                 absl::IsFailedPrecondition(late.status())
             ? 0
             : 1;
}
