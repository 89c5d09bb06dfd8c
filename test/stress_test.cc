// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// stress_test.cc: the wheel under concurrency, sized to finish in seconds in
// Debug and under ThreadSanitizer. (The randomized comparison with a reference
// model is model_test.cc.)
//   * NothingLostNothingDoubled: threads AfterFunc / Stop / Reset their own
//     timers while another thread advances a ManualClock; every arm is
//     accounted for from the return values exactly as the contract says
//     (each arm runs once unless a Stop or Reset returned true for it), and
//     no run starts before its arm's deadline.
//   * StopAndResetRacingFlushAndCascade: many timers due at one tick, spread
//     over several levels, stopped and reset by several threads while the
//     clock crosses that tick: runs == arms - true returns, for every timer.
//   * PeriodicTimersUnderConcurrentResetAndStop: periodic runs never overlap,
//     Reset keeps them pending, exactly one of two racing Stops wins and no
//     run starts after it.
//   * ShutdownRacingOperationsAccountsForEveryTimer: Shutdown in the middle
//     of concurrent AfterFunc / Every / Stop: its count is exactly scheduled -
//     fired - stopped, and no callback starts after it returned.
//   * ManyTimersFromTwoThreadsRealClock: 200k timers over 200 ms on the
//     steady clock: all fire, none early.
//   * StoppedWhileCascadingKeepsNoCallback: a big level-3 bucket cascades
//     while another thread stops every one of its timers: once every Stop
//     returned true, the handles are gone and the wheel is idle, no part of
//     the wheel holds a callback (counted by the captures still alive).
//   * CancelAllRacingOperationsAccountsForEveryTimer: CancelAll, again and
//     again, in the middle of AfterFunc / Every / Stop / Reset and firing:
//     each arm ends once (ran, stopped, replaced or cancelled), the
//     CancelAlls' counts add up to the timers left cancelled, and a
//     cancelled timer never runs again.
//   * ConcurrentCancelAllsAndStopsCountEachTimerOnce: CancelAlls and Stops
//     of the same timers at once: each timer counted by exactly one.
//   * CascadeRacingStopAndLastHandle, RearmRacingStopAndLastHandle: no write
//     after hand-on (DESIGN.md, trap 12). Timers cascade down many levels
//     (periodic timers re-arm on a worker) while their owners stop them and
//     drop the last handle, so that a node's memory is freed and reused by the
//     next AfterFunc as soon as the bucket lets go of it. A thread that touched
//     a node after linking it was caught here by AddressSanitizer (a read of a
//     freed pool node) and ThreadSanitizer (a race with the next node's
//     constructor); the counts check that nothing was lost meanwhile. Both
//     again with CancelAll in a loop on a third thread, which takes its own
//     reference to timers that their owners let go of at the same time.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "absl/random/distributions.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "test_util.h"
#include "timingwheel/clock.h"
#include "timingwheel/timer.h"
#include "timingwheel/timingwheel.h"

namespace timingwheel {
namespace {

constexpr absl::Duration kTick = absl::Milliseconds(1);

std::unique_ptr<TimingWheel> MakeWheel(std::shared_ptr<Clock> clock,
                                       absl::Duration tick, int wheel_size,
                                       int workers) {
  Options options;
  options.clock = std::move(clock);
  options.tick = tick;
  options.wheel_size = wheel_size;
  options.workers = workers;
  absl::StatusOr<std::unique_ptr<TimingWheel>> wheel =
      TimingWheel::Create(std::move(options));
  EXPECT_TRUE(wheel.ok()) << wheel.status();
  return wheel.ok() ? *std::move(wheel) : nullptr;
}

// Advances a ManualClock on its own thread, by a random step of up to
// `max_step` after every `ops_per_step` operations that the operation threads
// report with Op(). Op() waits while the clock lags more than a few steps
// behind, so clock steps and operations interleave whatever the scheduler
// does (on two shared cores the clock thread may otherwise barely run).
class ClockDriver {
 public:
  ClockDriver(std::shared_ptr<ManualClock> clock, absl::Duration max_step,
              int64_t ops_per_step, uint64_t seed)
      : clock_(std::move(clock)),
        max_step_ns_(absl::ToInt64Nanoseconds(max_step)),
        ops_per_step_(ops_per_step),
        thread_([this, seed] { Loop(seed); }) {}
  ~ClockDriver() { Stop(); }

  // One operation done; waits while the clock is too far behind.
  void Op() {
    const int64_t done = ops_.fetch_add(1) + 1;
    while (done > (steps_.load() + kMaxLagSteps) * ops_per_step_ &&
           !stop_.load()) {
      std::this_thread::yield();
    }
  }
  // Stops and joins the clock thread.
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

 private:
  static constexpr int64_t kMaxLagSteps = 4;

  void Loop(uint64_t seed) {
    std::mt19937_64 rng(seed);
    while (!stop_.load()) {
      if (ops_.load() < (steps_.load() + 1) * ops_per_step_) {
        std::this_thread::yield();
        continue;
      }
      clock_->Advance(
          absl::Nanoseconds(absl::Uniform<int64_t>(rng, 0, max_step_ns_)));
      steps_.fetch_add(1);
    }
  }

