// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include <atomic>
#include <iostream>
#include <thread>

#include "timingwheel/timingwheel.h"

int main() {
  // One wheel serves the whole process: 1 ms resolution by default.
  timingwheel::Options options;
  options.workers = 2;  // threads that run callbacks
  auto wheel = timingwheel::TimingWheel::Create(std::move(options));
  if (!wheel.ok()) {
    std::cerr << wheel.status() << "\n";
    return 1;
  }

  // A request deadline: give up on the request if it takes over 200 ms.
  std::atomic<bool> timed_out{false};
  absl::StatusOr<timingwheel::Timer> deadline = (*wheel)->AfterFunc(
      absl::Milliseconds(200), [&timed_out] { timed_out = true; });
  if (!deadline.ok()) {
    std::cerr << deadline.status() << "\n";
    return 1;
  }
  deadline->Reset(absl::Milliseconds(200));  // activity: push it out again
  // The response came in time. true: the callback will never start.
  const bool stopped = deadline->Stop();

  // A heartbeat every 10 ms, until stopped.
  std::atomic<int> beats{0};
  auto heartbeat =
      (*wheel)->Every(absl::Milliseconds(10), [&beats] { ++beats; });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  heartbeat->Stop();

  std::cout << "deadline stopped: " << stopped << ", timed out: " << timed_out
            << ", heartbeats: " << beats
            << ", still pending: " << (*wheel)->Pending() << "\n";
  (*wheel)->Shutdown();  // also done by the destructor
  return stopped && !timed_out && beats > 0 ? 0 : 1;
}
