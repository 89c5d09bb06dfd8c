// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// executor_test.cc: Options::executor, callbacks on the user's own executor
// instead of the built-in worker pool: where callbacks run, a task destroyed
// unrun, an executor that runs tasks inline (also for periodic timers and a
// Reset from inside the callback), and Shutdown with tasks not yet started.
//
// The executor matrix: an inline executor (callbacks on the advancer or the
// caller), a thread pool of the test's, and one that drops every task, each
// with Shutdown and destruction from a callback, callbacks nested in
// callbacks of another wheel, a callback that re-arms itself due 100,000
// times, and an executor that throws.

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "gtest/gtest.h"
#include "test_util.h"
#include "timingwheel/timingwheel.h"

namespace timingwheel {
namespace {

// A manual executor: tasks wait until the test runs or drops them.
class QueueExecutor {
 public:
  void Add(absl::AnyInvocable<void()> task) {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.push_back(std::move(task));
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mu_);
    return tasks_.size();
  }
  // Runs (or destroys unrun) every queued task on the calling thread.
  void Drain(bool run) {
    std::deque<absl::AnyInvocable<void()>> tasks;
    {
      std::lock_guard<std::mutex> lock(mu_);
      tasks.swap(tasks_);
    }
    for (auto& task : tasks) {
      if (run) task();
    }
  }

 private:
  std::mutex mu_;
  std::deque<absl::AnyInvocable<void()>> tasks_;
};

struct Fixture {
  explicit Fixture(bool inline_executor) {
    Options options;
    options.clock = clock;
    if (inline_executor) {
      options.executor = [](absl::AnyInvocable<void()> task) { task(); };
    } else {
      options.executor = [this](absl::AnyInvocable<void()> task) {
        executor.Add(std::move(task));
      };
    }
    wheel = TimingWheel::Create(std::move(options)).value();
  }
  void Advance(absl::Duration d) {
    clock->Advance(d);
    wheel->WaitIdle();
  }

  std::shared_ptr<ManualClock> clock = std::make_shared<ManualClock>();
  QueueExecutor executor;
  std::unique_ptr<TimingWheel> wheel;
};

TEST(ExecutorTest, DueTimersAreHandedToTheExecutorAndRunWhereItRunsThem) {
  Fixture f(/*inline_executor=*/false);
  std::atomic<int> runs{0};
  std::thread::id ran_on;
  auto timer = f.wheel->AfterFunc(absl::Milliseconds(5), [&] {
    ran_on = std::this_thread::get_id();
    ++runs;
  });
  ASSERT_TRUE(timer.ok());
  f.clock->Advance(absl::Milliseconds(4));
  EXPECT_EQ(f.executor.size(), 0u);
  f.clock->Advance(absl::Milliseconds(1));
  while (f.executor.size() == 0) std::this_thread::yield();
  EXPECT_EQ(runs, 0);  // handed over, not run by the wheel
  EXPECT_EQ(f.wheel->Pending(), 1);
  f.executor.Drain(/*run=*/true);
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_EQ(f.wheel->Pending(), 0);
  EXPECT_FALSE(timer->Stop());
}

TEST(ExecutorTest, StopBeforeTheExecutorRunsTheTaskWins) {
  Fixture f(/*inline_executor=*/false);
  std::atomic<int> runs{0};
  auto timer = f.wheel->AfterFunc(absl::ZeroDuration(), [&] { ++runs; });
  ASSERT_TRUE(timer.ok());
  EXPECT_EQ(f.executor.size(), 1u);
  EXPECT_TRUE(timer->Stop());
  f.executor.Drain(/*run=*/true);
  EXPECT_EQ(runs, 0);
  EXPECT_EQ(f.wheel->Pending(), 0);
}

TEST(ExecutorTest, ATaskDestroyedUnrunStopsItsTimer) {
  Fixture f(/*inline_executor=*/false);
  std::atomic<int> runs{0};
  auto timer = f.wheel->AfterFunc(absl::ZeroDuration(), [&] { ++runs; });
  ASSERT_TRUE(timer.ok());
  f.executor.Drain(/*run=*/false);
  EXPECT_EQ(runs, 0);
  EXPECT_EQ(f.wheel->Pending(), 0);
  EXPECT_FALSE(timer->Stop());  // already stopped
  EXPECT_EQ(f.wheel->GetStats().stopped, 1);
  // It can be armed again.
  EXPECT_FALSE(timer->Reset(absl::ZeroDuration()));
  f.executor.Drain(/*run=*/true);
  EXPECT_EQ(runs, 1);
}

TEST(ExecutorTest, InlineExecutorRunsPeriodicTimersAndResetFromTheCallback) {
  Fixture f(/*inline_executor=*/true);
  std::atomic<int> ticks{0};
  auto every = f.wheel->Every(absl::Milliseconds(10), [&] { ++ticks; });
  ASSERT_TRUE(every.ok());
  std::atomic<int> resets{0};
  Timer self;
  self = f.wheel
             ->AfterFunc(absl::Milliseconds(3),
                         [&] {
                           if (++resets < 3) self.Reset(absl::Milliseconds(3));
                         })
             .value();
  for (int i = 0; i < 30; ++i) f.Advance(absl::Milliseconds(1));
  EXPECT_EQ(ticks, 3);
  EXPECT_EQ(resets, 3);
  EXPECT_TRUE(every->Stop());
  EXPECT_EQ(f.wheel->Pending(), 0);
}

TEST(ExecutorTest, ShutdownCancelsTasksNotStartedAndCountsThem) {
  Fixture f(/*inline_executor=*/false);
  std::atomic<int> runs{0};
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(f.wheel->AfterFunc(absl::ZeroDuration(), [&] { ++runs; }).ok());
  }
  ASSERT_TRUE(f.wheel->AfterFunc(absl::Hours(1), [&] { ++runs; }).ok());
  EXPECT_EQ(f.wheel->Shutdown(), 4);
  f.executor.Drain(/*run=*/true);  // too late: they do nothing
  EXPECT_EQ(runs, 0);
  EXPECT_EQ(f.wheel->Pending(), 0);
}

