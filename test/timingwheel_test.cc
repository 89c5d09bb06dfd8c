// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// timingwheel_test.cc: the contract of TimingWheel and Timer
// (include/timingwheel/timingwheel.h, timer.h), driven by a ManualClock so
// that every check is exact: advance the clock, wait until the wheel is idle
// (TimingWheel::WaitIdle), then look at what ran. Covered:
//   * timing: never before the deadline; a tick-aligned deadline fires when the
//     clock reaches it, an unaligned one by the next tick; d <= 0 runs as soon
//     as possible on a worker, never inline; jumps of days and of 100 years;
//     every level boundary +-1 tick fires at exactly its tick (the worked
//     example of DESIGN.md is PlacementTest.DesignWorkedExample);
//   * structure: thread names; `workers = N` runs N callbacks at once, and a
//     slow callback holds back no other while a worker is free;
//   * Stop / Reset: every return value of the contract, concurrent Stops, a
//     timer queued for a worker but not started, Reset takes the timer out of
//     its old bucket and keeps the other timers there, repeated Resets, Reset
//     from the callback, after Shutdown, of a periodic timer;
//   * Every: period, schedule, skipped runs, Stop from its own callback, runs
//     never overlap;
//   * Pending() and max_pending;
//   * re-entrancy: callbacks call AfterFunc, Stop, Reset, Pending and Shutdown
//     on their own wheel (under a deadlock guard);
//   * faults: throwing callbacks, Shutdown of 100k timers, Shutdown latency,
//     use after Shutdown and after the wheel is gone, concurrent Shutdown,
//     Shutdown cancels timers queued for a busy worker and waits for a
//     callback that shut the wheel down itself;
//   * CancelAll: every pending timer of every level, periodic ones, queued
//     for a busy worker, or whose callback runs (its re-arm), cancelled and
//     destroyed before it returns, counted exactly (also with max_pending),
//     a started one-shot not counted, the wheel usable after; from a
//     callback, from the destructor of a callback it cancels, and on a big
//     bucket in the middle of its cascade;
//   * bad input: InvalidArgument naming the argument and its value;
//   * the std::chrono overloads;
//   * with the real clock: arms stamped by a polling advancer are never
//     early; a polling advancer backs off while its calls end first.

#include "timingwheel/timingwheel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util.h"
#include "timingwheel/clock.h"
#include "timingwheel/timer.h"

namespace timingwheel {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int kSlowdown = kSanitized ? 10 : 1;  // looser real-time bounds

constexpr absl::Duration kTick = absl::Milliseconds(1);
constexpr absl::Duration kYear = absl::Hours(24 * 365);

// Runs `scenario` on its own thread and fails if it has not returned within
// `limit`. A deadlocked thread cannot be reclaimed (and std::async's future
// would wait for it forever), so after reporting the deadlock the binary
// aborts instead of hanging.
void ExpectFinishesWithin(absl::Duration limit,
                          std::function<void()> scenario) {
  std::future<void> done = std::async(std::launch::async, std::move(scenario));
  if (done.wait_for(absl::ToChronoNanoseconds(limit)) !=
      std::future_status::ready) {
    ADD_FAILURE() << "deadlock: the scenario did not finish within " << limit;
    std::fprintf(stderr, "deadlock: scenario still running after %s\n",
                 absl::FormatDuration(limit).c_str());
    std::fflush(stderr);
    std::abort();
  }
  done.get();
}

Options DefaultOptions() {
  Options options;
  options.tick = kTick;
  options.wheel_size = 20;
  options.workers = 2;
  return options;
}

// A wheel of DefaultOptions() on a ManualClock, and helpers that record the
// runs of a timer in a RunLog.
class TimingWheelTest : public ManualWheelTest</*kWorkers=*/2> {
 protected:
  std::shared_ptr<RunLog> NewLog() { return std::make_shared<RunLog>(clock_); }

  // AfterFunc(d) recording into `log`; the test fails if it is refused.
  Timer After(absl::Duration d, const std::shared_ptr<RunLog>& log) {
    absl::StatusOr<Timer> timer = wheel_->AfterFunc(d, RunLog::Callback(log));
    EXPECT_TRUE(timer.ok()) << timer.status();
    return timer.ok() ? *timer : Timer();
  }
  Timer EveryLog(absl::Duration period, const std::shared_ptr<RunLog>& log) {
    absl::StatusOr<Timer> timer = wheel_->Every(period, RunLog::Callback(log));
    EXPECT_TRUE(timer.ok()) << timer.status();
    return timer.ok() ? *timer : Timer();
  }
};

// ---------------------------------------------------------------------------
// Timing

TEST_F(TimingWheelTest, AlignedDeadlineFiresExactlyWhenTheClockReachesIt) {
  auto log = NewLog();
  After(absl::Milliseconds(5), log);
  Advance(absl::Milliseconds(5) - absl::Nanoseconds(1));
  EXPECT_EQ(log->count(), 0);
  Advance(absl::Nanoseconds(1));
  EXPECT_EQ(log->count(), 1);
  EXPECT_EQ(log->last_run(), absl::Milliseconds(5));
  Advance(absl::Hours(1));
  EXPECT_EQ(log->count(), 1);
}

TEST_F(TimingWheelTest, ABigBucketAndTheBucketsFlushedDuringItsCascadeAllRun) {
  // 20,000 timers in one level-1 bucket (20-40 ms, released at 19 ms) and
  // 50 in each level-0 bucket of 1-20 ms. One clock step to 20 ms releases
  // them all at once: the advancer flushes the level-0 buckets queued behind
  // the big one between slices of its cascade. Some of the big bucket's
  // timers are stopped or reset meanwhile.
  constexpr int kBig = 20'000;
  std::vector<std::atomic<int>> big_runs(kBig);
  std::vector<std::atomic<int>> small_runs(20 * 50);
  std::vector<Timer> big;
  big.reserve(kBig);
  for (int i = 0; i < kBig; ++i) {
    absl::StatusOr<Timer> timer =
        wheel_->AfterFunc(absl::Milliseconds(25) + absl::Microseconds(i % 997),
                          [&big_runs, i] { big_runs[i].fetch_add(1); });
    ASSERT_TRUE(timer.ok()) << timer.status();
    big.push_back(*timer);
  }
  for (int ms = 1; ms <= 20; ++ms) {
    for (int k = 0; k < 50; ++k) {
      const int index = (ms - 1) * 50 + k;
      ASSERT_TRUE(wheel_
                      ->AfterFunc(absl::Milliseconds(ms),
                                  [&small_runs, index] {
                                    small_runs[index].fetch_add(1);
                                  })
                      .ok());
    }
  }
  for (int i = 0; i < kBig; i += 10) EXPECT_TRUE(big[i].Stop());
  for (int i = 5; i < kBig; i += 10) EXPECT_TRUE(big[i].Reset(kTick * 3));
  Advance(absl::Milliseconds(20));
  for (int index = 0; index < 20 * 50; ++index) {
    ASSERT_EQ(small_runs[index].load(), 1) << "level-0 timer " << index;
  }
  for (int i = 0; i < kBig; ++i) {
    // Only the ones reset to 3 ms were due.
    ASSERT_EQ(big_runs[i].load(), i % 10 == 5 ? 1 : 0) << "timer " << i;
  }
  Advance(absl::Milliseconds(6));
  for (int i = 0; i < kBig; ++i) {
    ASSERT_EQ(big_runs[i].load(), i % 10 == 0 ? 0 : 1) << "timer " << i;
  }
  EXPECT_EQ(wheel_->Pending(), 0);
}

// A clock that moves 2 ms each time the advancer thread reads it, up to a
// cap, once a test moved it the first time: time passes while the advancer
// moves a big bucket, as it does when a cascade of millions takes tens of
// milliseconds. Before that it stands still, so that timers scheduled
// meanwhile get the deadlines the test asks for however often the advancer
// reads it (it reads it at each take of the inbox, and a loaded machine
// gives it many takes while the test schedules: timers then came due past
// the cap, and stayed pending). Other threads only read it; a sleeper
// re-reads it every millisecond of real time (the advancer's reads move it
// without a wake-up, as real time does).
class ClockTheAdvancerMoves : public Clock {
 public:
  absl::Duration Now() const override {
    int64_t now = now_ns_.load(std::memory_order_acquire);
    if (on_advancer_ && moving_.load(std::memory_order_acquire) &&
        now < kCapNs) {
      now = now_ns_.fetch_add(kStepNs, std::memory_order_acq_rel) + kStepNs;
    }
    return absl::Nanoseconds(now);
  }
  absl::Duration RealTimeUntil(absl::Duration) const override {
    return absl::Milliseconds(1);
  }
  // Moves the time forward to `t`, if it is not past it already.
  void MoveTo(absl::Duration t) {
    int64_t now = now_ns_.load(std::memory_order_acquire);
    const int64_t to = absl::ToInt64Nanoseconds(t);
    while (now < to && !now_ns_.compare_exchange_weak(now, to)) {
    }
    moving_.store(true, std::memory_order_release);
    NotifyTimeChanged();
  }
  static void MarkAdvancer(ThreadRole role, int) {
    on_advancer_ = role == ThreadRole::kAdvancer;
  }

 private:
  static constexpr int64_t kStepNs = 2'000'000;
  static constexpr int64_t kCapNs = 60'000'000;
  static inline thread_local bool on_advancer_ = false;
  mutable std::atomic<int64_t> now_ns_{0};
  std::atomic<bool> moving_{false};
};

TEST(BigBucketTest, TimersThatComeDueDuringTheirCascadeRunBeforeItEnds) {
  // 16,384 timers due at 25 ms share the level-1 bucket of 20-40 ms,
  // released at 19 ms. The advancer reads the clock once per slice of 1,024
  // timers, and its clock moves 2 ms per read, so the deadline passes in
  // the middle of the cascade (about the 3rd of 16 slices): the level-0
  // bucket of 25 ms that it has filled so far runs at once, on the advancer
  // (an inline executor), and so does each later slice, long before the
  // cascade ends (at about 51 ms by that clock). Read only once per flush,
  // the clock made all of them wait for the end of the cascade.
  auto clock = std::make_shared<ClockTheAdvancerMoves>();
  Options options = DefaultOptions();
  options.clock = clock;
  options.executor = [](absl::AnyInvocable<void()> task) { task(); };
  options.on_thread_start = &ClockTheAdvancerMoves::MarkAdvancer;
  absl::StatusOr<std::unique_ptr<TimingWheel>> wheel =
      TimingWheel::Create(std::move(options));
  ASSERT_TRUE(wheel.ok()) << wheel.status();
  constexpr int kTimers = 4 * 4096;
  const absl::Duration deadline = absl::Milliseconds(25);
  std::vector<int> order;  // appended on the advancer only
  order.reserve(kTimers);
  std::atomic<int> early{0};
  std::atomic<int64_t> first_run_ns{-1};  // the clock when the first ran
  for (int i = 0; i < kTimers; ++i) {
    ASSERT_TRUE((*wheel)
                    ->AfterFunc(deadline,
                                [&, i] {
                                  const absl::Duration now = clock->Now();
                                  if (now < deadline) ++early;
                                  if (order.empty()) {
                                    first_run_ns =
                                        absl::ToInt64Nanoseconds(now);
                                  }
                                  order.push_back(i);
                                })
                    .ok());
  }
  clock->MoveTo(absl::Milliseconds(19));
  (*wheel)->WaitIdle();
  clock->MoveTo(absl::Milliseconds(60));  // for what waits in level 0
  (*wheel)->WaitIdle();
  (*wheel)->Shutdown();
  ASSERT_EQ(order.size(), static_cast<size_t>(kTimers));
  EXPECT_EQ(early.load(), 0);
  EXPECT_LT(first_run_ns.load(), 35'000'000)
      << "the first callback waited for the end of the cascade";
  std::vector<int> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < kTimers; ++i) ASSERT_EQ(sorted[i], i);
}

// Buckets released all at once (a clock jump, a stalled process or VM) are
// flushed in O(log n) each: 65,535 released in one jump cost within a small
// factor of the same 65,535 released 4,096 at a time. (Picking the next one
// with a linear scan and a middle erase made the jump 50 times slower.)
TEST_F(TimingWheelTest, ReleasingManyBucketsAtOnceCostsNoMorePerBucket) {
  constexpr int kBuckets = 65'535;
  constexpr int kStep = 4'096;
  std::atomic<int> runs{0};
  const auto drain = [&](int step) {
    Options options = DefaultOptions();
    options.wheel_size = 65'536;
    Start(std::move(options));
    runs = 0;
    for (int i = 1; i <= kBuckets; ++i) {
      EXPECT_TRUE(wheel_->AfterFunc(i * kTick, [&] { ++runs; }).ok());
    }
    const absl::Time start = absl::Now();
    for (int done = 0; done < kBuckets; done += step) {
      Advance(std::min(step, kBuckets - done) * kTick);
    }
    const absl::Duration took = absl::Now() - start;
    EXPECT_EQ(runs, kBuckets);
    return took;
  };
  const absl::Duration stepped = drain(kStep);
  const absl::Duration at_once = drain(kBuckets);
  EXPECT_LE(at_once, 4 * stepped + absl::Milliseconds(200))
      << "one jump: " << at_once << ", in steps of " << kStep << ": "
      << stepped;
}

