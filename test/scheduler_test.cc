// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// scheduler_test.cc: the schedules of scheduler.h and ScheduleFunc.
// FixedRate keeps its phase and skips missed runs; FixedDelay counts from the
// end of a run; ExponentialBackoff grows, caps, jitters within its bounds and
// ends after max_attempts. Through a ManualClock wheel: runs happen exactly at
// the deadlines a scheduler returns, a schedule that ends leaves nothing
// pending, Stop and Reset work as for Every, a user's own scheduler is called
// with the previous deadline and the time, and bad input is an error.

#include "timingwheel/scheduler.h"

#include <atomic>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util.h"
#include "timingwheel/timingwheel.h"

namespace timingwheel {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::Duration Ms(int64_t n) { return absl::Milliseconds(n); }

TEST(FixedRateTest, AddsThePeriodAndSkipsMissedRuns) {
  auto rate = FixedRate(Ms(10));
  EXPECT_EQ(rate->Next(Ms(0), Ms(0)), Ms(10));
  EXPECT_EQ(rate->Next(Ms(10), Ms(12)), Ms(20));
  // The run for 20 ended at 47: 30 and 40 are skipped, the phase is kept.
  EXPECT_EQ(rate->Next(Ms(20), Ms(47)), Ms(50));
  EXPECT_EQ(rate->Next(Ms(50), Ms(60)), Ms(70));
}

TEST(FixedDelayTest, CountsFromTheEndOfTheRun) {
  auto delay = FixedDelay(Ms(10));
  EXPECT_EQ(delay->Next(Ms(0), Ms(0)), Ms(10));
  EXPECT_EQ(delay->Next(Ms(10), Ms(17)), Ms(27));
}

TEST(ExponentialBackoffTest, GrowsCapsAndEnds) {
  BackoffOptions options;
  options.initial = Ms(100);
  options.max = Ms(1000);
  options.multiplier = 3;
  options.jitter = 0;
  options.max_attempts = 5;
  auto backoff = ExponentialBackoff(options);
  std::vector<absl::Duration> delays;
  for (int i = 0; i < 6; ++i) {
    std::optional<absl::Duration> next = backoff->Next(Ms(0), Ms(0));
    if (!next.has_value()) break;
    delays.push_back(*next);
  }
  EXPECT_THAT(delays,
              ElementsAre(Ms(100), Ms(300), Ms(900), Ms(1000), Ms(1000)));
}

TEST(ExponentialBackoffTest, JitterStaysWithinItsBoundsAndSeedsRepeat) {
  BackoffOptions options;
  options.initial = Ms(100);
  options.max = Ms(100);
  options.jitter = 0.25;
  options.seed = 7;
  auto a = ExponentialBackoff(options);
  auto b = ExponentialBackoff(options);
  bool varied = false;
  std::optional<absl::Duration> first;
  for (int i = 0; i < 200; ++i) {
    const absl::Duration d = *a->Next(Ms(0), Ms(0));
    EXPECT_GE(d, Ms(75));
    EXPECT_LE(d, Ms(100));                 // capped at max after the jitter
    EXPECT_EQ(d, *b->Next(Ms(0), Ms(0)));  // same seed, same delays
    if (first.has_value() && d != *first) varied = true;
    if (!first.has_value()) first = d;
  }
  EXPECT_TRUE(varied);
}

// Records what the wheel asks and answers from a script.
class ScriptedScheduler : public Scheduler {
 public:
  struct Call {
    absl::Duration previous;
    absl::Duration now;
  };
  ScriptedScheduler(std::vector<std::optional<absl::Duration>> answers,
                    std::vector<Call>* calls)
      : answers_(std::move(answers)), calls_(calls) {}
  std::optional<absl::Duration> Next(absl::Duration previous,
                                     absl::Duration now) override {
    calls_->push_back({previous, now});
    if (next_ >= answers_.size()) return std::nullopt;
    return answers_[next_++];
  }

 private:
  std::vector<std::optional<absl::Duration>> answers_;
  size_t next_ = 0;
  std::vector<Call>* calls_;
};

class ScheduleFuncTest : public ::testing::Test {
 protected:
  ScheduleFuncTest() {
    Options options;
    options.clock = clock_;
    options.workers = 1;
    wheel_ = TimingWheel::Create(std::move(options)).value();
  }
  // Advances 1 ms at a time up to `ms` since the start; records the times
  // (in ms) at which `runs_` grew.
  void RunUntil(int64_t ms) {
    while (absl::ToInt64Milliseconds(clock_->Now()) < ms) {
      clock_->Advance(Ms(1));
      TimingWheelTestPeer::WaitIdle(*wheel_);
      while (seen_ < runs_) {
        ++seen_;
        run_times_.push_back(absl::ToInt64Milliseconds(clock_->Now()));
      }
    }
  }

  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>();
  std::unique_ptr<TimingWheel> wheel_;
  std::atomic<int> runs_{0};
  int seen_ = 0;
  std::vector<int64_t> run_times_;
};

TEST_F(ScheduleFuncTest, RunsExactlyAtTheScheduledDeadlinesUntilTheEnd) {
  std::vector<ScriptedScheduler::Call> calls;
  auto timer = wheel_->ScheduleFunc(
      std::make_unique<ScriptedScheduler>(
          std::vector<std::optional<absl::Duration>>{Ms(5), Ms(7), Ms(30)},
          &calls),
      [this] { ++runs_; });
  ASSERT_TRUE(timer.ok());
  EXPECT_EQ(wheel_->Pending(), 1);
  RunUntil(50);
  EXPECT_THAT(run_times_, ElementsAre(5, 7, 30));
  // Asked once before the first run, then after each run with the deadline
  // of that run and the time it returned; the fourth answer ends it.
  ASSERT_EQ(calls.size(), 4u);
  EXPECT_EQ(calls[0].previous, absl::ZeroDuration());
  EXPECT_EQ(calls[1].previous, Ms(5));
  EXPECT_EQ(calls[1].now, Ms(5));
  EXPECT_EQ(calls[3].previous, Ms(30));
  EXPECT_EQ(wheel_->Pending(), 0);
  EXPECT_FALSE(timer->Stop());
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

TEST_F(ScheduleFuncTest, BadSchedulersAreErrors) {
  absl::StatusOr<Timer> null_scheduler = wheel_->ScheduleFunc(nullptr, [] {});
  EXPECT_TRUE(absl::IsInvalidArgument(null_scheduler.status()));
  EXPECT_THAT(null_scheduler.status().message(), HasSubstr("null"));

  std::vector<ScriptedScheduler::Call> calls;
  absl::StatusOr<Timer> ends_at_once = wheel_->ScheduleFunc(
      std::make_unique<ScriptedScheduler>(
          std::vector<std::optional<absl::Duration>>{}, &calls),
      [] {});
  EXPECT_TRUE(absl::IsInvalidArgument(ends_at_once.status()));
  EXPECT_THAT(ends_at_once.status().message(), HasSubstr("first run"));

  absl::StatusOr<Timer> empty_callback =
      wheel_->ScheduleFunc(FixedRate(Ms(1)), nullptr);
  EXPECT_TRUE(absl::IsInvalidArgument(empty_callback.status()));
  EXPECT_EQ(wheel_->Pending(), 0);
}

}  // namespace
}  // namespace timingwheel