  const std::shared_ptr<ManualClock> clock_;
  const int64_t max_step_ns_;
  const int64_t ops_per_step_;
  std::atomic<int64_t> ops_{0};
  std::atomic<int64_t> steps_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;  // last: starts once the fields above exist
};

// ---------------------------------------------------------------------------
// Nothing lost, nothing doubled

// One timer, operated on by the one thread that owns it.
struct OwnedTimer {
  struct Arm {
    absl::Duration earliest;  // clock before the call + max(d, 0)
    bool cancelled = false;   // a later Stop or Reset returned true for it
  };
  Timer handle;
  std::shared_ptr<RunLog> log;
  std::vector<Arm> arms;
  int contract_violations = 0;  // a true return with no live arm to cancel
};

// A delay for the stress test, in a mix that reaches levels 0 to 3 of a
// wheel with wheel_size 8 (8, 64, 512, 4096 ticks), with d <= 0 and
// sub-tick delays included.
absl::Duration StressDelay(std::mt19937_64& rng) {
  const int kind = absl::Uniform(rng, 0, 10);
  const int64_t tick_ns = absl::ToInt64Nanoseconds(kTick);
  if (kind == 0) {
    return absl::Uniform(rng, 0, 2) == 0 ? absl::ZeroDuration() : -kTick;
  }
  if (kind <= 3) return absl::Nanoseconds(absl::Uniform(rng, 1, 8 * tick_ns));
  if (kind <= 6) {
    return absl::Nanoseconds(absl::Uniform(rng, 8 * tick_ns, 64 * tick_ns));
  }
  if (kind <= 8) {
    return absl::Nanoseconds(absl::Uniform(rng, 64 * tick_ns, 600 * tick_ns));
  }
  return absl::Nanoseconds(absl::Uniform(rng, 600 * tick_ns, 5000 * tick_ns));
}

TEST(StressTest, NothingLostNothingDoubled) {
  constexpr int kThreads = 4;
  constexpr int kOpsPerThread = 20000;
  constexpr int kTimersPerThread = 64;
  constexpr int kOpsPerClockStep = 8;

  auto clock = std::make_shared<ManualClock>();
  std::unique_ptr<TimingWheel> wheel = MakeWheel(clock, kTick, 8, 2);
  ASSERT_NE(wheel, nullptr);

  std::vector<std::vector<std::unique_ptr<OwnedTimer>>> owned(kThreads);
  ClockDriver clock_driver(clock, 3 * kTick, kOpsPerClockStep, 12345);

  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(1000 + t);
      // Slot i holds the latest timer made for it; older ones stay in `mine`
      // for the final accounting.
      std::vector<OwnedTimer*> slots(kTimersPerThread, nullptr);
      std::vector<std::unique_ptr<OwnedTimer>>& mine = owned[t];
      for (int op = 0; op < kOpsPerThread; ++op) {
        const int slot = absl::Uniform(rng, 0, kTimersPerThread);
        OwnedTimer* timer = slots[slot];
        const int action = absl::Uniform(rng, 0, 10);
        const absl::Duration d = StressDelay(rng);
        if (timer == nullptr || action == 0) {
          auto fresh = std::make_unique<OwnedTimer>();
          fresh->log = std::make_shared<RunLog>(clock);
          const absl::Duration before = clock->Now();
          absl::StatusOr<Timer> handle =
              wheel->AfterFunc(d, RunLog::Callback(fresh->log));
          ASSERT_TRUE(handle.ok()) << handle.status();
          fresh->handle = *std::move(handle);
          fresh->arms.push_back({before + std::max(d, absl::ZeroDuration())});
          slots[slot] = fresh.get();
          mine.push_back(std::move(fresh));
        } else if (action <= 4) {
          if (timer->handle.Stop()) {
            if (timer->arms.back().cancelled) ++timer->contract_violations;
            timer->arms.back().cancelled = true;
          }
        } else {
          const absl::Duration before = clock->Now();
          if (timer->handle.Reset(d)) {
            if (timer->arms.back().cancelled) ++timer->contract_violations;
            timer->arms.back().cancelled = true;
          }
          timer->arms.push_back({before + std::max(d, absl::ZeroDuration())});
        }
        clock_driver.Op();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  clock_driver.Stop();

  // At rest: whatever is due has run; Pending() counts the live arms left.
  wheel->WaitIdle();
  int64_t live = 0;
  for (const auto& mine : owned) {
    for (const auto& timer : mine) {
      for (const OwnedTimer::Arm& arm : timer->arms) live += !arm.cancelled;
      live -= timer->log->count();
    }
  }
  EXPECT_EQ(wheel->Pending(), live) << "scheduled - fired - stopped at rest";

  clock->Advance(absl::Hours(1));
  wheel->WaitIdle();
  EXPECT_EQ(wheel->Pending(), 0);

  int64_t arms = 0;
  int64_t runs = 0;
  int failures = 0;
  for (const auto& mine : owned) {
    for (const auto& timer : mine) {
      std::vector<absl::Duration> expected_earliest;
      for (const OwnedTimer::Arm& arm : timer->arms) {
        if (!arm.cancelled) expected_earliest.push_back(arm.earliest);
      }
      const std::vector<absl::Duration> ran = timer->log->runs();
      arms += static_cast<int64_t>(timer->arms.size());
      runs += static_cast<int64_t>(ran.size());
      if (failures > 10) continue;  // enough to diagnose
      if (timer->contract_violations != 0) {
        ++failures;
        ADD_FAILURE() << "Stop/Reset returned true for an arm already "
                         "cancelled";
      }
      if (ran.size() != expected_earliest.size()) {
        ++failures;
        ADD_FAILURE() << "a timer armed " << timer->arms.size() << " times, "
                      << expected_earliest.size()
                      << " of them not cancelled, ran " << ran.size()
                      << " times";
        continue;
      }
      // Runs of one timer follow its arms in order and never overlap.
      for (size_t i = 0; i < ran.size(); ++i) {
        if (ran[i] < expected_earliest[i]) {
          ++failures;
          ADD_FAILURE() << "run " << i << " at " << ran[i]
                        << " before its deadline " << expected_earliest[i];
        }
      }
    }
  }
  EXPECT_EQ(failures, 0);
  // Most arms are cancelled by a later Stop or Reset (as in real use); many
  // must still fire, or the test would not test firing.
  EXPECT_GT(runs, arms / 20) << runs << " runs of " << arms << " arms";
}

// ---------------------------------------------------------------------------
// Stop and Reset racing the flush and the cascade

TEST(StressTest, StopAndResetRacingFlushAndCascade) {
  constexpr int kRounds = 30;
  constexpr int kTimers = 400;
  constexpr int kThreads = 3;
  auto clock = std::make_shared<ManualClock>();
  std::unique_ptr<TimingWheel> wheel = MakeWheel(clock, kTick, 8, 2);
  ASSERT_NE(wheel, nullptr);
  std::mt19937_64 rng(777);

  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round));
    // Every timer is due at tick `due`; armed at four different times, they
    // sit in levels 2, 2, 1 and 0 and cascade at different moments.
    const absl::Duration due = absl::Ceil(clock->Now(), kTick) + 300 * kTick;
    std::vector<Timer> timers(kTimers);
    std::vector<std::shared_ptr<RunLog>> logs(kTimers);
    const absl::Duration arm_at[] = {due - 300 * kTick, due - 200 * kTick,
                                     due - 50 * kTick, due - 5 * kTick};
    for (int i = 0; i < kTimers; ++i) {
      const absl::Duration at = arm_at[i % 4];
      if (clock->Now() < at) {
        clock->Advance(at - clock->Now());
        wheel->WaitIdle();
      }
      logs[i] = std::make_shared<RunLog>(clock);
      absl::StatusOr<Timer> timer =
          wheel->AfterFunc(due - clock->Now(), RunLog::Callback(logs[i]));
      ASSERT_TRUE(timer.ok());
      timers[i] = *timer;
    }

