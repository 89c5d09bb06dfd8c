// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// mutex.h: the locks of the library, annotated for clang's thread-safety
// analysis and ranked, and the one table of every lock the library has.
//
// Why not absl::Mutex: Debian's prebuilt Abseil is not built with
// ThreadSanitizer, so TSan cannot see absl::Mutex and reports false races on
// the data it protects. These thin wrappers over std::mutex and
// std::condition_variable keep both checkers working: clang proves at compile
// time that every ABSL_GUARDED_BY field is touched under its lock, and TSan
// checks the rest at run time.
//
//   Mutex           a std::mutex; for anything that may wait.
//   MutexLock       the scoped guard for it.
//   CondVar         waits on a Mutex, for a notify or a real-time timeout.
//   SpinLock        a one-byte lock for a timer's node, the inbox's shared
//                   ring or a
//   worker's
//                   stash, held for a few instructions; its holder may take
//                   the inner locks its rank allows, and never waits on a
//                   condition.
//   SpinLockHolder  the scoped guard for it.
//   LockRank        a lock's row in the table below, given to its constructor
//                   (there is no default, so no lock is left out).
//
// The lock table: every lock of the library, outer to inner. A thread takes
// locks in increasing rank only, and nothing under a leaf, except for the
// nestings marked "declared".
//
//   rank            the lock                 taken under it
//   kOutsideLibrary a Mutex of a test, a     anything: held while calling the
//                   tool or a benchmark      library, never taken under its
//                   (never in lib/)          locks
//   kShutdown       Engine::shutdown_mu_     nothing (leaf)
//   kCancelAll      Engine::cancel_all_mu_   nothing (leaf): a Reset waits on
//                                            it for a CancelAll to end
//   kRequests       Advancer::request_mu_    nothing (leaf): CancelAll's
//                                            request to the advancer
//   kNodeRegistry   NodePool's registry      kNodeDepot: a thread's cache
//                   (node_pool.cc)           goes back to its pool
//                                            (GiveBack); the fork handlers
//                                            hold every depot at once
//   kNodeDepot      NodePool::mu_            kNodeArena: a new region;
//   declared:
//                                            another depot, under kNodeRegistry
//                                            (fork)
//   kNodeArena      NodeArena::mu_           nothing (leaf): a range of the
//                   (node_arena.h)           arena mapped or given back
//   kNodeGiveBack   the give-back thread's   nothing (leaf): a pool queues
//                   queue (node_pool.cc)     its leftover give-back work, also
//                                            when a cache goes back (under
//                                            kNodeRegistry)
//   kPool           WorkerPool::mu_          kStash: a worker fills its own or
//                                            steals; Close and the counts
//                                            read each
//   kStash          WorkerPool::Stash::mu    nothing (leaf); declared: another
//                   (spin)                   stash, under kPool (a steal
//                                            holds the victim's, then its own)
//   kClockWakeUps   a Clock's list of        kAlarm: NotifyTimeChanged wakes
//                   sleepers                 each registered alarm under it
//                   (ClockWakeUpList::mu_,   (clock_wake_up.h says why)
//                   clock.cc)
//   kAlarm          ReleaseAlarm::mu_        none of ours (leaf); the clock's
//                                            Now and RealTimeUntil run under
//                                            it
//   kRing           Inbox::Ring::producer_mu nothing (leaf): a push or a
//                   (spin, the shared ring)  retract by a thread with no
//                                            ring of its own
//   kOwnerSleep     Inbox::sleep_mu_         nothing (leaf)
//   kNode           TimerNode::mu (spin)     nothing (leaf): Reset and a
//                                            worker's re-arm set the arm
//
// Not ranked: the runtime's locks (malloc's, a function-local static's
// guard, stdio's in FailureReporter, which is called with no lock of ours
// held): they are innermost and take none of ours.
// No lock of the library is held while a callback runs or is destroyed, or
// while the user's executor is called. A user's Clock runs under kAlarm.
//
// The locks taken with no lane or node lock held rank before them, so that
// what would be a bug fails the check: freeing a node (its depot), submitting
// to the pool, or a clock's NotifyTimeChanged under a lane, node or alarm
// lock (a Clock's Now calling it, say).
//
// Checked: in a debug build (NDEBUG not defined) each thread counts the locks
// it holds per rank, and a lock taken against this table aborts the process
// with a message naming both ranks (test/lock_order_test.cc). A release build
// keeps no rank and checks nothing. Clang (-Wthread-safety-beta, on in the
// project's clang builds) checks at compile time the ABSL_ACQUIRED_AFTER
// declarations, a stash after WorkerPool::mu_, where one function takes
// both; the other pairs cannot name each other
// (private, or in a .cc), so only the rank check sees them.