TEST_F(TimingWheelTest, AnInlineExecutorCanResetTimersOfABigFlushedBucket) {
  // The advancer hands a big bucket's due timers to the executor every 1024.
  // It must hold no node lock then: an inline executor runs them on the
  // advancer, and a callback resetting its own timer takes that timer's
  // lock. (It once held the lock of the last timer of the chunk.)
  Options options = DefaultOptions();
  options.executor = [](absl::AnyInvocable<void()> task) { task(); };
  Start(std::move(options));
  constexpr int kTimers = 3000;
  std::vector<Timer> timers(kTimers);
  std::vector<std::atomic<int>> runs(kTimers);
  for (int i = 0; i < kTimers; ++i) {
    timers[i] = wheel_
                    ->AfterFunc(absl::Milliseconds(5),
                                [&timers, &runs, i] {
                                  if (runs[i].fetch_add(1) == 0) {
                                    timers[i].Reset(absl::Milliseconds(5));
                                  }
                                })
                    .value();
  }
  ExpectFinishesWithin(absl::Seconds(60), [&] {
    Advance(absl::Milliseconds(5));
    Advance(absl::Milliseconds(5));
  });
  for (int i = 0; i < kTimers; ++i) ASSERT_EQ(runs[i].load(), 2) << i;
  EXPECT_EQ(wheel_->Pending(), 0);
}

TEST_F(TimingWheelTest, NeverRunsBeforeItsDeadline) {
  // Deadlines on and off the tick grid, at several levels; the clock moves in
  // steps of a third of a tick, so it also stops between ticks.
  const absl::Duration delays[] = {absl::Nanoseconds(1),
                                   absl::Microseconds(999),
                                   kTick,
                                   absl::Microseconds(1001),
                                   absl::Microseconds(19500),
                                   absl::Milliseconds(20),
                                   absl::Microseconds(20001),
                                   absl::Microseconds(123456),
                                   absl::Milliseconds(401)};
  std::vector<std::pair<absl::Duration, std::shared_ptr<RunLog>>> timers;
  for (absl::Duration d : delays) {
    timers.emplace_back(d, NewLog());
    After(d, timers.back().second);
  }
  const absl::Duration step = kTick / 3;
  while (clock_->Now() < absl::Milliseconds(410)) {
    Advance(step);
    const absl::Duration now = clock_->Now();
    for (const auto& [d, log] : timers) {
      if (now < d) {
        EXPECT_EQ(log->count(), 0) << "delay " << d << " ran early at " << now;
      } else if (now >= absl::Ceil(d, kTick)) {
        EXPECT_EQ(log->count(), 1) << "delay " << d << " missing at " << now;
      }
    }
  }
  for (const auto& [d, log] : timers) {
    ASSERT_EQ(log->count(), 1) << d;
    EXPECT_GE(log->last_run(), d);
    // By the first stop of the clock at or after the next tick boundary.
    EXPECT_LT(log->last_run(), absl::Ceil(d, kTick) + step) << d;
  }
}

TEST_F(TimingWheelTest, UnalignedDeadlineFiresByTheNextTickBoundary) {
  auto log = NewLog();
  After(absl::Microseconds(5300), log);
  Advance(absl::Microseconds(5300) - absl::Nanoseconds(1));
  EXPECT_EQ(log->count(), 0);
  AdvanceTo(absl::Milliseconds(6));
  ASSERT_EQ(log->count(), 1);
  EXPECT_GE(log->last_run(), absl::Microseconds(5300));
}

TEST_F(TimingWheelTest, ZeroAndNegativeDelaysRunOnAWorkerNeverInline) {
  for (absl::Duration d : {absl::ZeroDuration(), -absl::Nanoseconds(1),
                           -absl::Hours(1), -100 * kYear}) {
    auto log = NewLog();
    After(d, log);
    WaitIdle();  // the clock does not move
    ASSERT_EQ(log->count(), 1) << d;
    EXPECT_NE(log->last_thread(), std::this_thread::get_id()) << d;
    EXPECT_EQ(log->last_run(), absl::ZeroDuration());
  }
}

TEST_F(TimingWheelTest, JumpsOfDaysAndYearsAreProcessedInOneAdvance) {
  auto days = NewLog();
  auto century = NewLog();
  After(absl::Hours(24 * 3), days);
  After(100 * kYear, century);
  Advance(absl::Hours(24 * 3) - absl::Nanoseconds(1));
  EXPECT_EQ(days->count(), 0);
  Advance(absl::Nanoseconds(1));
  EXPECT_EQ(days->count(), 1);
  EXPECT_EQ(century->count(), 0);
  AdvanceTo(100 * kYear - kTick);
  EXPECT_EQ(century->count(), 0);
  Advance(kTick);
  EXPECT_EQ(century->count(), 1);
  EXPECT_EQ(century->last_run(), 100 * kYear);
}

TEST_F(TimingWheelTest, TimerOneHundredYearsOutFiresAfterOneAdvance) {
  auto log = NewLog();
  After(100 * kYear, log);
  Advance(100 * kYear);
  EXPECT_EQ(log->count(), 1);
  EXPECT_EQ(wheel_->Pending(), 0);
}

// Each level boundary of the defaults (tick 1 ms, wheel_size 20), +-1 tick:
// delays 20^k ms - 1, 20^k, 20^k + 1 for k = 1..9 (19 ms .. 16 years). The
// wheel is created at 0 and the timer armed at `start`; the levels do not move
// while nothing is due, so a non-zero start also arms it against a stale
// `current`. The timer must fire at exactly start + delay, not a tick earlier.
class LevelBoundaryTest
    : public TimingWheelTest,
      public ::testing::WithParamInterface<std::tuple<int, int, int64_t>> {};

TEST_P(LevelBoundaryTest, FiresAtExactlyItsTickAndNotOneTickEarlier) {
  const auto [level, offset_ticks, start_ms] = GetParam();
  int64_t span = 1;
  for (int i = 0; i < level; ++i) span *= 20;
  const absl::Duration delay = (span + offset_ticks) * kTick;
  const absl::Duration start = absl::Milliseconds(start_ms);
  Advance(start);
  auto log = NewLog();
  After(delay, log);
  // Approach the deadline in a few jumps, so that the timer cascades at
  // different points on the way.
  for (absl::Duration at : {start + delay / 3, start + delay / 2,
                            start + delay - 2 * kTick, start + delay - kTick}) {
    AdvanceTo(at);
    ASSERT_EQ(log->count(), 0) << "ran early, at " << clock_->Now();
  }
  Advance(kTick);
  ASSERT_EQ(log->count(), 1);
  EXPECT_EQ(log->last_run(), start + delay);
  EXPECT_EQ(wheel_->Pending(), 0);
}

INSTANTIATE_TEST_SUITE_P(
    Defaults, LevelBoundaryTest,
    ::testing::Combine(::testing::Range(1, 10), ::testing::Values(-1, 0, 1),
                       ::testing::Values<int64_t>(0, 7, 123457)),
    [](const ::testing::TestParamInfo<LevelBoundaryTest::ParamType>& info) {
      const int offset = std::get<1>(info.param);
      return absl::StrCat("Level", std::get<0>(info.param),
                          offset < 0   ? "Minus1"
                          : offset > 0 ? "Plus1"
                                       : "Exact",
                          "Start", std::get<2>(info.param), "ms");
    });

// All boundaries wheel_size^k +-1 tick (up to 100 years) in ONE wheel, for
// several wheel sizes and ticks: at each distinct deadline, one tick before it
// exactly the earlier timers have run, and at it exactly those due.
class AllBoundariesTest
    : public TimingWheelTest,
      public ::testing::WithParamInterface<std::tuple<int64_t, int>> {};

TEST_P(AllBoundariesTest, EveryBoundaryFiresAtExactlyItsTick) {
  const auto [tick_us, wheel_size] = GetParam();
  const absl::Duration tick = absl::Microseconds(tick_us);
  Options options = DefaultOptions();
  options.tick = tick;
  options.wheel_size = wheel_size;
  Start(std::move(options));
  const int64_t max_ticks = (100 * kYear) / tick;
  std::map<int64_t, std::vector<std::shared_ptr<RunLog>>> by_deadline;
  for (int64_t span = 1; span <= max_ticks / wheel_size; span *= wheel_size) {
    for (int64_t ticks : {span - 1, span, span + 1, span * wheel_size - 1}) {
      if (ticks <= 0 || by_deadline.count(ticks) != 0) continue;
      auto log = NewLog();
      After(ticks * tick, log);
      by_deadline[ticks].push_back(log);
    }
  }
  for (const auto& [ticks, logs] : by_deadline) {
    AdvanceTo((ticks - 1) * tick);
    for (const auto& [other, others] : by_deadline) {
      for (const auto& log : others) {
        ASSERT_EQ(log->count(), other < ticks ? 1 : 0)
            << "deadline " << other << " ticks, clock at " << ticks - 1;
      }
    }
    Advance(tick);
    for (const auto& log : logs) {
      ASSERT_EQ(log->count(), 1) << "deadline " << ticks << " ticks";
      EXPECT_EQ(log->last_run(), ticks * tick);
    }
  }
  EXPECT_EQ(wheel_->Pending(), 0);
}

INSTANTIATE_TEST_SUITE_P(
    SizesAndTicks, AllBoundariesTest,
    ::testing::Values(std::make_tuple(1000, 20), std::make_tuple(1000, 2),
                      std::make_tuple(1000, 3), std::make_tuple(1, 20),
                      std::make_tuple(1, 64), std::make_tuple(250, 65536),
                      std::make_tuple(7, 1000)),
    [](const ::testing::TestParamInfo<AllBoundariesTest::ParamType>& info) {
      return absl::StrCat("Tick", std::get<0>(info.param), "us", "Size",
                          std::get<1>(info.param));
    });

// ---------------------------------------------------------------------------
// Bursts: more timers due at once than the workers' queue holds (64Ki tasks,
// lib/threads/advancer.h): the advancer hands them over as the workers take
// them.

constexpr int kBurst = 200'000;
// The most tasks the advancer queues for the workers, and the slice it may
// add on top before it looks at the queue again.
constexpr int64_t kMaxQueued = 65'536 + 1'024;

// A burst runs every timer once, never early, and the queue stays bounded.
TEST_F(TimingWheelTest,
       ABurstBeyondTheQueueRunsEveryTimerOnceFromABoundedQueue) {
  Options options = DefaultOptions();
  options.workers = 1;
  Start(std::move(options));
  std::vector<std::atomic<int>> runs(kBurst);
  std::atomic<int> early{0};
  const absl::Duration due = clock_->Now() + kTick;
  for (int i = 0; i < kBurst; ++i) {
    ASSERT_TRUE(wheel_
                    ->AfterFunc(kTick,
                                [&, i] {
                                  if (clock_->Now() < due) ++early;
                                  runs[i].fetch_add(1);
                                })
                    .ok());
  }
  // Every arm linked first: an arm the advancer takes when it is due
  // already goes to the workers at once (advancer.h).
  WaitIdle();
  clock_->Advance(kTick);
  int64_t deepest = 0;
  while (wheel_->Pending() > 0 || wheel_->GetStats().worker_queue_depth > 0) {
    deepest = std::max(deepest, wheel_->GetStats().worker_queue_depth);
  }
  WaitIdle();
  EXPECT_LE(deepest, kMaxQueued);
  EXPECT_EQ(early.load(), 0);
  for (int i = 0; i < kBurst; ++i) ASSERT_EQ(runs[i].load(), 1) << i;
}

// A callback's CancelAll during a burst waits for the advancer's round,
// which must not wait for the very worker that runs the callback.
TEST_F(TimingWheelTest, ACancelAllFromACallbackDuringABurstReturns) {
  Options options = DefaultOptions();
  options.workers = 1;
  Start(std::move(options));
  std::atomic<int64_t> ran{0};
  std::atomic<int64_t> cancelled{-1};
  ASSERT_TRUE(
      wheel_->AfterFunc(kTick, [&] { cancelled = wheel_->CancelAll(); }).ok());
  for (int i = 0; i < kBurst; ++i) {
    ASSERT_TRUE(wheel_->AfterFunc(kTick, [&] { ++ran; }).ok());
  }
  clock_->Advance(kTick);
  WaitIdle();
  ASSERT_GE(cancelled.load(), 0);
  EXPECT_EQ(ran.load() + cancelled.load(), kBurst);
  EXPECT_EQ(wheel_->Pending(), 0);
}

