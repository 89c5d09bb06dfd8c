// Copyright 2026 The timingwheel Authors.
//
// fast_clock_test.cc: SteadyNowNotBeforeNs is never behind steady_clock and
// never far ahead of it, across its calibration and several refreshes, from
// several threads. Real-clock tests: the lower bound is exact, the upper one
// generous.

#include "fast_clock.h"

#include <chrono>
#include <cstdint>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace timingwheel::internal {
namespace {

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Reads the fast clock between two steady readings for `duration_ns`; returns
// how often it was behind the first reading (never allowed) or more than
// `max_ahead_ns` past the second one.
struct Misses {
  int64_t behind = 0;
  int64_t far_ahead = 0;
  int64_t reads = 0;
};
Misses ReadFor(int64_t duration_ns, int64_t max_ahead_ns) {
  Misses misses;
  const int64_t end = SteadyNs() + duration_ns;
  for (int64_t before = SteadyNs(); before < end; before = SteadyNs()) {
    const int64_t fast = SteadyNowNotBeforeNs();
    const int64_t after = SteadyNs();
    ++misses.reads;
    if (fast < before) ++misses.behind;
    if (fast > after + max_ahead_ns) ++misses.far_ahead;
  }
  return misses;
}

TEST(FastClockTest, NeverBehindSteadyClockRealClock) {
  // 300 ms: calibration (10 ms) and several 50 ms refreshes.
  const Misses misses = ReadFor(300'000'000, 1'000'000);
  EXPECT_GT(misses.reads, 1000);
  EXPECT_EQ(misses.behind, 0) << "a deadline taken from it would be early";
  // At most ~0.1 ms ahead by design; 1 ms leaves room for preemption between
  // the reads only on the far side, which a loaded machine may still hit.
  EXPECT_LE(misses.far_ahead, misses.reads / 100);
}

TEST(FastClockTest, NeverBehindFromSeveralThreadsRealClock) {
  std::vector<std::thread> threads;
  std::vector<Misses> misses(4);
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back(
        [&misses, i] { misses[i] = ReadFor(200'000'000, 1'000'000); });
  }
  for (std::thread& thread : threads) thread.join();
  for (const Misses& m : misses) {
    EXPECT_GT(m.reads, 100);
    EXPECT_EQ(m.behind, 0);
  }
}

TEST(FastClockTest, TakesTheTscPathWhereTheKernelDoesRealClock) {
  ReadFor(30'000'000, 1'000'000);  // past the calibration
  std::ifstream in(
      "/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string source;
  in >> source;
#if defined(__x86_64__)
  EXPECT_EQ(FastClockUsesTsc(), source == "tsc") << "clocksource " << source;
#else
  EXPECT_FALSE(FastClockUsesTsc());
#endif
}

}  // namespace
}  // namespace timingwheel::internal
