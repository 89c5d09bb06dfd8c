// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// Example: retrying an operation with exponential backoff and jitter.
//
// ScheduleFunc with ExponentialBackoff makes the first attempt at once, then
// retries after 10 ms, 20 ms, 40 ms, ... (capped, each +-20% jitter) until it
// succeeds (the callback stops its own timer) or max_attempts is reached (the
// schedule ends). The callback learns which attempt it is from
// Timer::Current().Runs(); afterwards the handle's State() says how it ended:
// kStopped (it succeeded) or kEnded (max_attempts ran out). Run by ctest as
// example_retry_backoff.

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
  backoff.first_attempt_at_once = true;  // try now, back off after a failure
  backoff.seed = 42;                     // reproducible jitter for the example

  std::promise<void> connected;
  auto retry =
      wheel->ScheduleFunc(timingwheel::ExponentialBackoff(backoff), [&] {
        timingwheel::Timer self = timingwheel::Timer::Current();
        if (TryConnect(static_cast<int>(self.Runs())) && self.Stop()) {
          connected.set_value();
        }
      });
  if (!retry.ok()) return 1;

  connected.get_future().wait();
  wheel->WaitIdle();  // the last attempt's run is over: its state is final
  const bool succeeded = retry->State() == timingwheel::TimerState::kStopped;
  std::printf("%s after %lld attempts, pending=%lld\n",
              succeeded ? "connected" : "gave up",
              static_cast<long long>(retry->Runs()),
              static_cast<long long>(wheel->Pending()));
  const bool ok = succeeded && retry->Runs() == 3 && wheel->Pending() == 0;
  wheel->Shutdown();
  return ok ? 0 : 1;
}
