// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// asymmetric_fence.h: a store-then-load pair between callers and the wheel's
// owner thread in which only the owner, at a rare moment, pays for the fence.
//
// The hand-off (inbox.h) has three such pairs: a caller publishes a
// submission and then reads what the owner published (its wake tick, whether
// it polls, whether the inbox is closed); the owner publishes a new word and
// then looks at the callers' rings. Each side must see the other's store
// (Dekker's pattern). With seq_cst on both sides, each caller's push would pay
// a locked instruction (5.6-6 ns on this project's 2-core VM), once per
// timer. Here the caller's side is a compiler fence (Light) and the owner's a
// `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` (Heavy), which makes every
// thread of the process that runs at that moment execute a full fence: so
// either the caller's store is visible to the owner's later loads, or the
// owner's store is visible to the caller's later load. Heavy costs 1 us
// alone and 32-50 us with another thread of the process running (measured on
// the 2-core VM), so the owner calls it only at rare moments: when it stops
// polling, before it sleeps for long, when the inbox closes.
//
// Where `membarrier` is unavailable (a kernel without it, a seccomp filter)
// and under ThreadSanitizer (which does not model it, nor fences), Available()
// is false: then the callers' side must be seq_cst stores and loads, and
// Heavy does nothing (the owner's seq_cst stores and loads order its side).
//
// Thread-safety: thread-safe; Available() is decided once per process (and
// a child of fork inherits the registration).

#ifndef TIMINGWHEEL_LIB_HANDOFF_ASYMMETRIC_FENCE_H_
#define TIMINGWHEEL_LIB_HANDOFF_ASYMMETRIC_FENCE_H_

#include <atomic>

namespace timingwheel::internal {

class AsymmetricFence {
 public:
  // Whether Light and Heavy pair up (see the top). The first call registers
  // the process with membarrier.
  static bool Available();
  // The callers' side: orders nothing at run time, only the compiler.
  static void Light() { std::atomic_signal_fence(std::memory_order_seq_cst); }
  // The owner's side: a full fence on every running thread of the process
  // (this one included); nothing unless Available().
  static void Heavy();
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_HANDOFF_ASYMMETRIC_FENCE_H_
