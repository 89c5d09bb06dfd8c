// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// task_queue_test.cc: tests of TaskQueue (lib/threads/task_queue.h), the worker
// pool's FIFO queue of due timers in recycled chunks. Tasks come out in the
// order they went in: within a chunk, for a batch across a chunk boundary or
// larger than several chunks, for a front batch of k taken across a boundary,
// one at a time across it, and all at once (what Close does), also when that
// ends exactly at a chunk's end. The queue allocates nothing until the first
// Append and then only when it holds more tasks than before: a chunk whose
// tasks are taken is reused, so a steady flow keeps the same chunks.
// ShrinkIfEmpty gives back the spare chunks beyond kKeptChunks of a drained
// queue and nothing otherwise. ForEach visits the tasks in the queue, front
// to back, across chunks, and none taken. A randomized run compares the queue
// with a std::deque and checks the chunk count against the peak size.
//
// Tasks carry fake node pointers; the queue never dereferences them.

#include "threads/task_queue.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace timingwheel::internal {
namespace {

using ::testing::IsEmpty;
using Task = TaskQueue::Task;

constexpr int64_t kChunk = TaskQueue::kChunkTasks;
constexpr size_t kKept = TaskQueue::kKeptChunks;

// Task number `i`: its node, generation and deadline all say `i`.
Task MakeTask(int64_t i) {
  return Task{reinterpret_cast<TimerNode*>(static_cast<uintptr_t>(i + 1) * 64),
              static_cast<uint64_t>(i), /*deadline_ns=*/i};
}

// The numbers of `tasks`, checking that each task is whole.
std::vector<int64_t> Numbers(const std::vector<Task>& tasks) {
  std::vector<int64_t> numbers;
  for (const Task& task : tasks) {
    const auto i = static_cast<int64_t>(task.generation);
    EXPECT_EQ(task.node, MakeTask(i).node) << "task " << i;
    EXPECT_EQ(task.deadline_ns, i) << "task " << i;
    numbers.push_back(i);
  }
  return numbers;
}

// Numbers first .. first + count - 1.
std::vector<int64_t> Range(int64_t first, int64_t count) {
  std::vector<int64_t> numbers;
  for (int64_t i = first; i < first + count; ++i) numbers.push_back(i);
  return numbers;
}

// Appends tasks first .. first + count - 1, as one batch.
void Append(TaskQueue* queue, int64_t first, int64_t count) {
  std::vector<Task> tasks;
  for (int64_t i = first; i < first + count; ++i) tasks.push_back(MakeTask(i));
  queue->Append(tasks);
}

// Takes the first `k` tasks as one batch and returns their numbers.
std::vector<int64_t> Take(TaskQueue* queue, int64_t k) {
  std::vector<Task> out;
  queue->TakeFront(static_cast<size_t>(k), &out);
  return Numbers(out);
}

// Takes the first task alone and returns its number.
int64_t TakeOne(TaskQueue* queue) {
  return Numbers({queue->TakeFront()}).front();
}

TEST(TaskQueueTest, AllocatesNothingUntilTheFirstAppend) {
  TaskQueue queue;
  EXPECT_TRUE(queue.empty());
  EXPECT_EQ(queue.chunks(), 0u);
  Append(&queue, 0, 0);
  EXPECT_EQ(queue.chunks(), 0u);
  EXPECT_TRUE(queue.empty());
  Append(&queue, 0, 1);
  EXPECT_EQ(queue.chunks(), 1u);
  EXPECT_EQ(queue.size(), 1u);
}

TEST(TaskQueueTest, TakesTasksInTheOrderTheyWereAppended) {
  TaskQueue queue;
  Append(&queue, 0, 3);
  Append(&queue, 3, 2);
  EXPECT_EQ(queue.size(), 5u);
  EXPECT_EQ(TakeOne(&queue), 0);
  EXPECT_EQ(Take(&queue, 3), Range(1, 3));
  EXPECT_EQ(queue.size(), 1u);
  EXPECT_THAT(Take(&queue, 0), IsEmpty());
  EXPECT_EQ(queue.size(), 1u);
  EXPECT_EQ(Take(&queue, 1), Range(4, 1));
  EXPECT_TRUE(queue.empty());
}

TEST(TaskQueueTest, BatchAcrossAChunkBoundaryContinuesInANewChunk) {
  TaskQueue queue;
  Append(&queue, 0, kChunk - 10);
  EXPECT_EQ(queue.chunks(), 1u);
  Append(&queue, kChunk - 10, 300);  // 10 in the first chunk, 290 after
  EXPECT_EQ(queue.chunks(), 2u);
  EXPECT_EQ(queue.size(), static_cast<size_t>(kChunk + 290));
  EXPECT_EQ(Take(&queue, queue.size()), Range(0, kChunk + 290));
}

TEST(TaskQueueTest, BatchLargerThanSeveralChunksFillsThemInOrder) {
  TaskQueue queue;
  Append(&queue, 0, 7);
  Append(&queue, 7, 3 * kChunk);
  EXPECT_EQ(queue.chunks(), 4u);
  EXPECT_EQ(Take(&queue, queue.size()), Range(0, 3 * kChunk + 7));
}

TEST(TaskQueueTest, TakesABatchAcrossAChunkBoundary) {
  TaskQueue queue;
  Append(&queue, 0, 2 * kChunk);
  EXPECT_EQ(Take(&queue, kChunk - 5), Range(0, kChunk - 5));
  // 5 from the end of the first chunk and 27 from the start of the second.
  EXPECT_EQ(Take(&queue, 32), Range(kChunk - 5, 32));
  EXPECT_EQ(queue.chunks(), 2u);  // the first one is a spare now
  EXPECT_EQ(Take(&queue, queue.size()), Range(kChunk + 27, kChunk - 27));
}

TEST(TaskQueueTest, TakesOneAtATimeAcrossAChunkBoundary) {
  TaskQueue queue;
  Append(&queue, 0, kChunk + 20);
  EXPECT_EQ(Take(&queue, kChunk - 10), Range(0, kChunk - 10));
  for (int64_t i = kChunk - 10; i < kChunk + 20; ++i) {
    EXPECT_EQ(TakeOne(&queue), i);
  }
  EXPECT_TRUE(queue.empty());
  Append(&queue, 100, 3);  // into a spare chunk
  EXPECT_EQ(queue.chunks(), 2u);
  EXPECT_EQ(Take(&queue, 3), Range(100, 3));
}

// The numbers of the tasks ForEach visits, in order.
std::vector<int64_t> Visit(const TaskQueue& queue) {
  std::vector<Task> visited;
  queue.ForEach([&](const Task& task) { visited.push_back(task); });
  return Numbers(visited);
}

TEST(TaskQueueTest, ForEachVisitsTheTasksInOrderAcrossChunks) {
  TaskQueue queue;
  EXPECT_TRUE(Visit(queue).empty());
  Append(&queue, 0, 2 * kChunk + 7);
  EXPECT_EQ(Visit(queue), Range(0, 2 * kChunk + 7));
  EXPECT_EQ(Take(&queue, kChunk + 3), Range(0, kChunk + 3));
  EXPECT_EQ(Visit(queue), Range(kChunk + 3, kChunk + 4));
  Take(&queue, queue.size());
  EXPECT_TRUE(Visit(queue).empty());
  Append(&queue, 500, 2);
  EXPECT_EQ(Visit(queue), Range(500, 2));
}

TEST(TaskQueueTest, TakingEverythingEmptiesTheQueue) {
  TaskQueue queue;
  Append(&queue, 0, 700);
  EXPECT_EQ(Take(&queue, 600), Range(0, 600));
  Append(&queue, 700, kChunk);                           // across the boundary
  std::vector<Task> out = {MakeTask(-2), MakeTask(-1)};  // appended to
  queue.TakeFront(queue.size(), &out);
  std::vector<int64_t> want = {-2, -1};
  for (int64_t i = 600; i < 700 + kChunk; ++i) want.push_back(i);
  EXPECT_EQ(Numbers(out), want);
  EXPECT_TRUE(queue.empty());
  std::vector<Task> none;
  queue.TakeFront(0, &none);
  EXPECT_THAT(none, IsEmpty());
}

TEST(TaskQueueTest, DrainingEndsExactlyAtAChunksEnd) {
  TaskQueue queue;
  // The back chunk is full when the last task is taken, as a batch ...
  Append(&queue, 0, 2 * kChunk);
  EXPECT_EQ(Take(&queue, 2 * kChunk), Range(0, 2 * kChunk));
  EXPECT_TRUE(queue.empty());
  Append(&queue, 0, 5);
  EXPECT_EQ(Take(&queue, 5), Range(0, 5));
  // ... and alone.
  Append(&queue, 0, kChunk);
  EXPECT_EQ(Take(&queue, kChunk - 1), Range(0, kChunk - 1));
  EXPECT_EQ(TakeOne(&queue), kChunk - 1);
  EXPECT_TRUE(queue.empty());
  Append(&queue, 0, kChunk + 1);
  EXPECT_EQ(Take(&queue, kChunk + 1), Range(0, kChunk + 1));
  EXPECT_EQ(queue.chunks(), 2u);  // the same two chunks throughout
}

TEST(TaskQueueTest, ReusesTheChunksOfTakenTasks) {
  TaskQueue queue;
  int64_t next_in = 0;
  int64_t next_out = 0;
  Append(&queue, next_in, 3000);
  next_in += 3000;
  // A steady flow of 1000 tasks in, 1000 out, never empty, through many
  // chunks: 3000 tasks span at most 2 chunks, and one more is being filled.
  for (int round = 0; round < 100; ++round) {
    Append(&queue, next_in, 1000);
    next_in += 1000;
    ASSERT_EQ(Take(&queue, 1000), Range(next_out, 1000));
    next_out += 1000;
    ASSERT_LE(queue.chunks(), 3u);
  }
  EXPECT_GT(next_in, 20 * kChunk);
  EXPECT_EQ(Take(&queue, queue.size()), Range(next_out, next_in - next_out));
}

TEST(TaskQueueTest, ShrinkIfEmptyGivesBackTheSpareChunksBeyondTheKept) {
  TaskQueue queue;
  const int64_t burst = static_cast<int64_t>(kKept + 4) * kChunk;
  Append(&queue, 0, burst);
  ASSERT_EQ(queue.chunks(), kKept + 4);
  EXPECT_EQ(Take(&queue, burst - 1), Range(0, burst - 1));
  EXPECT_THAT(queue.ShrinkIfEmpty(), IsEmpty());  // one task left
  EXPECT_EQ(queue.chunks(), kKept + 4);
  EXPECT_EQ(TakeOne(&queue), burst - 1);
  EXPECT_EQ(queue.ShrinkIfEmpty().size(), 4u);
  EXPECT_EQ(queue.chunks(), kKept);
  EXPECT_THAT(queue.ShrinkIfEmpty(), IsEmpty());  // none beyond kKept left
  // The kept chunks hold the next burst of that size without allocating.
  const int64_t kept_tasks = static_cast<int64_t>(kKept) * kChunk;
  Append(&queue, 0, kept_tasks);
  EXPECT_EQ(queue.chunks(), kKept);
  EXPECT_EQ(Take(&queue, kept_tasks), Range(0, kept_tasks));
}

TEST(TaskQueueTest, ShrinkIfEmptyKeepsAFewSpareChunks) {
  TaskQueue queue;
  EXPECT_THAT(queue.ShrinkIfEmpty(), IsEmpty());
  const int64_t kept_tasks = static_cast<int64_t>(kKept) * kChunk;
  Append(&queue, 0, kept_tasks);
  EXPECT_EQ(Take(&queue, kept_tasks), Range(0, kept_tasks));
  EXPECT_THAT(queue.ShrinkIfEmpty(), IsEmpty());
  EXPECT_EQ(queue.chunks(), kKept);
}

TEST(TaskQueueTest, RandomAppendsAndTakesMatchADeque) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE(seed);
    std::mt19937 rng(seed);
    TaskQueue queue;
    std::deque<int64_t> model;
    int64_t next = 0;
    size_t peak = 0;
    for (int step = 0; step < 3000; ++step) {
      const uint32_t op = rng() % 8;
      if (op < 3) {
        // Mostly small batches, now and then one of several chunks.
        const int64_t count =
            rng() % 16 == 0 ? rng() % (3 * kChunk) : rng() % 200;
        Append(&queue, next, count);
        for (int64_t i = 0; i < count; ++i) model.push_back(next + i);
        next += count;
      } else if (op < 6 && !model.empty()) {
        const size_t k = rng() % 4 != 0
                             ? 1 + rng() % std::min<size_t>(32, model.size())
                             : model.size();
        const std::vector<int64_t> want(model.begin(), model.begin() + k);
        model.erase(model.begin(), model.begin() + k);
        ASSERT_EQ(Take(&queue, static_cast<int64_t>(k)), want);
      } else if (op == 6 && !model.empty()) {
        ASSERT_EQ(TakeOne(&queue), model.front());
        model.pop_front();
      } else {
        const size_t chunks = queue.chunks();
        const size_t released = queue.ShrinkIfEmpty().size();
        EXPECT_EQ(released,
                  model.empty() && chunks > kKept ? chunks - kKept : 0);
        EXPECT_EQ(queue.chunks(), chunks - released);
      }
      ASSERT_EQ(queue.size(), model.size());
      // A chunk is allocated only when all are in use: at most the peak
      // size's worth, plus one partly taken at the front.
      peak = std::max(peak, model.size());
      EXPECT_LE(queue.chunks(), (peak + kChunk - 1) / kChunk + 1);
    }
    ASSERT_EQ(Take(&queue, static_cast<int64_t>(queue.size())),
              std::vector<int64_t>(model.begin(), model.end()));
  }
}

}  // namespace
}  // namespace timingwheel::internal