    // Each thread stops or resets a random half of the timers, in its own
    // order, starting as the clock reaches `due`.
    std::vector<std::vector<int>> trues(kThreads, std::vector<int>(kTimers));
    std::vector<std::vector<int>> resets(kThreads, std::vector<int>(kTimers));
    std::vector<std::vector<std::pair<int, bool>>> plans(kThreads);
    for (int t = 0; t < kThreads; ++t) {
      for (int i = 0; i < kTimers; ++i) {
        if (absl::Uniform(rng, 0, 2) == 0) {
          plans[t].push_back({i, absl::Uniform(rng, 0, 2) == 0});
        }
      }
      std::shuffle(plans[t].begin(), plans[t].end(), rng);
    }
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        while (!go.load()) std::this_thread::yield();
        for (const auto& [i, reset] : plans[t]) {
          if (reset) {
            ++resets[t][i];
            trues[t][i] += timers[i].Reset(5 * kTick) ? 1 : 0;
          } else {
            trues[t][i] += timers[i].Stop() ? 1 : 0;
          }
        }
      });
    }
    clock->Advance(due - 2 * kTick - clock->Now());
    go = true;
    for (int step = 0; step < 16; ++step) {
      clock->Advance(kTick / 4);
      std::this_thread::yield();
    }
    for (std::thread& thread : threads) thread.join();
    clock->Advance(10 * kTick);
    wheel->WaitIdle();
    ASSERT_EQ(wheel->Pending(), 0);

    int failures = 0;
    for (int i = 0; i < kTimers && failures < 10; ++i) {
      int true_count = 0;
      int reset_count = 0;
      for (int t = 0; t < kThreads; ++t) {
        true_count += trues[t][i];
        reset_count += resets[t][i];
      }
      const std::vector<absl::Duration> ran = logs[i]->runs();
      // Each arm (the first, and one per Reset) runs once, unless a Stop or
      // Reset returned true for it; no arm is cancelled twice.
      const int expected = 1 + reset_count - true_count;
      if (static_cast<int>(ran.size()) != expected ||
          true_count > 1 + reset_count) {
        ++failures;
        ADD_FAILURE() << "timer " << i << ": " << reset_count << " resets, "
                      << true_count << " true returns, ran " << ran.size()
                      << " times (expected " << expected << ")";
      }
      for (absl::Duration at : ran) {
        if (at < due) {
          ++failures;
          ADD_FAILURE() << "timer " << i << " ran at " << at
                        << ", before its deadline " << due;
        }
      }
    }
    ASSERT_EQ(failures, 0);
  }
}

// ---------------------------------------------------------------------------
// Periodic timers under concurrent Reset and Stop

