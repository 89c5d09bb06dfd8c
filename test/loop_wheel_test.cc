// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// loop_wheel_test.cc: the event-loop wheel (include/timingwheel/loop_wheel.h)
// on a ManualClock, its caller driving it as a loop would: TimeUntilNext,
// then RunDue.
//   * timers run inline in RunDue at their deadline, never before, in
//     deadline order; TimeUntilNext is the next bucket's time, zero when
//     something is due, nullopt when nothing is pending, and a loop that
//     sleeps on it wakes once per bucket, not per tick;
//   * Stop, Reset, Pending, Deadline and TimeLeft as for TimingWheel's
//     Timer, and ScopedLoopTimer, from outside and from the timer's own
//     callback; periodic timers (Every, ScheduleFunc), whose scheduler is not
//     asked after a Stop from the callback;
//   * timers a callback makes due run in the same RunDue, after it; a
//     callback may stop or reset a timer due in the same RunDue that has
//     not run yet; a callback may destroy the wheel; handles outlive it;
//   * callables of every size (inline in a small or a wide node, or boxed on
//     the heap), of every type the API takes, run once and are destroyed
//     once; empty ones are refused;
//   * errors: bad options, an empty callback, an infinite delay, max_pending,
//     At on a clock that is not steady_clock; an exception from a callback
//     reaches the caller of RunDue and loses no timer;
//   * a randomized comparison with a reference of what must run when, with
//     timers held by LoopTimer and by id, callbacks that stop and arm
//     other timers, and turns on the clock or on the loop's cached time
//     (loop_timer_id_test.cc has the rest of the ids' tests);
//   * a debug build aborts a call from another thread, naming both;
//   * on the real clock, a loop sleeping on TimeUntilNext runs every timer,
//     none early (generous lateness bound: *RealClock).

#include "timingwheel/loop_wheel.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/random/distributions.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util.h"
#include "timingwheel/clock.h"
#include "timingwheel/scheduler.h"

namespace timingwheel {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::Duration Ms(int64_t ms) { return absl::Milliseconds(ms); }

class LoopWheelTest : public ::testing::Test {
 protected:
  LoopWheelTest() {
    LoopOptions options;
    options.clock = clock_;
    wheel_ = LoopWheel::Create(std::move(options)).value();
  }
  // Moves the clock to `t` and runs what is due; returns how many ran.
  int64_t RunAt(absl::Duration t) {
    clock_->Advance(t - clock_->Now());
    return wheel_->RunDue();
  }
  // A callback that records the clock's time (in ms) under `name`.
  absl::AnyInvocable<void()> Record(std::string name) {
    return [this, name = std::move(name)] {
      runs_.push_back(name + "@" +
                      std::to_string(absl::ToInt64Milliseconds(clock_->Now())));
    };
  }

  // The same, with the time as absl::FormatDuration writes it (5.5ms).
  absl::AnyInvocable<void()> RecordExact(std::string name) {
    return [this, name = std::move(name)] {
      runs_.push_back(name + "@" + absl::FormatDuration(clock_->Now()));
    };
  }

  const std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>();
  std::unique_ptr<LoopWheel> wheel_;
  std::vector<std::string> runs_;
};

TEST_F(LoopWheelTest, RunsInlineAtTheDeadlineNeverBeforeInOrder) {
  LoopTimer b = wheel_->AfterFunc(Ms(30), Record("b")).value();
  LoopTimer a = wheel_->AfterFunc(Ms(5), Record("a")).value();
  LoopTimer c = wheel_->AfterFunc(Ms(500), Record("c")).value();
  EXPECT_EQ(wheel_->Pending(), 3);
  EXPECT_EQ(RunAt(Ms(5) - absl::Nanoseconds(1)), 0);
  EXPECT_EQ(RunAt(Ms(5)), 1);
  EXPECT_EQ(RunAt(Ms(30)), 1);
  EXPECT_EQ(RunAt(Ms(499)), 0);
  EXPECT_EQ(RunAt(Ms(1000)), 1);
  EXPECT_THAT(runs_, ElementsAre("a@5", "b@30", "c@1000"));
  EXPECT_EQ(wheel_->Pending(), 0);
  EXPECT_FALSE(a.Pending());
  EXPECT_FALSE(a.Stop());
}

TEST_F(LoopWheelTest, TimeUntilNextIsTheNextBucketAndNothingWhenIdle) {
  EXPECT_EQ(wheel_->TimeUntilNext(), std::nullopt);
  LoopTimer t = wheel_->AfterFunc(Ms(7), Record("t")).value();
  EXPECT_EQ(wheel_->TimeUntilNext(), Ms(7));
  clock_->Advance(Ms(3));
  EXPECT_EQ(wheel_->TimeUntilNext(), Ms(4));
  clock_->Advance(Ms(10));
  EXPECT_EQ(wheel_->TimeUntilNext(), absl::ZeroDuration());
  EXPECT_EQ(wheel_->RunDue(), 1);
  EXPECT_EQ(wheel_->TimeUntilNext(), std::nullopt);
  // Due at once: zero until RunDue.
  LoopTimer now =
      wheel_->AfterFunc(absl::ZeroDuration(), Record("now")).value();
  EXPECT_EQ(wheel_->TimeUntilNext(), absl::ZeroDuration());
  EXPECT_EQ(wheel_->RunDue(), 1);
  // A stopped timer leaves no wake-up behind.
  LoopTimer stopped = wheel_->AfterFunc(Ms(50), Record("stopped")).value();
  EXPECT_TRUE(stopped.Stop());
  EXPECT_EQ(wheel_->TimeUntilNext(), std::nullopt);
}

TEST_F(LoopWheelTest, ALoopSleepingOnTimeUntilNextWakesOncePerBucket) {
  // 1000 timers at 10 distinct deadlines from 1 s to 10 s: a loop that sleeps
  // until the reported time wakes for the releases of a few upper-level
  // buckets and the ten level-0 buckets, never once per 1 ms tick.
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(wheel_->AfterFunc(absl::Seconds(1 + i % 10), [] {}).ok());
  }
  int wake_ups = 0;
  int64_t ran = 0;
  while (std::optional<absl::Duration> wait = wheel_->TimeUntilNext()) {
    clock_->Advance(*wait);
    ran += wheel_->RunDue();
    ++wake_ups;
    ASSERT_LT(wake_ups, 1000);
  }
  EXPECT_EQ(ran, 1000);
  EXPECT_LE(wake_ups, 40) << "woke for ticks with no bucket due";
  EXPECT_EQ(clock_->Now(), absl::Seconds(10));
}