// ---- The executor matrix ----------------------------------------------------

enum class ExecutorKind { kInline, kThreadPool, kDropping };

std::string KindName(const ::testing::TestParamInfo<ExecutorKind>& info) {
  switch (info.param) {
    case ExecutorKind::kInline:
      return "Inline";
    case ExecutorKind::kThreadPool:
      return "ThreadPool";
    case ExecutorKind::kDropping:
      return "Dropping";
  }
  return "Unknown";
}

// Options with an executor of the given kind on `clock`; the thread pool,
// when there is one, is shared by every wheel made with `pool`. The executor
// holds a pointer, not the pool: the wheel may release its executor on one
// of the pool's own threads (a task that held the wheel's last reference),
// and a pool cannot join itself.
Options OptionsFor(ExecutorKind kind, std::shared_ptr<ManualClock> clock,
                   ThreadPoolExecutor* pool) {
  Options options;
  options.clock = std::move(clock);
  options.on_failure = [](const Failure&) {};  // the tests count; no log
  switch (kind) {
    case ExecutorKind::kInline:
      options.executor = [](absl::AnyInvocable<void()> task) { task(); };
      break;
    case ExecutorKind::kThreadPool:
      options.executor = [pool](absl::AnyInvocable<void()> task) {
        pool->Add(std::move(task));
      };
      break;
    case ExecutorKind::kDropping:
      options.executor = [](absl::AnyInvocable<void()>) {};
      break;
  }
  return options;
}

class ExecutorMatrixTest : public ::testing::TestWithParam<ExecutorKind> {
 protected:
  ExecutorMatrixTest() : wheel_(MakeWheel()) {}

  std::unique_ptr<TimingWheel> MakeWheel() {
    return TimingWheel::Create(OptionsFor(GetParam(), clock_, &pool_)).value();
  }
  bool Runs() const { return GetParam() != ExecutorKind::kDropping; }

  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>();
  ThreadPoolExecutor pool_;  // outlives the wheels: joins the tasks left
  std::unique_ptr<TimingWheel> wheel_;
};

INSTANTIATE_TEST_SUITE_P(Kinds, ExecutorMatrixTest,
                         ::testing::Values(ExecutorKind::kInline,
                                           ExecutorKind::kThreadPool,
                                           ExecutorKind::kDropping),
                         KindName);

// The executors that run their tasks (inline or on their pool), for the
// tests of what callbacks do.
class RunningExecutorTest : public ExecutorMatrixTest {};

INSTANTIATE_TEST_SUITE_P(Kinds, RunningExecutorTest,
                         ::testing::Values(ExecutorKind::kInline,
                                           ExecutorKind::kThreadPool),
                         KindName);