#ifndef TIMINGWHEEL_LIB_BASE_MUTEX_H_
#define TIMINGWHEEL_LIB_BASE_MUTEX_H_

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"

namespace timingwheel::internal {

// The rows of the lock table above, outer to inner.
enum class LockRank : uint8_t {
  kOutsideLibrary,
  kShutdown,
  kCancelAll,
  kRequests,
  kNodeRegistry,
  kNodeDepot,
  kNodeArena,
  kNodeGiveBack,
  kPool,
  kStash,
  kClockWakeUps,
  kAlarm,
  kRing,
  kOwnerSleep,
  kNode,
};
inline constexpr int kLockRanks = static_cast<int>(LockRank::kNode) + 1;

// A row of the lock table, as the debug check reads it.
struct LockRankInfo {
  LockRank rank;
  const char* name;  // the rank and its lock, for the check's messages
  bool leaf;         // nothing is taken under it
  // The declared nesting: a second lock of this rank may be taken while a
  // lock of rank `nests_under` is held too. None when empty.
  std::optional<LockRank> nests_under;
};

inline constexpr LockRankInfo kLockTable[kLockRanks] = {
    {LockRank::kOutsideLibrary,
     "kOutsideLibrary (a Mutex outside lib/)",
     false,
     {}},
    {LockRank::kShutdown, "kShutdown (Engine::shutdown_mu_)", true, {}},
    {LockRank::kCancelAll, "kCancelAll (Engine::cancel_all_mu_)", true, {}},
    {LockRank::kRequests, "kRequests (Advancer::request_mu_)", true, {}},
    {LockRank::kNodeRegistry, "kNodeRegistry (NodePool's registry)", false, {}},
    {LockRank::kNodeDepot, "kNodeDepot (NodePool::mu_)", false,
     LockRank::kNodeRegistry},
    {LockRank::kNodeArena, "kNodeArena (NodeArena::mu_)", true, {}},
    {LockRank::kNodeGiveBack,
     "kNodeGiveBack (the give-back thread's queue)",
     true,
     {}},
    {LockRank::kPool, "kPool (WorkerPool::mu_)", false, {}},
    {LockRank::kStash, "kStash (WorkerPool::Stash::mu)", true, LockRank::kPool},
    {LockRank::kClockWakeUps,
     "kClockWakeUps (ClockWakeUpList::mu_)",
     false,
     {}},
    {LockRank::kAlarm, "kAlarm (ReleaseAlarm::mu_)", true, {}},
    {LockRank::kRing, "kRing (Inbox::Ring::producer_mu)", true, {}},
    {LockRank::kOwnerSleep, "kOwnerSleep (Inbox::sleep_mu_)", true, {}},
    {LockRank::kNode, "kNode (TimerNode::mu)", true, {}},
};

constexpr bool LockTableInRankOrder() {
  for (int i = 0; i < kLockRanks; ++i) {
    if (static_cast<int>(kLockTable[i].rank) != i) return false;
  }
  return true;
}
static_assert(LockTableInRankOrder(), "kLockTable must list every LockRank");

namespace lock_rank {

#ifndef NDEBUG

// The locks this thread holds, counted per rank.
inline uint32_t* HeldByThisThread() {
  thread_local uint32_t held[kLockRanks] = {};
  return held;
}

[[noreturn]] inline void Die(LockRank taking, LockRank holding,
                             const char* why) {
  std::fprintf(stderr,
               "timingwheel: lock order violation: taking %s while holding "
               "%s, %s; see the lock table in lib/base/mutex.h\n",
               kLockTable[static_cast<int>(taking)].name,
               kLockTable[static_cast<int>(holding)].name, why);
  std::abort();
}

// Called before a lock of `rank` is taken: aborts if the table does not allow
// it under the locks this thread holds, else counts it.
inline void WillLock(LockRank rank) {
  uint32_t* held = HeldByThisThread();
  const LockRankInfo& taking = kLockTable[static_cast<int>(rank)];
  for (int i = 0; i < kLockRanks; ++i) {
    if (held[i] == 0) continue;
    const LockRank holding = static_cast<LockRank>(i);
    if (holding == rank) {
      if (taking.nests_under.has_value() &&
          held[static_cast<int>(*taking.nests_under)] > 0) {
        continue;
      }
      Die(rank, holding, "a lock of the same rank, not a declared nesting");
    }
    if (holding > rank) Die(rank, holding, "an inner rank");
    if (kLockTable[i].leaf) Die(rank, holding, "a leaf");
  }
  ++held[static_cast<int>(rank)];
}

inline void Unlocked(LockRank rank) {
  uint32_t& held = HeldByThisThread()[static_cast<int>(rank)];
  if (held == 0) {
    std::fprintf(stderr,
                 "timingwheel: unlocking %s, which this thread does not "
                 "hold\n",
                 kLockTable[static_cast<int>(rank)].name);
    std::abort();
  }
  --held;
}

// What a lock keeps of its rank: the rank, in a debug build only.
class Ranked {
 protected:
  explicit constexpr Ranked(LockRank rank) : rank_(rank) {}
  void WillLock() const { lock_rank::WillLock(rank_); }
  void Unlocked() const { lock_rank::Unlocked(rank_); }

