// Copyright 2026 The timingwheel Authors.
//
// test_util.h: what several tests share to drive a wheel deterministically.
//
// `TimingWheelTestPeer` reaches the engine behind a TimingWheel (declared a
// friend there) so that a test can wait until the wheel is quiescent: every
// bucket that is due by the clock has been flushed and every due callback has
// returned. With a ManualClock that makes a test exact: advance, wait idle,
// then check what ran.

#ifndef TIMINGWHEEL_TEST_TEST_UTIL_H_
#define TIMINGWHEEL_TEST_TEST_UTIL_H_

#include <memory>

#include "engine.h"
#include "timingwheel/timingwheel.h"

namespace timingwheel {

class TimingWheelTestPeer {
 public:
  static internal::Engine& GetEngine(TimingWheel& wheel) {
    return *wheel.engine_;
  }
  // Blocks until nothing is due and no callback runs (see Engine::WaitIdle).
  static void WaitIdle(TimingWheel& wheel) { wheel.engine_->WaitIdle(); }
};

}  // namespace timingwheel

#endif  // TIMINGWHEEL_TEST_TEST_UTIL_H_