TEST_F(LoopWheelTest, StopPreventsTheRunOnceAndOnlyOnce) {
  LoopTimer t = wheel_->AfterFunc(Ms(10), Record("t")).value();
  EXPECT_TRUE(t.Pending());
  EXPECT_TRUE(t.Stop());
  EXPECT_FALSE(t.Stop());
  EXPECT_FALSE(t.Pending());
  EXPECT_EQ(t.Deadline(), std::nullopt);
  EXPECT_EQ(RunAt(Ms(100)), 0);
  EXPECT_TRUE(runs_.empty());
  EXPECT_EQ(wheel_->Pending(), 0);
  // Stopped while due, before RunDue.
  LoopTimer due = wheel_->AfterFunc(Ms(1), Record("due")).value();
  clock_->Advance(Ms(5));
  EXPECT_TRUE(due.Stop());
  EXPECT_EQ(wheel_->RunDue(), 0);
}

// A lambda that captures nothing is kept nowhere (a bare node of 32 bytes,
// lib/faces/loop_node.h): it runs at its deadline, is stopped and reset as any,
// and its nodes are reused; interleaved with capturing ones.
int loop_stateless_runs = 0;

TEST_F(LoopWheelTest, StatelessCallbacksRunStopAndResetAsAny) {
  loop_stateless_runs = 0;
  std::vector<LoopTimer> timers;
  for (int i = 1; i <= 6; ++i) {
    timers.push_back(
        wheel_->AfterFunc(Ms(i), [] { ++loop_stateless_runs; }).value());
    wheel_->AfterFunc(Ms(i), Record("c" + std::to_string(i))).value();
  }
  EXPECT_EQ(wheel_->Pending(), 12);
  EXPECT_TRUE(timers[1].Stop());         // due at 2 ms
  EXPECT_TRUE(timers[2].Reset(Ms(20)));  // 3 -> 20 ms
  EXPECT_EQ(RunAt(Ms(6)), 10);
  EXPECT_EQ(loop_stateless_runs, 4);
  EXPECT_EQ(runs_.size(), 6u);
  EXPECT_EQ(RunAt(Ms(19)), 0) << "the reset one ran early";
  EXPECT_EQ(RunAt(Ms(20)), 1);
  EXPECT_EQ(loop_stateless_runs, 5);
  EXPECT_FALSE(timers[0].Reset(Ms(1))) << "it ran: false, and armed again";
  EXPECT_EQ(RunAt(Ms(21)), 1);
  EXPECT_EQ(loop_stateless_runs, 6);
  timers.clear();
  // Made and stopped many times over: the freed bare nodes come back.
  for (int i = 0; i < 100'000; ++i) {
    EXPECT_TRUE(
        wheel_->AfterFunc(Ms(5), [] { ++loop_stateless_runs; }).value().Stop());
  }
  EXPECT_EQ(wheel_->Pending(), 0);
  EXPECT_EQ(RunAt(Ms(100)), 0);
  EXPECT_EQ(loop_stateless_runs, 6);
}

TEST_F(LoopWheelTest, AScopedLoopTimerStopsItsTimerWhenItGoes) {
  {
    ScopedLoopTimer deadline(wheel_->AfterFunc(Ms(10), Record("t")).value());
    EXPECT_TRUE(deadline->Pending());
  }
  EXPECT_EQ(RunAt(Ms(20)), 0);
  LoopTimer kept;
  {
    ScopedLoopTimer deadline(wheel_->AfterFunc(Ms(30), Record("kept")).value());
    kept = deadline.Release();
  }
  EXPECT_EQ(RunAt(Ms(50)), 1);  // 30 ms after it was made, at 20 ms
  EXPECT_THAT(runs_, ElementsAre("kept@50"));
}