// Periodic timers run while threads Reset them (a periodic timer is pending
// until stopped, so every Reset returns true) and the clock advances; then
// two threads Stop each one at once. Runs of one timer never overlap, exactly
// one Stop per timer returns true, and after it no new run starts (the run
// in progress, if any, may still be counted once).
TEST(StressTest, PeriodicTimersUnderConcurrentResetAndStop) {
  constexpr int kTimers = 64;
  constexpr int kThreads = 3;
  constexpr int kOpsPerThread = 20000;
  auto clock = std::make_shared<ManualClock>();
  struct Periodic {
    std::atomic<bool> inside{false};
    std::atomic<int> overlaps{0};
    std::atomic<int> runs{0};
    std::atomic<int> stop_trues{0};
    std::atomic<int> runs_at_stop{-1};
    Timer handle;
  };
  std::vector<Periodic> timers(kTimers);
  std::unique_ptr<TimingWheel> wheel = MakeWheel(clock, kTick, 8, 2);
  ASSERT_NE(wheel, nullptr);
  std::mt19937_64 rng(99);
  for (Periodic& p : timers) {
    const absl::Duration period =
        absl::Nanoseconds(absl::Uniform<int64_t>(rng, 1, 5000000));
    absl::StatusOr<Timer> timer = wheel->Every(period, [&p] {
      if (p.inside.exchange(true)) p.overlaps.fetch_add(1);
      p.runs.fetch_add(1);
      std::this_thread::yield();
      p.inside.store(false);
    });
    ASSERT_TRUE(timer.ok());
    p.handle = *timer;
  }

  ClockDriver clock_driver(clock, 2 * kTick, 4, 7);
  std::atomic<int> false_resets{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 thread_rng(500 + t);
      for (int op = 0; op < kOpsPerThread; ++op) {
        Periodic& p = timers[absl::Uniform(thread_rng, 0, kTimers)];
        const absl::Duration d = absl::Nanoseconds(absl::Uniform<int64_t>(
            thread_rng, -1000000, 10 * absl::ToInt64Nanoseconds(kTick)));
        if (!p.handle.Reset(d)) false_resets.fetch_add(1);
        clock_driver.Op();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(false_resets.load(), 0)
      << "Reset of a periodic timer that was never stopped returned false";
  EXPECT_EQ(wheel->Pending(), kTimers);

  // Two threads stop every timer while the clock keeps moving.
  threads.clear();
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kTimers; ++i) {
        Periodic& p = timers[t == 0 ? i : kTimers - 1 - i];
        if (p.handle.Stop()) {
          p.stop_trues.fetch_add(1);
          p.runs_at_stop = p.runs.load();
        }
        clock_driver.Op();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  clock_driver.Stop();
  clock->Advance(absl::Hours(1));
  wheel->WaitIdle();
  EXPECT_EQ(wheel->Pending(), 0);
  int total_runs = 0;
  for (int i = 0; i < kTimers; ++i) {
    const Periodic& p = timers[i];
    total_runs += p.runs.load();
    EXPECT_EQ(p.overlaps.load(), 0) << "timer " << i;
    EXPECT_EQ(p.stop_trues.load(), 1) << "timer " << i;
    EXPECT_LE(p.runs.load(), p.runs_at_stop.load() + 1)
        << "timer " << i << " started a run after Stop() returned true";
  }
  EXPECT_GT(total_runs, 10 * kTimers) << total_runs << " runs in all";
}

// ---------------------------------------------------------------------------
// Shutdown racing everything

// Threads schedule one-shot and periodic timers and stop them while the clock
// advances, and Shutdown comes in the middle of it. Every timer is accounted
// for exactly once: a one-shot ran, or a Stop returned true, or Shutdown
// counted it; a periodic timer was stopped or counted. So Shutdown returns
// exactly (timers scheduled) - (one-shot runs) - (true Stops). No callback
// starts after Shutdown returned.
TEST(StressTest, ShutdownRacingOperationsAccountsForEveryTimer) {
  constexpr int kRounds = 20;
  constexpr int kThreads = 3;
  struct Tracked {
    Timer handle;
    bool periodic = false;
    int stop_trues = 0;
    std::shared_ptr<std::atomic<int>> runs;
  };
  std::mt19937_64 rng(2024);
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round));
    auto clock = std::make_shared<ManualClock>();
    auto late_starts = std::make_shared<std::atomic<int>>(0);
    auto shutdown_returned = std::make_shared<std::atomic<bool>>(false);
    std::unique_ptr<TimingWheel> wheel = MakeWheel(clock, kTick, 8, 2);
    ASSERT_NE(wheel, nullptr);
    const int shutdown_after_ops = absl::Uniform(rng, 200, 3000);
    std::atomic<int> ops_done{0};
    std::atomic<bool> stop_threads{false};
    std::vector<std::vector<Tracked>> tracked(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t, seed = rng()] {
        std::mt19937_64 thread_rng(seed);
        std::vector<Tracked>& mine = tracked[t];
        while (!stop_threads.load()) {
          const int action = absl::Uniform(thread_rng, 0, 10);
          if (mine.empty() || action < 5) {
            Tracked timer;
            timer.periodic = action == 0;
            timer.runs = std::make_shared<std::atomic<int>>(0);
            auto callback = [runs = timer.runs, late_starts,
                             shutdown_returned] {
              if (shutdown_returned->load()) late_starts->fetch_add(1);
              runs->fetch_add(1);
            };
            const int64_t tick_ns = absl::ToInt64Nanoseconds(kTick);
            absl::StatusOr<Timer> handle =
                timer.periodic
                    ? wheel->Every(absl::Nanoseconds(absl::Uniform<int64_t>(
                                       thread_rng, 1, 5 * tick_ns)),
                                   callback)
                    : wheel->AfterFunc(absl::Nanoseconds(absl::Uniform<int64_t>(
                                           thread_rng, -tick_ns, 50 * tick_ns)),
                                       callback);
            if (handle.ok()) {
              timer.handle = *std::move(handle);
              mine.push_back(std::move(timer));
            } else {
              EXPECT_EQ(handle.status().code(),
                        absl::StatusCode::kFailedPrecondition);
            }
          } else {
            Tracked& timer =
                mine[absl::Uniform<size_t>(thread_rng, 0, mine.size())];
            if (timer.handle.Stop()) ++timer.stop_trues;
          }
          if (ops_done.fetch_add(1) % 4 == 0) {
            clock->Advance(absl::Nanoseconds(absl::Uniform<int64_t>(
                thread_rng, 0, absl::ToInt64Nanoseconds(kTick))));
          }
        }
      });
    }
    while (ops_done.load() < shutdown_after_ops) std::this_thread::yield();
    const int64_t cancelled = wheel->Shutdown();
    shutdown_returned->store(true);
    const int ops_at_shutdown = ops_done.load();
    while (ops_done.load() < ops_at_shutdown + 300) std::this_thread::yield();
    stop_threads = true;
    for (std::thread& thread : threads) thread.join();
    clock->Advance(absl::Hours(1));

    int64_t expected = 0;
    int failures = 0;
    for (const std::vector<Tracked>& mine : tracked) {
      for (const Tracked& timer : mine) {
        const int runs = timer.runs->load();
        if (timer.stop_trues > 1 ||
            (!timer.periodic && runs + timer.stop_trues > 1)) {
          if (++failures <= 10) {
            ADD_FAILURE() << (timer.periodic ? "periodic" : "one-shot")
                          << " timer: " << runs << " runs, " << timer.stop_trues
                          << " true Stops";
          }
        }
        expected += 1 - timer.stop_trues - (timer.periodic ? 0 : runs);
      }
    }
    ASSERT_EQ(failures, 0);
    EXPECT_EQ(cancelled, expected)
        << "Shutdown's count disagrees with scheduled - fired - stopped";
    EXPECT_EQ(late_starts->load(), 0)
        << "callbacks started after Shutdown returned";
    EXPECT_EQ(wheel->Pending(), 0);
  }
}

