// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// lock_order_test.cc: tests of the lock table and its debug check
// (lib/base/mutex.h). Every nesting the table allows passes, the declared ones
// included (a steal's two stashes under the pool's mutex, the fork handler's
// depots under the registry); a lock taken against the table aborts a debug
// build with a message naming both ranks: an inner rank, a leaf, or a second
// lock of one rank outside a declared nesting, with locks of the ranks alone
// and with the library's own locks. Each thread counts only its own locks.
//
// The death tests are skipped when NDEBUG is defined: a release build keeps
// no rank and checks nothing. The real steal and fork paths run under the
// check in worker_pool_test and node_pool_test (debug build).

#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "base/mutex.h"
#include "gtest/gtest.h"
#include "handles/node_pool.h"
#include "threads/worker_pool.h"
#include "timingwheel/clock.h"

namespace timingwheel::internal {
namespace {

#ifdef NDEBUG
constexpr bool kChecked = false;
#else
constexpr bool kChecked = true;
#endif
#define SKIP_UNLESS_CHECKED()                                             \
  if (!kChecked) {                                                        \
    GTEST_SKIP() << "NDEBUG is defined: the lock-rank check is compiled " \
                    "into debug builds only";                             \
  }

// A lock of `rank`, of the kind the library uses for it: a SpinLock for a
// node, an inbox lane and a stash, a Mutex for the others.
class RankedLock {
 public:
  explicit RankedLock(LockRank rank) {
    if (rank == LockRank::kNode || rank == LockRank::kRing ||
        rank == LockRank::kStash) {
      spin_ = std::make_unique<SpinLock>(rank);
    } else {
      mutex_ = std::make_unique<Mutex>(rank);
    }
  }
  void Lock() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    spin_ ? spin_->Lock() : mutex_->Lock();
  }
  void Unlock() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    spin_ ? spin_->Unlock() : mutex_->Unlock();
  }

 private:
  std::unique_ptr<SpinLock> spin_;
  std::unique_ptr<Mutex> mutex_;
};

// Takes a lock of each rank of `chain` in order, then lets them go, innermost
// first.
void LockChain(const std::vector<LockRank>& chain) {
  std::vector<std::unique_ptr<RankedLock>> locks;
  for (LockRank rank : chain) {
    locks.push_back(std::make_unique<RankedLock>(rank));
    locks.back()->Lock();
  }
  for (auto it = locks.rbegin(); it != locks.rend(); ++it) (*it)->Unlock();
}

// Every nesting of the table in lib/base/mutex.h, each as the code takes it.
const std::vector<std::vector<LockRank>>& TableNestings() {
  static const auto* nestings = new std::vector<std::vector<LockRank>>{
      // A worker fills its stash; Close and the counts read each.
      {LockRank::kPool, LockRank::kStash},
      // A steal: the victim's stash, then its own.
      {LockRank::kPool, LockRank::kStash, LockRank::kStash},
      // A clock's NotifyTimeChanged wakes each sleeping alarm.
      {LockRank::kClockWakeUps, LockRank::kAlarm},
      // A cache goes back to its pool.
      {LockRank::kNodeRegistry, LockRank::kNodeDepot},
      // ... and queues the give-back work its magazines left.
      {LockRank::kNodeRegistry, LockRank::kNodeGiveBack},
      // The fork handlers hold every depot, then the node arena.
      {LockRank::kNodeRegistry, LockRank::kNodeDepot, LockRank::kNodeDepot,
       LockRank::kNodeDepot, LockRank::kNodeArena},
      // A depot maps a region of the arena.
      {LockRank::kNodeDepot, LockRank::kNodeArena},
      // A test's lock held while calling the library.
      {LockRank::kOutsideLibrary, LockRank::kShutdown},
      {LockRank::kOutsideLibrary, LockRank::kCancelAll},
      {LockRank::kOutsideLibrary, LockRank::kRequests},
      {LockRank::kOutsideLibrary, LockRank::kNodeRegistry,
       LockRank::kNodeDepot},
      {LockRank::kOutsideLibrary, LockRank::kPool, LockRank::kStash,
       LockRank::kStash},
      {LockRank::kOutsideLibrary, LockRank::kClockWakeUps, LockRank::kAlarm},
      {LockRank::kOutsideLibrary, LockRank::kRing},
      {LockRank::kOutsideLibrary, LockRank::kOwnerSleep},
      {LockRank::kOutsideLibrary, LockRank::kNode},
  };
  return *nestings;
}

TEST(LockOrderTest, EveryNestingOfTheTablePasses) {
  for (const std::vector<LockRank>& chain : TableNestings()) LockChain(chain);
  // Each lock alone, too.
  for (int rank = 0; rank < kLockRanks; ++rank) {
    LockChain({static_cast<LockRank>(rank)});
  }
}

TEST(LockOrderTest, ThePoolsDoubleStashStealPasses) {
  Mutex pool_mu(LockRank::kPool);
  SpinLock victim(LockRank::kStash);
  SpinLock own(LockRank::kStash);
  // As WorkerPool::TakeBatch steals, `own` released first.
  MutexLock lock(&pool_mu);
  SpinLockHolder hold_victim(&victim);
  SpinLockHolder hold_own(&own);
}

TEST(LockOrderTest, ReleasedLocksNoLongerCount) {
  Mutex wake_ups(LockRank::kClockWakeUps);
  Mutex alarm(LockRank::kAlarm);
  for (int i = 0; i < 3; ++i) {
    { MutexLock lock(&alarm); }
    MutexLock lock(&wake_ups);
    MutexLock lock_alarm(&alarm);
  }
}

