// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// timer_test.cc: what a Timer handle says about its timer (timer.h):
// Pending(), Deadline() and TimeLeft() in every state of the timer, exact
// under a ManualClock (new, partly elapsed, due but not started, waiting for
// a busy worker, running, re-armed by a Reset while running and then stopped,
// fired, stopped, reset again, shut down, the wheel gone); State() in each
// of those and in the states a run ends in (fired, stopped from inside,
// schedule ended, cancelled by CancelAll or Shutdown, also while running),
// with kPending exactly when Pending() is true; Runs() counting a periodic
// timer's runs; and under ThreadSanitizer the queries racing Stop, Reset and
// firing on real time, with what a thread did itself always seen.

#include "timingwheel/timer.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "test_util.h"
#include "timingwheel/timingwheel.h"

namespace timingwheel {
namespace {

// What a callback saw when it asked its own timer (Timer::Current()).
struct Answers {
  bool pending = false;
  std::optional<absl::Duration> deadline;
  std::optional<absl::Duration> time_left;
  TimerState state = TimerState::kNone;
  int64_t runs = 0;

  static Answers Of(const Timer& timer) {
    return {timer.Pending(), timer.Deadline(), timer.TimeLeft(), timer.State(),
            timer.Runs()};
  }
};

// Answers recorded by callbacks, read by the test after WaitIdle.
class AnswerLog {
 public:
  void Add(const Answers& answers) {
    std::lock_guard<std::mutex> lock(mu_);
    answers_.push_back(answers);
  }
  std::vector<Answers> get() const {
    std::lock_guard<std::mutex> lock(mu_);
    return answers_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<Answers> answers_;
};

using TimerQueryTest = ManualWheelTest<2>;

// timer.h: a handle is two pointers, and a move leaves the source empty.
TEST(TimerHandleTest, IsTwoPointersAndAMoveEmptiesTheSource) {
  static_assert(sizeof(Timer) == 2 * sizeof(void*));
  auto wheel = TimingWheel::Create().value();
  Timer timer = wheel->AfterFunc(absl::Hours(1), [] {}).value();
  Timer moved = std::move(timer);
  EXPECT_FALSE(timer);  // NOLINT(bugprone-use-after-move): checked on purpose
  EXPECT_TRUE(moved.Pending());
  EXPECT_TRUE(moved.Stop());
}

TEST(TimerQueryEmptyTest, EmptyHandleIsNotPendingAndHasNoDeadline) {
  const Timer timer;
  EXPECT_FALSE(timer.Pending());
  EXPECT_EQ(timer.Deadline(), std::nullopt);
  EXPECT_EQ(timer.TimeLeft(), std::nullopt);
  EXPECT_EQ(timer.State(), TimerState::kNone);
  EXPECT_EQ(timer.Runs(), 0);
}

TEST(TimerStateNameTest, EachStatePrintsItsName) {
  std::ostringstream out;
  out << TimerState::kNone << " " << TimerState::kPending << " "
      << TimerState::kRunning << " " << TimerState::kFired << " "
      << TimerState::kStopped << " " << TimerState::kEnded << " "
      << TimerState::kCancelled;
  EXPECT_EQ(out.str(),
            "kNone kPending kRunning kFired kStopped kEnded kCancelled");
}

TEST_F(TimerQueryTest, NewTimerIsPendingWithItsDeadlineAndTimeLeft) {
  Advance(absl::Milliseconds(3));
  Timer timer = wheel_->AfterFunc(absl::Milliseconds(10), [] {}).value();
  EXPECT_TRUE(timer.Pending());
  EXPECT_EQ(timer.Deadline(), absl::Milliseconds(13));
  EXPECT_EQ(timer.TimeLeft(), absl::Milliseconds(10));
  Advance(absl::Milliseconds(4));
  EXPECT_EQ(timer.Deadline(), absl::Milliseconds(13));
  EXPECT_EQ(timer.TimeLeft(), absl::Milliseconds(6));
  // Copies of the handle answer for the same timer.
  const Timer copy = timer;
  EXPECT_EQ(copy.TimeLeft(), absl::Milliseconds(6));
}

TEST_F(TimerQueryTest, DeadlineIsAsAskedAndStaysPendingUntilItsTick) {
  // 2.5 ms is due at the 3 ms tick: at 2.5 ms it has no time left, but its
  // callback has not started, so it is still pending (and stoppable).
  Timer timer = wheel_->AfterFunc(absl::Microseconds(2500), [] {}).value();
  EXPECT_EQ(timer.Deadline(), absl::Microseconds(2500));
  Advance(absl::Microseconds(2500));
  EXPECT_TRUE(timer.Pending());
  EXPECT_EQ(timer.Deadline(), absl::Microseconds(2500));
  EXPECT_EQ(timer.TimeLeft(), absl::ZeroDuration());
  Advance(absl::Microseconds(500));
  EXPECT_FALSE(timer.Pending());
  EXPECT_EQ(timer.Deadline(), std::nullopt);
  EXPECT_EQ(timer.TimeLeft(), std::nullopt);
}

TEST_F(TimerQueryTest, EachTimerHasItsOwnDelayAlsoWhenItRepeats) {
  // A thread's last delay is kept in nanoseconds (lib/base/time_base.h): a
  // repeat, a change and a change back each count from the call's time.
  Timer a = wheel_->AfterFunc(absl::Milliseconds(10), [] {}).value();
  Advance(absl::Milliseconds(1));
  Timer b = wheel_->AfterFunc(absl::Milliseconds(10), [] {}).value();
  Timer c = wheel_->AfterFunc(absl::Milliseconds(7), [] {}).value();
  Timer d = wheel_->AfterFunc(absl::Milliseconds(10), [] {}).value();
  EXPECT_EQ(a.Deadline(), absl::Milliseconds(10));
  EXPECT_EQ(b.Deadline(), absl::Milliseconds(11));
  EXPECT_EQ(c.Deadline(), absl::Milliseconds(8));
  EXPECT_EQ(d.Deadline(), absl::Milliseconds(11));
}

TEST_F(TimerQueryTest, SubNanosecondDeadlineIsRoundedUpToTheNanosecond) {
  Timer timer =
      wheel_->AfterFunc(absl::Milliseconds(1) + absl::Nanoseconds(1) / 4, [] {})
          .value();
  EXPECT_EQ(timer.Deadline(), absl::Milliseconds(1) + absl::Nanoseconds(1));
}

TEST_F(TimerQueryTest, StoppedTimerIsNotPendingUntilResetAgain) {
  Timer timer = wheel_->AfterFunc(absl::Milliseconds(10), [] {}).value();
  ASSERT_TRUE(timer.Stop());
  EXPECT_FALSE(timer.Pending());
  EXPECT_EQ(timer.Deadline(), std::nullopt);
  EXPECT_EQ(timer.TimeLeft(), std::nullopt);
  Advance(absl::Milliseconds(2));
  EXPECT_FALSE(timer.Reset(absl::Milliseconds(7)));
  EXPECT_TRUE(timer.Pending());
  EXPECT_EQ(timer.Deadline(), absl::Milliseconds(9));
  EXPECT_EQ(timer.TimeLeft(), absl::Milliseconds(7));
}

TEST_F(TimerQueryTest, ResetMovesTheDeadline) {
  Timer timer = wheel_->AfterFunc(absl::Milliseconds(10), [] {}).value();
  Advance(absl::Milliseconds(4));
  EXPECT_TRUE(timer.Reset(absl::Milliseconds(30)));
  EXPECT_EQ(timer.Deadline(), absl::Milliseconds(34));
  EXPECT_TRUE(timer.Reset(absl::Milliseconds(1)));
  EXPECT_EQ(timer.TimeLeft(), absl::Milliseconds(1));
}

TEST_F(TimerQueryTest, OneShotIsNotPendingOnceItsCallbackStarted) {
  AnswerLog inside;
  Timer timer =
      wheel_
          ->AfterFunc(absl::Milliseconds(5),
                      [&] { inside.Add(Answers::Of(Timer::Current())); })
          .value();
  Advance(absl::Milliseconds(5));
  ASSERT_EQ(inside.get().size(), 1u);
  EXPECT_FALSE(inside.get()[0].pending);
  EXPECT_EQ(inside.get()[0].deadline, std::nullopt);
  EXPECT_EQ(inside.get()[0].time_left, std::nullopt);
  EXPECT_FALSE(timer.Pending());
  EXPECT_EQ(timer.Deadline(), std::nullopt);
}

TEST_F(TimerQueryTest, ResetFromItsOwnCallbackIsPendingWithTheNewDeadline) {
  AnswerLog inside;
  std::atomic<int> runs{0};
  Timer timer = wheel_
                    ->AfterFunc(absl::Milliseconds(5),
                                [&] {
                                  if (++runs > 1) return;
                                  Timer self = Timer::Current();
                                  self.Reset(absl::Milliseconds(20));
                                  inside.Add(Answers::Of(self));
                                })
                    .value();
  Advance(absl::Milliseconds(5));
  ASSERT_EQ(inside.get().size(), 1u);
  EXPECT_TRUE(inside.get()[0].pending);
  EXPECT_EQ(inside.get()[0].deadline, absl::Milliseconds(25));
  EXPECT_EQ(inside.get()[0].time_left, absl::Milliseconds(20));
  // Re-armed when the callback returned.
  EXPECT_TRUE(timer.Pending());
  EXPECT_EQ(timer.Deadline(), absl::Milliseconds(25));
  Advance(absl::Milliseconds(20));
  EXPECT_EQ(runs.load(), 2);
  EXPECT_FALSE(timer.Pending());
}

TEST_F(TimerQueryTest, ResetThenStopWhileRunningIsNotPending) {
  // Reset while the callback runs leaves a re-arm behind, which Stop
  // withdraws; the timer then ends when the callback returns, and a later
  // Reset arms it with its own deadline.
  AnswerLog inside;
  Timer timer = wheel_
                    ->AfterFunc(absl::Milliseconds(5),
                                [&] {
                                  Timer self = Timer::Current();
                                  self.Reset(absl::Milliseconds(20));
                                  inside.Add(Answers::Of(self));
                                  EXPECT_TRUE(self.Stop());
                                  inside.Add(Answers::Of(self));
                                })
                    .value();
  Advance(absl::Milliseconds(5));
  const std::vector<Answers> answers = inside.get();
  ASSERT_EQ(answers.size(), 2u);
  EXPECT_TRUE(answers[0].pending);
  EXPECT_EQ(answers[0].deadline, absl::Milliseconds(25));
  EXPECT_EQ(answers[0].state, TimerState::kPending);
  EXPECT_FALSE(answers[1].pending);
  EXPECT_EQ(answers[1].deadline, std::nullopt);
  EXPECT_EQ(answers[1].state, TimerState::kRunning);
  EXPECT_FALSE(timer.Pending());
  EXPECT_EQ(timer.Deadline(), std::nullopt);
  // Its last arm, the Reset's, was stopped: not "fired".
  EXPECT_EQ(timer.State(), TimerState::kStopped);
  EXPECT_FALSE(timer.Reset(absl::Milliseconds(3)));
  EXPECT_EQ(timer.Deadline(), absl::Milliseconds(8));
  EXPECT_EQ(timer.State(), TimerState::kPending);
}

TEST_F(TimerQueryTest, PeriodicTimerIsPendingWhileItsCallbackRuns) {
  AnswerLog inside;
  Timer timer = wheel_
                    ->Every(absl::Milliseconds(10),
                            [&] { inside.Add(Answers::Of(Timer::Current())); })
                    .value();
  EXPECT_EQ(timer.Deadline(), absl::Milliseconds(10));
  Advance(absl::Milliseconds(10));
  ASSERT_EQ(inside.get().size(), 1u);
  // The next run is decided when the callback returns: until then the
  // deadline is the run's own, and no time is left.
  EXPECT_TRUE(inside.get()[0].pending);
  EXPECT_EQ(inside.get()[0].deadline, absl::Milliseconds(10));
  EXPECT_EQ(inside.get()[0].time_left, absl::ZeroDuration());
  EXPECT_TRUE(timer.Pending());
  EXPECT_EQ(timer.Deadline(), absl::Milliseconds(20));
  EXPECT_EQ(timer.TimeLeft(), absl::Milliseconds(10));
}

TEST_F(TimerQueryTest, PeriodicTimerStoppedFromItsCallbackIsNotPending) {
  AnswerLog inside;
  Timer timer = wheel_
                    ->Every(absl::Milliseconds(10),
                            [&] {
                              Timer self = Timer::Current();
                              self.Stop();
                              inside.Add(Answers::Of(self));
                            })
                    .value();
  Advance(absl::Milliseconds(10));
  ASSERT_EQ(inside.get().size(), 1u);
  EXPECT_FALSE(inside.get()[0].pending);
  EXPECT_EQ(inside.get()[0].time_left, std::nullopt);
  EXPECT_FALSE(timer.Pending());
}

TEST_F(TimerQueryTest, NotPendingAfterShutdownNorWithTheWheelGone) {
  Timer timer = wheel_->AfterFunc(absl::Milliseconds(10), [] {}).value();
  ASSERT_EQ(wheel_->Shutdown(), 1);
  EXPECT_FALSE(timer.Pending());
  EXPECT_EQ(timer.Deadline(), std::nullopt);
  EXPECT_EQ(timer.State(), TimerState::kCancelled);
  wheel_.reset();
  EXPECT_FALSE(timer.Pending());
  EXPECT_EQ(timer.TimeLeft(), std::nullopt);
  EXPECT_FALSE(timer.Reset(absl::Milliseconds(1)));
  EXPECT_EQ(timer.State(), TimerState::kCancelled);
}

// ---------------------------------------------------------------------------
// State() and Runs(): whether a timer ran, how its last arm ended.

TEST_F(TimerQueryTest, OneShotGoesFromPendingToRunningToFired) {
  Gate gate;
  Event started;
  AnswerLog inside;
  Timer timer = wheel_
                    ->AfterFunc(absl::Milliseconds(5),
                                [&] {
                                  inside.Add(Answers::Of(Timer::Current()));
                                  started.Notify();
                                  gate.Pass();
                                })
                    .value();
  EXPECT_EQ(timer.State(), TimerState::kPending);
  clock_->Advance(absl::Milliseconds(5));
  ASSERT_TRUE(started.Wait());
  EXPECT_EQ(timer.State(), TimerState::kRunning);
  EXPECT_FALSE(timer.Pending());
  gate.Open();
  WaitIdle();
  ASSERT_EQ(inside.get().size(), 1u);
  EXPECT_EQ(inside.get()[0].state, TimerState::kRunning);
  EXPECT_EQ(timer.State(), TimerState::kFired);
  EXPECT_EQ(timer.Runs(), 0) << "a one-shot timer counts no runs";
  // A Reset arms it again.
  EXPECT_FALSE(timer.Reset(absl::Milliseconds(1)));
  EXPECT_EQ(timer.State(), TimerState::kPending);
}

TEST_F(TimerQueryTest, StoppedIsStoppedUntilResetThenFired) {
  Timer timer = wheel_->AfterFunc(absl::Milliseconds(5), [] {}).value();
  ASSERT_TRUE(timer.Stop());
  EXPECT_EQ(timer.State(), TimerState::kStopped);
  Advance(absl::Milliseconds(10));
  EXPECT_EQ(timer.State(), TimerState::kStopped) << "it never ran";
  EXPECT_FALSE(timer.Reset(absl::Milliseconds(1)));
  EXPECT_EQ(timer.State(), TimerState::kPending);
  Advance(absl::Milliseconds(1));
  EXPECT_EQ(timer.State(), TimerState::kFired);
}

TEST_F(TimerQueryTest, PeriodicIsPendingWhileItRunsAndStoppedOnceItStops) {
  AnswerLog inside;
  Timer timer = wheel_
                    ->Every(absl::Milliseconds(10),
                            [&] {
                              Timer self = Timer::Current();
                              if (self.Runs() == 3) self.Stop();
                              inside.Add(Answers::Of(self));
                            })
                    .value();
  EXPECT_EQ(timer.Runs(), 0);
  for (int i = 0; i < 5; ++i) Advance(absl::Milliseconds(10));
  const std::vector<Answers> answers = inside.get();
  ASSERT_EQ(answers.size(), 3u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(answers[i].state, TimerState::kPending) << i;
    EXPECT_EQ(answers[i].runs, i + 1);
  }
  EXPECT_EQ(answers[2].state, TimerState::kRunning);
  EXPECT_EQ(answers[2].runs, 3);
  EXPECT_EQ(timer.State(), TimerState::kStopped);
  EXPECT_EQ(timer.Runs(), 3);
}

// A schedule of `runs` runs, 1 ms apart.
class RunsThenEnds : public Scheduler {
 public:
  explicit RunsThenEnds(int runs) : left_(runs) {}
  std::optional<absl::Duration> NextDelay(const ScheduleContext&) override {
    if (left_ == 0) return std::nullopt;
    --left_;
    return absl::Milliseconds(1);
  }