// Shutdown while the advancer waits for the workers: it returns, and each
// timer either ran or was cancelled by it.
TEST_F(TimingWheelTest, AShutdownDuringABurstCountsWhatDidNotRun) {
  Options options = DefaultOptions();
  options.workers = 1;
  Start(std::move(options));
  std::atomic<int64_t> ran{0};
  for (int i = 0; i < kBurst; ++i) {
    ASSERT_TRUE(wheel_
                    ->AfterFunc(kTick,
                                [&] {
                                  ++ran;
                                  absl::SleepFor(absl::Microseconds(1));
                                })
                    .ok());
  }
  clock_->Advance(kTick);
  ASSERT_TRUE(Eventually(
      [&] { return wheel_->GetStats().worker_queue_depth > 60'000; }));
  const int64_t cancelled = wheel_->Shutdown();
  EXPECT_GT(cancelled, 0);
  EXPECT_EQ(ran.load() + cancelled, kBurst);
}

// ---------------------------------------------------------------------------
// Structure

TEST_F(TimingWheelTest, ThreadsAreNamedPollerAdvancerAndWorkers) {
  wheel_.reset();
  const std::multiset<std::string> before = ThreadNames();
  Options options = DefaultOptions();
  options.workers = 3;
  Start(std::move(options));
  // The threads name themselves as they start: wait for them.
  const std::vector<std::string> expected = {
      "tw-poller", "tw-advancer", "tw-worker-0", "tw-worker-1", "tw-worker-2"};
  EXPECT_TRUE(Eventually([&] {
    const std::multiset<std::string> now = ThreadNames();
    for (const std::string& name : expected) {
      if (now.count(name) < before.count(name) + 1) return false;
    }
    // Pollers and advancers are always joined: exactly one more of each.
    return now.count("tw-poller") == before.count("tw-poller") + 1 &&
           now.count("tw-advancer") == before.count("tw-advancer") + 1 &&
           now.count("tw-worker-3") <= before.count("tw-worker-3");
  })) << "threads: "
      << ::testing::PrintToString(ThreadNames());
}

TEST_F(TimingWheelTest, NWorkersRunNCallbacksAtOnce) {
  constexpr int kWorkers = 4;
  Options options = DefaultOptions();
  options.workers = kWorkers;
  Start(std::move(options));
  std::mutex mu;
  std::condition_variable cv;
  int inside = 0;
  std::atomic<int> saw_all{0};
  for (int i = 0; i < kWorkers; ++i) {
    ASSERT_TRUE(
        wheel_
            ->AfterFunc(kTick,
                        [&] {
                          std::unique_lock<std::mutex> lock(mu);
                          ++inside;
                          cv.notify_all();
                          if (cv.wait_for(lock, std::chrono::seconds(10),
                                          [&] { return inside == kWorkers; })) {
                            saw_all.fetch_add(1);
                          }
                        })
            .ok());
  }
  Advance(kTick);
  EXPECT_EQ(saw_all.load(), kWorkers)
      << "not all " << kWorkers << " callbacks were inside at the same time";
}

// DESIGN.md section 1: "a slow callback never delays other timers while a
// worker is free". Many timers due at one tick, two workers; the first
// callback blocks until all the others have run. The second worker is free
// the whole time, so they all can.
TEST_F(TimingWheelTest, SlowCallbackHoldsBackNoOtherWhileAWorkerIsFree) {
  constexpr int kOthers = 39;
  Event all_others_ran;
  std::atomic<int> others{0};
  std::atomic<bool> slow_saw_all{false};
  std::atomic<int> others_when_slow_gave_up{-1};
  ASSERT_TRUE(wheel_
                  ->AfterFunc(kTick,
                              [&] {
                                slow_saw_all =
                                    all_others_ran.Wait(absl::Seconds(3));
                                others_when_slow_gave_up = others.load();
                              })
                  .ok());
  for (int i = 0; i < kOthers; ++i) {
    ASSERT_TRUE(wheel_
                    ->AfterFunc(kTick,
                                [&] {
                                  if (others.fetch_add(1) + 1 == kOthers) {
                                    all_others_ran.Notify();
                                  }
                                })
                    .ok());
  }
  Advance(kTick);
  EXPECT_TRUE(slow_saw_all.load())
      << "only " << others_when_slow_gave_up.load() << " of " << kOthers
      << " callbacks ran while the slow one blocked a worker and the other "
         "worker was free";
  EXPECT_EQ(others.load(), kOthers);
}

// ---------------------------------------------------------------------------
// Stop and Reset

// A lambda that captures nothing is kept in a bare node (32 bytes, a pool of
// its own and a thread cache slot of its own: lib/handles/timer_state.h), one
// that captures in a node with its room: interleaved on one thread and on four,
// each kind fires at its deadline, is stopped and reset as any timer, and
// none is lost or run twice.
std::atomic<int64_t> stateless_fired{0};

TEST_F(TimingWheelTest, StatelessAndCapturingCallbacksInterleavedAllBehave) {
  stateless_fired = 0;
  std::atomic<int64_t> capturing_fired{0};
  constexpr int kThreads = 4;
  constexpr int kEach = 1000;  // per kind and thread
  std::vector<std::vector<Timer>> stopped(kThreads), reset(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        const absl::Duration d = kTick * (1 + i % 50);
        absl::StatusOr<Timer> bare = wheel_->AfterFunc(
            d, [] { stateless_fired.fetch_add(1, std::memory_order_relaxed); });
        absl::StatusOr<Timer> roomy = wheel_->AfterFunc(
            d, [&capturing_fired] { capturing_fired.fetch_add(1); });
        ASSERT_TRUE(bare.ok() && roomy.ok());
        // Every fourth of each kind stopped, every fourth reset to 100 ticks.
        if (i % 4 == 1) {
          stopped[static_cast<size_t>(t)].push_back(*bare);
          stopped[static_cast<size_t>(t)].push_back(*roomy);
        } else if (i % 4 == 2) {
          reset[static_cast<size_t>(t)].push_back(*bare);
          reset[static_cast<size_t>(t)].push_back(*roomy);
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(wheel_->Pending(), 2 * kThreads * kEach);
  for (auto& timers : stopped) {
    for (Timer& timer : timers) EXPECT_TRUE(timer.Stop());
  }
  for (auto& timers : reset) {
    for (Timer& timer : timers) EXPECT_TRUE(timer.Reset(kTick * 100));
  }
  const int64_t quarter = kThreads * kEach / 4;
  Advance(kTick * 50);
  EXPECT_EQ(stateless_fired.load(), 2 * quarter);
  EXPECT_EQ(capturing_fired.load(), 2 * quarter);
  EXPECT_EQ(wheel_->Pending(), 2 * quarter);  // the reset ones
  Advance(kTick * 49);
  EXPECT_EQ(stateless_fired.load(), 2 * quarter) << "a reset one ran early";
  Advance(kTick * 51);
  EXPECT_EQ(stateless_fired.load(), 3 * quarter);
  EXPECT_EQ(capturing_fired.load(), 3 * quarter);
  EXPECT_EQ(wheel_->Pending(), 0);
}

TEST_F(TimingWheelTest, StopOfPendingTimerReturnsTrueAndItNeverRuns) {
  auto log = NewLog();
  Timer timer = After(absl::Milliseconds(10), log);
  EXPECT_TRUE(static_cast<bool>(timer));
  Advance(absl::Milliseconds(5));
  EXPECT_TRUE(timer.Stop());
  EXPECT_FALSE(timer.Stop());
  EXPECT_EQ(wheel_->Pending(), 0);
  Advance(absl::Hours(1));
  EXPECT_EQ(log->count(), 0);
}

// A Stop right after its AfterFunc, on the same thread, usually finds the
// arm still in the thread's lane: with the handle alone it ends there
// (Engine::Stop's fast path), with a copy alive (or stopped through the
// copy) the general path ends it. Either way: true once, never runs,
// counted, and a Reset arms it again.
TEST_F(TimingWheelTest, StopRightAfterAfterFuncEndsItWithOrWithoutCopies) {
  constexpr int kTimers = 3000;
  auto log = NewLog();
  std::vector<Timer> kept;
  for (int i = 0; i < kTimers; ++i) {
    Timer timer = After(kTick * (1 + i % 50), log);
    switch (i % 3) {
      case 0:
        EXPECT_TRUE(timer.Stop()) << i;
        break;
      case 1: {
        const Timer copy = timer;
        EXPECT_TRUE(timer.Stop()) << i;
        EXPECT_FALSE(copy.Pending()) << i;
        break;
      }
      default: {
        Timer copy = timer;
        EXPECT_TRUE(copy.Stop()) << i;
        break;
      }
    }
    EXPECT_FALSE(timer.Stop()) << i;
    EXPECT_FALSE(timer.Pending()) << i;
    if (i % 100 == 0) kept.push_back(timer);
  }
  EXPECT_EQ(wheel_->Pending(), 0);
  EXPECT_EQ(wheel_->GetStats().stopped, kTimers);
  Advance(kTick * 60);
  EXPECT_EQ(log->count(), 0);
  for (Timer& timer : kept) EXPECT_FALSE(timer.Reset(kTick));
  EXPECT_EQ(wheel_->Pending(), static_cast<int64_t>(kept.size()));
  Advance(kTick);
  EXPECT_EQ(log->count(), static_cast<int64_t>(kept.size()));
}

TEST_F(TimingWheelTest, StopOfFiredTimerReturnsFalse) {
  auto log = NewLog();
  Timer timer = After(kTick, log);
  Advance(kTick);
  ASSERT_EQ(log->count(), 1);
  EXPECT_FALSE(timer.Stop());
  EXPECT_EQ(wheel_->Pending(), 0);
}

TEST_F(TimingWheelTest, CopiesOfAHandleReferToTheSameTimer) {
  auto log = NewLog();
  Timer timer = After(kTick, log);
  Timer copy = timer;
  EXPECT_TRUE(copy == timer);
  Timer moved = std::move(copy);
  EXPECT_TRUE(moved == timer);
  EXPECT_TRUE(moved.Stop());
  EXPECT_FALSE(timer.Stop());
  Timer empty;
  EXPECT_FALSE(static_cast<bool>(empty));
  EXPECT_FALSE(empty.Stop());
  EXPECT_FALSE(empty.Reset(kTick));
  EXPECT_TRUE(empty != timer);
  Advance(absl::Milliseconds(5));
  EXPECT_EQ(log->count(), 0);
}

TEST_F(TimingWheelTest, ConcurrentStopsReturnTrueExactlyOnce) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 200;
  for (int round = 0; round < kRounds; ++round) {
    auto log = NewLog();
    Timer timer = After(absl::Milliseconds(1 + round % 50), log);
    std::atomic<int> ready{0};
    std::atomic<int> stopped{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&, timer]() mutable {
        ready.fetch_add(1);
        while (ready.load() < kThreads) std::this_thread::yield();
        if (timer.Stop()) stopped.fetch_add(1);
      });
    }
    for (std::thread& thread : threads) thread.join();
    EXPECT_EQ(stopped.load(), 1) << "round " << round;
  }
  Advance(absl::Seconds(1));
  EXPECT_EQ(wheel_->Pending(), 0);
}

// Stops racing the timer becoming due: whoever wins, it is either stopped
// (exactly one true) or ran (no true), never both, never neither.
TEST_F(TimingWheelTest, ConcurrentStopsRacingTheFireAgreeWithWhatRan) {
  constexpr int kThreads = 3;
  constexpr int kRounds = 200;
  for (int round = 0; round < kRounds; ++round) {
    auto log = NewLog();
    Timer timer = After(kTick, log);
    std::atomic<int> ready{0};
    std::atomic<int> stopped{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&, timer]() mutable {
        ready.fetch_add(1);
        while (ready.load() < kThreads + 1) std::this_thread::yield();
        if (timer.Stop()) stopped.fetch_add(1);
      });
    }
    ready.fetch_add(1);
    while (ready.load() < kThreads + 1) std::this_thread::yield();
    clock_->Advance(kTick);
    for (std::thread& thread : threads) thread.join();
    WaitIdle();
    EXPECT_LE(stopped.load(), 1) << "round " << round;
    EXPECT_EQ(stopped.load() + log->count(), 1) << "round " << round;
  }
  EXPECT_EQ(wheel_->Pending(), 0);
}

// A timer handed to the worker pool but not started is still pending: with
// the only worker blocked in a callback, the next due timer waits in the
// pool's queue, and Stop must win.
TEST_F(TimingWheelTest, StopOfTimerQueuedForABusyWorkerWinsAndItNeverRuns) {
  Options options = DefaultOptions();
  options.workers = 1;
  Start(std::move(options));
  Event entered;
  Gate release;
  ASSERT_TRUE(wheel_
                  ->AfterFunc(kTick,
                              [&] {
                                entered.Notify();
                                release.Pass();
                              })
                  .ok());
  auto log = NewLog();
  Timer queued = After(2 * kTick, log);
  clock_->Advance(kTick);
  ASSERT_TRUE(entered.Wait());
  clock_->Advance(kTick);
  ASSERT_TRUE(Eventually([&] {
    return wheel_->GetStats().worker_queue_depth == 1;
  })) << "the second timer never reached the worker queue";
  EXPECT_EQ(wheel_->Pending(), 1);
  EXPECT_TRUE(queued.Stop());
  EXPECT_FALSE(queued.Stop());
  EXPECT_EQ(wheel_->Pending(), 0);
  release.Open();
  WaitIdle();
  EXPECT_EQ(log->count(), 0);
  EXPECT_EQ(wheel_->Pending(), 0);
}

TEST_F(TimingWheelTest, ResetOfPendingTimerReturnsTrueAndFiresOnlyAtNewTime) {
  auto log = NewLog();
  Timer timer = After(absl::Milliseconds(10), log);
  Advance(absl::Milliseconds(5));
  EXPECT_TRUE(timer.Reset(absl::Milliseconds(10)));
  EXPECT_EQ(wheel_->Pending(), 1);
  AdvanceTo(absl::Milliseconds(15) - absl::Nanoseconds(1));
  EXPECT_EQ(log->count(), 0) << "fired at the old deadline";
  Advance(absl::Nanoseconds(1));
  ASSERT_EQ(log->count(), 1);
  EXPECT_EQ(log->last_run(), absl::Milliseconds(15));
  Advance(absl::Hours(1));
  EXPECT_EQ(log->count(), 1);
}

// Reset of a pending timer takes it out of its bucket before it links it into
// another: the other timers of the old bucket, before and after it in the
// bucket's list, all still fire, each once.
TEST_F(TimingWheelTest, ResetKeepsTheOtherTimersOfItsOldBucket) {
  std::vector<std::shared_ptr<RunLog>> logs;
  std::vector<Timer> timers;
  for (int i = 0; i < 5; ++i) {
    logs.push_back(NewLog());
    timers.push_back(After(absl::Milliseconds(10), logs.back()));
  }
  EXPECT_TRUE(timers[1].Reset(absl::Milliseconds(5)));
  EXPECT_TRUE(timers[3].Reset(absl::Milliseconds(15)));
  Advance(absl::Milliseconds(5));
  EXPECT_EQ(logs[1]->count(), 1);
  Advance(absl::Milliseconds(5));
  for (int i : {0, 2, 4}) {
    EXPECT_EQ(logs[i]->count(), 1) << "timer " << i << " of the old bucket";
  }
  EXPECT_EQ(logs[3]->count(), 0);
  Advance(absl::Milliseconds(5));
  EXPECT_EQ(logs[3]->count(), 1);
  Advance(absl::Seconds(1));
  for (int i = 0; i < 5; ++i) EXPECT_EQ(logs[i]->count(), 1) << "timer " << i;
  EXPECT_EQ(wheel_->Pending(), 0);
}

