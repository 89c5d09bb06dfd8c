// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// thread_starter.h: starting one of the engine's threads, with the system's
// refusal as a Status rather than an exception.
//
// `std::thread`'s constructor throws std::system_error when the system
// cannot start a thread (EAGAIN: a container's pid limit, RLIMIT_NPROC, no
// address space left for the stack under `ulimit -v`), or std::bad_alloc. A
// throw that unwinds past threads already started destroys them joinable,
// and that calls std::terminate. So every thread of the engine is started
// here, and whoever starts several (the worker pool, the advancer, the
// engine) stops and joins the ones it started when a later one is refused,
// and hands the error up: TimingWheel::Create returns it.
//
// A test makes the next starts fail as the system would
// (ThreadStarterTestPeer in test/test_util.h), to reach each of those paths;
// the refusal is then the same std::system_error, caught in the same place.
//
// Thread-safety: thread-safe.

#ifndef TIMINGWHEEL_LIB_THREADS_THREAD_STARTER_H_
#define TIMINGWHEEL_LIB_THREADS_THREAD_STARTER_H_

#include <atomic>
#include <cstdint>
#include <thread>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"

namespace timingwheel {
class ThreadStarterTestPeer;
}  // namespace timingwheel

namespace timingwheel::internal {

class ThreadStarter {
 public:
  // A thread running `body`, to be joined (or detached). ResourceExhausted
  // when the system refuses to start it, with the system's error (e.g.
  // "Resource temporarily unavailable (errno 11)"); `body` is then destroyed
  // unrun.
  static absl::StatusOr<std::thread> Start(absl::AnyInvocable<void()> body);

 private:
  friend class timingwheel::ThreadStarterTestPeer;

  // How many more starts succeed before every later one is refused as by
  // the system (EAGAIN); negative: none is. Set by tests only; relaxed, as
  // they set it with no thread being started.
  static inline std::atomic<int64_t> starts_left_{-1};
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_THREADS_THREAD_STARTER_H_