TEST_F(LoopWheelTest, EachAfterFuncHasItsOwnDelayAlsoWhenItRepeats) {
  // AfterFunc keeps its last delay's nanoseconds (time_base.h): a repeat, a
  // change and a change back each count from the clock's time at the call.
  LoopTimer a = wheel_->AfterFunc(Ms(10), [] {}).value();
  clock_->Advance(Ms(1));
  LoopTimer b = wheel_->AfterFunc(Ms(10), [] {}).value();
  LoopTimer c = wheel_->AfterFunc(Ms(7), [] {}).value();
  LoopTimer d = wheel_->AfterFunc(Ms(10), [] {}).value();
  LoopTimer e = wheel_->AfterFunc(absl::Nanoseconds(1) / 4, [] {}).value();
  EXPECT_EQ(a.Deadline(), Ms(10));
  EXPECT_EQ(b.Deadline(), Ms(11));
  EXPECT_EQ(c.Deadline(), Ms(8));
  EXPECT_EQ(d.Deadline(), Ms(11));
  EXPECT_EQ(e.Deadline(), Ms(1) + absl::Nanoseconds(1));  // rounded up
  absl::StatusOr<LoopTimer> backwards_forever =
      wheel_->AfterFunc(-absl::InfiniteDuration(), [] {});
  EXPECT_TRUE(absl::IsInvalidArgument(backwards_forever.status()));
  EXPECT_THAT(backwards_forever.status().message(), HasSubstr("finite"));
  EXPECT_EQ(wheel_->Pending(), 5);
}

TEST_F(LoopWheelTest, ResetMovesTheDeadlineAndArmsAgainAfterTheRun) {
  LoopTimer t = wheel_->AfterFunc(Ms(10), Record("t")).value();
  EXPECT_EQ(t.Deadline(), Ms(10));
  EXPECT_TRUE(t.Reset(Ms(20)));
  EXPECT_EQ(t.Deadline(), Ms(20));
  EXPECT_EQ(t.TimeLeft(), Ms(20));
  EXPECT_EQ(RunAt(Ms(19)), 0);
  EXPECT_EQ(RunAt(Ms(20)), 1);
  EXPECT_FALSE(t.Reset(Ms(5)));  // had run: false, and armed again
  EXPECT_TRUE(t.Pending());
  EXPECT_EQ(RunAt(Ms(25)), 1);
  EXPECT_THAT(runs_, ElementsAre("t@20", "t@25"));
  // Infinite either way stops it.
  EXPECT_FALSE(t.Reset(absl::InfiniteDuration()));
  ASSERT_FALSE(t.Reset(Ms(5)));
  EXPECT_TRUE(t.Reset(-absl::InfiniteDuration()));
  EXPECT_FALSE(t.Pending());
}

TEST_F(LoopWheelTest, ACallbackResetsAndStopsItself) {
  int runs = 0;
  LoopTimer t;
  t = wheel_
          ->AfterFunc(
              Ms(10),
              [&] {
                ++runs;
                if (runs < 3) {
                  EXPECT_FALSE(t.Reset(Ms(10)));  // running: not pending
                  EXPECT_TRUE(t.Pending());
                  EXPECT_EQ(t.Deadline(), clock_->Now() + Ms(10));
                }
              })
          .value();
  EXPECT_EQ(RunAt(Ms(10)), 1);
  EXPECT_EQ(RunAt(Ms(20)), 1);
  EXPECT_EQ(RunAt(Ms(30)), 1);
  EXPECT_EQ(RunAt(Ms(100)), 0);
  EXPECT_EQ(runs, 3);
  EXPECT_FALSE(t.Pending());
}

// Counts the times it is asked; answers `period` until `runs` ran.
class CountingScheduler : public Scheduler {
 public:
  CountingScheduler(absl::Duration period, int* asked)
      : period_(period), asked_(asked) {}
  std::optional<absl::Duration> NextDelay(const ScheduleContext&) override {
    ++*asked_;
    return period_;
  }

 private:
  const absl::Duration period_;
  int* const asked_;
};

TEST_F(LoopWheelTest,
       PeriodicTimersRunOnScheduleUntilStoppedFromTheirCallback) {
  LoopTimer every = wheel_->Every(Ms(10), Record("every")).value();
  int asked = 0;
  int runs = 0;
  LoopTimer scheduled;
  scheduled =
      wheel_
          ->ScheduleFunc(std::make_unique<CountingScheduler>(Ms(15), &asked),
                         [&] {
                           if (++runs == 2) {
                             EXPECT_TRUE(scheduled.Stop());
                           }
                         })
          .value();
  EXPECT_EQ(asked, 1);  // the first delay, on the caller's thread
  for (int ms = 1; ms <= 35; ++ms) RunAt(Ms(ms));
  EXPECT_THAT(runs_, ElementsAre("every@10", "every@20", "every@30"));
  EXPECT_TRUE(every.Pending());
  EXPECT_EQ(runs, 2);
  EXPECT_EQ(asked, 2) << "asked after its callback stopped it";
  EXPECT_FALSE(scheduled.Pending());
  EXPECT_TRUE(every.Stop());
  EXPECT_EQ(wheel_->Pending(), 0);
  EXPECT_EQ(RunAt(Ms(100)), 0);
}

TEST_F(LoopWheelTest, TimersACallbackMakesDueRunInTheSameCallAfterIt) {
  LoopTimer later = wheel_->AfterFunc(Ms(50), Record("later")).value();
  LoopTimer first =
      wheel_
          ->AfterFunc(
              Ms(10),
              [&] {
                runs_.push_back("first");
                ASSERT_TRUE(
                    wheel_->AfterFunc(absl::ZeroDuration(), Record("made"))
                        .ok());
                EXPECT_TRUE(later.Reset(-Ms(1)));
                runs_.push_back("first returns");
              })
          .value();
  EXPECT_EQ(RunAt(Ms(10)), 3);
  EXPECT_THAT(runs_,
              ElementsAre("first", "first returns", "made@10", "later@10"));
}