TEST_P(ExecutorMatrixTest, ShutdownFromACallbackLeavesTheWheelFullyShut) {
  ASSERT_TRUE(wheel_->AfterFunc(absl::Hours(1), [] {}).ok());
  std::atomic<int64_t> cancelled{-1};
  Event done;
  ASSERT_TRUE(wheel_
                  ->AfterFunc(absl::Milliseconds(1),
                              [&] {
                                cancelled = wheel_->Shutdown();
                                done.Notify();
                              })
                  .ok());
  clock_->Advance(absl::Milliseconds(1));
  if (Runs()) {
    ASSERT_TRUE(done.Wait());
    EXPECT_EQ(cancelled, 1);  // the one an hour out
  } else {
    wheel_->WaitIdle();
    EXPECT_EQ(wheel_->GetStats().executor_dropped, 1);
    EXPECT_EQ(wheel_->Shutdown(), 1);
  }
  // Shut for good: every later call returns at once.
  EXPECT_EQ(wheel_->AfterFunc(absl::Milliseconds(1), [] {}).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(wheel_->Shutdown(), 0);
  EXPECT_EQ(wheel_->Pending(), 0);
  wheel_.reset();  // returns: nothing waits for the callback's thread
}

TEST_P(RunningExecutorTest, DestroyingTheWheelFromACallbackReturns) {
  Event done;
  TimingWheel* wheel = wheel_.get();
  ASSERT_TRUE(wheel
                  ->AfterFunc(absl::Milliseconds(1),
                              [&] {
                                wheel_.reset();
                                done.Notify();
                              })
                  .ok());
  ASSERT_TRUE(wheel->AfterFunc(absl::Hours(1), [] {}).ok());
  clock_->Advance(absl::Milliseconds(1));
  ASSERT_TRUE(done.Wait());
  EXPECT_EQ(wheel_, nullptr);
}

TEST_P(RunningExecutorTest, ACallbackRunInsideAnotherKeepsEachTimersCurrent) {
  // Wheel `inner` runs its callbacks inside those of wheel_ when the
  // executor runs them inline.
  std::unique_ptr<TimingWheel> inner = MakeWheel();
  std::atomic<int> outer_runs{0};
  std::atomic<int> inner_runs{0};
  std::atomic<bool> stopped_itself{false};
  Event stopped;
  ASSERT_TRUE(wheel_
                  ->Every(absl::Milliseconds(1),
                          [&] {
                            const Timer self = Timer::Current();
                            ASSERT_TRUE(inner
                                            ->AfterFunc(absl::ZeroDuration(),
                                                        [&] { ++inner_runs; })
                                            .ok());
                            // The inner callback may have run meanwhile: this
                            // is still this timer's run.
                            EXPECT_EQ(Timer::Current(), self);
                            if (++outer_runs == 2) {
                              stopped_itself = Timer::Current().Stop();
                              stopped.Notify();
                            }
                          })
                  .ok());
  for (int i = 0; i < 2; ++i) {
    clock_->Advance(absl::Milliseconds(1));
    wheel_->WaitIdle();
  }
  ASSERT_TRUE(stopped.Wait());
  EXPECT_TRUE(stopped_itself);
  for (int i = 0; i < 5; ++i) {
    clock_->Advance(absl::Milliseconds(1));
    wheel_->WaitIdle();
  }
  EXPECT_EQ(outer_runs, 2) << "a run started after Stop() returned true";
  EXPECT_EQ(wheel_->Pending(), 0);
  inner->Shutdown();
  EXPECT_EQ(inner_runs, 2);
}

TEST_P(RunningExecutorTest, ShutdownOfTheOuterWheelFromANestedCallbackReturns) {
  std::unique_ptr<TimingWheel> inner = MakeWheel();
  Event done;
  ASSERT_TRUE(wheel_
                  ->AfterFunc(absl::Milliseconds(1),
                              [&] {
                                ASSERT_TRUE(
                                    inner
                                        ->AfterFunc(absl::ZeroDuration(),
                                                    [&] {
                                                      wheel_->Shutdown();
                                                      inner->Shutdown();
                                                      done.Notify();
                                                    })
                                        .ok());
                              })
                  .ok());
  clock_->Advance(absl::Milliseconds(1));
  ASSERT_TRUE(done.Wait());
  EXPECT_EQ(wheel_->Shutdown(), 0);
  EXPECT_EQ(inner->Shutdown(), 0);
}

TEST_P(RunningExecutorTest, ACallbackThatRearmsItselfDueLoopsWithoutRecursing) {
  // About 640 bytes of stack per run when each run was called from the
  // previous one's re-arm: 100,000 runs would need 64 MB.
  constexpr int kRuns = 100'000;
  std::atomic<int> runs{0};
  Event done;
  ASSERT_TRUE(wheel_
                  ->AfterFunc(absl::ZeroDuration(),
                              [&] {
                                if (++runs < kRuns) {
                                  Timer::Current().Reset(absl::ZeroDuration());
                                } else {
                                  done.Notify();
                                }
                              })
                  .ok());
  ASSERT_TRUE(done.Wait());
  wheel_->WaitIdle();
  EXPECT_EQ(runs, kRuns);
  EXPECT_EQ(wheel_->Pending(), 0);
}

TEST_P(ExecutorMatrixTest, TimersRunOrAreCountedWhateverTheExecutor) {
  constexpr int kTimers = 200;
  std::atomic<int> runs{0};
  for (int i = 0; i < kTimers; ++i) {
    ASSERT_TRUE(
        wheel_->AfterFunc(absl::Milliseconds(1 + i % 40), [&] { ++runs; })
            .ok());
  }
  clock_->Advance(absl::Milliseconds(40));
  wheel_->WaitIdle();
  wheel_->Shutdown();  // waits for the callbacks running on the pool
  const Stats stats = wheel_->GetStats();
  if (Runs()) {
    EXPECT_EQ(runs, kTimers);
    EXPECT_EQ(stats.executor_dropped, 0);
  } else {
    EXPECT_EQ(runs, 0);
    EXPECT_EQ(stats.executor_dropped, kTimers);
    EXPECT_EQ(stats.stopped, kTimers);
  }
  EXPECT_EQ(wheel_->Pending(), 0);
}

TEST(ExecutorTest, AnExecutorThatThrowsIsContainedAndTheWheelGoesOn) {
  auto clock = std::make_shared<ManualClock>();
  std::atomic<int> throws_left{3};
  std::atomic<int> thrown_reports{0};
  std::atomic<int> dropped_reports{0};
  std::mutex what_mu;
  std::string what;
  Options options;
  options.clock = clock;
  options.executor = [&](absl::AnyInvocable<void()> task) {
    if (throws_left.fetch_sub(1) > 0) throw std::runtime_error("queue full");
    task();
  };
  options.on_failure = [&](const Failure& failure) {
    if (failure.kind == Failure::Kind::kExecutorThrew) {
      ++thrown_reports;
      std::lock_guard<std::mutex> lock(what_mu);
      what = failure.what;
    }
    if (failure.kind == Failure::Kind::kTaskDropped) ++dropped_reports;
  };
  auto wheel = TimingWheel::Create(std::move(options)).value();
  std::atomic<int> runs{0};
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(
        wheel->AfterFunc(absl::Milliseconds(1 + i), [&] { ++runs; }).ok());
  }
  for (int i = 0; i < 5; ++i) {
    clock->Advance(absl::Milliseconds(1));
    wheel->WaitIdle();
  }
  // The first three were dropped by the throws, the wheel went on.
  EXPECT_EQ(runs, 2);
  const Stats stats = wheel->GetStats();
  EXPECT_EQ(stats.executor_threw, 3);
  EXPECT_EQ(stats.executor_dropped, 3);
  EXPECT_EQ(stats.stopped, 3);
  EXPECT_EQ(thrown_reports, 3);
  EXPECT_EQ(dropped_reports, 3);
  {
    std::lock_guard<std::mutex> lock(what_mu);
    EXPECT_EQ(what, "queue full");
  }
  EXPECT_EQ(wheel->Pending(), 0);
  ASSERT_TRUE(wheel->AfterFunc(absl::ZeroDuration(), [&] { ++runs; }).ok());
  EXPECT_EQ(runs, 3);
}

