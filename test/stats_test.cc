// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// stats_test.cc: the counters, the lateness histogram and its recent window
// (lib/base/stats.h), and GetStats on a ManualClock wheel: every counter agrees
// with what happened, lateness is measured by the wheel's clock, and the
// recent window forgets what is more than a minute old; the hand-off wait
// is the arm's time between its call and the advancer's take.

#include "base/stats.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "absl/random/random.h"
#include "gtest/gtest.h"
#include "test_util.h"
#include "timingwheel/timingwheel.h"

namespace timingwheel {
namespace {

using internal::LatencyHistogram;
using internal::ShardedCounter;
using internal::WindowedHistogram;

constexpr int64_t kSlotNs = WindowedHistogram::kSlotNs;

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

TEST(LatencyHistogramTest, SumAndCountAtMost) {
  for (LatencyHistogram::Writers writers : kBothWriters) {
    LatencyHistogram histogram(writers);
    for (int64_t v : {0, 1023, 1024, 2047, 5000}) histogram.Record(v);
    EXPECT_EQ(histogram.Sum(), 0 + 1023 + 1024 + 2047 + 5000);
    EXPECT_EQ(histogram.CountAtMost(0), 1);
    EXPECT_EQ(histogram.CountAtMost(959), 1);  // 1023 is in [960, 1023]
    EXPECT_EQ(histogram.CountAtMost(1023), 2);
    EXPECT_EQ(histogram.CountAtMost(2047), 4);
    EXPECT_EQ(histogram.CountAtMost(4095), 4);
    EXPECT_EQ(histogram.CountAtMost(INT64_MAX), 5);
  }
}

TEST(LatencyHistogramTest, AWeightedValueCountsAsThatMany) {
  for (LatencyHistogram::Writers writers : kBothWriters) {
    LatencyHistogram histogram(writers);
    histogram.Record(5000, 64);  // a sample standing for 64
    histogram.Record(100);
    EXPECT_EQ(histogram.Count(), 65);
    EXPECT_EQ(histogram.Sum(), 64 * 5000 + 100);
    EXPECT_EQ(histogram.CountAtMost(4095), 1);
    EXPECT_GE(histogram.Percentile(0.5), 5000);
    EXPECT_EQ(histogram.Max(), 5000);
  }
}

TEST(WindowedHistogramTest, RecentStartIsTheSlotAMinuteBefore) {
  EXPECT_EQ(WindowedHistogram::RecentStart(0), 0);
  EXPECT_EQ(WindowedHistogram::RecentStart(7 * kSlotNs - 1), 0);
  EXPECT_EQ(WindowedHistogram::RecentStart(7 * kSlotNs), kSlotNs);
  EXPECT_EQ(WindowedHistogram::RecentStart(7 * kSlotNs + kSlotNs / 2), kSlotNs);
  EXPECT_EQ(WindowedHistogram::RecentStart(INT64_MAX),
            (INT64_MAX / kSlotNs - 6) * kSlotNs);
  EXPECT_EQ(absl::Nanoseconds(kSlotNs), kRecentSlot);
  EXPECT_EQ(absl::Nanoseconds(kSlotNs * 6), kRecentWindow);
}

// What a reader at `now_ns` must see: every value, and those recorded at or
// after RecentStart(now_ns).
struct Recorded {
  int64_t at_ns;
  int64_t value;
};
void ExpectMatches(const WindowedHistogram& histogram,
                   const std::vector<Recorded>& recorded, int64_t now_ns) {
  LatencyHistogram all;
  LatencyHistogram recent;
  histogram.MergeInto(now_ns, &all, &recent);
  const int64_t start = WindowedHistogram::RecentStart(now_ns);
  int64_t in_window = 0;
  int64_t max = 0;
  int64_t max_in_window = 0;
  for (const Recorded& r : recorded) {
    max = std::max(max, r.value);
    if (r.at_ns < start) continue;
    ++in_window;
    max_in_window = std::max(max_in_window, r.value);
  }
  EXPECT_EQ(all.Count(), static_cast<int64_t>(recorded.size())) << now_ns;
  EXPECT_EQ(all.Max(), max) << now_ns;
  EXPECT_EQ(recent.Count(), in_window) << now_ns;
  EXPECT_EQ(recent.Max(), max_in_window) << now_ns;
}

TEST(WindowedHistogramTest, AValueLeavesTheWindowAtTheSlotBoundary) {
  WindowedHistogram histogram(LatencyHistogram::Writers::kOne);
  std::vector<Recorded> recorded;
  ExpectMatches(histogram, recorded, 0);
  // One value late in slot 0, one early in slot 1.
  recorded.push_back({kSlotNs - 1, 5000});
  histogram.Record(kSlotNs - 1, 5000);
  recorded.push_back({kSlotNs, 7});
  histogram.Record(kSlotNs, 7);
  // Slot 0 is in the window until slot 7 begins, slot 1 until slot 8.
  for (int64_t now : {kSlotNs, 7 * kSlotNs - 1, 7 * kSlotNs, 8 * kSlotNs - 1,
                      8 * kSlotNs, 100 * kSlotNs}) {
    ExpectMatches(histogram, recorded, now);
  }
  LatencyHistogram all;
  LatencyHistogram recent;
  histogram.MergeInto(7 * kSlotNs, &all, &recent);
  EXPECT_EQ(recent.Count(), 1);
  EXPECT_EQ(recent.Max(), 7);
  EXPECT_EQ(all.Max(), 5000);
}

TEST(WindowedHistogramTest, MatchesAModelOverManySlots) {
  // Values at random times, with gaps from none to several windows (so ring
  // entries are reused and slots are skipped), each checked by readers from
  // one slot behind the writer to more than a window ahead of it.
  absl::BitGen gen;
  for (LatencyHistogram::Writers writers : kBothWriters) {
    WindowedHistogram histogram(writers);
    std::vector<Recorded> recorded;
    int64_t now = 0;
    for (int i = 0; i < 2000; ++i) {
      switch (absl::Uniform(gen, 0, 4)) {
        case 0:
          break;  // the same instant
        case 1:
          now += absl::Uniform<int64_t>(gen, 0, kSlotNs / 10);
          break;
        case 2:
          now += absl::Uniform<int64_t>(gen, 0, 2 * kSlotNs);
          break;
        default:
          now += absl::Uniform<int64_t>(gen, 0, 20 * kSlotNs);
      }
      const int64_t value = absl::Uniform<int64_t>(gen, 0, 1'000'000'000);
      histogram.Record(now, value);
      recorded.push_back({now, value});
      const int64_t slot_start = now / kSlotNs * kSlotNs;
      for (int64_t reader :
           {std::max<int64_t>(0, slot_start - 1), now, slot_start + kSlotNs,
            now + absl::Uniform<int64_t>(gen, 0, 10 * kSlotNs)}) {
        ExpectMatches(histogram, recorded, reader);
      }
      if (HasFailure()) return;
    }
  }
}

TEST(WindowedHistogramTest, ReadWhileOneWriterRecordsThroughManySlots) {
  // A worker moves through slots while GetStats reads: counts only grow, the
  // window never holds more than all, and at rest both are exact.
  WindowedHistogram histogram(LatencyHistogram::Writers::kOne);
  constexpr int64_t kValues = 200'000;
  constexpr int64_t kStepNs = kSlotNs / 1000;  // 200 slots in all
  std::atomic<int64_t> written_until{0};
  std::thread writer([&] {
    for (int64_t i = 0; i < kValues; ++i) {
      histogram.Record(i * kStepNs, i % 1000);
      written_until.store(i * kStepNs, std::memory_order_relaxed);
    }
  });
  int64_t seen = 0;
  while (seen < kValues) {
    LatencyHistogram all;
    LatencyHistogram recent;
    histogram.MergeInto(written_until.load(std::memory_order_relaxed), &all,
                        &recent);
    ASSERT_GE(all.Count(), seen);
    ASSERT_LE(recent.Count(), all.Count());
    ASSERT_LE(recent.Max(), 999);
    seen = all.Count();
  }
  writer.join();
  LatencyHistogram all;
  LatencyHistogram recent;
  const int64_t last_ns = (kValues - 1) * kStepNs;
  histogram.MergeInto(last_ns, &all, &recent);
  EXPECT_EQ(all.Count(), kValues);
  const int64_t first_in_window =
      WindowedHistogram::RecentStart(last_ns) / kStepNs;
  EXPECT_EQ(recent.Count(), kValues - first_in_window);
  EXPECT_EQ(recent.Max(), 999);
}

TEST(WindowedHistogramTest, ManyWritersInOneSlotAreAllCounted) {
  // An executor's threads share one histogram: at rest nothing is lost.
  // The slot is started before the threads are (a value recorded by one
  // writer while another copies a new slot's start may count in the slot
  // before: stats.h).
  WindowedHistogram histogram(LatencyHistogram::Writers::kMany);
  constexpr int kThreads = 4;
  constexpr int kPerThread = 20'000;
  histogram.Record(5 * kSlotNs, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&histogram, t] {
      for (int i = 1; i <= kPerThread; ++i) {
        histogram.Record(5 * kSlotNs + i, t * kPerThread + i);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  LatencyHistogram all;
  LatencyHistogram recent;
  histogram.MergeInto(6 * kSlotNs, &all, &recent);
  // Values 0 to kThreads * kPerThread, each once.
  constexpr int kValues = kThreads * kPerThread + 1;
  EXPECT_EQ(all.Count(), kValues);
  EXPECT_EQ(recent.Count(), kValues);
  EXPECT_EQ(recent.Max(), kValues - 1);
  EXPECT_EQ(all.Sum(), (kValues - 1.0) * kValues / 2);
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

TEST(GetStatsTest, LatenessSumAndBuckets) {
  auto clock = std::make_shared<ManualClock>();
  auto wheel = OneWorkerWheel(clock);
  // Due at 1 ms, 2 ms and 3 ms; all run at 4 ms: 3, 2 and 1 ms late.
  for (int ms = 1; ms <= 3; ++ms) {
    ASSERT_TRUE(wheel->AfterFunc(absl::Milliseconds(ms), [] {}).ok());
  }
  clock->Advance(absl::Milliseconds(4));
  wheel->WaitIdle();
  const Stats stats = wheel->GetStats();
  EXPECT_EQ(stats.fired, 3);
  EXPECT_EQ(stats.lateness_sum, absl::Milliseconds(6));
  ASSERT_EQ(stats.lateness_buckets.size(), 28u);
  EXPECT_EQ(stats.lateness_buckets.front().upper_bound,
            absl::Nanoseconds(1023));
  EXPECT_EQ(stats.lateness_buckets[26].upper_bound,
            absl::Nanoseconds((int64_t{1} << 36) - 1));
  EXPECT_EQ(stats.lateness_buckets.back().upper_bound,
            absl::InfiniteDuration());
  for (const LatenessBucket& bucket : stats.lateness_buckets) {
    // 1 ms = 1000000 ns < 2^20 - 1; 2 ms < 2^21 - 1; 3 ms < 2^22 - 1.
    int64_t expected = 0;
    for (int ms = 1; ms <= 3; ++ms) {
      if (absl::Milliseconds(ms) <= bucket.upper_bound) ++expected;
    }
    EXPECT_EQ(bucket.count, expected) << bucket.upper_bound;
  }
}

// The hand-off wait of an arm is the wheel's clock when the advancer took it
// minus the reading of the call that made it. An arm due after the
// advancer's planned wake-up does not wake it, so under a ManualClock it
// waits, by exactly as much as the clock moves, for the next round.
TEST(GetStatsTest, HandOffIsHowLongAnArmWaitedForTheAdvancer) {
  auto clock = std::make_shared<ManualClock>();
  auto wheel = OneWorkerWheel(clock);
  Stats stats = wheel->GetStats();
  EXPECT_EQ(stats.handoffs, 0);
  EXPECT_EQ(stats.handoff_max, absl::ZeroDuration());
  // Nothing linked: the push wakes the advancer, which takes it at once,
  // and then plans to wake for this timer's bucket.
  ASSERT_TRUE(wheel->AfterFunc(absl::Seconds(1), [] {}).ok());
  wheel->WaitIdle();
  // Due after that: it waits in its lane while the clock moves.
  ASSERT_TRUE(wheel->AfterFunc(absl::Hours(1), [] {}).ok());
  clock->Advance(absl::Milliseconds(30));
  wheel->WaitIdle();
  stats = wheel->GetStats();
  EXPECT_EQ(stats.handoffs, 2);
  EXPECT_EQ(stats.handoff_p50, absl::ZeroDuration());
  EXPECT_EQ(stats.handoff_p99, absl::Milliseconds(30));
  EXPECT_EQ(stats.handoff_max, absl::Milliseconds(30));
  // A Reset hands its new arm over too, and an arm stopped by its thread
  // before the take never reaches the advancer.
  Timer reset = wheel->AfterFunc(absl::Hours(2), [] {}).value();
  ASSERT_TRUE(reset.Stop());
  EXPECT_FALSE(reset.Reset(absl::Hours(3)));
  clock->Advance(absl::Milliseconds(10));
  wheel->WaitIdle();
  stats = wheel->GetStats();
  EXPECT_EQ(stats.handoffs, 3);
  EXPECT_EQ(stats.handoff_max, absl::Milliseconds(30));
}

TEST(GetStatsTest, RecentForgetsWhatIsMoreThanAMinuteOld) {
  auto clock = std::make_shared<ManualClock>();
  auto wheel = OneWorkerWheel(clock);
  // A burst at the start: 100 callbacks due at 1 ms run at 50 ms, 49 ms late.
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(wheel->AfterFunc(absl::Milliseconds(1), [] {}).ok());
  }
  clock->Advance(absl::Milliseconds(50));
  wheel->WaitIdle();
  Stats stats = wheel->GetStats();
  EXPECT_EQ(stats.recent.fired, 100);
  EXPECT_EQ(stats.recent.lateness_max, absl::Milliseconds(49));
  EXPECT_EQ(stats.recent.lateness_p50, absl::Milliseconds(49));
  EXPECT_EQ(stats.recent.span, absl::Milliseconds(50));  // the wheel's age

  // Then one on-time callback a second, from 1 s on.
  clock->Advance(absl::Milliseconds(950));
  wheel->WaitIdle();
  Timer every = wheel->Every(absl::Seconds(1), [] {}).value();
  const auto advance_to = [&](absl::Duration t) {
    while (clock->Now() < t) {
      clock->Advance(absl::Seconds(1));
      wheel->WaitIdle();
    }
  };
  // At 69 s the window (from slot 0, 0-10 s) still holds the burst: the
  // runs at 2 ... 69 s and the 100 late ones.
  advance_to(absl::Seconds(69));
  stats = wheel->GetStats();
  EXPECT_EQ(stats.recent.span, absl::Seconds(69));
  EXPECT_EQ(stats.recent.fired, 68 + 100);
  EXPECT_EQ(stats.recent.lateness_max, absl::Milliseconds(49));
  EXPECT_EQ(stats.recent.lateness_p99, absl::Milliseconds(49));
  EXPECT_EQ(stats.recent.lateness_p50, absl::Milliseconds(49));

  // At 70 s it runs from 10 s: the runs at 10 ... 70 s, all on time. The
  // lifetime view keeps the burst.
  advance_to(absl::Seconds(70));
  stats = wheel->GetStats();
  EXPECT_EQ(stats.recent.span, absl::Seconds(60));
  EXPECT_EQ(stats.recent.fired, 61);
  EXPECT_EQ(stats.recent.lateness_max, absl::ZeroDuration());
  EXPECT_EQ(stats.recent.lateness_p99, absl::ZeroDuration());
  EXPECT_EQ(stats.fired, 69 + 100);
  EXPECT_EQ(stats.lateness_max, absl::Milliseconds(49));
  EXPECT_EQ(stats.lateness_p50, absl::Milliseconds(49));
  EXPECT_EQ(stats.lateness_sum, absl::Milliseconds(49 * 100));

  // At 75 s the window has grown by the 5 s of slot 7 gone by.
  advance_to(absl::Seconds(75));
  stats = wheel->GetStats();
  EXPECT_EQ(stats.recent.span, absl::Seconds(65));
  EXPECT_EQ(stats.recent.fired, 66);

  // Idle for two minutes: nothing in the window.
  ASSERT_TRUE(every.Stop());
  clock->Advance(absl::Minutes(2));
  wheel->WaitIdle();
  stats = wheel->GetStats();
  EXPECT_EQ(stats.recent.fired, 0);
  EXPECT_EQ(stats.recent.lateness_max, absl::ZeroDuration());
  EXPECT_EQ(stats.recent.lateness_p50, absl::ZeroDuration());
  EXPECT_EQ(stats.fired, 74 + 100);
}

}  // namespace
}  // namespace timingwheel
