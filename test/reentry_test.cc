// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// reentry_test.cc: Shutdown called from every place where the wheel runs user
// code, while a Shutdown is already under way, returns instead of waiting for
// itself or for a thread that is joining it (lib/threads/reentry.h; DESIGN.md,
// trap 13); so does WaitIdle from a callback. A call that hangs ends the test
// binary with a message (a hung thread cannot be joined), so a regression fails
// instead of hanging CI.

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "test_util.h"
#include "timingwheel/clock.h"
#include "timingwheel/scheduler.h"
#include "timingwheel/timingwheel.h"

namespace timingwheel {
namespace {

// Runs `f` on a thread of its own and waits up to kPatience for it to
// return. One that does not is a hang: reported, and the binary ends.
void MustReturn(const char* what, std::function<void()> f) {
  auto returned = std::make_shared<Event>();
  std::thread([f = std::move(f), returned] {
    f();
    returned->Notify();
  }).detach();
  if (!returned->Wait()) {
    std::fprintf(stderr, "FAILED: %s did not return within %s: a hang\n", what,
                 absl::FormatDuration(kPatience).c_str());
    std::fflush(stderr);
    std::_Exit(1);
  }
}

// User code that, once another thread's Shutdown of the same wheel has
// begun, calls Shutdown itself.
class ShutdownFromUserCode {
 public:
  void Bind(TimingWheel* wheel) { wheel_.store(wheel); }

  // The user code: waits for the other Shutdown to close the wheel, then
  // calls Shutdown, which must return at once.
  void Run() {
    entered_.Notify();
    if (!other_started_.Pass()) return;
    // Closed once AfterFunc is refused; a timer made just before is stopped.
    ASSERT_TRUE(Eventually([this] {
      absl::StatusOr<Timer> probe =
          wheel_.load()->AfterFunc(absl::Hours(1), [] {});
      if (probe.ok()) probe->Stop();
      return absl::IsFailedPrecondition(probe.status());
    }));
    nested_ = wheel_.load()->Shutdown();
    nested_returned_.Notify();
  }

  // The test's side: waits for the user code to run, then shuts the wheel
  // down from this thread; both calls must return.
  void ShutDownFromAnotherThread(int64_t expected_cancelled) {
    ASSERT_TRUE(entered_.Wait()) << "the user code never ran";
    int64_t first = -1;
    other_started_.Open();
    MustReturn("the first Shutdown",
               [&] { first = wheel_.load()->Shutdown(); });
    MustReturn("the Shutdown from user code",
               [&] { ASSERT_TRUE(nested_returned_.Wait()); });
    EXPECT_EQ(first, expected_cancelled);
    EXPECT_EQ(nested_, 0) << "a Shutdown that is not the first counts nothing";
  }

 private:
  std::atomic<TimingWheel*> wheel_{nullptr};
  Event entered_;
  Gate other_started_;
  Event nested_returned_;
  int64_t nested_ = -1;
};

// Calls `f` when destroyed (not when moved from).
class OnDestroy {
 public:
  explicit OnDestroy(std::function<void()> f)
      : f_(std::make_unique<std::function<void()>>(std::move(f))) {}
  OnDestroy(OnDestroy&&) = default;
  OnDestroy& operator=(OnDestroy&&) = delete;
  ~OnDestroy() {
    if (f_ != nullptr) (*f_)();
  }

