// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// callback_numbers_test.cc: tests of lib/handles/callback_numbers.h: each call
// of NumberCallbackOps gets a new number, from however many threads at once,
// and the number leads back to its table; a type is numbered once, however
// many threads ask at once; once the process has given every number, a
// type numbered then gets 0, and a TimingWheel still runs (and stops)
// timers of such a type: it keeps the operations on the heap instead.
// (ctest runs each test in a process of its own, so using every number up
// here leaves the other tests theirs.)

#include "handles/callback_numbers.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "test_util.h"
#include "timingwheel/callback.h"
#include "timingwheel/clock.h"
#include "timingwheel/timingwheel.h"

namespace timingwheel {
namespace {

using internal::CallbackNumberOf;
using internal::CallbackOpsOf;
using internal::kCallbackOps;
using internal::kCallbackOpsNumbers;
using internal::NumberCallbackOps;

template <int N>
struct Fn {
  void operator()() {}
};

TEST(CallbackNumbersTest, EachCallGetsANewNumberWhichLeadsBackToItsTable) {
  const uint32_t a = NumberCallbackOps(&kCallbackOps<Fn<1>>);
  const uint32_t b = NumberCallbackOps(&kCallbackOps<Fn<2>>);
  const uint32_t c = NumberCallbackOps(&kCallbackOps<Fn<1>>);
  EXPECT_GE(a, 1u);
  EXPECT_NE(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(CallbackOpsOf(a), &kCallbackOps<Fn<1>>);
  EXPECT_EQ(CallbackOpsOf(b), &kCallbackOps<Fn<2>>);
  EXPECT_EQ(CallbackOpsOf(c), &kCallbackOps<Fn<1>>);
}

TEST(CallbackNumbersTest, ThreadsAskingAtOnceGetDistinctNumbers) {
  constexpr int kThreads = 4;
  constexpr int kEach = 1000;
  std::vector<std::vector<uint32_t>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&got, t] {
      for (int i = 0; i < kEach; ++i) {
        got[t].push_back(NumberCallbackOps(&kCallbackOps<Fn<3>>));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::set<uint32_t> distinct;
  for (const std::vector<uint32_t>& numbers : got) {
    for (uint32_t n : numbers) {
      EXPECT_GE(n, 1u);
      distinct.insert(n);
      EXPECT_EQ(CallbackOpsOf(n), &kCallbackOps<Fn<3>>);
    }
  }
  EXPECT_EQ(distinct.size(), size_t{kThreads} * kEach);
}

TEST(CallbackNumbersTest, ATypeIsNumberedOnceHoweverManyThreadsAsk) {
  constexpr int kThreads = 4;
  std::vector<uint32_t> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back(
        [&got, t] { got[t] = CallbackNumberOf(&kCallbackOps<Fn<6>>); });
  }
  for (std::thread& thread : threads) thread.join();
  for (uint32_t n : got) EXPECT_EQ(n, got[0]);
  EXPECT_GE(got[0], 1u);
  EXPECT_EQ(CallbackNumberOf(&kCallbackOps<Fn<6>>), got[0]);
  EXPECT_EQ(CallbackOpsOf(got[0]), &kCallbackOps<Fn<6>>);
}

// Uses every number up; then the callables below (types first used here)
// have none, and the wheel keeps their operations on the heap: its timers
// run, and a Stop still wins.
TEST(CallbackNumbersTest, WhenNumbersRunOutTheWheelStillRunsTimers) {
  int given = 0;
  while (NumberCallbackOps(&kCallbackOps<Fn<4>>) != 0) ++given;
  EXPECT_LT(given, static_cast<int>(kCallbackOpsNumbers));
  EXPECT_EQ(NumberCallbackOps(&kCallbackOps<Fn<4>>), 0u);
  EXPECT_EQ(CallbackNumberOf(&kCallbackOps<Fn<5>>), 0u);
  EXPECT_EQ(CallbackNumberOf(&kCallbackOps<Fn<5>>), 0u);  // and stays so

  auto clock = std::make_shared<ManualClock>();
  std::unique_ptr<TimingWheel> wheel = OneWorkerWheel(clock);
  std::atomic<int> runs{0};
  auto count = std::make_shared<int>(7);  // a capture with a destructor
  absl::StatusOr<Timer> runs_once = wheel->AfterFunc(
      absl::Milliseconds(1), [&runs, count] { runs.fetch_add(*count); });
  ASSERT_TRUE(runs_once.ok()) << runs_once.status();
  absl::StatusOr<Timer> stopped =
      wheel->AfterFunc(absl::Milliseconds(1), [&runs] { runs.fetch_add(100); });
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  EXPECT_TRUE(stopped->Stop());
  clock->Advance(absl::Milliseconds(1));
  wheel->WaitIdle();
  EXPECT_EQ(runs.load(), 7);
  runs_once = absl::UnknownError("handle dropped");  // the node goes with it
  EXPECT_EQ(count.use_count(), 1);  // and the callable with the node
  wheel->Shutdown();
}

}  // namespace
}  // namespace timingwheel