TEST_F(LoopWheelTest, ATicksTimersRunByDeadlineToASixteenthOfTheTick) {
  // Deadlines in the tick (40 ms, 41 ms] (1 ms ticks, 20 a level), one in
  // each sixteenth of it, armed in a scrambled order: half at 0 ms, into a
  // level-1 bucket (they cascade), half at 25 ms, straight into level 0.
  constexpr int kParts = 16;
  const absl::Duration part = absl::Microseconds(1000) / kParts;
  std::vector<int> order;
  std::vector<LoopTimer> timers;
  for (int k = 0; k < kParts; ++k) {
    const int i = (k * 7) % kParts;  // 0, 7, 14, 5, ...
    const absl::Duration deadline = Ms(40) + part * i + absl::Microseconds(10);
    if (k == kParts / 2) {
      EXPECT_EQ(RunAt(Ms(25)), 0);
    }
    timers.push_back(wheel_
                         ->AfterFunc(deadline - clock_->Now(),
                                     [&order, i] { order.push_back(i); })
                         .value());
  }
  EXPECT_EQ(RunAt(Ms(40)), 0);
  EXPECT_EQ(RunAt(Ms(41)), kParts);
  std::vector<int> by_deadline(kParts);
  for (int i = 0; i < kParts; ++i) by_deadline[i] = i;
  EXPECT_EQ(order, by_deadline);
}

TEST_F(LoopWheelTest, ACallbackStopsAndResetsTimersDueInTheSameRunDue) {
  // Eight timers due in one tick, armed before it (so in a bucket, not made
  // due by a call): whichever runs first stops, by handle and by id, and
  // resets the others that have not run yet. They run in no set order, so
  // each answer is checked against whether its timer ran already. (A
  // timer the core had handed over as due was taken for one still in a
  // bucket: a Stop wrote through a link of 0, then it ran anyway.)
  constexpr int kTimers = 8;
  std::vector<LoopTimer> handles(kTimers);
  std::vector<LoopTimerId> ids(kTimers);
  std::vector<int> runs(kTimers, 0);
  int stopped = 0;
  int reset = 0;
  bool first = true;
  const auto callback = [&](int i) {
    return [&, i] {
      ++runs[i];
      if (!std::exchange(first, false)) return;
      for (int j = 0; j < kTimers; ++j) {
        if (j == i) continue;
        const bool ran = runs[j] > 0;
        bool pending;
        if (j % 4 == 0) {
          pending = handles[j].Stop();
          stopped += pending;
        } else if (j % 4 == 1) {
          pending = wheel_->Stop(ids[j]);
          stopped += pending;
        } else if (j % 4 == 2) {
          pending = handles[j].Reset(Ms(40));
          reset += pending;
        } else {
          pending = wheel_->Reset(ids[j], Ms(40));
          reset += pending;
        }
        EXPECT_EQ(pending, !ran) << "timer " << j;
      }
    };
  };
  for (int i = 0; i < kTimers; ++i) {
    if (i % 2 == 0) {
      handles[i] = wheel_->AfterFunc(Ms(10), callback(i)).value();
    } else {
      ids[i] = wheel_->AfterFuncId(Ms(10), callback(i)).value();
    }
  }
  RunAt(Ms(10));
  EXPECT_EQ(wheel_->Pending(), reset);
  EXPECT_GE(stopped + reset, 1) << "no timer was left to stop or reset";
  RunAt(Ms(49));
  EXPECT_EQ(wheel_->Pending(), reset);
  RunAt(Ms(50));
  EXPECT_EQ(wheel_->Pending(), 0);
  int total = 0;
  for (int i = 0; i < kTimers; ++i) {
    EXPECT_LE(runs[i], 2) << "timer " << i;
    total += runs[i];
  }
  // The first ran once; each stopped one never, each reset one at 50.
  EXPECT_EQ(total, kTimers - stopped);
}

TEST_F(LoopWheelTest, ACallbackMayDestroyTheWheelAndHandlesOutliveIt) {
  int destroyed = 0;
  struct CountsDestruction {
    int* count;
    explicit CountsDestruction(int* c) : count(c) {}
    CountsDestruction(CountsDestruction&& other) noexcept
        : count(std::exchange(other.count, nullptr)) {}
    ~CountsDestruction() {
      if (count != nullptr) ++*count;
    }
  };
  LoopTimer pending =
      wheel_->AfterFunc(Ms(100), [c = CountsDestruction(&destroyed)] {})
          .value();
  LoopTimer also_due = wheel_->AfterFunc(Ms(10), Record("also_due")).value();
  LoopTimer killer = wheel_->AfterFunc(Ms(10), [&] { wheel_.reset(); }).value();
  // Both due at 10: whichever runs first, the wheel is gone after killer.
  clock_->Advance(Ms(10));
  const int64_t ran = wheel_->RunDue();
  EXPECT_GE(ran, 1);
  EXPECT_EQ(wheel_, nullptr);
  EXPECT_EQ(destroyed, 1) << "a cancelled callback was not destroyed";
  EXPECT_FALSE(pending.Pending());
  EXPECT_FALSE(pending.Stop());
  EXPECT_FALSE(pending.Reset(Ms(1)));
  EXPECT_EQ(pending.Deadline(), std::nullopt);
}

// Counts its runs and its destructions (a moved-from one counts nothing);
// `Pad` bytes make it as big as a size class needs.
template <size_t Pad>
struct Counted {
  Counted(int* runs, int* destroyed) : runs(runs), destroyed(destroyed) {}
  Counted(Counted&& other) noexcept
      : runs(std::exchange(other.runs, nullptr)),
        destroyed(std::exchange(other.destroyed, nullptr)) {}
  ~Counted() {
    if (destroyed != nullptr) ++*destroyed;
  }
  void operator()() { ++*runs; }
  int* runs;
  int* destroyed;
  char pad[Pad] = {};
};

