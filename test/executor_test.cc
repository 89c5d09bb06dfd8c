// Copyright 2026 The timingwheel Authors.
//
// executor_test.cc: Options::executor, callbacks on the user's own executor
// instead of the built-in worker pool: where callbacks run, a task destroyed
// unrun, an executor that runs tasks inline (also for periodic timers and a
// Reset from inside the callback), and Shutdown with tasks not yet started.

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
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
    TimingWheelTestPeer::WaitIdle(*wheel);
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

}  // namespace
}  // namespace timingwheel