// ---------------------------------------------------------------------------
// CancelAll racing everything

// One timer, operated on (Stop, Reset) by the one thread that owns it, and
// cancelled by whichever CancelAll finds it pending.
struct CancellableTimer {
  Timer handle;
  bool periodic = false;
  int stop_trues = 0;
  int reset_trues = 0;
  int reset_falses = 0;
  std::shared_ptr<std::atomic<int>> runs;
};

TEST(StressTest, CancelAllRacingOperationsAccountsForEveryTimer) {
  constexpr int kRounds = 10;
  constexpr int kThreads = 3;
  constexpr int kOpsPerThread = 2000;
  constexpr int kCancelAlls = 20;
  std::mt19937_64 rng(31337);
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round));
    auto clock = std::make_shared<ManualClock>();
    std::unique_ptr<TimingWheel> wheel = MakeWheel(clock, kTick, 8, 2);
    ASSERT_NE(wheel, nullptr);
    ClockDriver clock_driver(clock, 2 * kTick, 4, rng());
    std::vector<std::vector<std::unique_ptr<CancellableTimer>>> owned(kThreads);
    std::atomic<int> done{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t, seed = rng()] {
        std::mt19937_64 thread_rng(seed);
        std::vector<std::unique_ptr<CancellableTimer>>& mine = owned[t];
        for (int op = 0; op < kOpsPerThread; ++op) {
          const int action = absl::Uniform(thread_rng, 0, 10);
          if (mine.empty() || action < 3) {
            auto timer = std::make_unique<CancellableTimer>();
            timer->periodic = action == 0;
            timer->runs = std::make_shared<std::atomic<int>>(0);
            auto callback = [runs = timer->runs] { runs->fetch_add(1); };
            absl::StatusOr<Timer> handle =
                timer->periodic
                    ? wheel->Every(absl::Nanoseconds(absl::Uniform<int64_t>(
                                       thread_rng, 1, 5000000)),
                                   callback)
                    : wheel->AfterFunc(StressDelay(thread_rng), callback);
            ASSERT_TRUE(handle.ok()) << handle.status();
            timer->handle = *std::move(handle);
            mine.push_back(std::move(timer));
          } else {
            CancellableTimer& timer =
                *mine[absl::Uniform<size_t>(thread_rng, 0, mine.size())];
            if (action < 6) {
              timer.stop_trues += timer.handle.Stop() ? 1 : 0;
            } else if (timer.handle.Reset(StressDelay(thread_rng))) {
              ++timer.reset_trues;
            } else {
              ++timer.reset_falses;
            }
          }
          clock_driver.Op();
        }
        done.fetch_add(1);
      });
    }
    std::atomic<int64_t> cancelled_by_calls{0};
    threads.emplace_back([&, seed = rng()] {
      std::mt19937_64 thread_rng(seed);
      for (int i = 0; i < kCancelAlls && done.load() < kThreads; ++i) {
        for (int wait = absl::Uniform(thread_rng, 0, 2000); wait > 0; --wait) {
          std::this_thread::yield();
        }
        cancelled_by_calls.fetch_add(wheel->CancelAll());
      }
    });
    for (std::thread& thread : threads) thread.join();
    clock_driver.Stop();
    wheel->WaitIdle();
    // What is still pending goes now, counted too.
    cancelled_by_calls.fetch_add(wheel->CancelAll());
    EXPECT_EQ(wheel->Pending(), 0);

    // A cancelled timer never runs again.
    std::vector<int> runs_then;
    for (const auto& mine : owned) {
      for (const auto& timer : mine) runs_then.push_back(timer->runs->load());
    }
    clock->Advance(absl::Hours(1));
    wheel->WaitIdle();

    int64_t left_cancelled = 0;
    int failures = 0;
    size_t index = 0;
    for (const auto& mine : owned) {
      for (const auto& timer : mine) {
        const int runs = timer->runs->load();
        const TimerState state = timer->handle.State();
        const bool cancelled = state == TimerState::kCancelled;
        left_cancelled += cancelled ? 1 : 0;
        // Each arm ends once. The arms: the first, one per true Reset, and
        // one per false Reset made before the timer was cancelled (after it,
        // Reset arms nothing). A one-shot arm ends by running, a true Stop,
        // a true Reset (replaced) or the cancel; a periodic one by a true
        // Stop, a true Reset or the cancel.
        // So, the true Resets on both sides cancelling out:
        const int ends_but_cancel =
            timer->stop_trues + (timer->periodic ? 0 : runs);
        const bool arms_add_up =
            cancelled ? ends_but_cancel <= timer->reset_falses
                      : ends_but_cancel == 1 + timer->reset_falses;
        const bool ran_after_cancel = cancelled && runs != runs_then[index];
        ++index;
        const bool ended = state == TimerState::kCancelled ||
                           state == TimerState::kStopped ||
                           (!timer->periodic && state == TimerState::kFired);
        if ((!arms_add_up || ran_after_cancel || !ended) && ++failures <= 10) {
          ADD_FAILURE() << (timer->periodic ? "periodic" : "one-shot")
                        << " timer " << state << ": " << runs << " runs, "
                        << timer->stop_trues << " true Stops, "
                        << timer->reset_trues << " true Resets, "
                        << timer->reset_falses << " false Resets";
        }
      }
    }
    ASSERT_EQ(failures, 0);
    EXPECT_EQ(cancelled_by_calls.load(), left_cancelled)
        << "the CancelAlls' counts disagree with the timers they cancelled";
    EXPECT_EQ(wheel->GetStats().cancelled, left_cancelled);
    EXPECT_EQ(wheel->Shutdown(), 0);
  }
}

