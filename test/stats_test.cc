// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// stats_test.cc: the counters and the lateness histogram (lib/stats.h), and
// GetStats on a ManualClock wheel: every counter agrees with what happened,
// and lateness is measured by the wheel's clock.

#include "stats.h"

#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "test_util.h"
#include "timingwheel/timingwheel.h"

namespace timingwheel {
namespace {

using internal::LatencyHistogram;
using internal::ShardedCounter;

TEST(ShardedCounterTest, SumsAddsFromManyThreads) {
  ShardedCounter counter;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&counter] {
      for (int i = 0; i < 10000; ++i) counter.Add(1);
      counter.Add(-5000);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(counter.Sum(), 8 * 5000);
}

TEST(ShardedCounterTest, MoreThreadsThanOwnedCellsShareTheSpareOne) {
  // All alive at once, so that some find every owned cell taken.
  constexpr int kThreads = ShardedCounter::kOwnedCells + 8;
  ShardedCounter counter;
  std::atomic<int> arrived{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      counter.Add(1);
      arrived.fetch_add(1);
      while (arrived.load() < kThreads) std::this_thread::yield();
      for (int i = 0; i < 1000; ++i) counter.Add(2);
      counter.Add(3, std::memory_order_seq_cst);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(counter.Sum(), kThreads * (1 + 2000 + 3));
}

TEST(ShardedCounterTest, ACellPassedToTheNextThreadKeepsItsCount) {
  // Threads one after another: each exiting thread's cell goes to the next,
  // which adds on top of what its predecessor stored.
  ShardedCounter counter;
  for (int t = 0; t < 3 * ShardedCounter::kOwnedCells; ++t) {
    std::thread([&counter] {
      for (int i = 0; i < 1000; ++i) counter.Add(1);
    }).join();
  }
  EXPECT_EQ(counter.Sum(), 3 * ShardedCounter::kOwnedCells * 1000);
}

constexpr LatencyHistogram::Writers kBothWriters[] = {
    LatencyHistogram::Writers::kOne, LatencyHistogram::Writers::kMany};

TEST(LatencyHistogramTest, PercentilesAreWithinAnEighthAbove) {
  for (LatencyHistogram::Writers writers : kBothWriters) {
    SCOPED_TRACE(writers == LatencyHistogram::Writers::kOne ? "one writer"
                                                            : "many writers");
    LatencyHistogram histogram(writers);
    EXPECT_EQ(histogram.Percentile(0.5), 0);
    for (int64_t v = 1; v <= 1000; ++v) histogram.Record(v * 1000);
    EXPECT_EQ(histogram.Count(), 1000);
    EXPECT_EQ(histogram.Max(), 1000000);
    for (double q : {0.5, 0.9, 0.99, 0.999}) {
      const double exact = q * 1000 * 1000;
      const int64_t got = histogram.Percentile(q);
      EXPECT_GE(got, exact) << q;
      EXPECT_LE(got, exact * 1.125 + 1000) << q;
    }
    EXPECT_EQ(histogram.Percentile(1.0), 1000000);
  }
}

TEST(LatencyHistogramTest, SmallNegativeAndHugeValues) {
  for (LatencyHistogram::Writers writers : kBothWriters) {
    SCOPED_TRACE(writers == LatencyHistogram::Writers::kOne ? "one writer"
                                                            : "many writers");
    LatencyHistogram histogram(writers);
    histogram.Record(-5);  // counts as 0
    histogram.Record(0);
    histogram.Record(7);
    histogram.Record(INT64_MAX);
    EXPECT_EQ(histogram.Count(), 4);
    EXPECT_EQ(histogram.Percentile(0.5), 0);
    EXPECT_EQ(histogram.Percentile(0.75), 7);
    EXPECT_EQ(histogram.Percentile(1.0), INT64_MAX);
    LatencyHistogram merged;
    merged.MergeFrom(histogram);
    EXPECT_EQ(merged.Count(), 4);
    EXPECT_EQ(merged.Max(), INT64_MAX);
  }
}

TEST(LatencyHistogramTest, OneWriterIsReadWhileItRecords) {
  // A worker records into its own histogram while GetStats merges it.
  LatencyHistogram histogram(LatencyHistogram::Writers::kOne);
  constexpr int64_t kValues = 100'000;
  std::thread writer([&] {
    for (int64_t v = 1; v <= kValues; ++v) histogram.Record(v);
  });
  int64_t seen = 0;
  while (seen < kValues) {
    LatencyHistogram merged;
    merged.MergeFrom(histogram);
    ASSERT_GE(merged.Count(), seen);  // counts only grow
    seen = merged.Count();
  }
  writer.join();
  EXPECT_EQ(histogram.Count(), kValues);
  EXPECT_EQ(histogram.Max(), kValues);
}

TEST(GetStatsTest, CountersAndLatenessFollowWhatHappened) {
  auto clock = std::make_shared<ManualClock>();
  Options options;
  options.clock = clock;
  options.workers = 1;
  options.tick = absl::Milliseconds(1);
  auto wheel = TimingWheel::Create(std::move(options)).value();

  // An unaligned deadline: 0.5 ms, fires at the 1 ms tick, 0.5 ms late.
  ASSERT_TRUE(wheel->AfterFunc(absl::Microseconds(500), [] {}).ok());
  Timer stopped = wheel->AfterFunc(absl::Seconds(5), [] {}).value();
  ASSERT_TRUE(stopped.Stop());
  Timer every = wheel->Every(absl::Milliseconds(2), [] {}).value();
  ASSERT_TRUE(wheel->AfterFunc(absl::Hours(1), [] {}).ok());

  for (int i = 0; i < 4; ++i) {
    clock->Advance(absl::Milliseconds(1));
    wheel->WaitIdle();
  }
  Stats stats = wheel->GetStats();
  EXPECT_EQ(stats.scheduled, 4);
  EXPECT_EQ(stats.stopped, 1);
  EXPECT_EQ(stats.fired, 3);    // the 0.5 ms timer, Every at 2 and 4 ms
  EXPECT_EQ(stats.pending, 2);  // Every, and the hour
  EXPECT_EQ(stats.cancelled, 0);
  EXPECT_EQ(stats.callbacks_thrown, 0);
  EXPECT_EQ(stats.worker_queue_depth, 0);
  EXPECT_EQ(stats.lateness_max, absl::Microseconds(500));
  EXPECT_EQ(stats.lateness_p50, absl::ZeroDuration());

  EXPECT_EQ(wheel->Shutdown(), 2);
  stats = wheel->GetStats();
  EXPECT_EQ(stats.cancelled, 2);
  EXPECT_EQ(stats.pending, 0);
}

}  // namespace
}  // namespace timingwheel
