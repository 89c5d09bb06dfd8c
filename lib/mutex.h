// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// mutex.h: the locks of the library, annotated for clang's thread-safety
// analysis.
//
// Why not absl::Mutex: Debian's prebuilt Abseil is not built with
// ThreadSanitizer, so TSan cannot see absl::Mutex and reports false races on
// the data it protects. These thin wrappers over std::mutex and
// std::condition_variable keep both checkers working: clang proves at compile
// time that every ABSL_GUARDED_BY field is touched under its lock, and TSan
// checks the rest at run time.
//
//   Mutex      a std::mutex; for anything that may wait.
//   MutexLock  the scoped guard for it.
//   CondVar    waits on a Mutex, for a notify or a real-time timeout.
//   SpinLock   a one-word lock for per-timer state, a level, or a worker's
//              stash, held for a few instructions only; never held while
//              waiting for anything but a Mutex.

#ifndef TIMINGWHEEL_LIB_MUTEX_H_
#define TIMINGWHEEL_LIB_MUTEX_H_

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"

namespace timingwheel::internal {

class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }

 private:
  friend class CondVar;
  std::mutex mu_;
};

class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_->Lock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }

 private:
  Mutex* const mu_;
};

class CondVar {
 public:
  // Waits for a notify (or spuriously). `mu` is released while waiting.
  void Wait(Mutex* mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }

  // Waits for a notify, `timeout`, or spuriously; returns at once if
  // `timeout <= 0`, waits for a notify only if it is infinite. A wait longer
  // than a day ends early (a spurious return), so that the deadline is always
  // representable as a std::chrono time point.
  void WaitFor(Mutex* mu, absl::Duration timeout)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (timeout <= absl::ZeroDuration()) return;
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    if (timeout == absl::InfiniteDuration()) {
      cv_.wait(lock);
    } else {
      cv_.wait_for(
          lock, absl::ToChronoNanoseconds(std::min(timeout, absl::Hours(24))));
    }
    lock.release();
  }

  void NotifyOne() { cv_.notify_one(); }
  void NotifyAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

class ABSL_LOCKABLE SpinLock {
 public:
  SpinLock() = default;
  SpinLock(const SpinLock&) = delete;
  SpinLock& operator=(const SpinLock&) = delete;

  // Memory ordering: acquire on lock and release on unlock, as for a mutex.
  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    while (locked_.exchange(true, std::memory_order_acquire)) {
      while (locked_.load(std::memory_order_relaxed)) std::this_thread::yield();
    }
  }
  void Unlock() ABSL_UNLOCK_FUNCTION() {
    locked_.store(false, std::memory_order_release);
  }

 private:
  std::atomic<bool> locked_{false};
};

class ABSL_SCOPED_LOCKABLE SpinLockHolder {
 public:
  explicit SpinLockHolder(SpinLock* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu)
      : mu_(mu) {
    mu_->Lock();
  }
  SpinLockHolder(const SpinLockHolder&) = delete;
  SpinLockHolder& operator=(const SpinLockHolder&) = delete;
  ~SpinLockHolder() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }

 private:
  SpinLock* const mu_;
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_MUTEX_H_