int free_function_runs = 0;
void FreeFunction() { ++free_function_runs; }

TEST_F(LoopWheelTest, CallablesOfEverySizeRunOnceAndAreDestroyedOnce) {
  // Kept inline in a 64-byte node (16 bytes), in an 80-byte one (32), or
  // moved to the heap (more); the heap one stopped, the others run.
  int runs = 0;
  int destroyed = 0;
  {
    LoopTimer small =
        wheel_->AfterFunc(Ms(5), Counted<0>(&runs, &destroyed)).value();
    LoopTimer wide =
        wheel_->AfterFunc(Ms(5), Counted<16>(&runs, &destroyed)).value();
    LoopTimer boxed =
        wheel_->AfterFunc(Ms(5), Counted<64>(&runs, &destroyed)).value();
    LoopTimer boxed_stopped =
        wheel_->AfterFunc(Ms(5), Counted<64>(&runs, &destroyed)).value();
    EXPECT_TRUE(boxed_stopped.Stop());
    EXPECT_EQ(destroyed, 0) << "a handle still refers to each timer";
    EXPECT_EQ(RunAt(Ms(5)), 3);
    EXPECT_EQ(runs, 3);
    EXPECT_FALSE(boxed.Reset(Ms(1)));  // ran: armed again, its callable kept
    EXPECT_EQ(RunAt(Ms(6)), 1);
    EXPECT_EQ(runs, 4);
  }
  EXPECT_EQ(destroyed, 4);

  // The callables of the API's other types, and the empty ones.
  free_function_runs = 0;
  ASSERT_TRUE(wheel_->AfterFunc(Ms(1), &FreeFunction).ok());
  ASSERT_TRUE(wheel_->AfterFunc(Ms(1), FreeFunction).ok());
  ASSERT_TRUE(wheel_
                  ->AfterFunc(Ms(1), std::function<void()>([this] {
                                runs_.push_back("function");
                              }))
                  .ok());
  ASSERT_TRUE(wheel_->AfterFunc(Ms(1), Record("any_invocable")).ok());
  EXPECT_EQ(RunAt(Ms(7)), 4);
  EXPECT_EQ(free_function_runs, 2);
  EXPECT_THAT(runs_, ElementsAre("function", "any_invocable@7"));
  void (*null_function)() = nullptr;
  EXPECT_THAT(wheel_->AfterFunc(Ms(1), null_function).status().message(),
              HasSubstr("callback is empty"));
  EXPECT_THAT(
      wheel_->AfterFunc(Ms(1), std::function<void()>()).status().message(),
      HasSubstr("callback is empty"));
  EXPECT_THAT(wheel_->AtClockTime(Ms(9), absl::AnyInvocable<void()>())
                  .status()
                  .message(),
              HasSubstr("AtClockTime: the callback is empty"));
  EXPECT_EQ(wheel_->Pending(), 0);
}

TEST_F(LoopWheelTest, ErrorsSayWhatWasWrong) {
  absl::StatusOr<LoopTimer> empty = wheel_->AfterFunc(Ms(1), nullptr);
  EXPECT_TRUE(absl::IsInvalidArgument(empty.status()));
  EXPECT_THAT(empty.status().message(), HasSubstr("callback is empty"));
  absl::StatusOr<LoopTimer> forever =
      wheel_->AfterFunc(absl::InfiniteDuration(), [] {});
  EXPECT_TRUE(absl::IsInvalidArgument(forever.status()));
  EXPECT_THAT(forever.status().message(), HasSubstr("finite"));
  absl::StatusOr<LoopTimer> at =
      wheel_->At(std::chrono::steady_clock::now(), [] {});
  EXPECT_TRUE(absl::IsInvalidArgument(at.status()));
  EXPECT_THAT(at.status().message(), HasSubstr("AtClockTime"));
  absl::StatusOr<LoopTimer> no_scheduler = wheel_->ScheduleFunc(nullptr, [] {});
  EXPECT_TRUE(absl::IsInvalidArgument(no_scheduler.status()));

  LoopOptions bad;
  bad.tick = absl::Nanoseconds(10);
  absl::Status status = LoopWheel::Create(std::move(bad)).status();
  EXPECT_TRUE(absl::IsInvalidArgument(status));
  EXPECT_THAT(status.message(), HasSubstr("LoopOptions::tick is 10ns"));
  LoopOptions small;
  small.wheel_size = 1;
  status = LoopWheel::Create(std::move(small)).status();
  EXPECT_THAT(status.message(), HasSubstr("LoopOptions::wheel_size is 1"));

  LoopOptions capped;
  capped.clock = clock_;
  capped.max_pending = 2;
  std::unique_ptr<LoopWheel> wheel =
      LoopWheel::Create(std::move(capped)).value();
  LoopTimer one = wheel->AfterFunc(Ms(1), [] {}).value();
  LoopTimer two = wheel->AfterFunc(Ms(1), [] {}).value();
  absl::StatusOr<LoopTimer> three = wheel->AfterFunc(Ms(1), [] {});
  EXPECT_TRUE(absl::IsResourceExhausted(three.status()));
  EXPECT_TRUE(one.Stop());
  EXPECT_TRUE(wheel->AfterFunc(Ms(1), [] {}).ok());
}

