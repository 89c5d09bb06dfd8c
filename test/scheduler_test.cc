// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// scheduler_test.cc: the schedules of scheduler.h and ScheduleFunc.
// FixedRate keeps its phase and skips missed runs; FixedDelay counts from the
// end of a run; ExponentialBackoff grows, caps, jitters within its bounds and
// ends after max_attempts, and with first_attempt_at_once makes its first
// attempt at once. Through a ManualClock wheel: runs happen exactly at the
// deadlines a scheduler returns, a schedule that ends leaves nothing pending
// (State() kEnded), Stop and Reset work as for Every, a user's own scheduler
// is called with the previous deadline and the time, a backoff's callback
// knows its attempt (Timer::Current().Runs()) and the handle tells how the
// retries ended, and bad input is an error.

#include "timingwheel/scheduler.h"

#include <atomic>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util.h"
#include "timingwheel/timingwheel.h"

namespace timingwheel {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::Duration Ms(int64_t n) { return absl::Milliseconds(n); }

// The delay a scheduler answers at `now` (ms) after a run for `previous`.
std::optional<absl::Duration> Ask(Scheduler& scheduler, int64_t previous,
                                  int64_t now) {
  return scheduler.NextDelay({Ms(previous), Ms(now)});
}

// The delays an ExponentialBackoff of `options` gives, asked at time 0, until
// it ends (at most 6).
std::vector<absl::Duration> DelaysOf(const BackoffOptions& options) {
  std::unique_ptr<Scheduler> backoff = ExponentialBackoff(options).value();
  std::vector<absl::Duration> delays;
  for (int i = 0; i < 6; ++i) {
    std::optional<absl::Duration> next = Ask(*backoff, 0, 0);
    if (!next.has_value()) break;
    delays.push_back(*next);
  }
  return delays;
}

TEST(FixedRateTest, AddsThePeriodAndSkipsMissedRuns) {
  std::unique_ptr<Scheduler> rate = FixedRate(Ms(10)).value();
  EXPECT_EQ(Ask(*rate, 0, 0), Ms(10));  // before the first run
  EXPECT_EQ(Ask(*rate, 10, 12), Ms(8));
  // The run for 20 ended at 47: 30 and 40 are skipped, the phase is kept.
  EXPECT_EQ(Ask(*rate, 20, 47), Ms(3));
  EXPECT_EQ(Ask(*rate, 50, 60), Ms(10));  // 60 itself is missed
}

TEST(FixedRateTest, PeriodIsRoundedUpToAWholeNanosecond) {
  const absl::Duration quarter = absl::Nanoseconds(1) / 4;
  std::unique_ptr<Scheduler> rate = FixedRate(quarter).value();
  EXPECT_EQ(rate->NextDelay({Ms(1), Ms(1)}), absl::Nanoseconds(1));
  rate = FixedRate(absl::Nanoseconds(5) + quarter).value();
  EXPECT_EQ(rate->NextDelay({Ms(1), Ms(1)}), absl::Nanoseconds(6));
}

TEST(FixedRateTest, PeriodNotFiniteAndPositiveIsInvalidArgumentNamingIt) {
  for (absl::Duration period :
       {absl::ZeroDuration(), -absl::Nanoseconds(1), -absl::Seconds(1),
        absl::InfiniteDuration(), -absl::InfiniteDuration()}) {
    absl::StatusOr<std::unique_ptr<Scheduler>> rate = FixedRate(period);
    EXPECT_TRUE(absl::IsInvalidArgument(rate.status())) << period;
    EXPECT_THAT(
        rate.status().message(),
        HasSubstr("FixedRate: period is " + absl::FormatDuration(period)));
    EXPECT_THAT(rate.status().message(), HasSubstr("finite and > 0"));
  }
}

TEST(FixedDelayTest, CountsFromTheEndOfTheRun) {
  std::unique_ptr<Scheduler> delay = FixedDelay(Ms(10)).value();
  EXPECT_EQ(Ask(*delay, 0, 0), Ms(10));
  EXPECT_EQ(Ask(*delay, 10, 17), Ms(10));
}

TEST(FixedDelayTest, DelayNotFiniteAndPositiveIsInvalidArgumentNamingIt) {
  for (absl::Duration delay : {absl::ZeroDuration(), -absl::Milliseconds(1),
                               absl::InfiniteDuration()}) {
    absl::StatusOr<std::unique_ptr<Scheduler>> fixed = FixedDelay(delay);
    EXPECT_TRUE(absl::IsInvalidArgument(fixed.status())) << delay;
    EXPECT_THAT(
        fixed.status().message(),
        HasSubstr("FixedDelay: delay is " + absl::FormatDuration(delay)));
  }
}

TEST(ExponentialBackoffTest, GrowsCapsAndEnds) {
  BackoffOptions options;
  options.initial = Ms(100);
  options.max = Ms(1000);
  options.multiplier = 3;
  options.jitter = 0;
  options.max_attempts = 5;
  const std::vector<absl::Duration> delays = DelaysOf(options);
  EXPECT_THAT(delays,
              ElementsAre(Ms(100), Ms(300), Ms(900), Ms(1000), Ms(1000)));
}

TEST(ExponentialBackoffTest, FirstAttemptAtOnceThenTheSameDelays) {
  BackoffOptions options;
  options.initial = Ms(100);
  options.max = Ms(1000);
  options.multiplier = 3;
  options.jitter = 0;
  options.max_attempts = 4;
  options.first_attempt_at_once = true;
  const std::vector<absl::Duration> delays = DelaysOf(options);
  // Four attempts in all, the first of them at once.
  EXPECT_THAT(delays,
              ElementsAre(absl::ZeroDuration(), Ms(100), Ms(300), Ms(900)));
}

TEST(ExponentialBackoffTest, JitterStaysWithinItsBoundsAndSeedsRepeat) {
  BackoffOptions options;
  options.initial = Ms(100);
  options.max = Ms(100);
  options.jitter = 0.25;
  options.seed = 7;
  std::unique_ptr<Scheduler> a = ExponentialBackoff(options).value();
  std::unique_ptr<Scheduler> b = ExponentialBackoff(options).value();
  bool varied = false;
  std::optional<absl::Duration> first;
  for (int i = 0; i < 200; ++i) {
    const absl::Duration d = *Ask(*a, 0, 0);
    EXPECT_GE(d, Ms(75));
    EXPECT_LE(d, Ms(100));         // capped at max after the jitter
    EXPECT_EQ(d, *Ask(*b, 0, 0));  // same seed, same delays
    if (first.has_value() && d != *first) varied = true;
    if (!first.has_value()) first = d;
  }
  EXPECT_TRUE(varied);
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(ExponentialBackoffTest, EachBadOptionIsInvalidArgumentNamingIt) {
  struct Case {
    const char* field;
    void (*spoil)(BackoffOptions&);
  };
  const Case cases[] = {
      {"initial", [](BackoffOptions& o) { o.initial = absl::ZeroDuration(); }},
      {"initial", [](BackoffOptions& o) { o.initial = -absl::Seconds(1); }},
      {"initial",
       [](BackoffOptions& o) { o.initial = absl::InfiniteDuration(); }},
      {"max", [](BackoffOptions& o) { o.max = o.initial - Ms(1); }},
      {"max", [](BackoffOptions& o) { o.max = absl::InfiniteDuration(); }},
      {"multiplier", [](BackoffOptions& o) { o.multiplier = 0.5; }},
      {"multiplier", [](BackoffOptions& o) { o.multiplier = -3; }},
      {"multiplier", [](BackoffOptions& o) { o.multiplier = kNaN; }},
      {"multiplier", [](BackoffOptions& o) { o.multiplier = kInf; }},
      {"jitter", [](BackoffOptions& o) { o.jitter = -0.01; }},
      {"jitter", [](BackoffOptions& o) { o.jitter = 7; }},
      {"jitter", [](BackoffOptions& o) { o.jitter = kNaN; }},
      {"max_attempts", [](BackoffOptions& o) { o.max_attempts = -2; }},
  };
  for (const Case& c : cases) {
    BackoffOptions options;
    c.spoil(options);
    absl::StatusOr<std::unique_ptr<Scheduler>> backoff =
        ExponentialBackoff(options);
    EXPECT_TRUE(absl::IsInvalidArgument(backoff.status())) << c.field;
    EXPECT_THAT(backoff.status().message(),
                HasSubstr(absl::StrCat(
                    "ExponentialBackoff: BackoffOptions::", c.field, " is ")));
  }
}

TEST(ExponentialBackoffTest, EdgesOfTheAllowedRangesAreAccepted) {
  BackoffOptions options;
  options.initial = absl::Nanoseconds(1);
  options.max = options.initial;
  options.multiplier = 1;
  options.jitter = 1;
  options.max_attempts = 0;
  EXPECT_TRUE(ExponentialBackoff(options).ok());
  options.jitter = 0;
  options.max = Ms(100);
  options.multiplier = 1e300;  // huge: the delays saturate at max
  std::unique_ptr<Scheduler> backoff = ExponentialBackoff(options).value();
  EXPECT_EQ(Ask(*backoff, 0, 0), absl::Nanoseconds(1));
  EXPECT_EQ(Ask(*backoff, 0, 0), Ms(100));
  EXPECT_EQ(Ask(*backoff, 0, 0), Ms(100));
}

// Records what the wheel asks and answers from a script.
class ScriptedScheduler : public Scheduler {
 public:
  ScriptedScheduler(std::vector<std::optional<absl::Duration>> answers,
                    std::vector<ScheduleContext>* calls)
      : answers_(std::move(answers)), calls_(calls) {}
  std::optional<absl::Duration> NextDelay(
      const ScheduleContext& context) override {
    calls_->push_back(context);
    if (next_ >= answers_.size()) return std::nullopt;
    return answers_[next_++];
  }

 private:
  std::vector<std::optional<absl::Duration>> answers_;
  size_t next_ = 0;
  std::vector<ScheduleContext>* calls_;
};

// Answers `delay` every time, `limit` times, then ends the timer: bounded, so
// that a wheel that ran it in a loop shows it in a count, not in a hang.
class ConstantScheduler : public Scheduler {
 public:
  ConstantScheduler(absl::Duration delay, int limit)
      : delay_(delay), left_(limit) {}
  std::optional<absl::Duration> NextDelay(const ScheduleContext&) override {
    if (left_ == 0) return std::nullopt;
    --left_;
    return delay_;
  }

 private:
  const absl::Duration delay_;
  int left_;
};

class ScheduleFuncTest : public ManualWheelTest</*kWorkers=*/1> {
 protected:
  // Advances 1 ms at a time up to `ms` since the start; records the times
  // (in ms) at which `runs_` grew.
  void RunUntil(int64_t ms) {
    while (absl::ToInt64Milliseconds(clock_->Now()) < ms) {
      Advance(Ms(1));
      while (seen_ < runs_) {
        ++seen_;
        run_times_.push_back(absl::ToInt64Milliseconds(clock_->Now()));
      }
    }
  }

  std::atomic<int> runs_{0};
  int seen_ = 0;
  std::vector<int64_t> run_times_;
};

TEST_F(ScheduleFuncTest, RunsExactlyAfterTheDelaysReturnedUntilTheEnd) {
  std::vector<ScheduleContext> calls;
  auto timer = wheel_->ScheduleFunc(
      std::make_unique<ScriptedScheduler>(
          std::vector<std::optional<absl::Duration>>{Ms(5), Ms(2), Ms(23)},
          &calls),
      [this] { ++runs_; });
  ASSERT_TRUE(timer.ok());
  EXPECT_EQ(wheel_->Pending(), 1);
  RunUntil(50);
  EXPECT_THAT(run_times_, ElementsAre(5, 7, 30));
  // Asked once before the first run, then after each run with the deadline
  // of that run and the time it returned; the fourth answer ends it.
  ASSERT_EQ(calls.size(), 4u);
  EXPECT_EQ(calls[0].previous_deadline, absl::ZeroDuration());
  EXPECT_EQ(calls[0].now, absl::ZeroDuration());
  EXPECT_EQ(calls[1].previous_deadline, Ms(5));
  EXPECT_EQ(calls[1].now, Ms(5));
  EXPECT_EQ(calls[3].previous_deadline, Ms(30));
  EXPECT_EQ(wheel_->Pending(), 0);
  EXPECT_FALSE(timer->Stop());
}

// Backoff without jitter: 10, 20, 40 ms ... between attempts.
BackoffOptions Retries(int max_attempts, bool first_at_once) {
  BackoffOptions options;
  options.initial = Ms(10);
  options.max = Ms(1000);
  options.jitter = 0;
  options.max_attempts = max_attempts;
  options.first_attempt_at_once = first_at_once;
  return options;
}

TEST_F(ScheduleFuncTest, BackoffAttemptsKnowTheirNumberAndEndAfterTheLast) {
  std::vector<int64_t> attempts;  // written by the one worker, read after
  Timer retry =
      wheel_
          ->ScheduleFunc(ExponentialBackoff(Retries(3, false)),
                         [&] {
                           attempts.push_back(Timer::Current().Runs());
                           ++runs_;
                         })
          .value();
  RunUntil(200);
  EXPECT_THAT(run_times_, ElementsAre(10, 30, 70));
  EXPECT_THAT(attempts, ElementsAre(1, 2, 3));
  // max_attempts ran out: the schedule ended.
  EXPECT_EQ(retry.State(), TimerState::kEnded);
  EXPECT_EQ(retry.Runs(), 3);
  EXPECT_FALSE(retry.Pending());
}

TEST_F(ScheduleFuncTest, BackoffFirstAttemptAtOnceRunsOnAWorkerAtOnce) {
  Timer retry = wheel_
                    ->ScheduleFunc(ExponentialBackoff(Retries(3, true)),
                                   [this] { ++runs_; })
                    .value();
  WaitIdle();
  EXPECT_EQ(runs_.load(), 1) << "the first attempt waits for no tick";
  seen_ = 1;
  RunUntil(100);
  EXPECT_THAT(run_times_, ElementsAre(10, 30));  // then 10 ms, then 20 ms
  EXPECT_EQ(retry.State(), TimerState::kEnded);
  EXPECT_EQ(retry.Runs(), 3);
}

TEST_F(ScheduleFuncTest, BackoffThatSucceedsStopsItselfAndSaysSo) {
  Timer retry = wheel_
                    ->ScheduleFunc(ExponentialBackoff(Retries(5, false)),
                                   [this] {
                                     // The second attempt succeeds.
                                     if (++runs_ == 2) {
                                       Timer::Current().Stop();
                                     }
                                   })
                    .value();
  RunUntil(200);
  EXPECT_THAT(run_times_, ElementsAre(10, 30));
  EXPECT_EQ(retry.State(), TimerState::kStopped);
  EXPECT_EQ(retry.Runs(), 2);
}

TEST_F(ScheduleFuncTest, FixedRateRunsEveryPeriodAndStopEndsIt) {
  auto timer = wheel_->ScheduleFunc(FixedRate(Ms(10)), [this] { ++runs_; });
  ASSERT_TRUE(timer.ok());
  RunUntil(35);
  EXPECT_THAT(run_times_, ElementsAre(10, 20, 30));
  EXPECT_TRUE(timer->Stop());
  RunUntil(60);
  EXPECT_EQ(runs_, 3);
  EXPECT_EQ(wheel_->Pending(), 0);
}

TEST_F(ScheduleFuncTest, ResetRunsAfterDThenTheScheduleGoesOnFromThere) {
  auto timer = wheel_->ScheduleFunc(FixedDelay(Ms(10)), [this] { ++runs_; });
  ASSERT_TRUE(timer.ok());
  RunUntil(4);
  EXPECT_TRUE(timer->Reset(Ms(3)));  // pending: true
  RunUntil(30);
  EXPECT_THAT(run_times_, ElementsAre(7, 17, 27));
  EXPECT_TRUE(timer->Stop());
}

TEST_F(ScheduleFuncTest, NotAskedAfterAStopOrResetFromItsOwnCallback) {
  // A scheduler with side effects (a retry budget, a log line) must see
  // only the runs that happen: once the callback stopped its own timer, or
  // set its next deadline itself with Reset, the scheduler is not asked.
  std::vector<ScheduleContext> stop_calls;
  Timer stopped;
  absl::StatusOr<Timer> stops = wheel_->ScheduleFunc(
      std::make_unique<ScriptedScheduler>(
          std::vector<std::optional<absl::Duration>>{Ms(5), Ms(5), Ms(5)},
          &stop_calls),
      [&stopped] { EXPECT_TRUE(stopped.Stop()); });
  ASSERT_TRUE(stops.ok());
  stopped = *stops;

  std::vector<ScheduleContext> reset_calls;
  Timer reset;
  absl::StatusOr<Timer> resets = wheel_->ScheduleFunc(
      std::make_unique<ScriptedScheduler>(
          std::vector<std::optional<absl::Duration>>{Ms(5), Ms(5), Ms(5)},
          &reset_calls),
      [this, &reset] {
        ++runs_;
        if (runs_ == 1) {
          EXPECT_TRUE(reset.Reset(Ms(20)));
        }
      });
  ASSERT_TRUE(resets.ok());
  reset = *resets;

  RunUntil(5);
  EXPECT_EQ(stop_calls.size(), 1u) << "asked after Stop() returned true";
  EXPECT_EQ(reset_calls.size(), 1u) << "asked although Reset set the next run";
  RunUntil(25);
  EXPECT_THAT(run_times_, ElementsAre(5, 25));
  // After the run that Reset made, the schedule goes on: asked again.
  EXPECT_EQ(reset_calls.size(), 2u);
  EXPECT_TRUE(reset.Stop());
  EXPECT_EQ(stop_calls.size(), 1u);
}

TEST_F(ScheduleFuncTest, BadSchedulersAreErrors) {
  absl::StatusOr<Timer> null_scheduler = wheel_->ScheduleFunc(nullptr, [] {});
  EXPECT_TRUE(absl::IsInvalidArgument(null_scheduler.status()));
  EXPECT_THAT(null_scheduler.status().message(), HasSubstr("null"));

  std::vector<ScheduleContext> calls;
  absl::StatusOr<Timer> ends_at_once = wheel_->ScheduleFunc(
      std::make_unique<ScriptedScheduler>(
          std::vector<std::optional<absl::Duration>>{}, &calls),
      [] {});
  EXPECT_TRUE(absl::IsInvalidArgument(ends_at_once.status()));
  EXPECT_THAT(ends_at_once.status().message(), HasSubstr("first run"));

  absl::StatusOr<Timer> never = wheel_->ScheduleFunc(
      std::make_unique<ScriptedScheduler>(
          std::vector<std::optional<absl::Duration>>{absl::InfiniteDuration()},
          &calls),
      [] {});
  EXPECT_TRUE(absl::IsInvalidArgument(never.status()));
  EXPECT_THAT(never.status().message(), HasSubstr("out of range"));

  absl::StatusOr<Timer> empty_callback =
      wheel_->ScheduleFunc(FixedRate(Ms(1)), nullptr);
  EXPECT_TRUE(absl::IsInvalidArgument(empty_callback.status()));
  EXPECT_EQ(wheel_->Pending(), 0);
}

// A factory's error comes back from ScheduleFunc as it is, and nothing is
// scheduled. (FixedRate(0) and a backoff from -1s used to be accepted, and
// then ran in a loop: hundreds of thousands of runs a second.)
TEST_F(ScheduleFuncTest, AFactoryErrorIsReturnedAndNothingRuns) {
  absl::StatusOr<Timer> zero_rate = wheel_->ScheduleFunc(
      FixedRate(absl::ZeroDuration()), [this] { ++runs_; });
  EXPECT_TRUE(absl::IsInvalidArgument(zero_rate.status()));
  EXPECT_THAT(zero_rate.status().message(), HasSubstr("FixedRate: period"));
  absl::StatusOr<Timer> zero_delay = wheel_->ScheduleFunc(
      FixedDelay(absl::ZeroDuration()), [this] { ++runs_; });
  EXPECT_TRUE(absl::IsInvalidArgument(zero_delay.status()));
  BackoffOptions options;
  options.initial = -absl::Seconds(1);
  options.multiplier = -3;
  options.jitter = 7;
  options.max_attempts = -2;
  absl::StatusOr<Timer> backoff =
      wheel_->ScheduleFunc(ExponentialBackoff(options), [this] { ++runs_; });
  EXPECT_TRUE(absl::IsInvalidArgument(backoff.status()));
  EXPECT_THAT(backoff.status().message(), HasSubstr("initial"));
  EXPECT_EQ(wheel_->Pending(), 0);
  RunUntil(10);
  EXPECT_EQ(runs_, 0);
}

// NextDelay answers a delay from now, so "1 second" runs once a second, also
// long after the clock's origin. (When the answer was a time, a scheduler
// answering 1s ran in a loop once the clock was past 1s: 1000 runs here.)
TEST_F(ScheduleFuncTest, ADelayOfOneSecondRunsOnceASecond) {
  Advance(absl::Seconds(5));
  auto timer = wheel_->ScheduleFunc(
      std::make_unique<ConstantScheduler>(absl::Seconds(1), 1000),
      [this] { ++runs_; });
  ASSERT_TRUE(timer.ok());
  Advance(absl::Seconds(1) - absl::Nanoseconds(1));
  EXPECT_EQ(runs_, 0);
  Advance(absl::Nanoseconds(1));
  EXPECT_EQ(runs_, 1);
  Advance(absl::Seconds(1));
  Advance(absl::Seconds(1));
  EXPECT_EQ(runs_, 3);
  EXPECT_TRUE(timer->Stop());
}

// A delay <= 0 runs the first time at once, and after a run at the next tick:
// never in a loop. (Answering "now" used to run 1000 times at once here.)
TEST_F(ScheduleFuncTest, ADelayNotPositiveRunsAtOnceThenOncePerTick) {
  for (absl::Duration delay : {absl::ZeroDuration(), -absl::Seconds(1)}) {
    std::atomic<int> runs{0};
    auto timer = wheel_->ScheduleFunc(
        std::make_unique<ConstantScheduler>(delay, 1000), [&runs] { ++runs; });
    ASSERT_TRUE(timer.ok());
    WaitIdle();
    EXPECT_EQ(runs, 1) << delay;
    Advance(Ms(1) / 2);  // from a tick boundary: the next one is 1 ms away
    EXPECT_EQ(runs, 1) << delay;
    Advance(Ms(1) / 2);
    EXPECT_EQ(runs, 2) << delay;
    for (int i = 0; i < 3; ++i) Advance(Ms(1));
    EXPECT_EQ(runs, 5) << delay;
    EXPECT_TRUE(timer->Stop());
  }
}

// A delay past the supported range ends the timer, as std::nullopt does.
TEST_F(ScheduleFuncTest, ADelayPastTheRangeEndsTheTimer) {
  std::vector<ScheduleContext> calls;
  auto timer =
      wheel_->ScheduleFunc(std::make_unique<ScriptedScheduler>(
                               std::vector<std::optional<absl::Duration>>{
                                   Ms(1), absl::InfiniteDuration(), Ms(1)},
                               &calls),
                           [this] { ++runs_; });
  ASSERT_TRUE(timer.ok());
  RunUntil(10);
  EXPECT_THAT(run_times_, ElementsAre(1));
  EXPECT_EQ(calls.size(), 2u);
  EXPECT_EQ(wheel_->Pending(), 0);
  EXPECT_FALSE(timer->Stop());
}

// Every(p) is ScheduleFunc(FixedRate(p)): the same runs, skipped runs too.
TEST_F(ScheduleFuncTest, EveryIsScheduleFuncWithAFixedRate) {
  auto every = std::make_shared<RunLog>(clock_);
  auto rate = std::make_shared<RunLog>(clock_);
  const absl::Duration period = absl::Microseconds(2500);
  auto a = wheel_->Every(period, RunLog::Callback(every));
  auto b = wheel_->ScheduleFunc(FixedRate(period), RunLog::Callback(rate));
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok());
  RunUntil(12);
  Advance(Ms(35));  // runs missed meanwhile are skipped
  RunUntil(60);
  const std::vector<absl::Duration> runs = every->runs();
  ASSERT_GE(runs.size(), 3u);
  // Deadlines 2.5, 5, 7.5 ms, each rounded up to a tick.
  EXPECT_EQ(runs[0], Ms(3));
  EXPECT_EQ(runs[1], Ms(5));
  EXPECT_EQ(runs[2], Ms(8));
  EXPECT_EQ(runs, rate->runs());
  EXPECT_TRUE(a->Stop());
  EXPECT_TRUE(b->Stop());
}

}  // namespace
}  // namespace timingwheel
