// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// fire_log_test.cc: the recorder timingwheel_cli and the benchmark's BM_Fire
// and BM_Burst share (tools/fire_log.h): the nearest-rank percentiles, the
// deadlines, and the merge of the threads' records into early, lost and
// doubled counts and lateness. Time comes from a ManualClock; the threads
// that record are joined before the clock moves or the log is read.

#include "fire_log.h"

#include <cstdint>
#include <memory>
#include <numeric>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "timingwheel/clock.h"

namespace timingwheel::tools {
namespace {

using ::testing::ElementsAre;

constexpr int64_t kMs = 1'000'000;

// 1, 2, ..., n.
std::vector<int64_t> OneTo(int64_t n) {
  std::vector<int64_t> v(n);
  std::iota(v.begin(), v.end(), 1);
  return v;
}

TEST(NearestRankTest, IsTheSampleAtRankCeilPTimesN) {
  const std::vector<int64_t> v = OneTo(100);
  EXPECT_EQ(NearestRank(v, 0.001), 1);
  EXPECT_EQ(NearestRank(v, 0.5), 50);
  EXPECT_EQ(NearestRank(v, 0.99), 99);
  EXPECT_EQ(NearestRank(v, 0.995), 100);
  EXPECT_EQ(NearestRank(v, 1.0), 100);
}

TEST(NearestRankTest, HoldsAtAMillionSamples) {
  const std::vector<int64_t> v = OneTo(1'000'000);
  EXPECT_EQ(NearestRank(v, 0.5), 500'000);
  EXPECT_EQ(NearestRank(v, 0.99), 990'000);
  EXPECT_EQ(NearestRank(v, 0.999), 999'000);
}

TEST(NearestRankTest, OneSampleIsEveryPercentile) {
  EXPECT_EQ(NearestRank({7}, 0.001), 7);
  EXPECT_EQ(NearestRank({7}, 0.5), 7);
  EXPECT_EQ(NearestRank({7}, 1.0), 7);
}

TEST(LatenessOfTest, SummarizesSortedSamples) {
  const LatenessStats l = LatenessOf(OneTo(1000));
  EXPECT_EQ(l.count, 1000);
  EXPECT_EQ(l.min, absl::Nanoseconds(1));
  EXPECT_EQ(l.p50, absl::Nanoseconds(500));
  EXPECT_EQ(l.p99, absl::Nanoseconds(990));
  EXPECT_EQ(l.p999, absl::Nanoseconds(999));
  EXPECT_EQ(l.max, absl::Nanoseconds(1000));
}

TEST(LatenessOfTest, NoSamplesCountZero) { EXPECT_EQ(LatenessOf({}).count, 0); }

TEST(FireLogTest, StampDeadlineAddsTheDelayToTheClockNow) {
  ManualClock clock;
  clock.Advance(absl::Milliseconds(5));
  FireLog log(2, 1, &clock);
  // A window of 0 draws exactly the minimum delay.
  log.DrawUniformDelays(0, 2, 3 * kMs, 0, /*seed=*/1);
  EXPECT_EQ(log.StampDeadline(0), 3 * kMs);
  EXPECT_EQ(log.Deadline(0), 8 * kMs);
  clock.Advance(absl::Milliseconds(1));
  EXPECT_EQ(log.StampDeadline(1), 3 * kMs);
  EXPECT_EQ(log.Deadline(1), 9 * kMs);
}

// Each id's delay, read back through StampDeadline with the clock at 0.
std::vector<int64_t> DrawnDelays(int64_t n, int64_t min_ns, int64_t window_ns,
                                 uint64_t seed) {
  ManualClock clock;
  FireLog log(n, 1, &clock);
  log.DrawUniformDelays(0, n, min_ns, window_ns, seed);
  std::vector<int64_t> delays;
  for (int64_t id = 0; id < n; ++id) delays.push_back(log.StampDeadline(id));
  return delays;
}

TEST(FireLogTest, DrawUniformDelaysStaysInTheWindowAndFollowsTheSeed) {
  const std::vector<int64_t> delays = DrawnDelays(1000, 100, 50, 1);
  for (const int64_t d : delays) {
    EXPECT_GE(d, 100);
    EXPECT_LT(d, 150);
  }
  EXPECT_EQ(DrawnDelays(1000, 100, 50, 1), delays);
  EXPECT_NE(DrawnDelays(1000, 100, 50, 2), delays);
}

TEST(FireLogTest, SummarizeMergesTheThreadsRecords) {
  ManualClock clock;
  FireLog log(6, 2, &clock);
  log.SetDeadline(0, 10 * kMs);
  log.SetDeadline(1, 10 * kMs);
  log.SetDeadline(2, 20 * kMs);
  log.SetDeadline(3, 20 * kMs);
  log.SetDeadline(4, 30 * kMs);  // Never fires: lost.
  // Id 5 is never scheduled, and is left out.

  clock.Advance(absl::Milliseconds(10));
  std::thread([&log] {
    log.Record(0);  // On time.
    log.Record(2);  // 10 ms early.
  }).join();
  clock.Advance(absl::Milliseconds(15));
  std::thread([&log] {
    log.Record(1);  // 15 ms late.
    log.Record(3);  // 5 ms late.
    log.Record(0);  // Again: doubled; the first fire counts.
  }).join();

  EXPECT_EQ(log.Fires(), 5);
  const FireSummary s = log.Summarize(/*due_after_ns=*/15 * kMs);
  EXPECT_EQ(s.scheduled, 5);
  EXPECT_EQ(s.fired, 4);
  EXPECT_EQ(s.early, 1);
  EXPECT_EQ(s.lost, 1);
  EXPECT_EQ(s.doubled, 1);
  EXPECT_EQ(s.first_deadline_ns, 10 * kMs);
  EXPECT_EQ(s.last_deadline_ns, 30 * kMs);
  EXPECT_EQ(s.first_fire_ns, 10 * kMs);
  EXPECT_EQ(s.last_fire_ns, 25 * kMs);
  EXPECT_THAT(s.lateness_ns, ElementsAre(-10 * kMs, 0, 5 * kMs, 15 * kMs));
  EXPECT_THAT(s.lateness_due_after_ns, ElementsAre(-10 * kMs, 5 * kMs));
}

TEST(FireLogTest, RecordsMoreFiresThanItPreallocated) {
  ManualClock clock;
  constexpr int64_t kTimers = 5000;
  FireLog log(kTimers, 1, &clock);
  for (int64_t id = 0; id < kTimers; ++id) log.SetDeadline(id, 0);
  // Three fires per timer: more records than the chunks made up front hold.
  for (int round = 0; round < 3; ++round) {
    for (int64_t id = 0; id < kTimers; ++id) log.Record(id);
    clock.Advance(absl::Nanoseconds(1));
  }
  EXPECT_EQ(log.Fires(), 3 * kTimers);
  const FireSummary s = log.Summarize();
  EXPECT_EQ(s.fired, kTimers);
  EXPECT_EQ(s.doubled, kTimers);
  EXPECT_EQ(s.lost, 0);
  EXPECT_EQ(s.last_fire_ns, 0);  // First fires only.
}

TEST(FireLogTest, EachLogKeepsOnlyItsOwnRecords) {
  ManualClock clock;
  auto first = std::make_unique<FireLog>(2, 1, &clock);
  FireLog second(2, 1, &clock);
  first->Record(0);
  second.Record(1);
  first->Record(1);
  EXPECT_EQ(first->Fires(), 2);
  EXPECT_EQ(second.Fires(), 1);

  // A log made after one was destroyed (perhaps at its address) starts
  // empty, and this thread records into it.
  first.reset();
  FireLog third(2, 1, &clock);
  EXPECT_EQ(third.Fires(), 0);
  third.SetDeadline(0, 0);
  third.Record(0);
  EXPECT_EQ(third.Fires(), 1);
  EXPECT_EQ(third.Summarize().fired, 1);
  EXPECT_EQ(second.Fires(), 1);
}

}  // namespace
}  // namespace timingwheel::tools