TEST(StressTest, ConcurrentCancelAllsAndStopsCountEachTimerOnce) {
  constexpr int kRounds = 20;
  constexpr int kTimers = 2000;
  std::mt19937_64 rng(4242);
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round));
    auto clock = std::make_shared<ManualClock>();
    std::unique_ptr<TimingWheel> wheel = MakeWheel(clock, kTick, 8, 2);
    ASSERT_NE(wheel, nullptr);
    std::vector<Timer> timers;
    for (int i = 0; i < kTimers; ++i) {
      timers.push_back(
          wheel->AfterFunc(StressDelay(rng) + absl::Seconds(10), [] {})
              .value());
    }
    std::vector<std::atomic<int>> stop_trues(kTimers);
    std::atomic<int64_t> cancelled{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t) {
      std::vector<int> order(kTimers);
      for (int i = 0; i < kTimers; ++i) order[i] = i;
      std::shuffle(order.begin(), order.end(), rng);
      threads.emplace_back([&, order = std::move(order)] {
        while (!go.load()) std::this_thread::yield();
        for (int i : order) stop_trues[i] += timers[i].Stop() ? 1 : 0;
      });
      threads.emplace_back([&] {
        while (!go.load()) std::this_thread::yield();
        cancelled += wheel->CancelAll();
      });
    }
    go = true;
    for (std::thread& thread : threads) thread.join();
    int64_t stopped = 0;
    int failures = 0;
    for (int i = 0; i < kTimers; ++i) {
      stopped += stop_trues[i].load();
      const TimerState expected = stop_trues[i].load() == 1
                                      ? TimerState::kStopped
                                      : TimerState::kCancelled;
      if ((stop_trues[i].load() > 1 || timers[i].State() != expected) &&
          ++failures <= 10) {
        ADD_FAILURE() << "timer " << i << ": " << stop_trues[i].load()
                      << " true Stops, " << timers[i].State();
      }
    }
    EXPECT_EQ(failures, 0);
    EXPECT_EQ(stopped + cancelled.load(), kTimers);
    EXPECT_EQ(wheel->Pending(), 0);
  }
}

// ---------------------------------------------------------------------------
// Real clock

