// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// options_check.h: the one place where Options are checked and completed,
// and where the names of the wheel's threads are made.
//
// A bad option is an InvalidArgument that names the option, its value and
// what is allowed, before anything is started. The defaults that depend on
// the machine (the SteadyClock, one worker per hardware thread) are filled
// in here, so the engine only ever sees complete options.
//
// Thread-safety: pure functions.

#ifndef TIMINGWHEEL_LIB_FACES_OPTIONS_CHECK_H_
#define TIMINGWHEEL_LIB_FACES_OPTIONS_CHECK_H_

#include <string>

#include "absl/status/status.h"
#include "timingwheel/loop_wheel.h"
#include "timingwheel/options.h"

namespace timingwheel::internal {

// Checks `*options`, then fills in its defaults (clock, workers).
absl::Status CheckOptions(Options* options);
// The same for an event-loop wheel (clock).
absl::Status CheckLoopOptions(LoopOptions* options);

// The name of a thread of the wheel: `<prefix>-poller`, `<prefix>-advancer`
// or `<prefix>-worker-<index>`.
std::string ThreadName(const std::string& prefix, ThreadRole role, int index);

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_FACES_OPTIONS_CHECK_H_
