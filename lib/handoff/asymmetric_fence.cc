// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "handoff/asymmetric_fence.h"

#ifdef __linux__
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace timingwheel::internal {
namespace {

#if defined(__SANITIZE_THREAD__)
constexpr bool kSanitizingThreads = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr bool kSanitizingThreads = true;
#else
constexpr bool kSanitizingThreads = false;
#endif
#else
constexpr bool kSanitizingThreads = false;
#endif

#ifdef __linux__
long Membarrier(int cmd) { return syscall(SYS_membarrier, cmd, 0, 0); }
#endif

bool Register() {
  if (kSanitizingThreads) return false;
#ifdef __linux__
  const long commands = Membarrier(MEMBARRIER_CMD_QUERY);
  if (commands < 0 || (commands & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) {
    return false;
  }
  return Membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0 &&
         Membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0;
#else
  return false;
#endif
}

}  // namespace

bool AsymmetricFence::Available() {
  static const bool available = Register();
  return available;
}

void AsymmetricFence::Heavy() {
#ifdef __linux__
  // Unavailable: both sides' seq_cst stores and loads order the pair.
  if (!Available()) return;
  // Registered once for the process (a forked child inherits it): a failure
  // here would mean the kernel took it back, which it does only at exec.
  // Registering again is harmless, and the fence is then retried.
  if (Membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0) {
    Membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED);
    Membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
  }
#endif
}

}  // namespace timingwheel::internal
