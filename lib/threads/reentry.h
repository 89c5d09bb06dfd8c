// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// reentry.h: marks the stretches of a thread that a Shutdown may be waiting
// for, so that a Shutdown called from them never waits in turn (DESIGN.md,
// trap 13).
//
// The first Shutdown of a wheel waits: for the Resets in flight, for the
// poller and advancer to exit, for the running callbacks and for the workers
// to exit. User code runs inside each of those (a callback, the destructor
// of a cancelled callback, the executor, a task's destructor, the failure
// hook, a scheduler), and may call Shutdown too. A Shutdown that is not the
// first returns at once from such a stretch instead of waiting for the
// first to finish: waiting would wait for itself, or for a thread that is
// joining it.
//
// The stretches, each marked where it starts:
//   * a thread of a wheel (poller, advancer, worker), for its whole life
//     (MarkWheelThread, from its start hook);
//   * a call of the user's executor, and a task handed to it, run or
//     destroyed, on whatever thread that happens (Runner);
//   * a Reset (Shutdown waits for it) and a Shutdown itself (which destroys
//     cancelled callbacks), on the caller's thread (Engine).
// The marks are not per wheel: a callback of one wheel that shuts down
// another, whose callback shuts down the first, must not deadlock either.
//
// Thread-safety: thread-local state only.

#ifndef TIMINGWHEEL_LIB_THREADS_REENTRY_H_
#define TIMINGWHEEL_LIB_THREADS_REENTRY_H_

namespace timingwheel::internal {

// Marks the scope of the current thread as one a Shutdown may wait for.
class ScopedWheelCode {
 public:
  ScopedWheelCode() { ++depth_; }
  ScopedWheelCode(const ScopedWheelCode&) = delete;
  ScopedWheelCode& operator=(const ScopedWheelCode&) = delete;
  ~ScopedWheelCode() { --depth_; }

  // Whether the current thread is in such a stretch.
  static bool Active() { return depth_ > 0; }
  // Marks the rest of the current thread's life (a thread of a wheel).
  static void MarkWheelThread() { ++depth_; }

 private:
  static inline thread_local int depth_ = 0;
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_THREADS_REENTRY_H_
