// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// Tests for LoopNodePool: blocks are aligned, distinct and reused last in,
// first out; bytes() counts what was carved; new blocks come from the
// fullest chunk; a pool that grew and shrank unmaps its empty chunks but for
// the spare (none with a spare of 0, all with kMaxSpareTimers) and grows
// again; under random spikes the pool never hands a block out twice, never
// lets one block's bytes reach another (every byte of every live block is
// stamped and checked) and keeps at most the spare and one chunk once all
// are freed; a pool with a LoopChunkTable marks its chunks there, every
// address of a chunk and no other, while it holds them.

#include "faces/loop_node.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "gtest/gtest.h"
#include "timingwheel/options.h"

namespace timingwheel::internal {
namespace {

constexpr size_t kSmall = kSmallLoopBlock;
constexpr size_t kWide = kWideLoopBlock;

uintptr_t Address(const void* block) {
  return reinterpret_cast<uintptr_t>(block);
}

constexpr int64_t kKeepAll = kMaxSpareTimers;
// Blocks a chunk hands out (its first holds its header).
constexpr int64_t ChunkBlocks(size_t block_size) {
  return static_cast<int64_t>(LoopNodePool::kChunkBytes / block_size) - 1;
}

TEST(LoopNodePoolTest, WideBlocksAreCacheLinesSmallOnesSixteenAligned) {
  LoopNodePool small(kSmall, kKeepAll);
  LoopNodePool wide(kWide, kKeepAll);
  std::vector<void*> small_blocks;
  std::vector<void*> wide_blocks;
  for (int i = 0; i < 200; ++i) {
    small_blocks.push_back(small.Allocate());
    wide_blocks.push_back(wide.Allocate());
  }
  for (void* block : small_blocks) EXPECT_EQ(Address(block) % 16, 0u);
  for (void* block : wide_blocks) EXPECT_EQ(Address(block) % 64, 0u);
  for (void* block : small_blocks) small.Free(block);
  for (void* block : wide_blocks) wide.Free(block);
}

TEST(LoopNodePoolTest, ReusesTheLastFreedBlockFirst) {
  LoopNodePool pool(kSmall, kKeepAll);
  void* a = pool.Allocate();
  void* b = pool.Allocate();
  EXPECT_NE(a, b);
  pool.Free(a);
  pool.Free(b);
  EXPECT_EQ(pool.Allocate(), b);
  EXPECT_EQ(pool.Allocate(), a);
  pool.Free(a);
  pool.Free(b);
}

TEST(LoopNodePoolTest, BytesCountTheCarvedBlocksAndTheHeader) {
  LoopNodePool pool(kWide, kKeepAll);
  EXPECT_EQ(pool.bytes(), 0u);
  std::vector<void*> blocks{pool.Allocate()};
  EXPECT_EQ(pool.bytes(), 2 * kWide);
  while (blocks.size() < 100) blocks.push_back(pool.Allocate());
  EXPECT_EQ(pool.bytes(), 101 * kWide);
  // Freed blocks are reused before more are carved.
  for (void* block : blocks) pool.Free(block);
  for (void*& block : blocks) block = pool.Allocate();
  EXPECT_EQ(pool.bytes(), 101 * kWide);
  for (void* block : blocks) pool.Free(block);
}

// Fills `chunks` chunks.
std::vector<void*> Fill(LoopNodePool* pool, size_t block_size, int chunks) {
  std::vector<void*> blocks;
  for (int64_t i = 0; i < chunks * ChunkBlocks(block_size); ++i) {
    blocks.push_back(pool->Allocate());
  }
  return blocks;
}

TEST(LoopNodePoolTest, AllocatesFromTheFullestChunk) {
  LoopNodePool pool(kSmall, kKeepAll);
  const std::vector<void*> blocks = Fill(&pool, kSmall, 3);
  const int64_t per_chunk = ChunkBlocks(kSmall);
  // The first chunk half empty, the second missing one block, the third
  // (the last carved) full.
  for (int64_t i = 0; i < per_chunk / 2; ++i) pool.Free(blocks[i]);
  void* second = blocks[per_chunk + 7];
  pool.Free(second);
  EXPECT_EQ(pool.Allocate(), second);
  // Then the first, the only one with room.
  void* next = pool.Allocate();
  EXPECT_LT(Address(next), Address(blocks[per_chunk / 2]));
  EXPECT_GE(Address(next), Address(blocks[0]));
  pool.Free(next);
  for (size_t i = per_chunk / 2; i < blocks.size(); ++i) pool.Free(blocks[i]);
}

TEST(LoopNodePoolTest, GivesBackEmptyChunksBeyondTheSpareAndGrowsAgain) {
  // A spare of one chunk's blocks: of 5 chunks, the first to empty stays.
  const int64_t spare = ChunkBlocks(kSmall);
  const size_t chunk = ChunkBlocks(kSmall) * kSmall + kSmall;
  LoopNodePool pool(kSmall, spare);
  for (int round = 0; round < 2; ++round) {
    std::vector<void*> blocks = Fill(&pool, kSmall, 5);
    EXPECT_EQ(pool.bytes(), 5 * chunk);
    for (void* block : blocks) pool.Free(block);
    EXPECT_EQ(pool.bytes(), chunk) << "round " << round;
  }
}

// The pattern of a loop's AfterFunc + Stop beside full chunks of pending
// timers: the current chunk empties at each pair. It stays while the other
// chunks have fewer than the spare free blocks, counting the blocks freed
// there meanwhile (timers that ran or were stopped), and goes back once
// they have.
TEST(LoopNodePoolTest,
     TheCurrentChunkEmptiedByPairsGoesBackOnceOthersHaveRoom) {
  const int64_t per_chunk = ChunkBlocks(kSmall);
  const int64_t spare = per_chunk / 2;
  LoopNodePool pool(kSmall, spare);
  const std::vector<void*> pending = Fill(&pool, kSmall, 3);
  const size_t full = pool.bytes();
  for (int pair = 0; pair < 3; ++pair) {
    pool.Free(pool.Allocate());  // a fourth chunk, emptied
    EXPECT_EQ(pool.bytes(), full + 2 * kSmall) << "pair " << pair;
  }
  // The first chunk's blocks but one less than the spare go: still kept.
  for (int64_t i = 0; i < spare - 1; ++i) pool.Free(pending[i]);
  pool.Free(pool.Allocate());
  EXPECT_EQ(pool.bytes(), full + 2 * kSmall);
  // One more: now the others have the spare, and the emptied chunk goes.
  pool.Free(pending[spare - 1]);
  pool.Free(pool.Allocate());
  EXPECT_EQ(pool.bytes(), full);
  for (size_t i = spare; i < pending.size(); ++i) pool.Free(pending[i]);
}

TEST(LoopNodePoolTest, ASpareOfZeroGivesBackEveryChunk) {
  LoopNodePool pool(kWide, 0);
  std::vector<void*> blocks = Fill(&pool, kWide, 3);
  blocks.push_back(pool.Allocate());
  for (void* block : blocks) pool.Free(block);
  EXPECT_EQ(pool.bytes(), 0u);
  void* again = pool.Allocate();
  EXPECT_EQ(pool.bytes(), 2 * kWide);
  pool.Free(again);
  EXPECT_EQ(pool.bytes(), 0u);
}

TEST(LoopNodePoolTest, KeepAllKeepsEveryChunk) {
  LoopNodePool pool(kSmall, kKeepAll);
  const std::vector<void*> blocks = Fill(&pool, kSmall, 3);
  const size_t peak = pool.bytes();
  for (void* block : blocks) pool.Free(block);
  EXPECT_EQ(pool.bytes(), peak);
}

// Every live block holds its own stamp in every byte; a block handed out
// twice, or written by another's owner, breaks a stamp.
bool Intact(const void* block, size_t block_size, uint8_t stamp) {
  uint8_t expected[kWide];
  std::memset(expected, stamp, block_size);
  return std::memcmp(block, expected, block_size) == 0;
}

void RandomSpikes(size_t block_size, int64_t spare, uint32_t seed) {
  SCOPED_TRACE(testing::Message() << "block_size " << block_size << " spare "
                                  << spare << " seed " << seed);
  std::mt19937 rng(seed);
  LoopNodePool pool(block_size, spare);
  struct Live {
    void* block;
    uint8_t stamp;
  };
  std::vector<Live> live;
  std::set<uintptr_t> addresses;
  for (int round = 0; round < 16; ++round) {
    // Grow to a random size (a spike of several chunks now and then), then
    // free a random set.
    const size_t most = round % 4 == 0 ? 4 * ChunkBlocks(block_size) : 5000;
    const size_t target = std::uniform_int_distribution<size_t>(0, most)(rng);
    while (live.size() < target) {
      void* block = pool.Allocate();
      ASSERT_EQ(Address(block) % 16, 0u);
      ASSERT_TRUE(addresses.insert(Address(block)).second)
          << "a live block handed out again";
      const auto stamp = static_cast<uint8_t>(rng());
      std::memset(block, stamp, block_size);
      live.push_back({block, stamp});
    }
    std::shuffle(live.begin(), live.end(), rng);
    const size_t keep =
        std::uniform_int_distribution<size_t>(0, live.size())(rng);
    for (size_t i = 0; i < live.size(); ++i) {
      ASSERT_TRUE(Intact(live[i].block, block_size, live[i].stamp))
          << "a live block was written by another's owner";
      if (i >= keep) {
        addresses.erase(Address(live[i].block));
        pool.Free(live[i].block);
      }
    }
    live.resize(keep);
  }
  for (const Live& block : live) pool.Free(block.block);
  // Each chunk still held was left empty while the others had fewer than
  // `spare` free blocks.
  if (spare != kKeepAll) {
    EXPECT_LE(pool.bytes(), spare * block_size + LoopNodePool::kChunkBytes);
  }
}

TEST(LoopChunkTableTest, MarksEveryAddressOfAPoolsChunksWhileItHoldsThem) {
  LoopChunkTable table;
  LoopNodePool pool(kSmall, /*spare_blocks=*/0, &table, /*tag=*/2);
  const std::vector<void*> blocks = Fill(&pool, kSmall, 2);
  for (void* block : {blocks.front(), blocks.back()}) {
    // The chunk's first and last 16 bytes (its header, its last block's
    // end).
    const uintptr_t chunk =
        Address(block) & ~(uintptr_t{LoopNodePool::kChunkBytes} - 1);
    const uint32_t first = NodeLink::Of(reinterpret_cast<const void*>(chunk));
    EXPECT_EQ(table.TagAt(first), 2);
    const uint32_t last_unit =
        first + LoopNodePool::kChunkBytes / NodeLink::kUnit - 1;
    EXPECT_EQ(table.TagAt(last_unit), 2);
    EXPECT_EQ(table.TagAt(NodeLink::Of(block)), 2);
  }
  const uintptr_t last_chunk =
      Address(blocks.back()) & ~(uintptr_t{LoopNodePool::kChunkBytes} - 1);
  // Past the last chunk: not the pool's (the arena maps chunks upwards).
  EXPECT_EQ(table.TagAt(NodeLink::Of(reinterpret_cast<const void*>(
                last_chunk + LoopNodePool::kChunkBytes))),
            0);
  for (void* block : blocks) pool.Free(block);
  EXPECT_EQ(pool.bytes(), 0u);  // both chunks went back, and their marks
  EXPECT_EQ(table.TagAt(NodeLink::Of(blocks.front())), 0);
  EXPECT_EQ(table.TagAt(NodeLink::Of(blocks.back())), 0);
}

TEST(LoopNodePoolTest, RandomSpikesNeverShareOrCorruptABlock) {
  for (uint32_t seed = 1; seed <= 2; ++seed) {
    for (const int64_t spare : {int64_t{0}, int64_t{70000}, kKeepAll}) {
      RandomSpikes(kSmall, spare, seed);
      RandomSpikes(kWide, spare, seed);
    }
  }
}

}  // namespace
}  // namespace timingwheel::internal