 private:
  std::unique_ptr<std::function<void()>> f_;
};

std::unique_ptr<TimingWheel> MakeWheel(Options options) {
  absl::StatusOr<std::unique_ptr<TimingWheel>> wheel =
      TimingWheel::Create(std::move(options));
  EXPECT_TRUE(wheel.ok()) << wheel.status();
  return wheel.ok() ? *std::move(wheel) : nullptr;
}

TEST(ReentryTest, ShutdownFromTheDestructorOfACallbackItCancelsReturns) {
  // Shutdown destroys the callbacks it cancels; one whose destructor shuts
  // the wheel down again is inside the first Shutdown, on its thread.
  auto clock = std::make_shared<ManualClock>();
  std::unique_ptr<TimingWheel> wheel = OneWorkerWheel(clock);
  ASSERT_NE(wheel, nullptr);
  int64_t nested = -1;
  TimingWheel* raw = wheel.get();
  ASSERT_TRUE(
      wheel
          ->AfterFunc(absl::Seconds(60), [guard = OnDestroy([raw, &nested] {
                                            nested = raw->Shutdown();
                                          })] {})
          .ok());
  int64_t cancelled = -1;
  MustReturn("Shutdown", [&] { cancelled = wheel->Shutdown(); });
  EXPECT_EQ(cancelled, 1);
  EXPECT_EQ(nested, 0);
}

TEST(ReentryTest, WaitIdleFromACallbackReturns) {
  // It would wait for the callback that calls it.
  auto clock = std::make_shared<ManualClock>();
  std::unique_ptr<TimingWheel> wheel = OneWorkerWheel(clock);
  ASSERT_NE(wheel, nullptr);
  Event returned;
  TimingWheel* raw = wheel.get();
  ASSERT_TRUE(wheel
                  ->AfterFunc(absl::Milliseconds(1),
                              [raw, &returned] {
                                raw->WaitIdle();
                                returned.Notify();
                              })
                  .ok());
  clock->Advance(absl::Milliseconds(1));
  MustReturn("WaitIdle from a callback", [&] { ASSERT_TRUE(returned.Wait()); });
  wheel->WaitIdle();
}

TEST(ReentryTest, ResetOnTheAdvancerWhileACancelAllWaitsForItReturns) {
  // A CancelAll looks for timers on the advancer's thread, and a Reset that
  // finds a CancelAll under way waits for it to end: but not a Reset from
  // code that runs on the advancer (here the executor), which the CancelAll
  // waits for. That wait would never end.
  auto clock = std::make_shared<ManualClock>();
  Options options;
  options.clock = clock;
  options.workers = 1;
  Event in_executor;
  Gate cancel_all_called;
  std::atomic<Timer*> other{nullptr};
  std::atomic<bool> reset_returned{false};
  options.executor = [&](absl::AnyInvocable<void()> task) {
    in_executor.Notify();
    if (cancel_all_called.Pass()) {
      // Let the CancelAll get to its wait for this thread (if it has not, the
      // Reset below passes anyway and the test shows nothing, but passes).
      absl::SleepFor(absl::Milliseconds(50));
      other.load()->Reset(absl::Hours(2));
      reset_returned.store(true);
    }
    task();
  };
  std::unique_ptr<TimingWheel> wheel = MakeWheel(std::move(options));
  ASSERT_NE(wheel, nullptr);
  absl::StatusOr<Timer> far = wheel->AfterFunc(absl::Hours(1), [] {});
  ASSERT_TRUE(far.ok());
  other.store(&*far);
  ASSERT_TRUE(wheel->AfterFunc(absl::Milliseconds(1), [] {}).ok());
  clock->Advance(absl::Milliseconds(1));
  ASSERT_TRUE(in_executor.Wait());
  int64_t cancelled = -1;
  MustReturn("CancelAll while the advancer's executor calls Reset", [&] {
    cancel_all_called.Open();
    cancelled = wheel->CancelAll();
  });
  EXPECT_TRUE(reset_returned.load());
  EXPECT_EQ(cancelled, 1) << "the timer the Reset armed again";
  EXPECT_FALSE(far->Pending());
}

// Where the user code that calls Shutdown runs.
enum class Where {
  kHookAfterACallbackThrew,           // on_failure, on a worker
  kHookAfterTheExecutorThrew,         // on_failure, on the advancer
  kHookOfATaskDestroyedUnrun,         // on_failure, on the advancer
  kScheduler,                         // NextDelay, on a worker
  kDestructorOfACallbackAfterItsRun,  // on a worker
  kCallbackOnTheExecutorsThread,      // on a thread of the user's executor
  kHookOfATaskDestroyedOnTheExecutorsThread,  // on_failure, likewise
};

std::string WhereName(const testing::TestParamInfo<Where>& info) {
  switch (info.param) {
    case Where::kHookAfterACallbackThrew:
      return "HookAfterACallbackThrew";
    case Where::kHookAfterTheExecutorThrew:
      return "HookAfterTheExecutorThrew";
    case Where::kHookOfATaskDestroyedUnrun:
      return "HookOfATaskDestroyedUnrun";
    case Where::kScheduler:
      return "Scheduler";
    case Where::kDestructorOfACallbackAfterItsRun:
      return "DestructorOfACallbackAfterItsRun";
    case Where::kCallbackOnTheExecutorsThread:
      return "CallbackOnTheExecutorsThread";
    case Where::kHookOfATaskDestroyedOnTheExecutorsThread:
      return "HookOfATaskDestroyedOnTheExecutorsThread";
  }
  return "Unknown";
}

// Asks for one delay on the caller's thread; the second time (on a worker,
// after the first run) runs the user code.
class ShuttingDownScheduler : public Scheduler {
 public:
  explicit ShuttingDownScheduler(ShutdownFromUserCode* user) : user_(user) {}
  std::optional<absl::Duration> NextDelay(const ScheduleContext&) override {
    if (calls_++ == 1) user_->Run();
    return absl::Milliseconds(1);
  }