TEST(LoopWheelOptionsTest, SpareTimersOutOfRangeIsRejected) {
  for (const int64_t spare : {int64_t{-1}, kMaxSpareTimers + 1}) {
    LoopOptions options;
    options.spare_timers = spare;
    const absl::Status status = LoopWheel::Create(std::move(options)).status();
    EXPECT_TRUE(absl::IsInvalidArgument(status));
    EXPECT_THAT(
        status.message(),
        HasSubstr(absl::StrCat("LoopOptions::spare_timers is ", spare,
                               "; it must be from 0 to ", kMaxSpareTimers)));
  }
  for (const int64_t spare : {int64_t{0}, kMaxSpareTimers}) {
    LoopOptions options;
    options.spare_timers = spare;
    EXPECT_TRUE(LoopWheel::Create(std::move(options)).ok()) << spare;
  }
}

TEST_F(LoopWheelTest, AnExceptionReachesTheCallerAndLosesNoTimer) {
  LoopTimer thrower =
      wheel_->AfterFunc(Ms(5), [] { throw std::runtime_error("boom"); })
          .value();
  LoopTimer after = wheel_->AfterFunc(Ms(5), Record("after")).value();
  clock_->Advance(Ms(5));
  bool threw = false;
  try {
    wheel_->RunDue();
  } catch (const std::runtime_error& e) {
    threw = true;
    EXPECT_STREQ(e.what(), "boom");
  }
  EXPECT_TRUE(threw);
  EXPECT_FALSE(thrower.Pending());
  wheel_->RunDue();
  EXPECT_THAT(runs_, ElementsAre("after@5"));
  EXPECT_EQ(wheel_->Pending(), 0);
}

absl::Duration Us(int64_t us) { return absl::Microseconds(us); }

// The next tick's timers whose deadlines passed run in the turn that finds
// them due, not at the tick's end; the others at their deadline or the
// tick's end, whichever turn comes first; never before.
TEST_F(LoopWheelTest, ATurnRunsTheNextTicksTimersWhoseDeadlinesPassed) {
  LoopTimer first = wheel_->AfterFunc(Us(5200), RecordExact("first")).value();
  LoopTimer second = wheel_->AfterFunc(Us(5900), RecordExact("second")).value();
  LoopTimer third = wheel_->AfterFunc(Us(5950), RecordExact("third")).value();
  // Tick 6 of 1 ms: deadlines in (5 ms, 6 ms].
  EXPECT_EQ(RunAt(Us(5500)), 1);
  EXPECT_THAT(runs_, ElementsAre("first@5.5ms"));
  EXPECT_FALSE(first.Pending());
  EXPECT_TRUE(second.Pending());
  EXPECT_EQ(wheel_->TimeUntilNext(), Us(500));  // the tick's end
  EXPECT_EQ(RunAt(Us(5899)), 0);
  EXPECT_EQ(RunAt(Us(5920)), 1);
  EXPECT_THAT(runs_, ElementsAre("first@5.5ms", "second@5.92ms"));
  // The last staged timer stopped: nothing is pending, no wake-up.
  EXPECT_TRUE(third.Stop());
  EXPECT_EQ(wheel_->TimeUntilNext(), std::nullopt);
  EXPECT_EQ(RunAt(Ms(6)), 0);
  EXPECT_EQ(wheel_->Pending(), 0);
}

TEST_F(LoopWheelTest,
       TimersTakenAheadOfTheirTickStopResetAndCancelLikeAnyOther) {
  LoopTimer stopped =
      wheel_->AfterFunc(Us(5700), RecordExact("stopped")).value();
  LoopTimer reset = wheel_->AfterFunc(Us(5800), RecordExact("reset")).value();
  LoopTimerId by_id =
      wheel_->AfterFuncId(Us(5900), RecordExact("by_id")).value();
  LoopTimer cancelled =
      wheel_->AfterFunc(Us(7900), RecordExact("cancelled")).value();
  EXPECT_EQ(RunAt(Us(5100)), 0);  // takes tick 6 ahead: none due yet
  EXPECT_TRUE(stopped.Stop());
  EXPECT_FALSE(stopped.Pending());
  EXPECT_EQ(wheel_->TimeUntilNext(), Us(900));  // three left, due by 6 ms
  EXPECT_TRUE(reset.Reset(Ms(2)));              // to 7.1 ms
  EXPECT_EQ(reset.Deadline(), Us(7100));
  EXPECT_TRUE(wheel_->Pending(by_id));
  EXPECT_EQ(RunAt(Us(5950)), 1);
  EXPECT_THAT(runs_, ElementsAre("by_id@5.95ms"));
  EXPECT_EQ(RunAt(Ms(7)), 0);
  EXPECT_EQ(RunAt(Us(7100)), 1);
  EXPECT_THAT(runs_, ElementsAre("by_id@5.95ms", "reset@7.1ms"));
  EXPECT_TRUE(cancelled.Pending());  // tick 8, taken ahead at 7.1 ms
  EXPECT_EQ(wheel_->Pending(), 1);
  EXPECT_EQ(wheel_->TimeUntilNext(), Us(900));
  wheel_.reset();  // cancels it
  EXPECT_FALSE(cancelled.Pending());
  EXPECT_THAT(runs_, ElementsAre("by_id@5.95ms", "reset@7.1ms"));
}