TEST(StressTest, ManyTimersFromTwoThreadsRealClock) {
  constexpr int kThreads = 2;
  constexpr int kPerThread = 100000;
  constexpr int64_t kSpreadNs = 200000000;  // 200 ms
  // Declared before the wheel, so that they outlive every callback.
  std::atomic<int64_t> fired{0};
  std::atomic<int64_t> early{0};
  std::atomic<int64_t> worst_early_ns{0};
  Options options;
  options.tick = kTick;
  options.workers = 2;
  absl::StatusOr<std::unique_ptr<TimingWheel>> created =
      TimingWheel::Create(std::move(options));
  ASSERT_TRUE(created.ok());
  std::unique_ptr<TimingWheel> wheel = *std::move(created);
  const std::shared_ptr<Clock> clock = SteadyClock();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(42 + t);
      for (int i = 0; i < kPerThread; ++i) {
        const absl::Duration d =
            absl::Nanoseconds(absl::Uniform<int64_t>(rng, 0, kSpreadNs));
        const absl::Duration deadline = clock->Now() + d;
        absl::StatusOr<Timer> timer = wheel->AfterFunc(d, [&, deadline] {
          const int64_t ahead_ns =
              absl::ToInt64Nanoseconds(deadline - clock->Now());
          if (ahead_ns > 0) {
            early.fetch_add(1);
            int64_t worst = worst_early_ns.load();
            while (ahead_ns > worst &&
                   !worst_early_ns.compare_exchange_weak(worst, ahead_ns)) {
            }
          }
          fired.fetch_add(1);
        });
        ASSERT_TRUE(timer.ok()) << timer.status();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  const absl::Time give_up = absl::Now() + absl::Seconds(60);
  while (fired.load() < kThreads * kPerThread && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(fired.load(), kThreads * kPerThread);
  EXPECT_EQ(early.load(), 0)
      << "worst: " << worst_early_ns.load() << "ns early";
  EXPECT_EQ(wheel->Pending(), 0);
  EXPECT_EQ(wheel->Shutdown(), 0);
}

// A capture that counts how many copies of it are alive.
class CountedCapture {
 public:
  explicit CountedCapture(std::atomic<int64_t>* live) : live_(live) {
    live_->fetch_add(1, std::memory_order_relaxed);
  }
  CountedCapture(const CountedCapture& other) : live_(other.live_) {
    live_->fetch_add(1, std::memory_order_relaxed);
  }
  CountedCapture& operator=(const CountedCapture&) = delete;
  ~CountedCapture() { live_->fetch_sub(1, std::memory_order_relaxed); }

 private:
  std::atomic<int64_t>* const live_;
};

TEST(StressTest, StoppedWhileCascadingKeepsNoCallback) {
  // Deadlines 16.0 .. 16.4 s all sit in one level-3 bucket (tick 8 s) that
  // is released at 15.6 s and cascades into level 1; a Stop that raced the
  // cascade of its timer used to leave it linked there, callback and
  // captures included, until that bucket's flush.
  const int timers = kSanitized ? 20'000 : 100'000;
  const int rounds = kSanitized ? 4 : 10;
  for (int round = 0; round < rounds; ++round) {
    std::atomic<int64_t> live{0};
    auto clock = std::make_shared<ManualClock>();
    std::unique_ptr<TimingWheel> wheel =
        MakeWheel(clock, kTick, /*wheel_size=*/20, /*workers=*/1);
    ASSERT_NE(wheel, nullptr);
    std::vector<Timer> handles;
    handles.reserve(timers);
    for (int i = 0; i < timers; ++i) {
      CountedCapture capture(&live);
      handles.push_back(
          wheel->AfterFunc(absl::Milliseconds(16000 + i % 400), [capture] {})
              .value());
    }
    ASSERT_EQ(live.load(), timers);
    std::atomic<bool> go{false};
    std::atomic<int> stopped{0};
    // In a random order: each Stop lands anywhere in the cascade, so some
    // land between the advancer's look at a timer's state and its linking.
    std::vector<Timer*> order;
    for (Timer& handle : handles) order.push_back(&handle);
    std::shuffle(order.begin(), order.end(), std::mt19937(round));
    std::thread stopper([&] {
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      for (Timer* handle : order) stopped += handle->Stop() ? 1 : 0;
    });
    clock->Advance(absl::Milliseconds(15600));  // the cascade starts
    go.store(true, std::memory_order_release);
    stopper.join();
    wheel->WaitIdle();
    ASSERT_EQ(stopped.load(), timers) << "round " << round;
    handles.clear();
    EXPECT_EQ(live.load(), 0)
        << "round " << round << ": callbacks of stopped timers still held";
    EXPECT_EQ(wheel->Pending(), 0);
  }
}

// ---------------------------------------------------------------------------
// No write after hand-on

// Two threads each keep `keep` timers of their own made by `make`, stopping
// the oldest and dropping its handle (the last) for each new one, for
// `duration` of real time, and on until they made more than kChurnMinMade
// timers and `enough` (if given) returns true: a loaded machine slows the
// churn, not what it must reach (up to kChurnLimit, after which the caller's
// expectations fail). Returns the number of timers made and how many Stops
// returned true.
struct Churn {
  int64_t made = 0;
  int64_t stopped = 0;
};
constexpr int64_t kChurnMinMade = 1000;
constexpr absl::Duration kChurnLimit = absl::Seconds(60);
Churn ChurnWithStops(
    absl::Duration duration, size_t keep,
    const std::function<absl::StatusOr<Timer>(std::mt19937_64&)>& make,
    const std::function<bool()>& enough = nullptr) {
  std::atomic<int64_t> made{0};
  std::atomic<int64_t> stopped{0};
  const absl::Time start = absl::Now();
  const absl::Time end = start + duration;
  const absl::Time limit = start + kChurnLimit;
  auto go_on = [&] {
    const absl::Time now = absl::Now();
    if (now >= limit) return false;
    return now < end || made.load() <= kChurnMinMade ||
           (enough != nullptr && !enough());
  };
  auto churn = [&](uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::deque<Timer> timers;
    while (go_on()) {
      for (int i = 0; i < 64; ++i) {
        absl::StatusOr<Timer> timer = make(rng);
        ASSERT_TRUE(timer.ok()) << timer.status();
        timers.push_back(*std::move(timer));
        made.fetch_add(1, std::memory_order_relaxed);
        if (timers.size() > keep) {
          if (timers.front().Stop()) {
            stopped.fetch_add(1, std::memory_order_relaxed);
          }
          timers.pop_front();  // the last handle: the node may go now
        }
      }
    }
    for (Timer& timer : timers) {
      if (timer.Stop()) stopped.fetch_add(1, std::memory_order_relaxed);
    }
  };
  std::thread first(churn, 1);
  std::thread second(churn, 2);
  first.join();
  second.join();
  return {made.load(), stopped.load()};
}

// How long each churn runs at least: enough for the sanitizers to catch a
// write after hand-on on the old code (see the note on each test), short for
// CI.
constexpr absl::Duration kChurnTime = absl::Seconds(3);

TEST(StressTest, CascadeRacingStopAndLastHandle) {
  // Ticks of 10 us and two buckets a level: a timer 0.2-2.2 ms out starts
  // six or seven levels up and cascades down one level at a time, each time
  // linked by the advancer while its owner may stop it and let it go.
  std::unique_ptr<TimingWheel> wheel =
      MakeWheel(SteadyClock(), absl::Microseconds(10), /*wheel_size=*/2,
                /*workers=*/1);
  ASSERT_NE(wheel, nullptr);
  std::atomic<int64_t> ran{0};
  const Churn churn =
      ChurnWithStops(kChurnTime, /*keep=*/200, [&](std::mt19937_64& rng) {
        const absl::Duration d =
            absl::Microseconds(200 + absl::Uniform(rng, 0, 2000));
        return wheel->AfterFunc(
            d, [&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
      });
  EXPECT_GT(churn.made, kChurnMinMade);
  wheel->WaitIdle();
  EXPECT_EQ(wheel->Pending(), 0);
  EXPECT_EQ(wheel->Shutdown(), 0);
  EXPECT_EQ(ran.load() + churn.stopped, churn.made)
      << "each timer either ran or was stopped";
}

TEST(StressTest, RearmRacingStopAndLastHandle) {
  // Periodic timers of 50-250 us, re-armed by a worker after each run into
  // level 0 (320 us wide: no cascades, this is the worker's path alone),
  // stopped and let go by their owners at random points of their runs.
  std::unique_ptr<TimingWheel> wheel =
      MakeWheel(SteadyClock(), absl::Microseconds(10), /*wheel_size=*/32,
                /*workers=*/2);
  ASSERT_NE(wheel, nullptr);
  std::atomic<int64_t> runs{0};
  const Churn churn = ChurnWithStops(
      kChurnTime, /*keep=*/20,
      [&](std::mt19937_64& rng) {
        const absl::Duration period =
            absl::Microseconds(50 + absl::Uniform(rng, 0, 200));
        return wheel->Every(
            period, [&runs] { runs.fetch_add(1, std::memory_order_relaxed); });
      },
      // Under load a timer may be stopped before its first run, every one.
      [&runs] { return runs.load() > 0; });
  EXPECT_GT(churn.made, kChurnMinMade);
  // A periodic timer re-arms until it is stopped, so each Stop returned true.
  EXPECT_EQ(churn.stopped, churn.made);
  EXPECT_GT(runs.load(), 0);
  wheel->WaitIdle();
  EXPECT_EQ(wheel->Pending(), 0);
  EXPECT_EQ(wheel->Shutdown(), 0);
}

// Calls CancelAll on a wheel in a loop on a thread of its own, until
// Finish, which returns how many timers the calls cancelled in all.
class CancelAllLoop {
 public:
  explicit CancelAllLoop(TimingWheel* wheel)
      : thread_([this, wheel] {
          while (!finish_.load()) {
            cancelled_ += wheel->CancelAll();
            std::this_thread::yield();
          }
        }) {}
  ~CancelAllLoop() { Finish(); }
  // What the calls so far cancelled.
  int64_t cancelled() const { return cancelled_.load(); }
  int64_t Finish() {
    finish_ = true;
    if (thread_.joinable()) thread_.join();
    return cancelled_.load();
  }

 private:
  std::atomic<bool> finish_{false};
  std::atomic<int64_t> cancelled_{0};
  std::thread thread_;  // last: starts once the fields above exist
};

// ChurnWithStops of the timers `make` makes on `wheel`, with CancelAll in a
// loop meanwhile, until CancelAll cancelled some (under load a CancelAll
// waits long for the advancer's round, and finds nothing pending just after
// another); returns the churn and how many CancelAll cancelled, once the
// wheel is idle with nothing pending (and a Shutdown finds nothing).
std::pair<Churn, int64_t> ChurnWithStopsAndCancelAll(
    TimingWheel* wheel, size_t keep,
    const std::function<absl::StatusOr<Timer>(std::mt19937_64&)>& make) {
  CancelAllLoop cancel_all(wheel);
  const Churn churn = ChurnWithStops(kChurnTime, keep, make, [&cancel_all] {
    return cancel_all.cancelled() > 0;
  });
  const int64_t cancelled = cancel_all.Finish();
  EXPECT_GT(churn.made, kChurnMinMade);
  EXPECT_GT(cancelled, 0);
  wheel->WaitIdle();
  EXPECT_EQ(wheel->Pending(), 0);
  EXPECT_EQ(wheel->Shutdown(), 0);
  return {churn, cancelled};
}

TEST(StressTest, CascadeRacingStopCancelAllAndLastHandle) {
  // As CascadeRacingStopAndLastHandle, with CancelAll in a loop: it takes
  // its own reference to timers in transit with the advancer and in the
  // buckets, while their owners stop them and let them go.
  std::unique_ptr<TimingWheel> wheel =
      MakeWheel(SteadyClock(), absl::Microseconds(10), /*wheel_size=*/2,
                /*workers=*/1);
  ASSERT_NE(wheel, nullptr);
  std::atomic<int64_t> ran{0};
  const auto [churn, cancelled] = ChurnWithStopsAndCancelAll(
      wheel.get(), /*keep=*/200, [&](std::mt19937_64& rng) {
        const absl::Duration d =
            absl::Microseconds(200 + absl::Uniform(rng, 0, 2000));
        return wheel->AfterFunc(
            d, [&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
      });
  EXPECT_EQ(ran.load() + churn.stopped + cancelled, churn.made)
      << "each timer either ran, was stopped or was cancelled";
}

TEST(StressTest, RearmRacingStopCancelAllAndLastHandle) {
  // As RearmRacingStopAndLastHandle, with CancelAll in a loop: it takes its
  // own reference to timers that workers run and re-arm, while their owners
  // stop them and let them go.
  std::unique_ptr<TimingWheel> wheel =
      MakeWheel(SteadyClock(), absl::Microseconds(10), /*wheel_size=*/32,
                /*workers=*/2);
  ASSERT_NE(wheel, nullptr);
  std::atomic<int64_t> runs{0};
  const auto [churn, cancelled] = ChurnWithStopsAndCancelAll(
      wheel.get(), /*keep=*/20, [&](std::mt19937_64& rng) {
        const absl::Duration period =
            absl::Microseconds(50 + absl::Uniform(rng, 0, 200));
        return wheel->Every(
            period, [&runs] { runs.fetch_add(1, std::memory_order_relaxed); });
      });
  // A periodic timer ends only by a Stop or a cancel.
  EXPECT_EQ(churn.stopped + cancelled, churn.made);
}

}  // namespace
}  // namespace timingwheel