 private:
  const LockRank rank_;
};

#else  // NDEBUG: an empty base, so a lock is no bigger than what it wraps.

class Ranked {
 protected:
  explicit constexpr Ranked(LockRank) {}
  void WillLock() const {}
  void Unlocked() const {}
};

#endif  // NDEBUG

}  // namespace lock_rank

class ABSL_LOCKABLE Mutex : private lock_rank::Ranked {
 public:
  explicit Mutex(LockRank rank) : Ranked(rank) {}
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    WillLock();
    mu_.lock();
  }
  void Unlock() ABSL_UNLOCK_FUNCTION() {
    mu_.unlock();
    Unlocked();
  }

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

// One byte in a release build (two in a debug one, with its rank).
class ABSL_LOCKABLE SpinLock : private lock_rank::Ranked {
 public:
  explicit SpinLock(LockRank rank) : Ranked(rank) {}
  SpinLock(const SpinLock&) = delete;
  SpinLock& operator=(const SpinLock&) = delete;

  // Memory ordering: acquire on lock and release on unlock, as for a mutex.
  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    WillLock();
    while (locked_.exchange(true, std::memory_order_acquire)) {
      while (locked_.load(std::memory_order_relaxed)) std::this_thread::yield();
    }
  }
  void Unlock() ABSL_UNLOCK_FUNCTION() {
    locked_.store(false, std::memory_order_release);
    Unlocked();
  }

 private:
  std::atomic<bool> locked_{false};
};

// For a SpinLock, or a lock of the same interface (a timer node's:
// lib/handles/timer_state.h).
template <class Lock>
class ABSL_SCOPED_LOCKABLE SpinLockHolder {
 public:
  explicit SpinLockHolder(Lock* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_->Lock();
  }
  SpinLockHolder(const SpinLockHolder&) = delete;
  SpinLockHolder& operator=(const SpinLockHolder&) = delete;
  ~SpinLockHolder() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }

 private:
  Lock* const mu_;
};

#ifdef NDEBUG
static_assert(sizeof(Mutex) == sizeof(std::mutex) &&
                  sizeof(SpinLock) == sizeof(std::atomic<bool>),
              "a release build keeps no rank in a lock");
#endif

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_BASE_MUTEX_H_
