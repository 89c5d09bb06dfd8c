// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// Example: a heartbeat with Every, stopped from inside its own callback.
//
// The heartbeat runs every 10 ms, first after 10 ms; after five beats it
// stops itself. Stop() returning true from the callback guarantees that no
// further beat starts. Run by ctest as example_heartbeat.

#include <atomic>
#include <cstdio>
#include <future>

#include "timingwheel/timingwheel.h"

int main() {
  timingwheel::Options options;
  options.workers = 1;
  auto wheel = timingwheel::TimingWheel::Create(std::move(options)).value();

  std::atomic<int> beats{0};
  std::promise<void> done;
  // Timer::Current() is the timer whose callback is running: the callback
  // needs no copy of the handle that Every returns.
  auto heartbeat = wheel->Every(absl::Milliseconds(10), [&] {
    if (++beats == 5 && timingwheel::Timer::Current().Stop()) {
      done.set_value();
    }
  });
  if (!heartbeat.ok()) return 1;

  done.get_future().wait();
  std::printf("beats=%d pending=%lld\n", beats.load(),
              static_cast<long long>(wheel->Pending()));
  const bool ok = beats == 5 && wheel->Pending() == 0;
  wheel->Shutdown();
  return ok ? 0 : 1;
}