TEST_F(LoopWheelTest, RunDueAtACachedTimeRunsOnlyWhatIsDueByThen) {
  LoopTimer a = wheel_->AfterFunc(Ms(5), Record("a")).value();
  LoopTimer b = wheel_->AfterFunc(Ms(8), Record("b")).value();
  clock_->Advance(Ms(10));
  EXPECT_EQ(wheel_->RunDueAt(Ms(6)), 1);
  // A time past the clock's counts as the clock's.
  EXPECT_EQ(wheel_->RunDueAt(Ms(1000)), 1);
  EXPECT_THAT(runs_, ElementsAre("a@10", "b@10"));
}

// A clock that counts its readings; set by hand. One thread only.
class CountingClock : public Clock {
 public:
  absl::Duration Now() const override {
    ++reads_;
    return now_;
  }
  absl::Duration RealTimeUntil(absl::Duration) const override {
    return absl::InfiniteDuration();
  }
  void Set(absl::Duration now) { now_ = now; }
  int64_t reads() const { return reads_; }

 private:
  mutable int64_t reads_ = 0;
  absl::Duration now_;
};

TEST(LoopWheelClockTest, RunDueAtReadsTheClockOnlyWhenItsTimeReachesANewTick) {
  auto clock = std::make_shared<CountingClock>();
  LoopOptions options;
  options.clock = clock;
  options.tick = Ms(1);
  std::unique_ptr<LoopWheel> wheel = LoopWheel::Create(options).value();
  int64_t ran = 0;
  ASSERT_TRUE(wheel->AfterFuncId(Ms(5), [&ran] { ++ran; }).ok());
  clock->Set(Ms(10));
  const int64_t reads = clock->reads();
  // Turns within the wheel's tick 0 (the loop's cached time): no reading.
  EXPECT_EQ(wheel->RunDueAt(Ms(0)), 0);
  EXPECT_EQ(wheel->RunDueAt(absl::Microseconds(999)), 0);
  EXPECT_EQ(clock->reads(), reads);
  // A time in tick 6 moves the wheel: read once, to check it against the
  // clock's, and the timer runs.
  EXPECT_EQ(wheel->RunDueAt(Ms(6)), 1);
  EXPECT_EQ(clock->reads(), reads + 1);
  EXPECT_EQ(wheel->RunDueAt(absl::Microseconds(6500)), 0);
  EXPECT_EQ(clock->reads(), reads + 1);
  // A time past the clock's moves the wheel only as far as the clock.
  ASSERT_TRUE(wheel->AfterFuncId(Ms(2), [&ran] { ++ran; }).ok());  // at 12
  EXPECT_EQ(wheel->RunDueAt(Ms(100)), 0);
  clock->Set(Ms(12));
  EXPECT_EQ(wheel->RunDueAt(Ms(100)), 1);
  EXPECT_EQ(ran, 2);
}

