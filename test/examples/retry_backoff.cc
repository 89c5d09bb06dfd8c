// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// Example: retrying an operation with exponential backoff and jitter.
//
// ScheduleFunc with ExponentialBackoff runs the attempt after 10 ms, then
// 20 ms, 40 ms, ... (capped, each +-20% jitter) until it succeeds (the
// callback stops its own timer) or max_attempts is reached (the schedule
// ends). Run by ctest as example_retry_backoff.

#include <atomic>
#include <cstdio>
#include <future>

#include "timingwheel/scheduler.h"
#include "timingwheel/timingwheel.h"

namespace {

// Stands in for a flaky remote call: fails twice, then succeeds.
bool TryConnect(int attempt) { return attempt >= 3; }

}  // namespace

int main() {
  timingwheel::Options options;
  options.workers = 1;
  auto wheel = timingwheel::TimingWheel::Create(std::move(options)).value();

  timingwheel::BackoffOptions backoff;
  backoff.initial = absl::Milliseconds(10);
  backoff.max = absl::Seconds(5);
  backoff.max_attempts = 8;
  backoff.seed = 42;  // reproducible jitter for the example

  std::atomic<int> attempts{0};
  std::promise<void> connected;
  auto retry =
      wheel->ScheduleFunc(timingwheel::ExponentialBackoff(backoff), [&] {
        if (TryConnect(++attempts) && timingwheel::Timer::Current().Stop()) {
          connected.set_value();
        }
      });
  if (!retry.ok()) return 1;

  connected.get_future().wait();
  std::printf("connected after %d attempts, pending=%lld\n", attempts.load(),
              static_cast<long long>(wheel->Pending()));
  const bool ok = attempts == 3 && wheel->Pending() == 0;
  wheel->Shutdown();
  return ok ? 0 : 1;
}
