// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// A user's program: schedules one timer and waits for it; then, on a
// LoopWheel that it drives, the calls whose code is inline in the user's
// program with a static library (loop_wheel.h), and in the library with a
// shared one: At / AtId with the loop's time, Stop by handle and by id.

#include <chrono>
#include <cstdio>
#include <future>

#include "timingwheel/loop_wheel.h"
#include "timingwheel/timingwheel.h"

namespace {

// 0 when the loop's timers ran and stopped as they should.
int DriveLoopWheel() {
  auto wheel = timingwheel::LoopWheel::Create();
  if (!wheel.ok()) return 1;
  const auto now = std::chrono::steady_clock::now();
  int ran = 0;
  auto stopped = (*wheel)->At(now + std::chrono::hours(1), [&ran] { ++ran; });
  auto stopped_id =
      (*wheel)->AtId(now + std::chrono::hours(1), [&ran] { ++ran; });
  auto due = (*wheel)->At(now, [&ran] { ++ran; });
  auto due_id = (*wheel)->AtId(now, [&ran] { ++ran; });
  if (!stopped.ok() || !stopped_id.ok() || !due.ok() || !due_id.ok()) {
    return 1;
  }
  if (!stopped->Stop() || !(*wheel)->Stop(*stopped_id)) return 1;
  if ((*wheel)->RunDue() != 2 || ran != 2) return 1;
  // Ran: nothing left to stop.
  if (due->Stop() || (*wheel)->Stop(*due_id)) return 1;
  return 0;
}

}  // namespace

int main() {
  auto wheel = timingwheel::TimingWheel::Create();
  if (!wheel.ok()) {
    std::fprintf(stderr, "%s\n", wheel.status().ToString().c_str());
    return 1;
  }
  std::promise<void> fired;
  auto timer = (*wheel)->AfterFunc(absl::Milliseconds(5),
                                   [&fired] { fired.set_value(); });
  if (!timer.ok()) return 1;
  fired.get_future().wait();
  std::printf("consumer: timer fired\n");
  if (DriveLoopWheel() != 0) {
    std::fprintf(stderr, "consumer: the LoopWheel's timers went wrong\n");
    return 1;
  }
  std::printf("consumer: loop timers ran and stopped\n");
  return 0;
}
