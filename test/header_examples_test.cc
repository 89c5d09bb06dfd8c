// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// header_examples_test.cc: the examples in the comments of the public
// headers, include/timingwheel/*.h, each compiled here in a context that
// defines what the example leaves to the reader, and run to check what it
// shows. check_examples.py (the examples_quoted test) fails unless every
// example of a header is quoted from this file, whitespace aside.

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "test_util.h"
#include "timingwheel/clock.h"
#include "timingwheel/loop_wheel.h"
#include "timingwheel/scheduler.h"
#include "timingwheel/scoped_timer.h"
#include "timingwheel/timer.h"
#include "timingwheel/timingwheel.h"

namespace timingwheel {
namespace {

// ---- clock.h

TEST(ClockHeaderExample, AdvanceRunsTheDueCallback) {
  auto clock = std::make_shared<timingwheel::ManualClock>();
  timingwheel::Options options;
  options.clock = clock;
  auto wheel = timingwheel::TimingWheel::Create(std::move(options)).value();
  bool fired = false;
  auto timer = wheel->AfterFunc(absl::Seconds(5), [&fired] { fired = true; });
  clock->Advance(absl::Seconds(5));  // the callback is now due
  wheel->WaitIdle();                 // and has run: `fired` is true

  EXPECT_TRUE(timer.ok());
  EXPECT_TRUE(fired);
}

// ---- timer.h

struct Connection {
  void Close() { closed = true; }
  std::atomic<bool> closed{false};
};

using TimerHeaderExample = ManualWheelTest<1>;

TEST_F(TimerHeaderExample, StoppedDeadlineNeverCloses) {
  std::unique_ptr<TimingWheel>& wheel = wheel_;
  auto conn = std::make_shared<Connection>();

  timingwheel::Timer deadline =
      wheel->AfterFunc(absl::Seconds(30), [conn] { conn->Close(); }).value();
  // ... on activity:
  deadline.Reset(absl::Seconds(30));  // push the deadline out
  // ... when the peer closes the connection first:
  if (deadline.Stop()) {
    // The close callback will never start.
  }

  Advance(absl::Minutes(1));
  EXPECT_FALSE(conn->closed);
}

int idle_closes = 0;
void LogIdleClose() { ++idle_closes; }

TEST_F(TimerHeaderExample, StateTellsWhetherTheDeadlineFired) {
  std::unique_ptr<TimingWheel>& wheel = wheel_;
  auto conn = std::make_shared<Connection>();
  timingwheel::Timer deadline =
      wheel->AfterFunc(absl::Seconds(30), [conn] { conn->Close(); }).value();
  Advance(absl::Seconds(30));

  if (deadline.State() == timingwheel::TimerState::kFired) {
    LogIdleClose();  // the deadline closed it; kStopped: Stop() came first
  }

  EXPECT_TRUE(conn->closed);
  EXPECT_EQ(idle_closes, 1);
}

TEST_F(TimerHeaderExample, CallbackStopsItsOwnTimer) {
  std::unique_ptr<TimingWheel>& wheel = wheel_;
  int beats = 0;

  auto heartbeat = wheel->Every(absl::Seconds(1), [&beats] {
    if (++beats == 5) timingwheel::Timer::Current().Stop();
  });

  for (int second = 0; second < 10; ++second) Advance(absl::Seconds(1));
  EXPECT_EQ(beats, 5);
  EXPECT_FALSE(heartbeat->Pending());
}

// ---- scheduler.h

// The callbacks of one timer never overlap, and WaitIdle orders them before
// the test's reads.
int connect_attempts = 0;
bool TryConnect() { return ++connect_attempts == 3; }
int give_ups = 0;
void GiveUp() { ++give_ups; }

absl::Status ConnectWithRetries(TimingWheel* wheel) {
  timingwheel::BackoffOptions backoff;
  backoff.initial = absl::Milliseconds(100);
  backoff.max = absl::Seconds(10);
  backoff.max_attempts = 8;
  backoff.first_attempt_at_once = true;  // try now, then back off
  absl::StatusOr<timingwheel::Timer> retry = wheel->ScheduleFunc(
      timingwheel::ExponentialBackoff(backoff),
      [max_attempts = backoff.max_attempts] {
        timingwheel::Timer self = timingwheel::Timer::Current();
        if (TryConnect()) {
          self.Stop();  // done: State() becomes kStopped
        } else if (self.Runs() == max_attempts) {
          GiveUp();  // the last attempt failed: State() becomes kEnded
        }
      });
  if (!retry.ok()) return retry.status();
  return absl::OkStatus();
}

bool queue_busy = false;
bool QueueIsBusy() { return queue_busy; }
int polls = 0;
void Poll() { ++polls; }

class PollQueue : public timingwheel::Scheduler {
 public:
  std::optional<absl::Duration> NextDelay(
      const timingwheel::ScheduleContext& /*context*/) override {
    return QueueIsBusy() ? absl::Seconds(1) : absl::Seconds(10);
  }
};

using SchedulerHeaderExample = ManualWheelTest<1>;

TEST_F(SchedulerHeaderExample, BackoffEndsOnceConnected) {
  ASSERT_TRUE(ConnectWithRetries(wheel_.get()).ok());
  for (int second = 0; second < 60; ++second) Advance(absl::Seconds(1));
  EXPECT_EQ(connect_attempts, 3);
  EXPECT_EQ(give_ups, 0);
  EXPECT_EQ(wheel_->Pending(), 0);
}

TEST_F(SchedulerHeaderExample, OwnSchedulerPollsFasterWhenBusy) {
  std::unique_ptr<TimingWheel>& wheel = wheel_;

  absl::StatusOr<timingwheel::Timer> poller =
      wheel->ScheduleFunc(std::make_unique<PollQueue>(), [] { Poll(); });

  ASSERT_TRUE(poller.ok());
  for (int second = 0; second < 30; ++second) Advance(absl::Seconds(1));
  EXPECT_EQ(polls, 3);
  // The run at 30 s chose the next at 40 s; from there, one a second.
  queue_busy = true;
  for (int second = 0; second < 20; ++second) Advance(absl::Seconds(1));
  EXPECT_EQ(polls, 3 + 11);
}

// ---- scoped_timer.h

struct Step {
  absl::Status Run() { return run(); }
  std::function<absl::Status()> run;
};

struct Request {
  std::vector<Step> steps;
};

absl::Status Handle(timingwheel::TimingWheel& wheel, Request& request) {
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  absl::StatusOr<timingwheel::Timer> t = wheel.AfterFunc(
      absl::Seconds(2), [cancelled] { cancelled->store(true); });
  if (!t.ok()) return t.status();
  timingwheel::ScopedTimer deadline(*std::move(t));
  for (Step& step : request.steps) {
    if (cancelled->load()) return absl::DeadlineExceededError("slow");
    absl::Status status = step.Run();
    if (!status.ok()) return status;  // this return stops the deadline
  }
  return absl::OkStatus();  // and so does this one
}

class ScopedTimerHeaderExample : public ManualWheelTest<1> {
 protected:
  // A step that takes `d` of the wheel's time.
  Step Takes(absl::Duration d) {
    return Step{[this, d] {
      Advance(d);
      return absl::OkStatus();
    }};
  }
};

TEST_F(ScopedTimerHeaderExample, QuickRequestStopsItsDeadline) {
  Request request{{Takes(absl::Seconds(1)), Takes(absl::Milliseconds(500))}};
  EXPECT_TRUE(Handle(*wheel_, request).ok());
  EXPECT_EQ(wheel_->Pending(), 0);
}

TEST_F(ScopedTimerHeaderExample, SlowRequestIsCancelled) {
  Request request{{Takes(absl::Seconds(3)), Takes(absl::Seconds(1))}};
  EXPECT_EQ(Handle(*wheel_, request).code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST_F(ScopedTimerHeaderExample, FailedStepStopsItsDeadline) {
  Request request{{Step{[] { return absl::UnavailableError("down"); }}}};
  EXPECT_EQ(Handle(*wheel_, request).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(wheel_->Pending(), 0);
}

// ---- timingwheel.h

std::atomic<int> retries{0};
void Retry() { ++retries; }

absl::Status SendRequest() {
  auto wheel = timingwheel::TimingWheel::Create().value();
  absl::StatusOr<timingwheel::Timer> t =
      wheel->AfterFunc(absl::Milliseconds(250), [] { Retry(); });
  if (!t.ok()) return t.status();
  // ... the reply came in time:
  t->Stop();  // true: Retry() will never start
  return absl::OkStatus();
}

// ---- metrics_text.h

TEST(MetricsTextHeaderExample, OneWheelAndSeveral) {
  auto clock = std::make_shared<ManualClock>();
  auto wheel = OneWorkerWheel(clock);
  auto rpc_wheel = OneWorkerWheel(clock);
  auto cache_wheel = OneWorkerWheel(clock);

  std::string body = timingwheel::MetricsText(wheel->GetStats());

  // Several wheels in one exposition, told apart by a `wheel` label:
  std::string both = timingwheel::MetricsText(
      {{"rpc", rpc_wheel->GetStats()}, {"cache", cache_wheel->GetStats()}});

  EXPECT_TRUE(absl::StrContains(body, "\ntimingwheel_timers_fired_total 0\n"));
  EXPECT_TRUE(absl::StrContains(
      both, "\ntimingwheel_timers_fired_total{wheel=\"rpc\"} 0\n"));
  EXPECT_TRUE(absl::StrContains(
      both, "\ntimingwheel_timers_fired_total{wheel=\"cache\"} 0\n"));
}

// ---- loop_wheel.h

TEST(LoopWheelHeaderExample, TheIdleTimeoutClosesAfterTheLoopSleptOnIt) {
  const absl::Time start = absl::Now();
  auto wheel = timingwheel::LoopWheel::Create().value();
  bool closed = false;
  timingwheel::LoopTimer idle =
      wheel->AfterFunc(absl::Milliseconds(30), [&] { closed = true; }).value();
  idle.Reset(absl::Milliseconds(20));  // activity: the timeout moves
  while (std::optional<absl::Duration> wait = wheel->TimeUntilNext()) {
    absl::SleepFor(*wait);  // epoll_wait(epfd, events, n, ms) in a loop
    wheel->RunDue();
  }

  EXPECT_TRUE(closed);
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(20));
}

TEST(TimingWheelHeaderExample, Runs) { EXPECT_TRUE(SendRequest().ok()); }

}  // namespace
}  // namespace timingwheel
