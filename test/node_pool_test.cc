// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// Tests for NodePool: blocks are distinct, aligned and reused; blocks freed
// by one thread serve another through the depot; a thread's cache goes back
// to its pool when the thread switches pools or exits, and is dropped
// unharmed when its pool is gone. A child forked while other threads hold
// the pools' locks can still make and run a wheel.

#include "node_pool.h"

#include <sanitizer/asan_interface.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "timingwheel/timingwheel.h"

namespace timingwheel::internal {
namespace {

constexpr size_t kSize = 112;
constexpr size_t kAlign = 16;
constexpr int kMagazine = NodePool::kMagazine;

// Allocates `n` blocks on a thread of its own, which then exits.
std::vector<void*> AllocateOnThread(NodePool* pool, int n) {
  std::vector<void*> blocks;
  std::thread([&] {
    for (int i = 0; i < n; ++i) blocks.push_back(pool->Allocate());
  }).join();
  return blocks;
}

void FreeOnThread(NodePool* pool, const std::vector<void*>& blocks) {
  std::thread([&] {
    for (void* block : blocks) pool->Free(block);
  }).join();
}

TEST(NodePoolTest, BlocksAreDistinctAlignedAndWritable) {
  NodePool pool(kSize, kAlign);
  std::vector<void*> blocks;
  std::set<uintptr_t> seen;
  for (int i = 0; i < 10 * kMagazine + 3; ++i) {
    void* block = pool.Allocate();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(block) % kAlign, 0u);
    std::memset(block, 0xab, kSize);
    EXPECT_TRUE(seen.insert(reinterpret_cast<uintptr_t>(block)).second);
    blocks.push_back(block);
  }
  // No two blocks overlap.
  std::vector<uintptr_t> sorted(seen.begin(), seen.end());
  for (size_t i = 1; i < sorted.size(); ++i) {
    EXPECT_GE(sorted[i] - sorted[i - 1], kSize);
  }
  for (void* block : blocks) pool.Free(block);
}

// The smallest distance between two blocks of one fresh magazine: the size
// the pool carves a block to.
size_t BlockStride(NodePool* pool) {
  std::vector<void*> blocks;
  for (int i = 0; i < kMagazine; ++i) blocks.push_back(pool->Allocate());
  std::vector<uintptr_t> sorted;
  for (void* block : blocks)
    sorted.push_back(reinterpret_cast<uintptr_t>(block));
  std::sort(sorted.begin(), sorted.end());
  size_t stride = SIZE_MAX;
  for (size_t i = 1; i < sorted.size(); ++i) {
    stride = std::min<size_t>(stride, sorted[i] - sorted[i - 1]);
  }
  for (void* block : blocks) pool->Free(block);
  return stride;
}

TEST(NodePoolTest, SizeIsRoundedUpToTheAlignment) {
  NodePool pool(100, 16);
  EXPECT_EQ(BlockStride(&pool), 112u);
  NodePool tiny(1, 1);
  EXPECT_EQ(BlockStride(&tiny), sizeof(void*));
}

TEST(NodePoolTest, FirstSlabHoldsOneMagazineAndSlabsDoubleUpToACap) {
  NodePool pool(kSize, kAlign);
  EXPECT_EQ(pool.SlabBytes(), 0u);
  void* first = pool.Allocate();
  EXPECT_EQ(pool.SlabBytes(), kMagazine * kSize);
  std::vector<void*> blocks{first};
  for (int i = 1; i < kMagazine + 1; ++i) blocks.push_back(pool.Allocate());
  EXPECT_EQ(pool.SlabBytes(), 3 * kMagazine * kSize);  // 64 + 128 blocks
  for (int i = 0; i < 200'000; ++i) blocks.push_back(pool.Allocate());
  // Never more than the blocks handed out plus the last (capped) slab.
  EXPECT_LE(pool.SlabBytes(), (blocks.size() + 16384) * kSize);
  for (void* block : blocks) pool.Free(block);
}

TEST(NodePoolTest, FreedBlocksAreReusedWithoutNewSlabs) {
  NodePool pool(kSize, kAlign);
  std::vector<void*> blocks;
  for (int i = 0; i < 5000; ++i) blocks.push_back(pool.Allocate());
  const size_t slab_bytes = pool.SlabBytes();
  for (int round = 0; round < 10; ++round) {
    for (void* block : blocks) pool.Free(block);
    for (void*& block : blocks) block = pool.Allocate();
  }
  EXPECT_EQ(pool.SlabBytes(), slab_bytes);
  for (void* block : blocks) pool.Free(block);
}

TEST(NodePoolTest, BlocksFreedByAnotherThreadServeTheAllocatingThread) {
  // The pattern of a fired timer: made by a caller, freed by a worker.
  NodePool pool(kSize, kAlign);
  std::vector<void*> blocks;
  for (int i = 0; i < 20 * kMagazine; ++i) blocks.push_back(pool.Allocate());
  const size_t slab_bytes = pool.SlabBytes();
  for (int round = 0; round < 5; ++round) {
    FreeOnThread(&pool, blocks);
    for (void*& block : blocks) block = pool.Allocate();
  }
  // Each worker thread kept no more than its cache (two magazines) from
  // the depot before it exited and gave those back too.
  EXPECT_EQ(pool.SlabBytes(), slab_bytes);
  for (void* block : blocks) pool.Free(block);
}

TEST(NodePoolTest, ThreadExitGivesItsCacheBack) {
  NodePool pool(kSize, kAlign);
  // A thread allocates and frees: its cache holds the blocks when it exits.
  FreeOnThread(&pool, AllocateOnThread(&pool, 2 * kMagazine));
  const size_t slab_bytes = pool.SlabBytes();
  std::vector<void*> blocks = AllocateOnThread(&pool, 2 * kMagazine);
  EXPECT_EQ(pool.SlabBytes(), slab_bytes);
  FreeOnThread(&pool, blocks);
}

TEST(NodePoolTest, SwitchingPoolsGivesTheCacheBackToTheOldPool) {
  NodePool a(kSize, kAlign);
  NodePool b(kSize, kAlign);
  std::vector<void*> blocks;
  for (int i = 0; i < 2 * kMagazine; ++i) blocks.push_back(a.Allocate());
  const size_t a_bytes = a.SlabBytes();
  for (void* block : blocks) a.Free(block);  // into this thread's cache
  b.Free(b.Allocate());                      // the cache now serves b
  // Another thread finds a's blocks in a's depot.
  std::vector<void*> again = AllocateOnThread(&a, 2 * kMagazine);
  EXPECT_EQ(a.SlabBytes(), a_bytes);
  for (void* block : again) a.Free(block);
}

TEST(NodePoolTest, FreeIntoAPoolThisThreadDoesNotCacheGoesToTheDepot) {
  NodePool a(kSize, kAlign);
  NodePool b(kSize, kAlign);
  std::vector<void*> from_b = AllocateOnThread(&b, 3 * kMagazine);
  const size_t b_bytes = b.SlabBytes();
  a.Free(a.Allocate());                      // this thread's cache serves a
  for (void* block : from_b) b.Free(block);  // loose, into b's depot
  std::vector<void*> again = AllocateOnThread(&b, 3 * kMagazine);
  EXPECT_EQ(b.SlabBytes(), b_bytes);
  FreeOnThread(&b, again);
}

TEST(NodePoolTest, ACacheOfADestroyedPoolIsDroppedUntouched) {
  std::vector<void*> blocks;
  auto pool = std::make_unique<NodePool>(kSize, kAlign);
  for (int i = 0; i < 3 * kMagazine; ++i) blocks.push_back(pool->Allocate());
  for (void* block : blocks) pool->Free(block);  // cached by this thread
  pool.reset();  // the slabs are gone; the cache still names the pool
  // Using another pool now must not touch the old blocks (AddressSanitizer
  // would report a use after free).
  NodePool other(kSize, kAlign);
  void* block = other.Allocate();
  other.Free(block);
}

TEST(NodePoolTest, ConcurrentAllocateAndCrossThreadFreeNeverShareABlock) {
  NodePool pool(kSize, kAlign);
  constexpr int kThreads = 4;
  constexpr int kRounds = 20'000;
  std::mutex mu;
  std::vector<void*> shared;  // blocks any thread may free
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::vector<void*> mine;
      for (int i = 0; i < kRounds; ++i) {
        void* block = pool.Allocate();
        // Stamp the block; a block handed out twice gets overwritten.
        std::memset(block, t + 1, kSize);
        mine.push_back(block);
        if (rng() % 3 == 0) {
          for (void* b : mine) {
            const auto* bytes = static_cast<const unsigned char*>(b);
            ASSERT_TRUE(std::all_of(bytes, bytes + kSize, [&](unsigned char c) {
              return c == t + 1;
            }));
          }
          std::lock_guard<std::mutex> lock(mu);
          shared.insert(shared.end(), mine.begin(), mine.end());
          mine.clear();
          // Free about as many as were just shared, whoever made them.
          const size_t n = std::min<size_t>(shared.size(), rng() % 8 + 1);
          for (size_t k = 0; k < n; ++k) {
            pool.Free(shared.back());
            shared.pop_back();
          }
        }
      }
      std::lock_guard<std::mutex> lock(mu);
      for (void* b : mine) pool.Free(b);
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (void* block : shared) pool.Free(block);
  // At most the live peak plus the caches and a slab: nothing leaks per op.
  EXPECT_LE(pool.SlabBytes(), size_t{kThreads} * kRounds * kSize);
}

#if defined(__SANITIZE_ADDRESS__)
#define TW_HAS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TW_HAS_ASAN 1
#endif
#endif

#ifdef TW_HAS_ASAN
TEST(NodePoolTest, AFreeBlockIsPoisonedButForItsLink) {
  NodePool pool(kSize, kAlign);
  auto* block = static_cast<char*>(pool.Allocate());
  EXPECT_FALSE(__asan_address_is_poisoned(block + 8));
  pool.Free(block);
  EXPECT_FALSE(__asan_address_is_poisoned(block));
  EXPECT_TRUE(__asan_address_is_poisoned(block + 8));
  EXPECT_TRUE(__asan_address_is_poisoned(block + kSize - 1));
  EXPECT_EQ(pool.Allocate(), block);  // LIFO: this thread's last free
  EXPECT_FALSE(__asan_address_is_poisoned(block + kSize - 1));
  pool.Free(block);
}
#endif

#if defined(__SANITIZE_THREAD__)
#define TW_HAS_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TW_HAS_TSAN 1
#endif
#endif

// Plain builds only. ThreadSanitizer does not support a child that starts
// threads after a multithreaded fork (it aborts it: die_after_fork), which is
// what this test is about. The AddressSanitizer runtime of clang 14 does not
// hold its allocator's locks across fork(): a child forked while the hammer
// thread was in malloc (it starts threads) hangs in the runtime itself.
#if !defined(TW_HAS_TSAN) && !defined(TW_HAS_ASAN)

// In a forked child: makes a wheel, runs one timer 1 ms out, and exits with
// 0 if it ran in time (no later than 10 s), another code otherwise.
[[noreturn]] void RunOneTimerAndExit() {
  timingwheel::Options options;
  options.workers = 1;
  absl::StatusOr<std::unique_ptr<timingwheel::TimingWheel>> wheel =
      timingwheel::TimingWheel::Create(std::move(options));
  if (!wheel.ok()) _exit(2);
  std::mutex mu;
  std::condition_variable cv;
  bool ran = false;
  const auto start = std::chrono::steady_clock::now();
  const absl::StatusOr<timingwheel::Timer> timer =
      (*wheel)->AfterFunc(absl::Milliseconds(1), [&] {
        std::lock_guard<std::mutex> lock(mu);
        ran = true;
        cv.notify_one();
      });
  if (!timer.ok()) _exit(3);
  std::unique_lock<std::mutex> lock(mu);
  cv.wait_for(lock, std::chrono::seconds(10), [&] { return ran; });
  const bool on_time = ran && std::chrono::steady_clock::now() - start >=
                                  std::chrono::milliseconds(1);
  _exit(on_time ? 0 : 4);  // no destructors: the wheel's threads may run
}

// Waits for `pid` up to `timeout`; kills it if it is still running then.
// Returns its wait status, or nullopt if it had to be killed.
std::optional<int> WaitForChild(pid_t pid, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) return status;
    if (done < 0 || std::chrono::steady_clock::now() >= deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return std::nullopt;
    }
    // A poll, not a wait for something not to happen: the child's exit ends
    // it at once.
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

TEST(NodePoolTest, ChildForkedWhileAnotherThreadHoldsPoolLocksRunsAWheel) {
  // The fork copies only the forking thread: a lock that another thread held
  // at that instant would stay held in the child forever. The hammer takes
  // the registry's lock and two depots' locks nearly all the time: each pool
  // switch gives the cache back to the other pool (registry, then depot),
  // and each thread it starts gives its cache back when it exits.
  NodePool a(kSize, kAlign);
  NodePool b(kSize, kAlign);
  struct Hammer {
    std::atomic<bool> stop{false};
    std::thread thread;
    ~Hammer() {
      stop.store(true);
      thread.join();
    }
  } hammer;
  hammer.thread = std::thread([&] {
    for (int i = 0; !hammer.stop.load(std::memory_order_relaxed); ++i) {
      a.Free(a.Allocate());
      b.Free(b.Allocate());
      if (i % 64 == 0) FreeOnThread(&a, AllocateOnThread(&b, 1));
    }
  });
  // This thread's cache serves `a` too: the child's first node allocation
  // gives it back to `a`, through the registry and `a`'s depot.
  a.Free(a.Allocate());
  constexpr int kForks = 200;
  for (int i = 0; i < kForks; ++i) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0) << "fork failed";
    if (pid == 0) RunOneTimerAndExit();
    const std::optional<int> status =
        WaitForChild(pid, std::chrono::seconds(10));
    ASSERT_TRUE(status.has_value())
        << "child " << i << " hung (deadlocked after fork); killed";
    ASSERT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
        << "child " << i << " ended with wait status " << *status;
  }
}

#endif  // !TW_HAS_TSAN && !TW_HAS_ASAN

}  // namespace
}  // namespace timingwheel::internal