TEST(LockOrderTest, EachThreadCountsOnlyItsOwnLocks) {
  Mutex alarm(LockRank::kAlarm);
  Mutex pool(LockRank::kPool);
  MutexLock lock(&alarm);
  // Held by this thread, the alarm's rank does not bar another thread from
  // taking the pool's lock.
  std::thread other([&] { MutexLock hold(&pool); });
  other.join();
}

TEST(LockOrderTest, TwoLocksOutOfOrderAbort) {
  SKIP_UNLESS_CHECKED();
  EXPECT_DEATH(
      {
        Mutex pool(LockRank::kPool);
        Mutex registry(LockRank::kNodeRegistry);
        MutexLock lock(&pool);
        MutexLock hold(&registry);
      },
      "lock order violation: taking kNodeRegistry \\(NodePool's registry\\) "
      "while holding kPool \\(WorkerPool::mu_\\), an inner rank");
}

TEST(LockOrderTest, EveryNestingReversedAborts) {
  SKIP_UNLESS_CHECKED();
  for (const std::vector<LockRank>& chain : TableNestings()) {
    for (size_t i = 0; i + 1 < chain.size(); ++i) {
      if (chain[i] == chain[i + 1]) continue;
      const int outer = static_cast<int>(chain[i]);
      const int inner = static_cast<int>(chain[i + 1]);
      SCOPED_TRACE(testing::Message() << kLockTable[outer].name << " under "
                                      << kLockTable[inner].name);
      EXPECT_DEATH(LockChain({chain[i + 1], chain[i]}),
                   "lock order violation: taking k.* while holding k.*, an "
                   "inner rank");
    }
  }
}

TEST(LockOrderTest, NothingIsTakenUnderALeaf) {
  SKIP_UNLESS_CHECKED();
  EXPECT_DEATH(LockChain({LockRank::kNodeArena, LockRank::kPool}),
               "taking kPool .* while holding kNodeArena .*, a leaf");
  EXPECT_DEATH(LockChain({LockRank::kStash, LockRank::kNode}),
               "taking kNode .* while holding kStash .*, a leaf");
  EXPECT_DEATH(LockChain({LockRank::kShutdown, LockRank::kRequests}),
               "taking kRequests .* while holding kShutdown .*, a leaf");
  EXPECT_DEATH(LockChain({LockRank::kRing, LockRank::kOwnerSleep}),
               "taking kOwnerSleep .* while holding kRing .*, a leaf");
}

TEST(LockOrderTest, TwoLocksOfOneRankAbortOutsideADeclaredNesting) {
  SKIP_UNLESS_CHECKED();
  constexpr char kSameRank[] =
      "a lock of the same rank, not a declared nesting";
  // A steal's two stashes need the pool's mutex.
  EXPECT_DEATH(LockChain({LockRank::kStash, LockRank::kStash}), kSameRank);
  // The fork handler's depots need the registry.
  EXPECT_DEATH(LockChain({LockRank::kNodeDepot, LockRank::kNodeDepot}),
               kSameRank);
  // Two nodes, two lanes: never.
  EXPECT_DEATH(LockChain({LockRank::kNode, LockRank::kNode}), kSameRank);
  EXPECT_DEATH(LockChain({LockRank::kRing, LockRank::kRing}), kSameRank);
}

// The library's own locks carry their ranks: a pool's mutex taken under a
// node lock (a due timer submitted before the node lock is let go, which an
// inline executor would deadlock on) aborts.
TEST(LockOrderTest, SubmittingToThePoolUnderANodeLockAborts) {
  SKIP_UNLESS_CHECKED();
  EXPECT_DEATH(
      {
        WorkerPool pool([](const WorkerPool::Task&, int) {}, [](uint64_t) {});
        SpinLock node(LockRank::kNode);
        SpinLockHolder hold(&node);
        std::vector<WorkerPool::Task> due(1);
        pool.Submit(&due);
      },
      "taking kPool \\(WorkerPool::mu_\\) while holding kNode "
      "\\(TimerNode::mu\\), an inner rank");
}

// As above: a clock moved under a node lock (NotifyTimeChanged takes the
// clock's list lock, then each sleeping queue's) aborts.
TEST(LockOrderTest, MovingAClockUnderANodeLockAborts) {
  SKIP_UNLESS_CHECKED();
  EXPECT_DEATH(
      {
        ManualClock clock;
        SpinLock node(LockRank::kNode);
        SpinLockHolder hold(&node);
        clock.Advance(absl::Seconds(1));
      },
      "taking kClockWakeUps \\(ClockWakeUpList::mu_\\) while holding kNode "
      "\\(TimerNode::mu\\), an inner rank");
}

// As above: a node's memory taken from its pool under the shared ring's
// lock aborts.
TEST(LockOrderTest, AllocatingANodeUnderARingLockAborts) {
  SKIP_UNLESS_CHECKED();
  EXPECT_DEATH(
      {
        NodePool pool(64, 8, 0, NodePool::Tail::kOwnerCalls);
        SpinLock ring(LockRank::kRing);
        SpinLockHolder hold(&ring);
        pool.Allocate();
      },
      "taking kNode(Registry|Depot) .* while holding kRing "
      "\\(Inbox::Ring::producer_mu\\), an inner rank");
}

}  // namespace
}  // namespace timingwheel::internal
