// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// A user's program: schedules one timer and waits for it.

#include <cstdio>
#include <future>

#include "timingwheel/timingwheel.h"

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
  return 0;
}
