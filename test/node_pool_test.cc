// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// Tests for NodePool: blocks are distinct, aligned and reused; blocks freed
// by one thread serve another through the depot; a thread's cache goes back
// to its pool when the thread switches pools or exits, and is dropped
// unharmed when its pool is gone. A child forked while other threads hold
// the pools' locks can still make and run a wheel. Memory goes back: a pool
// that grew and shrank gives its empty slabs back but for the spare (its
// owner's Tidy, or the give-back thread, finishing what the frees left),
// grows again into them, and under random spikes from several threads never
// hands a block out twice, never gives back a live one, and loses none.

#include "handles/node_pool.h"

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
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "handles/node_arena.h"
#include "timingwheel/timingwheel.h"

namespace timingwheel::internal {
namespace {

constexpr size_t kSize = 112;
constexpr size_t kAlign = 16;
constexpr int kMagazine = NodePool::kMagazine;
// A pool that never gives memory back, as before a spike was considered.
constexpr int64_t kKeepAll = kMaxSpareTimers;
constexpr NodePool::Tail kOwner = NodePool::Tail::kOwnerCalls;
// Blocks of kSize in a slab, and the memory of `n` carved blocks.
const size_t kSlabBytes = NodePool::SlabBytesFor(kSize);
const int64_t kSlabBlocks = static_cast<int64_t>(kSlabBytes / kSize);
constexpr size_t kPage = 4096;
size_t BytesOf(int64_t n) { return (n * kSize + kPage - 1) / kPage * kPage; }

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
  NodePool pool(kSize, kAlign, kKeepAll, kOwner);
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
  NodePool pool(100, 16, kKeepAll, kOwner);
  EXPECT_EQ(BlockStride(&pool), 112u);
  NodePool tiny(1, 1, kKeepAll, kOwner);
  EXPECT_EQ(BlockStride(&tiny), sizeof(void*));
}

TEST(NodePoolTest, SlabsAreCarvedAMagazineAtATime) {
  NodePool pool(kSize, kAlign, kKeepAll, kOwner);
  EXPECT_EQ(pool.HeldBytes(), 0u);
  std::vector<void*> blocks{pool.Allocate()};
  EXPECT_EQ(pool.HeldBytes(), BytesOf(kMagazine));
  for (int i = 1; i < kMagazine + 1; ++i) blocks.push_back(pool.Allocate());
  EXPECT_EQ(pool.HeldBytes(), BytesOf(2 * kMagazine));
  for (int i = 0; i < 200'000; ++i) blocks.push_back(pool.Allocate());
  // The blocks handed out, a magazine and a page per slab at most.
  const int64_t slabs = static_cast<int64_t>(blocks.size()) / kSlabBlocks + 1;
  EXPECT_GE(pool.HeldBytes(), blocks.size() * kSize);
  EXPECT_LE(pool.HeldBytes(),
            (blocks.size() + kMagazine) * kSize + slabs * kPage);
  for (void* block : blocks) pool.Free(block);
}

// A slab leaves no byte over: whole pages of whole blocks (a 48-byte node
// in a 64 KiB slab would leave 16 bytes of each slab unused).
TEST(NodePoolTest, SlabsAreWholePagesOfWholeBlocks) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  for (size_t block = 16; block <= NodePool::kSlabBytes / kMagazine;
       block += 16) {
    const size_t slab = NodePool::SlabBytesFor(block);
    EXPECT_EQ(slab % page, 0u) << block;
    EXPECT_GE(slab, NodePool::kSlabBytes / 2) << block;
    EXPECT_GE(slab / block, static_cast<size_t>(kMagazine)) << block;
    if (std::lcm(block, page) <= NodePool::kSlabBytes / 2) {
      EXPECT_EQ(slab % block, 0u) << block;
    }
  }
  if (page == 4096) {
    EXPECT_EQ(NodePool::SlabBytesFor(48), size_t{60} << 10);
    EXPECT_EQ(NodePool::SlabBytesFor(32), size_t{64} << 10);
  }
  // Three slabs of 48-byte blocks carved whole hold exactly their blocks.
  NodePool pool(48, 16, kKeepAll, kOwner);
  const size_t per_slab = NodePool::SlabBytesFor(48) / 48;
  std::vector<void*> blocks;
  while (blocks.size() < 3 * per_slab) blocks.push_back(pool.Allocate());
  EXPECT_EQ(pool.HeldBytes(), blocks.size() * 48);
  for (void* block : blocks) pool.Free(block);
}

TEST(NodePoolTest, FreedBlocksAreReusedWithoutNewSlabs) {
  NodePool pool(kSize, kAlign, kKeepAll, kOwner);
  std::vector<void*> blocks;
  for (int i = 0; i < 5000; ++i) blocks.push_back(pool.Allocate());
  const size_t held_bytes = pool.HeldBytes();
  for (int round = 0; round < 10; ++round) {
    for (void* block : blocks) pool.Free(block);
    for (void*& block : blocks) block = pool.Allocate();
  }
  EXPECT_EQ(pool.HeldBytes(), held_bytes);
  for (void* block : blocks) pool.Free(block);
}

TEST(NodePoolTest, BlocksFreedByAnotherThreadServeTheAllocatingThread) {
  // The pattern of a fired timer: made by a caller, freed by a worker.
  NodePool pool(kSize, kAlign, kKeepAll, kOwner);
  std::vector<void*> blocks;
  for (int i = 0; i < 20 * kMagazine; ++i) blocks.push_back(pool.Allocate());
  const size_t held_bytes = pool.HeldBytes();
  for (int round = 0; round < 5; ++round) {
    FreeOnThread(&pool, blocks);
    for (void*& block : blocks) block = pool.Allocate();
  }
  // Each worker thread kept no more than its cache (two magazines) from
  // the depot before it exited and gave those back too.
  EXPECT_EQ(pool.HeldBytes(), held_bytes);
  for (void* block : blocks) pool.Free(block);
}

TEST(NodePoolTest, ThreadExitGivesItsCacheBack) {
  NodePool pool(kSize, kAlign, kKeepAll, kOwner);
  // A thread allocates and frees: its cache holds the blocks when it exits.
  FreeOnThread(&pool, AllocateOnThread(&pool, 2 * kMagazine));
  const size_t held_bytes = pool.HeldBytes();
  std::vector<void*> blocks = AllocateOnThread(&pool, 2 * kMagazine);
  EXPECT_EQ(pool.HeldBytes(), held_bytes);
  FreeOnThread(&pool, blocks);
}

TEST(NodePoolTest, SwitchingPoolsGivesTheCacheBackToTheOldPool) {
  NodePool a(kSize, kAlign, kKeepAll, kOwner);
  NodePool b(kSize, kAlign, kKeepAll, kOwner);
  std::vector<void*> blocks;
  for (int i = 0; i < 2 * kMagazine; ++i) blocks.push_back(a.Allocate());
  const size_t a_held = a.HeldBytes();
  for (void* block : blocks) a.Free(block);  // into this thread's cache
  b.Free(b.Allocate());                      // the cache now serves b
  // Another thread finds a's blocks in a's depot.
  std::vector<void*> again = AllocateOnThread(&a, 2 * kMagazine);
  EXPECT_EQ(a.HeldBytes(), a_held);
  for (void* block : again) a.Free(block);
}

TEST(NodePoolTest, FreeIntoAPoolThisThreadDoesNotCacheGoesToTheDepot) {
  NodePool a(kSize, kAlign, kKeepAll, kOwner);
  NodePool b(kSize, kAlign, kKeepAll, kOwner);
  std::vector<void*> from_b = AllocateOnThread(&b, 3 * kMagazine);
  const size_t b_held = b.HeldBytes();
  a.Free(a.Allocate());                      // this thread's cache serves a
  for (void* block : from_b) b.Free(block);  // loose, into b's depot
  std::vector<void*> again = AllocateOnThread(&b, 3 * kMagazine);
  EXPECT_EQ(b.HeldBytes(), b_held);
  FreeOnThread(&b, again);
}

TEST(NodePoolTest, ACacheOfADestroyedPoolIsDroppedUntouched) {
  std::vector<void*> blocks;
  auto pool = std::make_unique<NodePool>(kSize, kAlign, kKeepAll, kOwner);
  for (int i = 0; i < 3 * kMagazine; ++i) blocks.push_back(pool->Allocate());
  for (void* block : blocks) pool->Free(block);  // cached by this thread
  pool.reset();  // the slabs are gone; the cache still names the pool
  // Using another pool now must not touch the old blocks (AddressSanitizer
  // would report a use after free).
  NodePool other(kSize, kAlign, kKeepAll, kOwner);
  void* block = other.Allocate();
  other.Free(block);
}

TEST(NodePoolTest, ConcurrentAllocateAndCrossThreadFreeNeverShareABlock) {
  NodePool pool(kSize, kAlign, kKeepAll, kOwner);
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
  EXPECT_LE(pool.HeldBytes(), size_t{kThreads} * kRounds * kSize);
}

// Memory that goes back. The pools below give back on their owner's calls
// (Tail::kOwnerCalls) unless the test is about the give-back thread.

constexpr int kPeak = 100'000;

TEST(NodePoolTest, APoolThatGrewThenShrankGivesItsSlabsBack) {
  constexpr int64_t kSpare = 1000;
  NodePool pool(kSize, kAlign, kSpare, kOwner);
  const std::vector<void*> blocks = AllocateOnThread(&pool, kPeak);
  EXPECT_GE(pool.HeldBytes(), kPeak * kSize);
  FreeOnThread(&pool, blocks);  // its cache goes back when it exits
  // Empty slabs went back while the blocks were freed, but for the spare:
  // at least kSpare blocks, and less than a slab more (a slab goes whole).
  EXPECT_GE(pool.HeldBytes(), kSpare * kSize);
  EXPECT_LE(pool.HeldBytes(), (kSpare / kSlabBlocks + 2) * kSlabBytes);
}

TEST(NodePoolTest, APoolThatKeepsEverythingGivesNothingBack) {
  NodePool pool(kSize, kAlign, kKeepAll, kOwner);
  const std::vector<void*> blocks = AllocateOnThread(&pool, kPeak);
  const size_t peak = pool.HeldBytes();
  FreeOnThread(&pool, blocks);
  EXPECT_EQ(pool.HeldBytes(), peak);
}

TEST(NodePoolTest, APoolGrowsAgainAfterGivingBack) {
  NodePool pool(kSize, kAlign, 0, kOwner);
  size_t first_peak = 0;
  for (int round = 0; round < 3; ++round) {
    std::vector<void*> blocks = AllocateOnThread(&pool, kPeak);
    EXPECT_EQ(std::set<void*>(blocks.begin(), blocks.end()).size(),
              blocks.size());
    // Pages given back come back zeroed and writable, each block whole.
    for (size_t i = 0; i < blocks.size(); ++i) {
      std::memset(blocks[i], static_cast<int>(i % 251), kSize);
    }
    for (size_t i = 0; i < blocks.size(); ++i) {
      const auto* bytes = static_cast<const unsigned char*>(blocks[i]);
      ASSERT_EQ(bytes[0], i % 251);
      ASSERT_EQ(bytes[kSize - 1], i % 251);
    }
    const size_t peak = pool.HeldBytes();
    EXPECT_GE(peak, kPeak * kSize);
    if (round == 0) first_peak = peak;
    // The slabs given back serve again: no more memory than the first time
    // (a magazine may straddle one more slab).
    EXPECT_LE(peak, first_peak + kSlabBytes) << "round " << round;
    FreeOnThread(&pool, blocks);
    EXPECT_EQ(pool.HeldBytes(), 0u) << "round " << round;
  }
}

// Frees `blocks` (whole slabs of them, carved in order) in an order that
// empties every slab only at the end (block i of every slab, then i + 1),
// so that the last magazines complete more slabs than one call gives back.
void FreeEmptyingEverySlabAtTheEnd(NodePool* pool, std::vector<void*> blocks) {
  std::sort(blocks.begin(), blocks.end());
  std::vector<void*> order;
  for (int64_t i = 0; i < kSlabBlocks; ++i) {
    for (size_t j = i; j < blocks.size(); j += kSlabBlocks) {
      order.push_back(blocks[j]);
    }
  }
  ASSERT_EQ(order.size(), blocks.size());
  FreeOnThread(pool, order);
}

// Allocates kPeak blocks, then frees them so (above).
void SpikeThatEmptiesEverySlabAtTheEnd(NodePool* pool) {
  FreeEmptyingEverySlabAtTheEnd(pool, AllocateOnThread(pool, kPeak));
}

TEST(NodePoolTest, TidyFinishesWhatTheFreesLeft) {
  NodePool pool(kSize, kAlign, 0, kOwner);
  SpikeThatEmptiesEverySlabAtTheEnd(&pool);
  const size_t left = pool.HeldBytes();
  EXPECT_GT(left, 0u) << "the frees gave everything back already: this "
                         "test no longer tests Tidy";
  for (int calls = 0; calls < 10'000 && pool.HeldBytes() > 0; ++calls) {
    pool.Tidy();
  }
  EXPECT_EQ(pool.HeldBytes(), 0u);
}

// The give-back thread's step, driven here with made-up times: when
// magazines came back faster than kBurstPutsPerSecond since its last step, it
// finds a burst of frees and does nothing, and until a step finds the frees
// slowed, the puts give back nothing either; then give-back resumes.
TEST(NodePoolTest, ABurstOfFreesWaitsForItsGiveBack) {
  using Step = NodePool::ThreadStep;
  NodePool pool(kSize, kAlign, 0, kOwner);
  std::vector<void*> blocks = AllocateOnThread(&pool, kPeak);
  std::sort(blocks.begin(), blocks.end());
  // Whole slabs in each half (and the slab the halves share in the second).
  const size_t half = kPeak / 2 / kSlabBlocks * kSlabBlocks;
  const std::vector<void*> first(blocks.begin(), blocks.begin() + half);
  const std::vector<void*> second(blocks.begin() + half, blocks.end());
  const size_t peak = pool.HeldBytes();
  int64_t now_ns = int64_t{1} << 40;
  // Nothing was freed: nothing to do, and no burst.
  EXPECT_EQ(pool.GiveBackThreadStep(now_ns), Step::kDone);

  // Not yet seen as a burst: the puts give back as they come (and leave
  // empty slabs to the tail: every slab empties at the end).
  FreeEmptyingEverySlabAtTheEnd(&pool, first);
  const size_t after_first = pool.HeldBytes();
  EXPECT_LT(after_first, peak);
  // Those 760 magazines in 1 ms (a real burst is faster): a burst.
  now_ns += 1'000'000;
  EXPECT_EQ(pool.GiveBackThreadStep(now_ns), Step::kBurst);
  EXPECT_EQ(pool.HeldBytes(), after_first);  // the step did nothing
  FreeOnThread(&pool, second);
  EXPECT_EQ(pool.HeldBytes(), after_first) << "a put gave back in a burst";

  // 803 more over 10 s: 80 a second, no burst. Steps until done give
  // everything back (a spare of 0).
  now_ns += 10'000'000'000;
  EXPECT_EQ(pool.GiveBackThreadStep(now_ns), Step::kMore);
  int steps = 1;
  for (; steps < 100'000; ++steps) {
    now_ns += 1'000'000'000;
    if (pool.GiveBackThreadStep(now_ns) == Step::kDone) break;
  }
  EXPECT_LT(steps, 100'000);
  EXPECT_EQ(pool.HeldBytes(), 0u);
}

// A burst whose nodes the allocations take back leaves nothing to give
// back: the give-back thread's next step is done, however fast the puts
// came, instead of looking again every kBurstRecheckNs for good.
TEST(NodePoolTest, ABurstWhoseNodesAreAllocatedAgainEndsTheGiveBack) {
  using Step = NodePool::ThreadStep;
  constexpr int64_t kSpare = 16 * kMagazine;
  NodePool pool(kSize, kAlign, kSpare, kOwner);
  std::vector<void*> blocks = AllocateOnThread(&pool, kPeak);
  std::sort(blocks.begin(), blocks.end());
  const size_t half = kPeak / 2 / kSlabBlocks * kSlabBlocks;
  int64_t now_ns = int64_t{1} << 40;
  EXPECT_EQ(pool.GiveBackThreadStep(now_ns), Step::kDone);
  FreeEmptyingEverySlabAtTheEnd(&pool, {blocks.begin(), blocks.begin() + half});
  now_ns += 1'000'000;
  ASSERT_EQ(pool.GiveBackThreadStep(now_ns), Step::kBurst);
  // Allocated again, but for a few magazines (the allocating thread's cache
  // goes back at its exit): fewer than the spare left free.
  const std::vector<void*> again = AllocateOnThread(&pool, half);
  now_ns += 1'000;  // those puts came just now: a burst's rate
  EXPECT_EQ(pool.GiveBackThreadStep(now_ns), Step::kDone);
}

TEST(NodePoolTest, TheGiveBackThreadFinishesWhatTheFreesLeftRealClock) {
  NodePool pool(kSize, kAlign, 0, NodePool::Tail::kGiveBackThread);
  SpikeThatEmptiesEverySlabAtTheEnd(&pool);
  // Generous: the thread needs milliseconds.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (pool.HeldBytes() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(pool.HeldBytes(), 0u);
}

// Several threads allocate and free random sets, through spikes and
// troughs, freeing blocks other threads made, with a small spare so that
// slabs go back and come again all the time. The model: every live block,
// stamped through all its bytes by its maker. A block handed out twice, or a
// live block whose page went back (it would read zeros), breaks a stamp;
// AddressSanitizer reports a touch of a free block. At the end nothing is
// lost: the pool gives everything back, and growing again to the peak takes
// no more memory than the peak did.
TEST(NodePoolTest, RandomSpikesFromSeveralThreadsAgreeWithAModel) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 8;
  constexpr int kSpike = 20'000;  // per thread and round, at most
  NodePool pool(kSize, kAlign, 256, kOwner);
  std::mutex mu;
  std::vector<std::pair<void*, uint64_t>> live;  // block, stamp
  std::set<void*> handed_out;
  size_t peak_live = 0;
  auto stamp = [](void* block, uint64_t value) {
    auto* words = static_cast<uint64_t*>(block);
    for (size_t i = 0; i < kSize / sizeof(uint64_t); ++i) words[i] = value;
  };
  auto check = [](const void* block, uint64_t value) {
    const auto* words = static_cast<const uint64_t*>(block);
    for (size_t i = 0; i < kSize / sizeof(uint64_t); ++i) {
      if (words[i] != value) return false;
    }
    return true;
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t + 1);
      uint64_t serial = 0;
      for (int round = 0; round < kRounds; ++round) {
        const int grow = static_cast<int>(rng() % kSpike) + 1;
        for (int i = 0; i < grow; ++i) {
          void* block = pool.Allocate();
          const uint64_t value =
              (static_cast<uint64_t>(t + 1) << 48) | ++serial;
          stamp(block, value);
          std::lock_guard<std::mutex> lock(mu);
          ASSERT_TRUE(handed_out.insert(block).second)
              << "a live block was handed out again";
          live.emplace_back(block, value);
          peak_live = std::max(peak_live, live.size());
        }
        // Down to a random few, whoever made them.
        const int shrink = grow + static_cast<int>(rng() % (kSpike / 4));
        for (int i = 0; i < shrink; ++i) {
          std::pair<void*, uint64_t> taken;
          {
            std::lock_guard<std::mutex> lock(mu);
            if (live.empty()) break;
            const size_t k = rng() % live.size();
            taken = live[k];
            live[k] = live.back();
            live.pop_back();
            handed_out.erase(taken.first);
          }
          ASSERT_TRUE(check(taken.first, taken.second))
              << "a live block changed under its owner";
          pool.Free(taken.first);
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::vector<void*> rest;
  for (const auto& [block, value] : live) {
    ASSERT_TRUE(check(block, value));
    rest.push_back(block);
  }
  FreeOnThread(&pool, rest);
  for (int calls = 0; calls < 100'000 && pool.HeldBytes() > 256 * kSize;
       ++calls) {
    pool.Tidy();
  }
  // The spare, and a slab more at most (a slab goes whole).
  EXPECT_LE(pool.HeldBytes(), (256 / kSlabBlocks + 2) * kSlabBytes);
  // Nothing lost: the peak again fits in what the peak took, give or take a
  // slab per magazine the threads held.
  const std::vector<void*> again =
      AllocateOnThread(&pool, static_cast<int>(peak_live));
  EXPECT_LE(pool.HeldBytes(), peak_live * kSize +
                                  (peak_live / kSlabBlocks + 1) * kPage +
                                  (kThreads * 2 + 1) * kSlabBytes);
  FreeOnThread(&pool, again);
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
  NodePool pool(kSize, kAlign, kKeepAll, kOwner);
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
  // and each thread it starts gives its cache back when it exits; and the
  // node arena's lock, mapping and giving back a range (the child's wheel
  // maps its first region from the arena).
  NodePool a(kSize, kAlign, kKeepAll, kOwner);
  NodePool b(kSize, kAlign, kKeepAll, kOwner);
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
      NodeArena::Get().Unmap(NodeArena::Get().Map(NodeArena::kGrain),
                             NodeArena::kGrain);
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
