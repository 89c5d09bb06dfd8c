// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// Tests for NodeArena: ranges are aligned, disjoint, zeroed, writable and
// reused once given back (merged with their free neighbours); a link names
// its address and back, and no link is 0; a range larger than what is free
// is std::bad_alloc, not a crash; several threads mapping and unmapping at
// once never get overlapping ranges; a child forked while another thread
// holds the arena's lock maps from it (the fork handlers).

#include "handles/node_arena.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <new>
#include <thread>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "test_util.h"

namespace timingwheel::internal {

class NodeArenaTestPeer {
 public:
  static void Lock() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    NodeArena::Get().mu_.Lock();
  }
  static void Unlock() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    NodeArena::Get().mu_.Unlock();
  }
};

namespace {

constexpr size_t kGrain = NodeArena::kGrain;

TEST(NodeArenaTest, RangesAreAlignedZeroedWritableAndDisjoint) {
  NodeArena& arena = NodeArena::Get();
  void* a = arena.Map(kGrain);
  void* b = arena.Map(4 * kGrain, size_t{4} << 20);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % kGrain, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % (size_t{4} << 20), 0u);
  const auto* bytes = static_cast<const unsigned char*>(b);
  EXPECT_TRUE(std::all_of(bytes, bytes + 4 * kGrain,
                          [](unsigned char c) { return c == 0; }));
  std::memset(a, 0xab, kGrain);
  std::memset(b, 0xcd, 4 * kGrain);
  EXPECT_EQ(static_cast<unsigned char*>(a)[kGrain - 1], 0xab);
  const auto begin_a = reinterpret_cast<uintptr_t>(a);
  const auto begin_b = reinterpret_cast<uintptr_t>(b);
  EXPECT_TRUE(begin_a + kGrain <= begin_b || begin_b + 4 * kGrain <= begin_a);
  arena.Unmap(a, kGrain);
  arena.Unmap(b, 4 * kGrain);
}

TEST(NodeArenaTest, LinksNameAddressesAndAreNeverZero) {
  NodeArena& arena = NodeArena::Get();
  auto* range = static_cast<char*>(arena.Map(kGrain));
  for (size_t offset = 0; offset < kGrain; offset += NodeLink::kUnit) {
    const uint32_t link = NodeLink::Of(range + offset);
    EXPECT_NE(link, 0u);
    EXPECT_EQ(NodeLink::At(link), range + offset);
  }
  // Every address of the arena fits 31 bits (the core keeps the top one).
  EXPECT_LE(arena.reserved(), NodeArena::kMaxBytes);
  EXPECT_LT(NodeLink::Of(range + kGrain - NodeLink::kUnit), 1u << 31);
  // The base is aligned to 4 MiB: a 4 MiB chunk is a range of links.
  EXPECT_EQ(reinterpret_cast<uintptr_t>(NodeLink::At(0)) % NodeLink::kBaseAlign,
            0u);
  arena.Unmap(range, kGrain);
}

TEST(NodeArenaTest, AGivenBackRangeIsReusedZeroedAndMerged) {
  NodeArena& arena = NodeArena::Get();
  // Three neighbours, given back one by one: together they serve one range
  // of their joint size again, zeroed.
  auto* first = static_cast<char*>(arena.Map(3 * kGrain, size_t{1} << 20));
  std::memset(first, 0x5a, 3 * kGrain);
  arena.Unmap(first + kGrain, kGrain);
  arena.Unmap(first, kGrain);
  arena.Unmap(first + 2 * kGrain, kGrain);
  auto* again = static_cast<char*>(arena.Map(3 * kGrain, size_t{1} << 20));
  EXPECT_EQ(again, first);  // first fit: the lowest free range that fits
  EXPECT_TRUE(
      std::all_of(again, again + 3 * kGrain, [](char c) { return c == 0; }));
  arena.Unmap(again, 3 * kGrain);
}

TEST(NodeArenaTest, MoreThanTheArenaIsBadAllocNotACrash) {
  NodeArena& arena = NodeArena::Get();
  EXPECT_THROW(arena.Map(arena.reserved() + kGrain), std::bad_alloc);
  // And the arena still serves.
  void* range = arena.Map(kGrain);
  arena.Unmap(range, kGrain);
}

TEST(NodeArenaTest, ThreadsMappingAtOnceGetDisjointRanges) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 200;
  std::vector<std::vector<std::pair<uintptr_t, size_t>>> held(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &held] {
      NodeArena& arena = NodeArena::Get();
      std::vector<std::pair<void*, size_t>> mine;
      for (int round = 0; round < kRounds; ++round) {
        const size_t bytes = static_cast<size_t>(1 + (round + t) % 3) * kGrain;
        void* range = arena.Map(bytes);
        // Its first byte says whose it is: another thread's write would show.
        *static_cast<unsigned char*>(range) = static_cast<unsigned char>(t);
        mine.emplace_back(range, bytes);
        if (round % 3 == 2) {
          ASSERT_EQ(*static_cast<unsigned char*>(mine.front().first), t);
          arena.Unmap(mine.front().first, mine.front().second);
          mine.erase(mine.begin());
        }
      }
      for (const auto& [range, bytes] : mine) {
        ASSERT_EQ(*static_cast<unsigned char*>(range), t);
        held[static_cast<size_t>(t)].emplace_back(
            reinterpret_cast<uintptr_t>(range), bytes);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::vector<std::pair<uintptr_t, size_t>> all;
  for (const auto& mine : held) all.insert(all.end(), mine.begin(), mine.end());
  std::sort(all.begin(), all.end());
  for (size_t i = 1; i < all.size(); ++i) {
    EXPECT_LE(all[i - 1].first + all[i - 1].second, all[i].first);
  }
  for (const auto& [range, bytes] : all) {
    NodeArena::Get().Unmap(reinterpret_cast<void*>(range), bytes);
  }
}

// Plain builds only, as node_pool_test's fork test: ThreadSanitizer reports
// the parent's threads as leaked in the child (and exits it with 66), and
// clang 14's AddressSanitizer runtime does not hold its allocator's locks
// across fork(), so a child forked while another thread frees may hang.
#ifndef TIMINGWHEEL_TEST_SANITIZED
TEST(NodeArenaTest, AChildForkedWhileAnotherThreadHoldsTheLockMapsFromIt) {
  // Another thread holds the arena's lock when this one forks: the prepare
  // handler waits for it, so the fork happens with the lock held by the
  // forking thread, which the child releases. Without the handlers, the
  // child would inherit a lock held by a thread it does not have, and hang.
  for (int round = 0; round < 3; ++round) {
    std::atomic<bool> held{false};
    std::thread holder([&held] {
      NodeArenaTestPeer::Lock();
      held.store(true);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      NodeArenaTestPeer::Unlock();
    });
    while (!held.load()) std::this_thread::yield();
    const pid_t pid = fork();
    if (pid == 0) {
      alarm(10);  // a hang ends the child with SIGALRM
      NodeArena& arena = NodeArena::Get();
      arena.Unmap(arena.Map(kGrain), kGrain);
      _exit(0);
    }
    holder.join();
    ASSERT_GT(pid, 0) << "fork failed";
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "the child ended with wait status " << status;
  }
}
#endif

}  // namespace
}  // namespace timingwheel::internal