TEST(ExecutorTest, AnExecutorThatThrowsAfterKeepingTheTaskStillRunsIt) {
  auto clock = std::make_shared<ManualClock>();
  auto kept = std::make_shared<QueueExecutor>();
  Options options;
  options.clock = clock;
  options.on_failure = [](const Failure&) {};
  options.executor = [kept](absl::AnyInvocable<void()> task) {
    kept->Add(std::move(task));
    throw 42;  // not even a std::exception
  };
  auto wheel = TimingWheel::Create(std::move(options)).value();
  std::atomic<int> runs{0};
  ASSERT_TRUE(wheel->AfterFunc(absl::ZeroDuration(), [&] { ++runs; }).ok());
  EXPECT_EQ(wheel->GetStats().executor_threw, 1);
  EXPECT_EQ(wheel->Pending(), 1);  // the executor holds it
  kept->Drain(/*run=*/true);
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(wheel->Pending(), 0);
}

TEST(ExecutorTest, CallbackAndSchedulerExceptionsAreReportedWithTheirText) {
  auto clock = std::make_shared<ManualClock>();
  std::mutex mu;
  std::vector<std::pair<Failure::Kind, std::string>> failures;
  Options options;
  options.clock = clock;
  options.workers = 1;
  options.on_failure = [&](const Failure& failure) {
    std::lock_guard<std::mutex> lock(mu);
    failures.emplace_back(failure.kind, failure.what);
  };
  auto wheel = TimingWheel::Create(std::move(options)).value();
  ASSERT_TRUE(wheel
                  ->AfterFunc(absl::Milliseconds(1),
                              [] { throw std::runtime_error("boom"); })
                  .ok());
  clock->Advance(absl::Milliseconds(1));
  wheel->WaitIdle();
  EXPECT_EQ(wheel->GetStats().callbacks_thrown, 1);
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0].first, Failure::Kind::kCallbackThrew);
  EXPECT_EQ(failures[0].second, "boom");
}

}  // namespace
}  // namespace timingwheel