 private:
  ShutdownFromUserCode* const user_;
  int calls_ = 0;
};

class ReentryWhileShuttingDownTest : public testing::TestWithParam<Where> {};

TEST_P(ReentryWhileShuttingDownTest, ShutdownFromUserCodeReturns) {
  ShutdownFromUserCode user;
  auto clock = std::make_shared<ManualClock>();
  Options options;
  options.clock = clock;
  options.workers = 1;
  const Where where = GetParam();
  // Outlives the wheel: its thread may still hold a task of it.
  std::optional<ThreadPoolExecutor> executor;
  if (where == Where::kHookAfterACallbackThrew ||
      where == Where::kHookAfterTheExecutorThrew ||
      where == Where::kHookOfATaskDestroyedUnrun ||
      where == Where::kHookOfATaskDestroyedOnTheExecutorsThread) {
    const Failure::Kind kind = where == Where::kHookAfterACallbackThrew
                                   ? Failure::Kind::kCallbackThrew
                               : where == Where::kHookAfterTheExecutorThrew
                                   ? Failure::Kind::kExecutorThrew
                                   : Failure::Kind::kTaskDropped;
    options.on_failure = [&user, kind](const Failure& failure) {
      if (failure.kind == kind) user.Run();
    };
  }
  if (where == Where::kHookAfterTheExecutorThrew) {
    options.executor = [](absl::AnyInvocable<void()>) {
      throw std::runtime_error("the executor is full");
    };
  } else if (where == Where::kHookOfATaskDestroyedUnrun) {
    options.executor = [](absl::AnyInvocable<void()> task) {
      task = nullptr;  // dropped: its timer counts as stopped
    };
  } else if (where == Where::kCallbackOnTheExecutorsThread ||
             where == Where::kHookOfATaskDestroyedOnTheExecutorsThread) {
    executor.emplace(/*threads=*/1,
                     where == Where::kCallbackOnTheExecutorsThread
                         ? ThreadPoolExecutor::Tasks::kRun
                         : ThreadPoolExecutor::Tasks::kDestroy);
    options.executor = [&executor](absl::AnyInvocable<void()> task) {
      executor->Add(std::move(task));
    };
  }
  std::unique_ptr<TimingWheel> wheel = MakeWheel(std::move(options));
  ASSERT_NE(wheel, nullptr);
  user.Bind(wheel.get());
  // Pending at the Shutdown, so cancelled and counted by it.
  ASSERT_TRUE(wheel->AfterFunc(absl::Hours(1), [] {}).ok());
  int64_t cancelled = 1;
  switch (where) {
    case Where::kHookAfterACallbackThrew:
      ASSERT_TRUE(wheel
                      ->AfterFunc(absl::Milliseconds(1),
                                  [] { throw std::runtime_error("failed"); })
                      .ok());
      break;
    case Where::kHookAfterTheExecutorThrew:
    case Where::kHookOfATaskDestroyedUnrun:
    case Where::kHookOfATaskDestroyedOnTheExecutorsThread:
      ASSERT_TRUE(wheel->AfterFunc(absl::Milliseconds(1), [] {}).ok());
      break;
    case Where::kCallbackOnTheExecutorsThread:
      ASSERT_TRUE(
          wheel->AfterFunc(absl::Milliseconds(1), [&user] { user.Run(); })
              .ok());
      break;
    case Where::kScheduler:
      // Pending while its scheduler is asked (a periodic timer is pending
      // until stopped), so Shutdown cancels its next run and counts it.
      cancelled = 2;
      ASSERT_TRUE(wheel
                      ->ScheduleFunc(
                          std::make_unique<ShuttingDownScheduler>(&user), [] {})
                      .ok());
      break;
    case Where::kDestructorOfACallbackAfterItsRun:
      // The handle goes at once: the worker's release after the run is the
      // last, and destroys the callback there.
      ASSERT_TRUE(
          wheel
              ->AfterFunc(absl::Milliseconds(1),
                          [guard = OnDestroy([&user] { user.Run(); })] {})
              .ok());
      break;
  }
  clock->Advance(absl::Milliseconds(1));
  user.ShutDownFromAnotherThread(cancelled);
}

INSTANTIATE_TEST_SUITE_P(
    EveryPlace, ReentryWhileShuttingDownTest,
    testing::Values(Where::kHookAfterACallbackThrew,
                    Where::kHookAfterTheExecutorThrew,
                    Where::kHookOfATaskDestroyedUnrun, Where::kScheduler,
                    Where::kDestructorOfACallbackAfterItsRun,
                    Where::kCallbackOnTheExecutorsThread,
                    Where::kHookOfATaskDestroyedOnTheExecutorsThread),
    WhereName);

}  // namespace
}  // namespace timingwheel