// A wheel small enough to see its levels (tick 1 ms, wheel_size 4: level 0
// spans 4 ms, level 1 16 ms, level 2 64 ms; DESIGN.md's worked example), for
// the tests that check through the level counts where a Reset leaves a timer.
class SmallWheelTest : public TimingWheelTest {
 protected:
  SmallWheelTest() {
    Options options = DefaultOptions();
    options.wheel_size = 4;
    Start(std::move(options));
    // Before the test's timers: EngineOf runs one of its own.
    if (wheel_ != nullptr) engine_ = EngineOf(*wheel_);
  }

  // The timers held by each of the lowest `levels` levels (0 for a level
  // not created yet); empty if the engine was not found (the test has
  // failed then).
  std::vector<int64_t> LevelCounts(int levels) {
    if (engine_ == nullptr) return {};
    return EngineTestPeer::LevelCounts(*engine_, levels);
  }

  internal::Engine* engine_ = nullptr;  // wheel_'s
};

// Far timers made one after another do not wake the advancer for each one,
// even when each is due before everything linked: after the first, it looks
// at its inbox every 100 ms (here: never, the clock does not move) while
// submissions keep coming, so each arrives in time anyway. Without that, each
// of these 20 woke it.
TEST_F(TimingWheelTest, FarTimersMadeInARowDoNotWakeTheAdvancerEachTime) {
  internal::Engine* engine = EngineOf(*wheel_);
  ASSERT_NE(engine, nullptr);
  wheel_->WaitIdle();
  const uint64_t before = EngineTestPeer::AdvancerSleeps(*engine);
  std::vector<Timer> timers;
  // 60, 57, ... 3 minutes: each in an earlier bucket than the one before.
  for (int minutes = 60; minutes > 0; minutes -= 3) {
    absl::StatusOr<Timer> timer =
        wheel_->AfterFunc(absl::Minutes(minutes), [] {});
    ASSERT_TRUE(timer.ok());
    timers.push_back(*std::move(timer));
    // Time for a wake-up to be taken, were there one.
    absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_LE(EngineTestPeer::AdvancerSleeps(*engine) - before, 3u);
  wheel_->WaitIdle();
  EXPECT_EQ(wheel_->Pending(), 20);
}

// Reset of a timer waiting in a bucket must take it out of that bucket, and
// leave the other timers of the bucket where they are.
TEST_F(SmallWheelTest, ResetMovesTimerOutOfItsBucketAndKeepsItsNeighbours) {
  std::vector<std::shared_ptr<RunLog>> logs;
  std::vector<Timer> timers;
  // Three timers in the same level-1 bucket @8.
  for (int id = 0; id < 3; ++id) {
    logs.push_back(NewLog());
    timers.push_back(After(absl::Milliseconds(10), logs.back()));
  }
  EXPECT_THAT(LevelCounts(2), ElementsAre(0, 3));
  // The middle one moves to level 0, bucket @2.
  EXPECT_TRUE(timers[1].Reset(absl::Milliseconds(2)));
  EXPECT_THAT(LevelCounts(2), ElementsAre(1, 2))
      << "Reset left the timer linked in its old bucket";
  EXPECT_EQ(wheel_->Pending(), 3);

  for (int t = 1; t <= 12; ++t) Advance(absl::Milliseconds(1));
  // Each ran once (none lost, none twice), at its deadline.
  EXPECT_EQ(logs[1]->runs(),
            (std::vector<absl::Duration>{absl::Milliseconds(2)}));
  EXPECT_EQ(logs[0]->runs(),
            (std::vector<absl::Duration>{absl::Milliseconds(10)}));
  EXPECT_EQ(logs[2]->runs(),
            (std::vector<absl::Duration>{absl::Milliseconds(10)}))
      << "the neighbour after the reset timer never ran";
  EXPECT_EQ(wheel_->Pending(), 0);
  EXPECT_THAT(LevelCounts(2), ElementsAre(0, 0));
}

// Reset of the head of a level-0 bucket to the next bucket: it runs once, at
// the new time, and the timers behind it in its old bucket still run.
TEST_F(SmallWheelTest, ResetToALaterBucketRunsOnceAndKeepsItsOldNeighbours) {
  std::vector<std::shared_ptr<RunLog>> logs;
  std::vector<Timer> timers;
  for (int id = 0; id < 3; ++id) {
    logs.push_back(NewLog());
    timers.push_back(After(absl::Milliseconds(2), logs.back()));
  }
  EXPECT_THAT(LevelCounts(1), ElementsAre(3));
  EXPECT_TRUE(timers[0].Reset(absl::Milliseconds(3)));  // level 0, @3
  EXPECT_THAT(LevelCounts(1), ElementsAre(3));
  for (int t = 1; t <= 5; ++t) Advance(absl::Milliseconds(1));
  EXPECT_EQ(logs[0]->runs(),
            (std::vector<absl::Duration>{absl::Milliseconds(3)}));
  EXPECT_EQ(logs[1]->runs(),
            (std::vector<absl::Duration>{absl::Milliseconds(2)}));
  EXPECT_EQ(logs[2]->runs(),
            (std::vector<absl::Duration>{absl::Milliseconds(2)}));
  EXPECT_EQ(wheel_->Pending(), 0);
}

// Reset twice, each time into another bucket, then once more into the bucket
// it is in: it fires once, at the last deadline only.
TEST_F(TimingWheelTest, RepeatedResetsFireOnceAtTheLastDeadline) {
  auto log = NewLog();
  auto neighbour = NewLog();
  Timer timer = After(absl::Milliseconds(10), log);
  After(absl::Milliseconds(12), neighbour);
  EXPECT_TRUE(timer.Reset(absl::Milliseconds(12)));
  EXPECT_TRUE(timer.Reset(absl::Milliseconds(3)));
  EXPECT_TRUE(timer.Reset(absl::Milliseconds(3)));
  EXPECT_TRUE(timer.Reset(absl::Milliseconds(7)));
  AdvanceTo(absl::Milliseconds(7) - absl::Nanoseconds(1));
  EXPECT_EQ(log->count(), 0);
  AdvanceTo(absl::Milliseconds(7));
  EXPECT_EQ(log->count(), 1);
  Advance(absl::Seconds(1));
  EXPECT_EQ(log->count(), 1);
  EXPECT_EQ(neighbour->count(), 1);
  EXPECT_EQ(wheel_->Pending(), 0);
}

TEST_F(TimingWheelTest, ResetToAnEarlierTimeFiresEarlierOnly) {
  auto log = NewLog();
  Timer timer = After(absl::Hours(1), log);
  EXPECT_TRUE(timer.Reset(absl::Milliseconds(3)));
  Advance(absl::Milliseconds(3));
  EXPECT_EQ(log->count(), 1);
  Advance(absl::Hours(2));
  EXPECT_EQ(log->count(), 1);
}

TEST_F(TimingWheelTest, ResetOfFiredTimerReturnsFalseAndFiresAgain) {
  auto log = NewLog();
  Timer timer = After(kTick, log);
  Advance(kTick);
  ASSERT_EQ(log->count(), 1);
  EXPECT_FALSE(timer.Reset(absl::Milliseconds(5)));
  EXPECT_EQ(wheel_->Pending(), 1);
  Advance(absl::Milliseconds(5) - absl::Nanoseconds(1));
  EXPECT_EQ(log->count(), 1);
  Advance(absl::Nanoseconds(1));
  EXPECT_EQ(log->count(), 2);
  EXPECT_EQ(log->last_run(), absl::Milliseconds(6));
  EXPECT_EQ(wheel_->Pending(), 0);
}

TEST_F(TimingWheelTest, ResetOfStoppedTimerReturnsFalseAndArmsItAgain) {
  auto log = NewLog();
  Timer timer = After(absl::Milliseconds(2), log);
  ASSERT_TRUE(timer.Stop());
  EXPECT_FALSE(timer.Reset(absl::Milliseconds(7)));
  EXPECT_EQ(wheel_->Pending(), 1);
  Advance(absl::Milliseconds(6));
  EXPECT_EQ(log->count(), 0);
  Advance(kTick);
  EXPECT_EQ(log->count(), 1);
  EXPECT_EQ(wheel_->Pending(), 0);
}

TEST_F(TimingWheelTest, ResetWithZeroOrNegativeDelayRunsAsap) {
  auto log = NewLog();
  Timer timer = After(absl::Hours(1), log);
  EXPECT_TRUE(timer.Reset(absl::ZeroDuration()));
  WaitIdle();
  EXPECT_EQ(log->count(), 1);
  EXPECT_FALSE(timer.Reset(-absl::Seconds(1)));
  WaitIdle();
  EXPECT_EQ(log->count(), 2);
  EXPECT_NE(log->last_thread(), std::this_thread::get_id());
}

TEST_F(TimingWheelTest, ResetWithInfiniteOrOutOfRangeDelayStopsTheTimer) {
  auto log = NewLog();
  Timer timer = After(absl::Milliseconds(2), log);
  EXPECT_TRUE(timer.Reset(absl::InfiniteDuration()));  // as Stop
  EXPECT_EQ(wheel_->Pending(), 0);
  EXPECT_FALSE(timer.Reset(absl::InfiniteDuration()));
  EXPECT_FALSE(timer.Reset(300 * kYear));  // out of range, already stopped
  EXPECT_EQ(wheel_->Pending(), 0);
  Timer other = After(absl::Milliseconds(2), log);
  EXPECT_TRUE(other.Reset(300 * kYear));  // out of range: stops it
  EXPECT_EQ(wheel_->Pending(), 0);
  Advance(absl::Hours(1));
  EXPECT_EQ(log->count(), 0);
}

TEST_F(TimingWheelTest, ResetWithMinusInfiniteDelayStopsTheTimerAsPlusDoes) {
  auto log = NewLog();
  Timer timer = After(absl::Hours(1), log);
  EXPECT_TRUE(timer.Reset(-absl::InfiniteDuration()));  // as Stop
  EXPECT_FALSE(timer.Pending());
  EXPECT_EQ(wheel_->Pending(), 0);
  EXPECT_FALSE(timer.Reset(-absl::InfiniteDuration()));  // arms nothing
  WaitIdle();
  EXPECT_EQ(log->count(), 0);
  EXPECT_FALSE(timer.Pending());
  EXPECT_EQ(wheel_->GetStats().stopped, 1);
  EXPECT_EQ(wheel_->GetStats().scheduled, 1);
}

// Reset from the timer's own callback re-arms it; runs never overlap.
TEST_F(TimingWheelTest, ResetFromOwnCallbackFiresAgain) {
  auto runs = std::make_shared<std::atomic<int>>(0);
  auto reset_results = std::make_shared<std::vector<bool>>();
  auto self = std::make_shared<Timer>();
  absl::StatusOr<Timer> timer =
      wheel_->AfterFunc(kTick, [runs, reset_results, self] {
        if (runs->fetch_add(1) + 1 < 3) {
          reset_results->push_back(self->Reset(absl::Milliseconds(2)));
        }
      });
  ASSERT_TRUE(timer.ok());
  *self = *timer;
  Advance(kTick);
  EXPECT_EQ(runs->load(), 1);
  EXPECT_EQ(wheel_->Pending(), 1);
  Advance(2 * kTick - absl::Nanoseconds(1));
  EXPECT_EQ(runs->load(), 1);
  Advance(absl::Nanoseconds(1));
  EXPECT_EQ(runs->load(), 2);
  Advance(2 * kTick);
  EXPECT_EQ(runs->load(), 3);
  Advance(absl::Seconds(1));
  EXPECT_EQ(runs->load(), 3);
  EXPECT_EQ(wheel_->Pending(), 0);
  // A one-shot whose callback runs is no longer pending: Reset says false.
  EXPECT_EQ(*reset_results, (std::vector<bool>{false, false}));
  *self = Timer();  // the callback holds the handle: break the cycle
}

TEST_F(TimingWheelTest, ResetAfterShutdownReturnsFalseAndNothingRuns) {
  auto log = NewLog();
  Timer pending = After(absl::Milliseconds(5), log);
  Timer fired = After(kTick, log);
  Advance(kTick);
  ASSERT_EQ(log->count(), 1);
  EXPECT_EQ(wheel_->Shutdown(), 1);
  EXPECT_FALSE(pending.Reset(kTick));
  EXPECT_FALSE(fired.Reset(kTick));
  EXPECT_FALSE(fired.Reset(absl::ZeroDuration()));
  EXPECT_FALSE(pending.Stop());
  EXPECT_FALSE(fired.Stop());
  EXPECT_EQ(wheel_->Pending(), 0);
  // Shutdown joined the wheel's threads, so nothing can run any more: no Reset
  // above armed a timer (scheduled counts the two AfterFuncs only), and the
  // one run is all there will be.
  clock_->Advance(absl::Hours(1));
  const Stats stats = wheel_->GetStats();
  EXPECT_EQ(stats.scheduled, 2);
  EXPECT_EQ(stats.fired, 1);
  EXPECT_EQ(stats.cancelled, 1);
  EXPECT_EQ(log->count(), 1);
}

TEST_F(TimingWheelTest, ResetOfPeriodicTimerFiresAfterDThenKeepsItsPeriod) {
  auto log = NewLog();
  Timer timer = EveryLog(absl::Milliseconds(10), log);
  EXPECT_TRUE(timer.Reset(absl::Milliseconds(3)));
  Advance(absl::Milliseconds(3) - absl::Nanoseconds(1));
  EXPECT_EQ(log->count(), 0);
  AdvanceTo(absl::Milliseconds(3));
  EXPECT_EQ(log->count(), 1);
  AdvanceTo(absl::Milliseconds(10));
  EXPECT_EQ(log->count(), 1) << "ran at the old schedule";
  AdvanceTo(absl::Milliseconds(13) - absl::Nanoseconds(1));
  EXPECT_EQ(log->count(), 1);
  AdvanceTo(absl::Milliseconds(13));
  EXPECT_EQ(log->count(), 2);
  AdvanceTo(absl::Milliseconds(23));
  EXPECT_EQ(log->count(), 3);
  EXPECT_EQ(log->runs(), (std::vector<absl::Duration>{absl::Milliseconds(3),
                                                      absl::Milliseconds(13),
                                                      absl::Milliseconds(23)}));
  EXPECT_TRUE(timer.Stop());
}

// ---------------------------------------------------------------------------
// Every

TEST_F(TimingWheelTest, EveryRunsEachPeriodFirstAfterOnePeriod) {
  auto log = NewLog();
  Timer timer = EveryLog(absl::Milliseconds(10), log);
  Advance(absl::Milliseconds(10) - absl::Nanoseconds(1));
  EXPECT_EQ(log->count(), 0);
  Advance(absl::Nanoseconds(1));
  EXPECT_EQ(log->count(), 1);
  for (int k = 2; k <= 50; ++k) {
    Advance(absl::Milliseconds(10) - absl::Nanoseconds(1));
    ASSERT_EQ(log->count(), k - 1);
    Advance(absl::Nanoseconds(1));
    ASSERT_EQ(log->count(), k);
    EXPECT_EQ(log->last_run(), k * absl::Milliseconds(10));
    EXPECT_EQ(wheel_->Pending(), 1);
  }
  EXPECT_TRUE(timer.Stop());
  EXPECT_FALSE(timer.Stop());
  Advance(absl::Seconds(1));
  EXPECT_EQ(log->count(), 50);
  EXPECT_EQ(wheel_->Pending(), 0);
}

TEST_F(TimingWheelTest, EveryKeepsToTheScheduleWithAnUnalignedPeriod) {
  auto log = NewLog();
  Timer timer = EveryLog(absl::Microseconds(2500), log);
  for (int i = 0; i < 10; ++i) Advance(kTick);
  // Deadlines 2.5, 5, 7.5, 10 ms, each rounded up to a tick.
  EXPECT_EQ(log->runs(), (std::vector<absl::Duration>{
                             absl::Milliseconds(3), absl::Milliseconds(5),
                             absl::Milliseconds(8), absl::Milliseconds(10)}));
  EXPECT_TRUE(timer.Stop());
}

TEST_F(TimingWheelTest, EverySkipsRunsMissedByAJumpAndStaysOnSchedule) {
  auto log = NewLog();
  Timer timer = EveryLog(absl::Milliseconds(10), log);
  Advance(absl::Milliseconds(35));
  EXPECT_EQ(log->count(), 1) << "missed runs are skipped, not queued";
  AdvanceTo(absl::Milliseconds(40) - absl::Nanoseconds(1));
  EXPECT_EQ(log->count(), 1);
  AdvanceTo(absl::Milliseconds(40));
  EXPECT_EQ(log->count(), 2);
  EXPECT_TRUE(timer.Stop());
}

TEST_F(TimingWheelTest, EveryStopFromOwnCallbackReturnsTrueAndEndsIt) {
  auto runs = std::make_shared<std::atomic<int>>(0);
  auto stop_result = std::make_shared<std::atomic<int>>(-1);
  auto self = std::make_shared<Timer>();
  absl::StatusOr<Timer> timer =
      wheel_->Every(absl::Milliseconds(10), [runs, stop_result, self] {
        if (runs->fetch_add(1) + 1 == 3) *stop_result = self->Stop() ? 1 : 0;
      });
  ASSERT_TRUE(timer.ok());
  *self = *timer;
  for (int i = 0; i < 10; ++i) Advance(absl::Milliseconds(10));
  EXPECT_EQ(runs->load(), 3);
  EXPECT_EQ(stop_result->load(), 1);
  EXPECT_EQ(wheel_->Pending(), 0);
  EXPECT_FALSE(timer->Stop());
  *self = Timer();
}

// A periodic callback still running when its next runs are due: they do not
// start on the free second worker; they are skipped. The first run moves the
// clock past five more points of the schedule itself, so once the wheel is
// idle again every run that came due meanwhile has been decided on: a second
// run would have started (and been counted) by then.
TEST_F(TimingWheelTest, EveryRunsNeverOverlap) {
  std::atomic<bool> inside{false};
  std::atomic<int> overlaps{0};
  std::atomic<int> runs{0};
  absl::StatusOr<Timer> timer = wheel_->Every(absl::Milliseconds(10), [&] {
    if (inside.exchange(true)) overlaps.fetch_add(1);
    if (runs.fetch_add(1) == 0) {
      for (int i = 0; i < 5; ++i) clock_->Advance(absl::Milliseconds(10));
    }
    inside.store(false);
  });
  ASSERT_TRUE(timer.ok());
  Advance(absl::Milliseconds(10));
  // t = 60, idle: the points 20 .. 60 passed while the first run ran, and the
  // next point of the schedule is 70.
  ASSERT_EQ(clock_->Now(), absl::Milliseconds(60));
  EXPECT_EQ(runs.load(), 1);
  EXPECT_EQ(wheel_->GetStats().fired, 1);
  Advance(absl::Milliseconds(10));
  EXPECT_EQ(runs.load(), 2);
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_TRUE(timer->Stop());
}

TEST(TimingWheelRealClockTest, EverySlowCallbackRunsNeverOverlapRealClock) {
  Options options = DefaultOptions();
  options.workers = 2;
  auto wheel = TimingWheel::Create(std::move(options)).value();
  std::atomic<bool> inside{false};
  std::atomic<int> overlaps{0};
  std::atomic<int> runs{0};
  absl::StatusOr<Timer> timer = wheel->Every(kTick, [&] {
    if (inside.exchange(true)) overlaps.fetch_add(1);
    runs.fetch_add(1);
    absl::SleepFor(absl::Milliseconds(3));
    inside.store(false);
  });
  ASSERT_TRUE(timer.ok());
  // Each run outlasts its period (the sleep in the callback is the slow work,
  // not a wait): let ten of them happen.
  EXPECT_TRUE(Eventually([&] { return runs.load() >= 10; }));
  timer->Stop();
  wheel->Shutdown();
  EXPECT_GT(runs.load(), 0);
  EXPECT_EQ(overlaps.load(), 0);
}

// ---------------------------------------------------------------------------
// Pending and max_pending

TEST_F(TimingWheelTest, PendingIsScheduledMinusFiredMinusStopped) {
  auto log = NewLog();
  std::vector<Timer> once;
  for (int i = 1; i <= 5; ++i) once.push_back(After(i * kTick, log));
  Timer every1 = EveryLog(absl::Milliseconds(10), log);
  Timer every2 = EveryLog(absl::Milliseconds(10), log);
  EXPECT_EQ(wheel_->Pending(), 7);
  Advance(2 * kTick);
  EXPECT_EQ(wheel_->Pending(), 5);
  EXPECT_TRUE(once[2].Stop());
  EXPECT_EQ(wheel_->Pending(), 4);
  Advance(absl::Milliseconds(8));  // t = 10: once[3], once[4], both Every
  EXPECT_EQ(log->count(), 2 + 2 + 2);
  EXPECT_EQ(wheel_->Pending(), 2) << "a periodic timer counts until stopped";
  EXPECT_TRUE(every1.Stop());
  EXPECT_EQ(wheel_->Pending(), 1);
  Advance(absl::Milliseconds(10));
  EXPECT_EQ(wheel_->Pending(), 1);
  EXPECT_FALSE(once[0].Reset(absl::Hours(1)));
  EXPECT_EQ(wheel_->Pending(), 2);
  EXPECT_TRUE(once[0].Reset(absl::Hours(2)));
  EXPECT_EQ(wheel_->Pending(), 2);
  EXPECT_EQ(wheel_->Shutdown(), 2);
  EXPECT_EQ(wheel_->Pending(), 0);
}

TEST_F(TimingWheelTest, MaxPendingRefusesAtTheCapAndHasRoomAfterStopOrFire) {
  Options options = DefaultOptions();
  options.max_pending = 3;
  Start(std::move(options));
  auto log = NewLog();
  Timer a = After(kTick, log);
  Timer b = After(2 * kTick, log);
  Timer c = After(absl::Hours(1), log);
  absl::StatusOr<Timer> refused =
      wheel_->AfterFunc(kTick, RunLog::Callback(log));
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.status().message(), HasSubstr("max_pending"));
  EXPECT_THAT(refused.status().message(), HasSubstr("3"));
  EXPECT_EQ(wheel_->Every(kTick, RunLog::Callback(log)).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(wheel_->Pending(), 3);

  EXPECT_TRUE(a.Stop());
  Timer d = After(absl::Hours(1), log);  // room after Stop
  EXPECT_EQ(wheel_->AfterFunc(kTick, RunLog::Callback(log)).status().code(),
            absl::StatusCode::kResourceExhausted);
  Advance(2 * kTick);  // b fires
  EXPECT_EQ(log->count(), 1);
  Timer e = After(absl::Hours(1), log);  // room after the fire
  EXPECT_EQ(wheel_->Pending(), 3);
  // max_pending does not limit Reset.
  EXPECT_FALSE(b.Reset(absl::Hours(1)));
  EXPECT_EQ(wheel_->Pending(), 4);
}

// ---------------------------------------------------------------------------
// Re-entrancy

TEST_F(TimingWheelTest, CallbacksCallAfterFuncStopResetAndPendingOnTheirWheel) {
  ExpectFinishesWithin(absl::Seconds(30), [this] {
    TimingWheel* wheel = wheel_.get();
    auto later = NewLog();
    auto victim_log = NewLog();
    auto victim =
        std::make_shared<Timer>(After(absl::Milliseconds(100), victim_log));
    auto self = std::make_shared<Timer>();
    auto runs = std::make_shared<std::atomic<int>>(0);
    auto results = std::make_shared<std::vector<std::string>>();
    absl::StatusOr<Timer> timer = wheel->AfterFunc(kTick, [=] {
      if (runs->fetch_add(1) > 0) return;
      absl::StatusOr<Timer> added =
          wheel->AfterFunc(absl::Milliseconds(5), RunLog::Callback(later));
      results->push_back(absl::StrCat("after:", added.ok()));
      results->push_back(absl::StrCat("stop:", victim->Stop()));
      results->push_back(absl::StrCat("stop-self:", self->Stop()));
      results->push_back(
          absl::StrCat("reset-self:", self->Reset(absl::Milliseconds(10))));
      results->push_back(absl::StrCat("pending:", wheel->Pending()));
    });
    ASSERT_TRUE(timer.ok());
    *self = *timer;
    Advance(kTick);
    EXPECT_EQ(*results,
              (std::vector<std::string>{"after:1", "stop:1", "stop-self:0",
                                        "reset-self:0", "pending:2"}));
    EXPECT_EQ(wheel->Pending(), 2);
    AdvanceTo(absl::Milliseconds(6));
    EXPECT_EQ(later->count(), 1);
    AdvanceTo(absl::Milliseconds(11));
    EXPECT_EQ(runs->load(), 2);
    Advance(absl::Seconds(1));
    EXPECT_EQ(victim_log->count(), 0);
    EXPECT_EQ(wheel->Pending(), 0);
    *self = Timer();
  });
}

TEST_F(TimingWheelTest, PeriodicCallbackResetsItselfFromItsCallback) {
  ExpectFinishesWithin(absl::Seconds(30), [this] {
    auto self = std::make_shared<Timer>();
    auto log = NewLog();
    auto reset_result = std::make_shared<std::atomic<int>>(-1);
    absl::StatusOr<Timer> timer = wheel_->Every(absl::Milliseconds(10), [=] {
      RunLog::Callback(log)();
      if (log->count() == 1) {
        *reset_result = self->Reset(absl::Milliseconds(25)) ? 1 : 0;
      }
    });
    ASSERT_TRUE(timer.ok());
    *self = *timer;
    Advance(absl::Milliseconds(10));
    EXPECT_EQ(reset_result->load(), 1) << "a periodic timer is pending";
    AdvanceTo(absl::Milliseconds(35) - absl::Nanoseconds(1));
    EXPECT_EQ(log->count(), 1);
    AdvanceTo(absl::Milliseconds(35));
    EXPECT_EQ(log->count(), 2);
    AdvanceTo(absl::Milliseconds(45));
    EXPECT_EQ(log->count(), 3);
    EXPECT_TRUE(self->Stop());
    *self = Timer();
  });
}

TEST_F(TimingWheelTest, CallbackShutsDownItsOwnWheel) {
  ExpectFinishesWithin(absl::Seconds(30), [this] {
    TimingWheel* wheel = wheel_.get();
    auto log = NewLog();
    for (int i = 0; i < 3; ++i) After(absl::Hours(1), log);
    std::atomic<int64_t> cancelled{-1};
    Event done;
    ASSERT_TRUE(wheel
                    ->AfterFunc(kTick,
                                [&] {
                                  cancelled = wheel->Shutdown();
                                  // Idempotent, also from the callback.
                                  EXPECT_EQ(wheel->Shutdown(), 0);
                                  EXPECT_EQ(wheel->Pending(), 0);
                                  done.Notify();
                                })
                    .ok());
    Advance(kTick);
    ASSERT_TRUE(done.Wait());
    EXPECT_EQ(cancelled.load(), 3);
    EXPECT_EQ(wheel->Pending(), 0);
    EXPECT_EQ(wheel->AfterFunc(kTick, RunLog::Callback(log)).status().code(),
              absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(wheel->Shutdown(), 0);
    clock_->Advance(absl::Hours(2));
    EXPECT_EQ(log->count(), 0);
  });
}

TEST_F(TimingWheelTest, PeriodicCallbackShutsDownItsOwnWheel) {
  ExpectFinishesWithin(absl::Seconds(30), [this] {
    TimingWheel* wheel = wheel_.get();
    auto log = NewLog();
    for (int i = 0; i < 3; ++i) After(absl::Hours(1), log);
    std::atomic<int64_t> cancelled{-1};
    std::atomic<int> runs{0};
    Event done;
    ASSERT_TRUE(wheel
                    ->Every(kTick,
                            [&] {
                              runs.fetch_add(1);
                              cancelled = wheel->Shutdown();
                              done.Notify();
                            })
                    .ok());
    Advance(kTick);
    ASSERT_TRUE(done.Wait());
    // The three one-shots and the periodic timer itself were pending.
    EXPECT_EQ(cancelled.load(), 4);
    EXPECT_EQ(wheel->Pending(), 0);
    // A Shutdown from this thread returns once that callback has returned
    // too: then no thread of the wheel runs anything any more, and the
    // counters are final.
    EXPECT_EQ(wheel->Shutdown(), 0);
    clock_->Advance(absl::Hours(2));
    EXPECT_EQ(wheel->GetStats().fired, 1);
    EXPECT_EQ(runs.load(), 1);
    EXPECT_EQ(log->count(), 0);
  });
}

// Several callbacks, running at once, shut the wheel down while the test
// thread does too: nobody deadlocks, and the counts add up.
TEST_F(TimingWheelTest, CallbacksAndCallerShutDownConcurrently) {
  ExpectFinishesWithin(absl::Seconds(30), [this] {
    TimingWheel* wheel = wheel_.get();
    auto log = NewLog();
    for (int i = 0; i < 10; ++i) After(absl::Hours(1), log);
    std::atomic<int64_t> total{0};
    std::atomic<int> started{0};
    std::atomic<int> finished{0};
    for (int i = 0; i < 2; ++i) {
      ASSERT_TRUE(wheel
                      ->AfterFunc(kTick,
                                  [&] {
                                    started.fetch_add(1);
                                    while (started.load() < 2) {
                                      std::this_thread::yield();
                                    }
                                    total.fetch_add(wheel->Shutdown());
                                    finished.fetch_add(1);
                                  })
                      .ok());
    }
    clock_->Advance(kTick);
    ASSERT_TRUE(Eventually([&] { return started.load() == 2; }));
    total.fetch_add(wheel->Shutdown());
    // (Whether this Shutdown waits for the callbacks is tested below.)
    ASSERT_TRUE(Eventually([&] { return finished.load() == 2; }));
    EXPECT_EQ(total.load(), 10);
    EXPECT_EQ(log->count(), 0);
  });
}

// ---------------------------------------------------------------------------
// Faults and shutdown

// Shutdown "waits for running callbacks (except the caller's own, when called
// from one)". A callback shuts the wheel down and then goes on running; a
// Shutdown from another thread (or the wheel's destructor) must wait for that
// callback too, or the caller frees what the callback still uses.
TEST_F(TimingWheelTest,
       ShutdownFromAnotherThreadWaitsForACallbackThatShutItDown) {
  TimingWheel* wheel = wheel_.get();
  Event shut_down_inside;
  Gate release;
  std::atomic<bool> callback_returned{false};
  ASSERT_TRUE(wheel
                  ->AfterFunc(kTick,
                              [&] {
                                wheel->Shutdown();
                                shut_down_inside.Notify();
                                release.Pass();
                                callback_returned = true;
                              })
                  .ok());
  clock_->Advance(kTick);
  ASSERT_TRUE(shut_down_inside.Wait());
  std::future<bool> returned_after_callback =
      std::async(std::launch::async, [&] {
        wheel->Shutdown();
        return callback_returned.load();
      });
  const bool blocked =
      returned_after_callback.wait_for(std::chrono::milliseconds(100)) ==
      std::future_status::timeout;
  release.Open();
  EXPECT_TRUE(returned_after_callback.get())
      << "Shutdown returned while a callback was still running";
  EXPECT_TRUE(blocked);
  ASSERT_TRUE(Eventually([&] { return callback_returned.load(); }));
}

TEST_F(TimingWheelTest, ThrowingCallbacksAreCaughtAndTheWorkerLivesOn) {
  Options options = DefaultOptions();
  options.workers = 1;
  Start(std::move(options));
  ASSERT_TRUE(
      wheel_->AfterFunc(kTick, [] { throw std::runtime_error("callback bug"); })
          .ok());
  ASSERT_TRUE(wheel_->AfterFunc(kTick, [] { throw 42; }).ok());
  auto same_tick = NewLog();
  auto later = NewLog();
  After(kTick, same_tick);
  After(2 * kTick, later);
  Advance(kTick);
  EXPECT_EQ(wheel_->GetStats().callbacks_thrown, 2);
  EXPECT_EQ(same_tick->count(), 1);
  Advance(kTick);
  EXPECT_EQ(later->count(), 1);
  auto periodic = NewLog();
  absl::StatusOr<Timer> thrower = wheel_->Every(kTick, [periodic] {
    RunLog::Callback(periodic)();
    throw std::logic_error("again");
  });
  ASSERT_TRUE(thrower.ok());
  Advance(kTick);
  Advance(kTick);
  EXPECT_EQ(periodic->count(), 2) << "a periodic timer that throws keeps going";
  EXPECT_EQ(wheel_->GetStats().callbacks_thrown, 4);
  EXPECT_TRUE(thrower->Stop());
}

TEST_F(TimingWheelTest, ShutdownOf100kPendingTimersIsFastAndDestroysThem) {
  constexpr int kTimers = 100000;
  std::atomic<int64_t> destroyed{0};
  std::atomic<int> ran{0};
  std::vector<Timer> timers;
  timers.reserve(kTimers);
  for (int i = 0; i < kTimers; ++i) {
    absl::StatusOr<Timer> timer = wheel_->AfterFunc(
        absl::Milliseconds(1 + i % 10000) + absl::Microseconds(i % 7),
        [counter = DestructionCounter(&destroyed), &ran] { ran.fetch_add(1); });
    ASSERT_TRUE(timer.ok());
    timers.push_back(*std::move(timer));
  }
  EXPECT_EQ(wheel_->Pending(), kTimers);
  const auto start = std::chrono::steady_clock::now();
  const int64_t cancelled = wheel_->Shutdown();
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(cancelled, kTimers);
  EXPECT_LT(took, std::chrono::seconds(1) * kSlowdown)
      << absl::FormatDuration(absl::FromChrono(took));
  // Destroyed by Shutdown although every handle is still held.
  EXPECT_EQ(destroyed.load(), kTimers);
  EXPECT_EQ(wheel_->Pending(), 0);
  clock_->Advance(absl::Hours(1));
  EXPECT_EQ(ran.load(), 0);
  for (Timer& timer : timers) EXPECT_FALSE(timer.Stop());
}

// While the advancer polls (from 200,000 calls a second; here at any rate),
// AfterFunc reads no clock: the advancer stamps the deadline with a reading
// it takes after the call (lib/handoff/inbox.h). Three threads make timers
// at once. Never early, by the steady clock read before each call, nor by
// Deadline(); a Deadline() asked before the stamp fixes it, and every later
// one says the same; Stop right after the call (taken back before the take,
// or after it), Stop from another thread racing the take, and Reset work as
// for any timer; nothing is lost or doubled.
TEST(TimingWheelRealClockTest, ArmsStampedByThePollingAdvancerAreNeverEarly) {
  auto wheel = TimingWheel::Create(DefaultOptions()).value();
  internal::Engine* engine = EngineOf(*wheel);
  ASSERT_NE(engine, nullptr);
  EngineTestPeer::PollAtAnyRate(*engine);
  const auto give_up =
      std::chrono::steady_clock::now() + std::chrono::seconds(30);
  std::vector<Timer> pokes;  // rounds, in which the advancer decides
  while (!EngineTestPeer::Polling(*engine)) {
    ASSERT_LT(std::chrono::steady_clock::now(), give_up) << "never polled";
    pokes.push_back(wheel->AfterFunc(absl::Milliseconds(1), [] {}).value());
    absl::SleepFor(absl::Milliseconds(1));
  }
  constexpr int kThreads = 3;
  constexpr int kEach = 1500;
  struct Record {
    std::atomic<int> runs{0};
    std::atomic<bool> early{false};
    std::atomic<bool> stopped{false};  // a Stop returned true
  };
  std::vector<Record> records(kThreads * kEach);
  std::atomic<int> unstamped{0};
  // Timers another thread stops, racing the advancer's take.
  std::mutex to_stop_mu;
  std::vector<std::pair<Timer, Record*>> to_stop;
  std::atomic<bool> made{false};
  std::thread stopper([&] {
    for (bool last = false; !last;) {
      last = made.load();
      std::vector<std::pair<Timer, Record*>> batch;
      {
        std::lock_guard<std::mutex> lock(to_stop_mu);
        batch.swap(to_stop);
      }
      for (auto& [timer, record] : batch) {
        if (timer.Stop()) record->stopped = true;
      }
      std::this_thread::yield();
    }
  });
  std::vector<std::thread> makers;
  for (int t = 0; t < kThreads; ++t) {
    makers.emplace_back([&, t] {
      std::vector<Timer> timers;
      for (int i = 0; i < kEach; ++i) {
        // Pending for sure while this thread looks at it right after the
        // call (100 ms: a thread that sanitizers slow down may be preempted
        // for a few), else soon due.
        const bool looked_at = i % 7 == 0 || i % 5 == 0 || i % 11 == 0;
        const absl::Duration d =
            absl::Milliseconds((looked_at ? 100 : 1) + i % 20);
        if (EngineTestPeer::Polling(*engine)) unstamped.fetch_add(1);
        const absl::Duration before = SteadyClock()->Now();
        Record* record = &records[static_cast<size_t>(t * kEach + i)];
        Timer timer = wheel
                          ->AfterFunc(d,
                                      [record, earliest = before + d] {
                                        if (SteadyClock()->Now() < earliest) {
                                          record->early = true;
                                        }
                                        record->runs.fetch_add(1);
                                      })
                          .value();
        if (i % 7 == 0) {
          EXPECT_TRUE(timer.Stop()) << i;
          record->stopped = true;
        } else if (i % 13 == 0) {
          std::lock_guard<std::mutex> lock(to_stop_mu);
          to_stop.emplace_back(timer, record);
        } else if (i % 5 == 0) {
          const std::optional<absl::Duration> deadline = timer.Deadline();
          const absl::Duration after = SteadyClock()->Now();
          ASSERT_TRUE(deadline.has_value()) << i;
          EXPECT_GE(*deadline, before + d) << i;
          EXPECT_LE(*deadline, after + d) << i;
          EXPECT_EQ(timer.Deadline(), deadline) << i;
        } else if (i % 11 == 0) {
          EXPECT_TRUE(timer.Reset(d)) << i;
        }
        timers.push_back(std::move(timer));
        if (i % 100 == 99) absl::SleepFor(absl::Milliseconds(1));
      }
    });
  }
  for (std::thread& maker : makers) maker.join();
  made = true;
  stopper.join();
  EXPECT_GT(unstamped.load(), 0);
  for (size_t i = 0; i < records.size(); ++i) {
    if (records[i].stopped.load()) continue;
    while (records[i].runs.load() == 0) {
      ASSERT_LT(std::chrono::steady_clock::now(), give_up) << "lost " << i;
      absl::SleepFor(absl::Milliseconds(1));
    }
  }
  wheel->Shutdown();
  for (size_t i = 0; i < records.size(); ++i) {
    const Record& record = records[i];
    EXPECT_FALSE(record.early.load()) << i;
    EXPECT_EQ(record.runs.load(), record.stopped.load() ? 0 : 1) << i;
  }
}

// While its calls end before it looks (AfterFunc + Stop pairs, the Stop
// taking the arm back), a polling advancer sleeps twice as long after each
// round, up to 800 us, instead of waking every 50 us on the callers' cores;
// once calls leave arms for it, it sleeps 50 us again (lib/threads/advancer.h).
TEST(TimingWheelRealClockTest, APollingAdvancerBacksOffWhileItsCallsEndFirst) {
  auto wheel = TimingWheel::Create(DefaultOptions()).value();
  internal::Engine* engine = EngineOf(*wheel);
  ASSERT_NE(engine, nullptr);
  EngineTestPeer::PollAtAnyRate(*engine);
  const auto within = [](absl::Duration d) {
    return std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(d);
  };
  auto give_up = within(absl::Seconds(30));
  std::vector<Timer> kept;
  while (EngineTestPeer::PollSleep(*engine) == absl::ZeroDuration()) {
    ASSERT_LT(std::chrono::steady_clock::now(), give_up) << "never polled";
    kept.push_back(wheel->AfterFunc(absl::Hours(1), [] {}).value());
    absl::SleepFor(absl::Microseconds(100));
  }
  give_up = within(absl::Seconds(30));
  while (EngineTestPeer::PollSleep(*engine) < absl::Microseconds(800)) {
    ASSERT_LT(std::chrono::steady_clock::now(), give_up)
        << "still polling every " << EngineTestPeer::PollSleep(*engine);
    for (int i = 0; i < 1000; ++i) {
      ASSERT_TRUE(wheel->AfterFunc(absl::Hours(1), [] {})->Stop());
    }
  }
  EXPECT_EQ(EngineTestPeer::PollSleep(*engine), absl::Microseconds(800))
      << "never beyond";
  give_up = within(absl::Seconds(30));
  while (EngineTestPeer::PollSleep(*engine) != absl::Microseconds(50)) {
    ASSERT_LT(std::chrono::steady_clock::now(), give_up)
        << "still sleeping " << EngineTestPeer::PollSleep(*engine);
    for (int i = 0; i < 100; ++i) {
      kept.push_back(wheel->AfterFunc(absl::Hours(1), [] {}).value());
    }
  }
  for (Timer& timer : kept) EXPECT_TRUE(timer.Stop());
  EXPECT_EQ(wheel->Pending(), 0);
}

TEST(TimingWheelRealClockTest,
     ShutdownWakesAPollerSleepingAnHourAheadRealClock) {
  auto wheel = TimingWheel::Create(DefaultOptions()).value();
  ASSERT_TRUE(wheel->AfterFunc(absl::Hours(1), [] {}).ok());
  absl::SleepFor(absl::Milliseconds(20));  // let the poller go to sleep
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(wheel->Shutdown(), 1);
  EXPECT_LT(std::chrono::steady_clock::now() - start,
            std::chrono::milliseconds(500) * kSlowdown);
}

TEST_F(TimingWheelTest, AfterFuncAndEveryAfterShutdownFailAtOnce) {
  EXPECT_EQ(wheel_->Shutdown(), 0);
  auto log = NewLog();
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<Timer> timer = wheel_->AfterFunc(kTick, RunLog::Callback(log));
  EXPECT_EQ(timer.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(timer.status().message(), HasSubstr("shut down"));
  EXPECT_EQ(wheel_->AfterFunc(absl::ZeroDuration(), RunLog::Callback(log))
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(wheel_->Every(kTick, RunLog::Callback(log)).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(wheel_->Shutdown(), 0);
  EXPECT_EQ(wheel_->Pending(), 0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  Advance(absl::Hours(1));
  EXPECT_EQ(log->count(), 0);
}

TEST_F(TimingWheelTest, ConcurrentShutdownsTogetherReturnThePendingCount) {
  constexpr int kPending = 57;
  auto log = NewLog();
  for (int i = 0; i < kPending; ++i) {
    After(absl::Milliseconds(1 + i * 37), log);
  }
  constexpr int kThreads = 4;
  std::atomic<int> ready{0};
  std::atomic<int64_t> total{0};
  std::atomic<int> nonzero{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&] {
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();
      const int64_t n = wheel_->Shutdown();
      total.fetch_add(n);
      if (n != 0) nonzero.fetch_add(1);
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(total.load(), kPending);
  EXPECT_EQ(nonzero.load(), 1);
  EXPECT_EQ(wheel_->Pending(), 0);
}

// Shutdown cancels every pending timer, including those dispatched to the
// worker pool and not started. Here one worker is blocked in a callback while
// nine more timers of the same tick wait for it; Shutdown must cancel all
// nine (they were pending: Stop would have returned true), and none may run
// after it returned.
TEST_F(TimingWheelTest, ShutdownCancelsTimersQueuedForABusyWorker) {
  Options options = DefaultOptions();
  options.workers = 1;
  Start(std::move(options));
  constexpr int kQueued = 9;
  Event entered;
  Gate release;
  ASSERT_TRUE(wheel_
                  ->AfterFunc(kTick,
                              [&] {
                                entered.Notify();
                                release.Pass();
                              })
                  .ok());
  auto log = NewLog();
  std::vector<Timer> queued;
  for (int i = 0; i < kQueued; ++i) queued.push_back(After(kTick, log));
  clock_->Advance(kTick);
  ASSERT_TRUE(entered.Wait());
  EXPECT_EQ(wheel_->Pending(), kQueued);
  std::future<int64_t> cancelled =
      std::async(std::launch::async, [this] { return wheel_->Shutdown(); });
  // Shutdown takes the queued tasks out of the pool (queue and stashes)
  // before it waits for the running callback; once they are out, nothing can
  // run them, so let the callback return.
  ASSERT_TRUE(
      Eventually([&] { return wheel_->GetStats().worker_queue_depth == 0; }));
  release.Open();
  EXPECT_EQ(cancelled.get(), kQueued)
      << "Shutdown did not cancel every timer that was pending";
  EXPECT_EQ(log->count(), 0)
      << log->count()
      << " pending callbacks ran after Shutdown cancelled "
         "the pending timers";
}

// ---------------------------------------------------------------------------
// CancelAll

TEST_F(TimingWheelTest, CancelAllCancelsEveryPendingTimerAndTheWheelGoesOn) {
  std::atomic<int64_t> destroyed{0};
  std::atomic<int> ran{0};
  std::vector<Timer> timers;
  // One-shot timers in every level of the default wheel (1 ms to ~3 years),
  // and periodic ones.
  for (int i = 0; i < 10; ++i) {
    for (absl::Duration d :
         {kTick * 3, kTick * 30, kTick * 700, absl::Seconds(9),
          absl::Minutes(5), absl::Hours(3), absl::Hours(24 * 40), kYear * 3}) {
      timers.push_back(
          wheel_
              ->AfterFunc(d + kTick * i,
                          [counter = DestructionCounter(&destroyed), &ran] {
                            ran.fetch_add(1);
                          })
              .value());
    }
    timers.push_back(
        wheel_
            ->Every(kTick * (2 + i), [counter = DestructionCounter(&destroyed),
                                      &ran] { ran.fetch_add(1); })
            .value());
  }
  // Not pending: one fired, one stopped.
  auto log = NewLog();
  Timer fired = After(kTick, log);
  Timer stopped = After(kTick * 50, log);
  ASSERT_TRUE(stopped.Stop());
  Advance(kTick);
  ASSERT_EQ(log->count(), 1);
  ASSERT_EQ(ran.load(), 0);
  const int64_t pending = static_cast<int64_t>(timers.size());
  ASSERT_EQ(wheel_->Pending(), pending);

  EXPECT_EQ(wheel_->CancelAll(), pending);
  // Destroyed before CancelAll returned, although every handle is held.
  EXPECT_EQ(destroyed.load(), pending);
  EXPECT_EQ(wheel_->Pending(), 0);
  EXPECT_EQ(wheel_->GetStats().cancelled, pending);
  for (Timer& timer : timers) {
    EXPECT_EQ(timer.State(), TimerState::kCancelled);
    EXPECT_FALSE(timer.Stop());
  }
  EXPECT_EQ(fired.State(), TimerState::kFired);
  EXPECT_EQ(stopped.State(), TimerState::kStopped);
  EXPECT_EQ(wheel_->CancelAll(), 0);

  // The wheel goes on: new timers, and a Reset of a timer not cancelled.
  auto after = NewLog();
  After(kTick * 5, after);
  Timer every = EveryLog(kTick * 10, after);
  EXPECT_FALSE(stopped.Reset(kTick * 7));
  Advance(kTick * 10);
  EXPECT_EQ(after->count(), 2);
  EXPECT_EQ(log->count(), 2);  // `stopped`, reset
  Advance(kYear * 4);
  EXPECT_EQ(ran.load(), 0);
  EXPECT_EQ(after->count(), 3) << "the new periodic timer runs on";
  EXPECT_TRUE(every.Stop());
}

TEST_F(TimingWheelTest, CancelAllGivesBackRoomUnderMaxPending) {
  Options options = DefaultOptions();
  options.max_pending = 3;
  Start(std::move(options));
  auto log = NewLog();
  for (int i = 0; i < 3; ++i) After(absl::Seconds(1 + i), log);
  EXPECT_EQ(wheel_->AfterFunc(kTick, [] {}).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(wheel_->CancelAll(), 3);
  for (int i = 0; i < 3; ++i) After(kTick, log);
  Advance(kTick);
  EXPECT_EQ(log->count(), 3);
}

// One worker is held by a callback while more timers of the same tick wait
// for it: CancelAll cancels the waiting ones (Stop would have returned true)
// but not the running one-shot, and none runs after it returned; the wheel
// then runs new timers.
TEST_F(TimingWheelTest, CancelAllCancelsTimersQueuedForABusyWorker) {
  Options options = DefaultOptions();
  options.workers = 1;
  Start(std::move(options));
  constexpr int kQueued = 9;
  Event entered;
  Gate release;
  Timer running = wheel_
                      ->AfterFunc(kTick,
                                  [&] {
                                    entered.Notify();
                                    release.Pass();
                                  })
                      .value();
  auto log = NewLog();
  std::vector<Timer> queued;
  for (int i = 0; i < kQueued; ++i) queued.push_back(After(kTick, log));
  clock_->Advance(kTick);
  ASSERT_TRUE(entered.Wait());
  ASSERT_TRUE(
      Eventually([&] { return wheel_->GetStats().worker_queue_depth > 0; }));
  EXPECT_EQ(wheel_->CancelAll(), kQueued);
  EXPECT_EQ(running.State(), TimerState::kRunning);
  release.Open();
  WaitIdle();
  EXPECT_EQ(log->count(), 0);
  EXPECT_EQ(running.State(), TimerState::kFired);
  for (const Timer& timer : queued) {
    EXPECT_EQ(timer.State(), TimerState::kCancelled);
  }
  After(kTick, log);
  Advance(kTick);
  EXPECT_EQ(log->count(), 1);
}

TEST_F(TimingWheelTest, CancelAllFromACallbackCancelsTheOthersAndItsOwnRearm) {
  auto log = NewLog();
  for (int i = 0; i < 5; ++i) After(absl::Seconds(1 + i), log);
  std::atomic<int64_t> from_one_shot{-1};
  std::atomic<int64_t> from_periodic{-1};
  Timer one_shot = wheel_
                       ->AfterFunc(kTick,
                                   [&] {
                                     from_one_shot = wheel_->CancelAll();
                                     After(kTick, log);  // after it: runs
                                   })
                       .value();
  Advance(kTick);
  // Its own timer had started: not counted.
  EXPECT_EQ(from_one_shot.load(), 5);
  Advance(kTick);
  EXPECT_EQ(log->count(), 1);
  Timer periodic =
      wheel_->Every(kTick, [&] { from_periodic = wheel_->CancelAll(); })
          .value();
  Advance(kTick);
  EXPECT_EQ(from_periodic.load(), 1) << "its own re-arm";
  Advance(kTick * 10);
  EXPECT_EQ(periodic.Runs(), 1);
  EXPECT_EQ(periodic.State(), TimerState::kCancelled);
  EXPECT_EQ(one_shot.State(), TimerState::kFired);
}

// A capture whose destructor calls into the wheel that destroys it.
class CallsOnDestruction {
 public:
  explicit CallsOnDestruction(std::function<void()> call)
      : call_(std::move(call)) {}
  CallsOnDestruction(CallsOnDestruction&& other) noexcept
      : call_(std::exchange(other.call_, nullptr)) {}
  CallsOnDestruction& operator=(CallsOnDestruction&&) = delete;
  ~CallsOnDestruction() {
    if (call_) call_();
  }

 private:
  std::function<void()> call_;
};

TEST_F(TimingWheelTest, CancelAllFromTheDestructorOfACallbackItCancels) {
  ExpectFinishesWithin(absl::Seconds(10) * kSlowdown, [&] {
    auto log = NewLog();
    std::atomic<int64_t> nested{-1};
    Timer later = After(absl::Seconds(5), log);
    ASSERT_TRUE(
        wheel_
            ->AfterFunc(absl::Seconds(1), [capture = CallsOnDestruction([&] {
                                             nested = wheel_->CancelAll();
                                             After(kTick, log);
                                           })] {})
            .ok());
    // The outer call cancels both; the nested one, run by the destruction,
    // finds nothing left and leaves the new timer alone.
    EXPECT_EQ(wheel_->CancelAll(), 2);
    EXPECT_EQ(nested.load(), 0);
    Advance(absl::Seconds(10));
    EXPECT_EQ(log->count(), 1);
    EXPECT_EQ(later.State(), TimerState::kCancelled);
  });
}

TEST_F(TimingWheelTest, CancelAllAfterShutdownReturnsZero) {
  auto log = NewLog();
  Timer timer = After(absl::Seconds(1), log);
  EXPECT_EQ(wheel_->Shutdown(), 1);
  EXPECT_EQ(wheel_->CancelAll(), 0);
  EXPECT_EQ(timer.State(), TimerState::kCancelled);
  EXPECT_EQ(wheel_->GetStats().cancelled, 1);
}

// Deadlines 16.0 .. 16.4 s sit in one level-3 bucket that cascades at
// 15.6 s; CancelAll comes in the middle of that cascade, while the advancer
// holds part of the bucket in transit: every timer is cancelled (none is
// due), and their callbacks are gone when it returns.
TEST(CancelAllTest, CancelsATimersBucketInTheMiddleOfItsCascade) {
  const int timers = kSanitized ? 20'000 : 100'000;
  const int rounds = kSanitized ? 3 : 8;
  for (int round = 0; round < rounds; ++round) {
    std::atomic<int64_t> destroyed{0};
    std::atomic<int> ran{0};
    auto clock = std::make_shared<ManualClock>();
    Options options = DefaultOptions();
    options.clock = clock;
    options.workers = 1;
    auto wheel = TimingWheel::Create(std::move(options)).value();
    std::vector<Timer> handles;
    handles.reserve(timers);
    for (int i = 0; i < timers; ++i) {
      handles.push_back(
          wheel
              ->AfterFunc(absl::Milliseconds(16000 + i % 400),
                          [counter = DestructionCounter(&destroyed), &ran] {
                            ran.fetch_add(1);
                          })
              .value());
    }
    clock->Advance(absl::Milliseconds(15600));  // the cascade starts
    // Let it get going, a little differently each round.
    for (int i = 0; i < round * 50; ++i) std::this_thread::yield();
    EXPECT_EQ(wheel->CancelAll(), timers) << "round " << round;
    EXPECT_EQ(destroyed.load(), timers) << "round " << round;
    wheel->WaitIdle();
    clock->Advance(absl::Seconds(5));
    wheel->WaitIdle();
    EXPECT_EQ(ran.load(), 0);
    EXPECT_EQ(wheel->Pending(), 0);
  }
}

TEST_F(TimingWheelTest, HandlesStaySafeAfterTheWheelIsDestroyed) {
  auto log = NewLog();
  Timer pending = After(absl::Hours(1), log);
  Timer fired = After(kTick, log);
  Timer stopped = After(absl::Hours(1), log);
  Timer periodic = EveryLog(absl::Milliseconds(3), log);
  ASSERT_TRUE(stopped.Stop());
  Advance(kTick);
  ASSERT_EQ(log->count(), 1);
  wheel_.reset();
  for (Timer* timer : {&pending, &fired, &stopped, &periodic}) {
    EXPECT_FALSE(timer->Stop());
    EXPECT_FALSE(timer->Reset(kTick));
    EXPECT_FALSE(timer->Reset(absl::ZeroDuration()));
    Timer copy = *timer;
    EXPECT_FALSE(copy.Stop());
  }
  // The wheel's threads went with it: nothing is left to run a timer, and
  // none of the calls above ran one.
  clock_->Advance(absl::Hours(2));
  EXPECT_EQ(log->count(), 1);
}

// Handles made on several threads live in several lanes, each of which keeps
// the engine alive once the wheel is gone; dropped in every rotation, the
// last one frees it (ASan and LeakSanitizer check both directions).
TEST(TimingWheelLifetimeTest, HandlesFromSeveralThreadsOutliveTheWheel) {
  for (int first = 0; first < 4; ++first) {
    std::unique_ptr<TimingWheel> wheel =
        OneWorkerWheel(std::make_shared<ManualClock>());
    std::vector<Timer> timers(4);
    for (int i = 0; i < 4; ++i) {
      std::thread([&wheel, &timers, i] {
        timers[i] = wheel->AfterFunc(absl::Hours(1), [] {}).value();
      }).join();
    }
    wheel.reset();
    for (int k = 0; k < 4; ++k) {
      Timer& timer = timers[(first + k) % 4];
      EXPECT_FALSE(timer.Stop());
      timer = Timer();
    }
  }
}

// A fired timer keeps its callback (a Reset may run it again), and that
// callback may hold the handle of another timer of the same wheel. Once the
// wheel is gone, dropping the outer handle frees its node, whose callback
// drops the inner handle, whose node goes too; the engine must outlive both
// nodes' memory (ASan checks the order: node first, then its handle's count).
TEST(TimingWheelLifetimeTest, ACallbackHoldingAHandleOutlivesTheWheel) {
  auto clock = std::make_shared<ManualClock>();
  std::unique_ptr<TimingWheel> wheel = OneWorkerWheel(clock);
  std::atomic<int> runs{0};
  Timer outer;
  {
    Timer inner = wheel->AfterFunc(absl::Hours(1), [] {}).value();
    outer = wheel->AfterFunc(kTick, [inner, &runs] { ++runs; }).value();
  }
  clock->Advance(kTick);
  wheel->WaitIdle();
  ASSERT_EQ(runs.load(), 1);
  wheel.reset();
  EXPECT_FALSE(outer.Pending());
  outer = Timer();
}

// ---------------------------------------------------------------------------
// Bad input

absl::Status CreateStatus(Options options) {
  return TimingWheel::Create(std::move(options)).status();
}

TEST(TimingWheelOptionsTest, EachBadOptionIsInvalidArgumentNamingIt) {
  struct Case {
    std::function<void(Options&)> set;
    std::string name;
    std::string value;
  };
  const std::vector<Case> cases = {
      {[](Options& o) { o.tick = absl::Nanoseconds(999); }, "tick", "999ns"},
      {[](Options& o) { o.tick = absl::ZeroDuration(); }, "tick", "0"},
      {[](Options& o) { o.tick = -kTick; }, "tick", "-1ms"},
      {[](Options& o) { o.tick = absl::InfiniteDuration(); }, "tick", "inf"},
      {[](Options& o) { o.tick = absl::Hours(1) + absl::Nanoseconds(1); },
       "tick", "1h0.000000001s"},
      {[](Options& o) { o.tick = absl::Hours(3000000); }, "tick", "3000000h"},
      {[](Options& o) { o.wheel_size = 1; }, "wheel_size", "1"},
      {[](Options& o) { o.wheel_size = 0; }, "wheel_size", "0"},
      {[](Options& o) { o.wheel_size = 65537; }, "wheel_size", "65537"},
      {[](Options& o) { o.workers = -1; }, "workers", "-1"},
      {[](Options& o) { o.workers = 1025; }, "workers", "1025"},
      {[](Options& o) { o.max_pending = -1; }, "max_pending", "-1"},
      {[](Options& o) { o.spare_timers = -1; }, "spare_timers", "-1"},
      {[](Options& o) { o.spare_timers = kMaxSpareTimers + 1; }, "spare_timers",
       "1099511627777"},
  };
  for (const Case& c : cases) {
    Options options = DefaultOptions();
    c.set(options);
    const absl::Status status = CreateStatus(std::move(options));
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument)
        << c.name << " " << c.value << ": " << status;
    EXPECT_THAT(status.message(), HasSubstr(c.name)) << status;
    EXPECT_THAT(status.message(), HasSubstr(c.value)) << status;
  }
}

TEST(TimingWheelOptionsTest, ExtremeGoodOptionsAreAccepted) {
  for (int wheel_size : {2, 65536}) {
    Options options = DefaultOptions();
    options.wheel_size = wheel_size;
    options.tick = wheel_size == 2 ? kMinTick : kMaxTick;
    options.workers = 1;
    options.clock = std::make_shared<ManualClock>();
    options.spare_timers = wheel_size == 2 ? 0 : kMaxSpareTimers;
    EXPECT_TRUE(TimingWheel::Create(std::move(options)).ok()) << wheel_size;
  }
  Options options;  // every default
  options.clock = std::make_shared<ManualClock>();
  EXPECT_TRUE(TimingWheel::Create(std::move(options)).ok());
}

TEST_F(TimingWheelTest, EmptyCallbackIsInvalidArgument) {
  absl::StatusOr<Timer> timer = wheel_->AfterFunc(kTick, nullptr);
  EXPECT_EQ(timer.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(timer.status().message(), HasSubstr("callback"));
  EXPECT_THAT(timer.status().message(), HasSubstr("AfterFunc"));
  absl::AnyInvocable<void()> empty;
  timer = wheel_->Every(kTick, std::move(empty));
  EXPECT_EQ(timer.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(timer.status().message(), HasSubstr("callback"));
  EXPECT_THAT(timer.status().message(), HasSubstr("Every"));
  EXPECT_EQ(wheel_->Pending(), 0);
}

// An AnyInvocable made from an empty std::function is not empty: it used to
// be accepted, then threw std::bad_function_call on a worker.
TEST_F(TimingWheelTest,
       EmptyStdFunctionOrNullFunctionPointerIsInvalidArgument) {
  const std::function<void()> empty;
  const std::function<int()> empty_int;
  void (*null_pointer)() = nullptr;
  const absl::StatusOr<Timer> refused[] = {
      wheel_->AfterFunc(absl::ZeroDuration(), empty),
      wheel_->AfterFunc(kTick, empty_int),
      wheel_->AfterFunc(std::chrono::milliseconds(1), empty),
      wheel_->AfterFunc(kTick, null_pointer),
      wheel_->Every(kTick, empty),
      wheel_->Every(std::chrono::milliseconds(1), empty),
      wheel_->Every(kTick, null_pointer),
      wheel_->ScheduleFunc(FixedRate(kTick), empty),
  };
  for (const absl::StatusOr<Timer>& timer : refused) {
    EXPECT_EQ(timer.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(timer.status().message(), HasSubstr("the callback is empty"));
  }
  EXPECT_EQ(wheel_->Pending(), 0);
  Advance(10 * kTick);
  EXPECT_EQ(wheel_->GetStats().callbacks_thrown, 0);
  EXPECT_EQ(wheel_->GetStats().scheduled, 0);
}

// What is not empty still works: a std::function, a function pointer, a
// move-only lambda, an AnyInvocable.
TEST_F(TimingWheelTest, EveryKindOfCallableRuns) {
  static std::atomic<int> pointer_runs{0};
  pointer_runs = 0;
  std::atomic<int> runs{0};
  const std::function<void()> function = [&runs] { ++runs; };
  void (*pointer)() = [] { ++pointer_runs; };
  auto owned = std::make_unique<int>(1);
  absl::AnyInvocable<void()> invocable = [&runs] { ++runs; };
  EXPECT_TRUE(wheel_->AfterFunc(kTick, function).ok());
  EXPECT_TRUE(wheel_->AfterFunc(std::chrono::milliseconds(1), function).ok());
  EXPECT_TRUE(wheel_->AfterFunc(kTick, pointer).ok());
  EXPECT_TRUE(wheel_
                  ->AfterFunc(kTick, [&runs, owned = std::move(
                                                 owned)] { runs += *owned; })
                  .ok());
  EXPECT_TRUE(wheel_->AfterFunc(kTick, std::move(invocable)).ok());
  absl::StatusOr<Timer> every = wheel_->Every(kTick, function);
  ASSERT_TRUE(every.ok());
  Advance(kTick);
  EXPECT_EQ(runs, 5);
  EXPECT_EQ(pointer_runs, 1);
  EXPECT_TRUE(every->Stop());
}

TEST_F(TimingWheelTest, InfiniteDurationIsInvalidArgument) {
  auto log = NewLog();
  for (absl::Duration d :
       {absl::InfiniteDuration(), -absl::InfiniteDuration()}) {
    absl::StatusOr<Timer> timer = wheel_->AfterFunc(d, RunLog::Callback(log));
    EXPECT_EQ(timer.status().code(), absl::StatusCode::kInvalidArgument) << d;
    EXPECT_THAT(timer.status().message(), HasSubstr("duration"));
    EXPECT_THAT(timer.status().message(), HasSubstr(absl::FormatDuration(d)));
  }
  EXPECT_EQ(wheel_->Pending(), 0);
  WaitIdle();
  EXPECT_EQ(log->count(), 0);
}

TEST_F(TimingWheelTest, EveryWithPeriodNotPositiveIsInvalidArgument) {
  auto log = NewLog();
  for (absl::Duration period :
       {absl::ZeroDuration(), -absl::Nanoseconds(1), -absl::Milliseconds(1),
        absl::InfiniteDuration(), -absl::InfiniteDuration()}) {
    absl::StatusOr<Timer> timer = wheel_->Every(period, RunLog::Callback(log));
    EXPECT_EQ(timer.status().code(), absl::StatusCode::kInvalidArgument)
        << period;
    EXPECT_THAT(timer.status().message(), HasSubstr("Every: period"));
    EXPECT_THAT(timer.status().message(),
                HasSubstr(absl::FormatDuration(period)));
  }
  EXPECT_EQ(wheel_->Pending(), 0);
}

// A period under a nanosecond is rounded up to one, as deadlines are; it
// used to be truncated to 0, and the timer ran once and ended.
TEST_F(TimingWheelTest, EveryWithAPeriodUnderOneNanosecondRunsEachTick) {
  auto log = NewLog();
  Timer timer = EveryLog(absl::Nanoseconds(1) / 4, log);
  for (int i = 0; i < 3; ++i) Advance(kTick);
  EXPECT_EQ(log->runs(),
            (std::vector<absl::Duration>{kTick, 2 * kTick, 3 * kTick}));
  EXPECT_EQ(wheel_->Pending(), 1);
  EXPECT_TRUE(timer.Stop());
}

// Near the end of the representable range (2^63 ns, about 292 years) a far
// deadline must be refused, never wrapped into an early timer.
TEST_F(TimingWheelTest, DeadlinePastTheSupportedRangeIsInvalidArgument) {
  const absl::Duration near_end = absl::Floor(
      absl::Nanoseconds(std::numeric_limits<int64_t>::max()) - 50 * kYear,
      kTick);
  auto log = NewLog();
  Advance(near_end);
  absl::StatusOr<Timer> timer =
      wheel_->AfterFunc(100 * kYear, RunLog::Callback(log));
  EXPECT_EQ(timer.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(timer.status().message(), HasSubstr("out of range"));
  EXPECT_EQ(wheel_->Every(100 * kYear, RunLog::Callback(log)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(wheel_->Pending(), 0);
  // Within the range it still works, close to the end.
  Timer ten_years = After(10 * kYear, log);
  Advance(10 * kYear - kTick);
  EXPECT_EQ(log->count(), 0);
  Advance(kTick);
  EXPECT_EQ(log->count(), 1);
  // A clock saturated at its end: a positive delay cannot be armed at all.
  Advance(absl::InfiniteDuration());
  EXPECT_EQ(wheel_->AfterFunc(absl::Nanoseconds(1), RunLog::Callback(log))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(ten_years.Reset(kTick)) << "out of range: Reset stops it";
  EXPECT_EQ(wheel_->Pending(), 0);
  WaitIdle();
  EXPECT_EQ(log->count(), 1);
}

// ---------------------------------------------------------------------------
// std::chrono overloads

TEST_F(TimingWheelTest, ChronoOverloads) {
  auto once = NewLog();
  auto every = NewLog();
  absl::StatusOr<Timer> a =
      wheel_->AfterFunc(std::chrono::milliseconds(5), RunLog::Callback(once));
  ASSERT_TRUE(a.ok());
  absl::StatusOr<Timer> b =
      wheel_->Every(std::chrono::microseconds(2000), RunLog::Callback(every));
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(wheel_->Every(std::chrono::seconds(0), RunLog::Callback(every))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(a->Reset(std::chrono::microseconds(7000)));
  for (int i = 0; i < 6; ++i) Advance(kTick);
  Advance(kTick - absl::Nanoseconds(1));
  EXPECT_EQ(once->count(), 0);
  Advance(absl::Nanoseconds(1));
  EXPECT_EQ(once->count(), 1);
  EXPECT_EQ(once->last_run(), absl::Milliseconds(7));
  EXPECT_EQ(every->runs(), (std::vector<absl::Duration>{
                               absl::Milliseconds(2), absl::Milliseconds(4),
                               absl::Milliseconds(6)}));
  EXPECT_TRUE(b->Reset(std::chrono::nanoseconds(3)));
  WaitIdle();
  EXPECT_TRUE(b->Stop());
}

}  // namespace
}  // namespace timingwheel
