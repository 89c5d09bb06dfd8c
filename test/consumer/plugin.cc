// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// A shared object of a user's (a plugin, a Python extension module) with the
// library linked into it: it runs one timer on a wheel of its own.

#include <chrono>
#include <future>

#include "timingwheel/loop_wheel.h"
#include "timingwheel/timingwheel.h"

// 0 once a timer of a wheel made in the shared object has fired.
extern "C" int PluginRunTimer() {
  auto wheel = timingwheel::TimingWheel::Create();
  if (!wheel.ok()) return 1;
  std::promise<void> fired;
  auto timer = (*wheel)->AfterFunc(absl::Milliseconds(5),
                                   [&fired] { fired.set_value(); });
  if (!timer.ok()) return 1;
  fired.get_future().wait();
  // And one of a LoopWheel, whose hot path is inline in the shared object
  // with a static library.
  auto loop = timingwheel::LoopWheel::Create();
  if (!loop.ok()) return 1;
  bool ran = false;
  auto id =
      (*loop)->AtId(std::chrono::steady_clock::now(), [&ran] { ran = true; });
  if (!id.ok() || (*loop)->RunDue() != 1 || !ran) return 1;
  return (*loop)->Stop(*id) ? 1 : 0;
}