 private:
  int left_;
};

TEST_F(TimerQueryTest, ScheduleThatEndsIsEndedAndCountsItsRuns) {
  Timer timer =
      wheel_->ScheduleFunc(std::make_unique<RunsThenEnds>(2), [] {}).value();
  Advance(absl::Milliseconds(1));
  EXPECT_EQ(timer.State(), TimerState::kPending);
  Advance(absl::Milliseconds(1));
  EXPECT_EQ(timer.State(), TimerState::kEnded);
  EXPECT_FALSE(timer.Pending());
  EXPECT_EQ(timer.Runs(), 2);
  // A Reset runs it once more, then the schedule (ended) ends it again.
  EXPECT_FALSE(timer.Reset(absl::Milliseconds(1)));
  EXPECT_EQ(timer.State(), TimerState::kPending);
  Advance(absl::Milliseconds(1));
  EXPECT_EQ(timer.State(), TimerState::kEnded);
  EXPECT_EQ(timer.Runs(), 3);
}

TEST_F(TimerQueryTest, CancelledByCancelAllStaysCancelled) {
  Timer timer = wheel_->AfterFunc(absl::Milliseconds(5), [] {}).value();
  Timer periodic = wheel_->Every(absl::Milliseconds(5), [] {}).value();
  ASSERT_EQ(wheel_->CancelAll(), 2);
  for (Timer* t : {&timer, &periodic}) {
    EXPECT_EQ(t->State(), TimerState::kCancelled);
    EXPECT_FALSE(t->Pending());
    EXPECT_FALSE(t->Stop());
    EXPECT_FALSE(t->Reset(absl::Milliseconds(1)));
    EXPECT_EQ(t->State(), TimerState::kCancelled);
  }
  Advance(absl::Milliseconds(10));
  EXPECT_EQ(timer.State(), TimerState::kCancelled);
  EXPECT_EQ(periodic.Runs(), 0);
}

TEST_F(TimerQueryTest, PeriodicCancelledWhileItRunsIsRunningThenCancelled) {
  Gate gate;
  Event started;
  std::atomic<int64_t> destroyed{0};
  Timer timer =
      wheel_
          ->Every(
              absl::Milliseconds(5),
              [&, counter = std::make_shared<DestructionCounter>(&destroyed)] {
                started.Notify();
                gate.Pass();
              })
          .value();
  clock_->Advance(absl::Milliseconds(5));
  ASSERT_TRUE(started.Wait());
  EXPECT_EQ(timer.State(), TimerState::kPending);  // it would run again
  EXPECT_EQ(wheel_->CancelAll(), 1);
  EXPECT_EQ(timer.State(), TimerState::kRunning);
  EXPECT_FALSE(timer.Pending());
  EXPECT_EQ(destroyed.load(), 0) << "destroyed while it runs";
  gate.Open();
  WaitIdle();
  EXPECT_EQ(timer.State(), TimerState::kCancelled);
  EXPECT_EQ(destroyed.load(), 1) << "not destroyed once the run returned";
  Advance(absl::Milliseconds(50));
  EXPECT_EQ(timer.Runs(), 1);
}

// One worker, held by a callback, so that a due timer waits for it.
using TimerQueryOneWorkerTest = ManualWheelTest<1>;

TEST_F(TimerQueryOneWorkerTest, DueTimerWaitingForABusyWorkerIsStillPending) {
  std::atomic<bool> busy{false};
  std::atomic<bool> release{false};
  std::atomic<int> second_runs{0};
  ASSERT_TRUE(wheel_
                  ->AfterFunc(absl::Milliseconds(1),
                              [&] {
                                busy = true;
                                Eventually([&] { return release.load(); });
                              })
                  .ok());
  Timer waiting =
      wheel_->AfterFunc(absl::Milliseconds(2), [&] { ++second_runs; }).value();
  clock_->Advance(absl::Milliseconds(1));
  ASSERT_TRUE(Eventually([&] { return busy.load(); }));
  clock_->Advance(absl::Milliseconds(1));
  ASSERT_TRUE(
      Eventually([&] { return wheel_->GetStats().worker_queue_depth == 1; }));
  EXPECT_TRUE(waiting.Pending());
  EXPECT_EQ(waiting.State(), TimerState::kPending);
  EXPECT_EQ(waiting.Deadline(), absl::Milliseconds(2));
  EXPECT_EQ(waiting.TimeLeft(), absl::ZeroDuration());
  // Pending in the sense of Stop: it can still be stopped.
  EXPECT_TRUE(waiting.Stop());
  EXPECT_FALSE(waiting.Pending());
  EXPECT_EQ(waiting.State(), TimerState::kStopped);
  release = true;
  wheel_->WaitIdle();
  EXPECT_EQ(second_runs.load(), 0);
}

// ---------------------------------------------------------------------------
// Races, on real time (run under ThreadSanitizer): the queries against Stop,
// Reset and firing, each thread checking what it did itself.

TEST(TimerQueryRaceTest, QueriesRacingStopResetAndFiringRealClock) {
  Options options;
  options.tick = absl::Microseconds(100);
  options.workers = 2;
  auto wheel = TimingWheel::Create(std::move(options)).value();
  const absl::Duration start = SteadyClock()->Now();
  constexpr absl::Duration kMaxShort = absl::Microseconds(300);
  constexpr int kTimers = 16;
  const int rounds = kSanitized ? 5000 : 20000;

  // Timers that keep firing: periodic ones, and one-shots that the chaos
  // thread re-arms at short delays and stops.
  std::vector<Timer> firing;
  std::atomic<int64_t> runs{0};
  for (int i = 0; i < kTimers; ++i) {
    firing.push_back(
        i % 2 == 0
            ? wheel->Every(absl::Microseconds(200), [&] { ++runs; }).value()
            : wheel->AfterFunc(kMaxShort, [&] { ++runs; }).value());
  }
  // Timers of one owner thread each, an hour out: nothing fires them, so
  // the owner knows what its own Stop and Reset must leave behind.
  std::vector<Timer> owned;
  for (int i = 0; i < 2; ++i) {
    owned.push_back(wheel->AfterFunc(absl::Hours(1), [] {}).value());
  }

  std::atomic<int> bad_time_left{0};
  std::atomic<int> owner_failures{0};
  std::atomic<bool> stop_readers{false};
  std::vector<std::thread> threads;
  // Readers: every timer, every query; a time left is never negative nor
  // more than the longest delay asked for (deadlines are read before now);
  // no timer is ever cancelled (no CancelAll, no Shutdown yet).
  std::atomic<int> bad_states{0};
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&] {
      while (!stop_readers.load()) {
        for (const std::vector<Timer>* set : {&firing, &owned}) {
          for (const Timer& timer : *set) {
            timer.Pending();
            const TimerState state = timer.State();
            if (state == TimerState::kCancelled || state == TimerState::kNone ||
                state == TimerState::kEnded) {
              ++bad_states;
            }
            const std::optional<absl::Duration> deadline = timer.Deadline();
            if (deadline.has_value() && *deadline < start) ++bad_time_left;
            const std::optional<absl::Duration> left = timer.TimeLeft();
            if (left.has_value() &&
                (*left < absl::ZeroDuration() ||
                 *left > absl::Hours(1) + absl::Milliseconds(1))) {
              ++bad_time_left;
            }
          }
        }
      }
    });
  }
  // Chaos: Reset and Stop the firing timers at random.
  threads.emplace_back([&] {
    std::mt19937 random(7);
    for (int i = 0; i < rounds; ++i) {
      Timer& timer = firing[random() % kTimers];
      if (random() % 3 == 0) {
        timer.Stop();
      } else {
        timer.Reset(absl::Nanoseconds(random() % 300'000));
      }
      const std::optional<absl::Duration> left = timer.TimeLeft();
      if (left.has_value() && *left > kMaxShort + absl::Milliseconds(1)) {
        ++bad_time_left;
      }
    }
  });
  // Owners: after their own Reset the timer is pending with about the time
  // asked for; after their own Stop (true) it is not, and it is stopped.
  for (int o = 0; o < 2; ++o) {
    threads.emplace_back([&, o] {
      Timer& timer = owned[o];
      for (int i = 0; i < rounds; ++i) {
        timer.Reset(absl::Hours(1));
        const std::optional<absl::Duration> left = timer.TimeLeft();
        if (!timer.Pending() || timer.State() != TimerState::kPending ||
            !left.has_value() ||
            *left > absl::Hours(1) + absl::Milliseconds(1) ||
            *left < absl::Hours(1) - absl::Seconds(10)) {
          ++owner_failures;
        }
        if (!timer.Stop() || timer.Pending() || timer.Deadline().has_value() ||
            timer.State() != TimerState::kStopped) {
          ++owner_failures;
        }
      }
    });
  }
  for (size_t i = 2; i < threads.size(); ++i) threads[i].join();
  stop_readers = true;
  threads[0].join();
  threads[1].join();
  EXPECT_EQ(bad_time_left.load(), 0);
  EXPECT_EQ(bad_states.load(), 0);
  EXPECT_EQ(owner_failures.load(), 0);
  EXPECT_GT(runs.load(), 0);
  wheel->Shutdown();
  for (const Timer& timer : firing) {
    EXPECT_FALSE(timer.Pending());
    EXPECT_NE(timer.State(), TimerState::kPending);
  }
}

}  // namespace
}  // namespace timingwheel