TEST(LoopWheelModelTest, EveryArmRunsOnceAtOrAfterItsDeadlineUnlessStopped) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE(testing::Message() << "seed " << seed);
    auto clock = std::make_shared<ManualClock>();
    LoopOptions options;
    options.clock = clock;
    options.wheel_size = 4;
    // Odd seeds keep no spare node: a chunk goes back to the system
    // whenever its timers have all ended, under the spent ids that named
    // them (read under AddressSanitizer, a fault without the wheel's check).
    if (seed % 2 == 1) options.spare_timers = 0;
    std::unique_ptr<LoopWheel> wheel =
        LoopWheel::Create(std::move(options)).value();
    std::mt19937_64 rng(seed);
    // Even slots hold their timer by a LoopTimer, odd ones by id: an id
    // is spent once its timer ran or was stopped, and the slot schedules a
    // new one where a handle's Reset arms again.
    struct Slot {
      LoopTimer timer;
      LoopTimerId id;
      std::vector<LoopTimerId> spent;       // the slot's earlier ids
      std::optional<absl::Duration> armed;  // the deadline of the live arm
      int runs = 0;
      int expected_runs = 0;
    };
    std::vector<Slot> slots(50);
    int early = 0;
    // What the steps below and the callbacks do to a slot: arm it after
    // `d` (Reset, or a new id once the last is spent), or stop it, each
    // checked against whether it was armed.
    std::function<void(size_t, absl::Duration)> arm;
    const auto stop = [&](size_t index) {
      Slot& slot = slots[index];
      const bool was = slot.armed.has_value();
      EXPECT_EQ(index % 2 == 1 ? wheel->Stop(slot.id) : slot.timer.Stop(), was);
      if (was) --slot.expected_runs;
      slot.armed.reset();
    };
    // A run of `index`'s timer; one in three then stops or arms another
    // slot, which may be due in the same RunDue and not run yet.
    const auto ran = [&](size_t index) {
      Slot& slot = slots[index];
      ++slot.runs;
      if (!slot.armed.has_value() || clock->Now() < *slot.armed) ++early;
      slot.armed.reset();
      if (absl::Uniform(rng, 0, 3) != 0) return;
      size_t other = absl::Uniform<size_t>(rng, 0, slots.size() - 1);
      if (other >= index) ++other;  // not itself
      if (absl::Uniform(rng, 0, 2) == 0) {
        stop(other);
      } else {
        arm(other,
            absl::Microseconds(absl::Uniform<int64_t>(rng, -1000, 30'000)));
      }
    };
    arm = [&](size_t index, absl::Duration d) {
      Slot& slot = slots[index];
      const bool was = slot.armed.has_value();
      if (index % 2 == 0) {
        EXPECT_EQ(slot.timer.Reset(d), was);
      } else if (was) {
        EXPECT_TRUE(wheel->Reset(slot.id, d));
      } else {
        EXPECT_FALSE(wheel->Reset(slot.id, d));  // spent: arms nothing
        if (slot.id) slot.spent.push_back(slot.id);
        slot.id = wheel->AfterFuncId(d, [&ran, index] { ran(index); }).value();
      }
      if (!was) ++slot.expected_runs;
      slot.armed = clock->Now() + std::max(d, absl::ZeroDuration());
    };
    // The ids' callbacks capture 16 bytes, the handles' 24: their nodes
    // come from two pools (48- and 64-byte blocks), so that with no spare
    // the ids' chunk goes back whenever all their timers have ended.
    for (size_t i = 0; i < slots.size(); i += 2) {
      slots[i].timer =
          wheel
              ->AfterFunc(absl::Hours(1),
                          [&ran, i, pad = uint64_t{0}] { ran(i + pad); })
              .value();
      slots[i].timer.Stop();
    }
    for (int step = 0; step < 5000; ++step) {
      const size_t index = absl::Uniform<size_t>(rng, 0, slots.size());
      Slot& slot = slots[index];
      // A spent id of the slot names nothing, whatever reused its node.
      if (!slot.spent.empty()) {
        const LoopTimerId old =
            slot.spent[absl::Uniform<size_t>(rng, 0, slot.spent.size())];
        ASSERT_FALSE(wheel->Pending(old));
        ASSERT_FALSE(wheel->Stop(old));
      }
      switch (absl::Uniform(rng, 0, 4)) {
        case 0:
        case 1:
          arm(index, absl::Microseconds(
                         absl::Uniform<int64_t>(rng, -1000, 3'000'000)));
          break;
        case 2:
          stop(index);
          break;
        default:
          clock->Advance(
              absl::Microseconds(absl::Uniform<int64_t>(rng, 0, 300'000)));
          if (absl::Uniform(rng, 0, 2) == 0) {
            wheel->RunDue();
          } else {
            // A loop's turns on its cached time: a stale one (often in the
            // wheel's tick: RunDueAt's turn without the clock), then the
            // clock's.
            wheel->RunDueAt(
                clock->Now() -
                absl::Microseconds(absl::Uniform<int64_t>(rng, 0, 2000)));
            wheel->RunDueAt(clock->Now());
          }
          for (const Slot& s : slots) {
            if (s.armed.has_value()) {
              ASSERT_GT(*s.armed, clock->Now() - absl::Milliseconds(1))
                  << "a timer due a whole tick ago did not run";
            }
          }
      }
    }
    while (std::optional<absl::Duration> wait = wheel->TimeUntilNext()) {
      clock->Advance(*wait);
      wheel->RunDue();
    }
    EXPECT_EQ(early, 0);
    for (const Slot& slot : slots) {
      EXPECT_EQ(slot.runs, slot.expected_runs);
      EXPECT_FALSE(slot.armed.has_value());
      EXPECT_FALSE(wheel->Pending(slot.id));
    }
    EXPECT_EQ(wheel->Pending(), 0);
  }
}

#if !defined(NDEBUG) && !defined(TIMINGWHEEL_TEST_SANITIZED)
TEST(LoopWheelDeathTest, ACallFromAnotherThreadAbortsNamingBothThreads) {
  testing::FLAGS_gtest_death_test_style = "threadsafe";
  EXPECT_DEATH(
      {
        std::unique_ptr<LoopWheel> wheel = LoopWheel::Create().value();
        wheel->Pending();  // this thread is the loop's
        std::thread([&] {
          wheel->AfterFunc(Ms(1), [] {}).IgnoreError();
        }).join();
      },
      "LoopWheel::AfterFunc called on thread .* but this LoopWheel belongs "
      "to thread");
  // The members by id too.
  EXPECT_DEATH(
      {
        std::unique_ptr<LoopWheel> wheel = LoopWheel::Create().value();
        const LoopTimerId id = wheel->AfterFuncId(Ms(1), [] {}).value();
        std::thread([&] { wheel->Stop(id); }).join();
      },
      "LoopWheel::Stop called on thread .* but this LoopWheel belongs to "
      "thread");
}
#endif

TEST(LoopWheelRealClockTest,
     ALoopSleepingOnTimeUntilNextRunsEveryTimerRealClock) {
  std::unique_ptr<LoopWheel> wheel = LoopWheel::Create().value();
  constexpr int kTimers = 2000;
  std::vector<absl::Duration> deadlines(kTimers);
  int ran = 0;
  int early = 0;
  absl::Duration worst = absl::ZeroDuration();
  for (int i = 0; i < kTimers; ++i) {
    const absl::Duration d = absl::Microseconds(100 * (i % 2000));
    deadlines[i] = SteadyClock()->Now() + d;
    ASSERT_TRUE(wheel
                    ->AfterFunc(d,
                                [&, i] {
                                  const absl::Duration late =
                                      SteadyClock()->Now() - deadlines[i];
                                  if (late < absl::ZeroDuration()) ++early;
                                  worst = std::max(worst, late);
                                  ++ran;
                                })
                    .ok());
  }
  while (std::optional<absl::Duration> wait = wheel->TimeUntilNext()) {
    absl::SleepFor(*wait);
    wheel->RunDue();
  }
  EXPECT_EQ(ran, kTimers);
  EXPECT_EQ(early, 0);
  EXPECT_LT(worst, absl::Milliseconds(500)) << "generous: a shared machine";
}

}  // namespace
}  // namespace timingwheel
