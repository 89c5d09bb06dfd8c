// Copyright 2026 The timingwheel Authors.
//
// faults_test.cc: what users get wrong or the world does to a wheel.
// A callback drops the last handle of another timer (pending or fired); a
// shutdown with a million timers pending destroys every callback (each
// captured object is released: LeakSanitizer and the use count check it);
// a handle to a fired timer stays its own and never touches a newer timer,
// however many timers were created and freed since.

#include <atomic>
#include <memory>
#include <optional>
#include <vector>

#include "gtest/gtest.h"
#include "test_util.h"
#include "timingwheel/timingwheel.h"

namespace timingwheel {
namespace {

class FaultsTest : public ::testing::Test {
 protected:
  FaultsTest() {
    Options options;
    options.clock = clock_;
    options.workers = 2;
    wheel_ = TimingWheel::Create(options).value();
  }
  void Advance(absl::Duration d) {
    clock_->Advance(d);
    TimingWheelTestPeer::WaitIdle(*wheel_);
  }

  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>();
  std::unique_ptr<TimingWheel> wheel_;
};

TEST_F(FaultsTest, ACallbackDropsTheLastHandleOfAnotherTimer) {
  std::atomic<int> pending_runs{0};
  std::atomic<int> fired_runs{0};
  std::optional<Timer> pending_handle =
      wheel_->AfterFunc(absl::Milliseconds(50), [&] { ++pending_runs; })
          .value();
  std::optional<Timer> fired_handle =
      wheel_->AfterFunc(absl::Milliseconds(1), [&] { ++fired_runs; }).value();
  Advance(absl::Milliseconds(1));
  ASSERT_EQ(fired_runs, 1);

  // The only handles go away inside a callback: the fired timer's node is
  // freed there (ASan checks), the pending one still runs.
  ASSERT_TRUE(wheel_
                  ->AfterFunc(absl::Milliseconds(1),
                              [&] {
                                pending_handle.reset();
                                fired_handle.reset();
                              })
                  .ok());
  Advance(absl::Milliseconds(1));
  EXPECT_FALSE(pending_handle.has_value());
  EXPECT_EQ(wheel_->Pending(), 1);
  Advance(absl::Milliseconds(48));
  EXPECT_EQ(pending_runs, 1);
  EXPECT_EQ(fired_runs, 1);
  EXPECT_EQ(wheel_->Pending(), 0);
}

TEST_F(FaultsTest, ShutdownWithAMillionPendingDestroysEveryCallback) {
  constexpr int kTimers = 1000000;
  auto captured = std::make_shared<int>(0);
  for (int i = 0; i < kTimers; ++i) {
    // Spread over every level: 1 ms .. about 16 minutes.
    ASSERT_TRUE(
        wheel_
            ->AfterFunc(absl::Milliseconds(1 + i), [captured] { ++*captured; })
            .ok());
  }
  EXPECT_EQ(captured.use_count(), kTimers + 1);
  EXPECT_EQ(wheel_->Pending(), kTimers);
  EXPECT_EQ(wheel_->Shutdown(), kTimers);
  EXPECT_EQ(captured.use_count(), 1);  // every callback destroyed
  EXPECT_EQ(*captured, 0);             // none ran
  EXPECT_EQ(wheel_->Pending(), 0);
}

TEST_F(FaultsTest, AHandleToAFiredTimerNeverTouchesANewerTimer) {
  std::atomic<int> old_runs{0};
  Timer old_timer =
      wheel_->AfterFunc(absl::Milliseconds(1), [&] { ++old_runs; }).value();
  Advance(absl::Milliseconds(1));
  ASSERT_EQ(old_runs, 1);

  // Churn: many timers created, fired and freed, so that freed node memory
  // is reused by the ones created next.
  std::atomic<int> churn_runs{0};
  for (int round = 0; round < 10; ++round) {
    for (int i = 0; i < 1000; ++i) {
      ASSERT_TRUE(
          wheel_->AfterFunc(absl::Milliseconds(1), [&] { ++churn_runs; }).ok());
    }
    Advance(absl::Milliseconds(1));
  }
  std::atomic<int> new_runs{0};
  std::vector<Timer> newer;
  for (int i = 0; i < 1000; ++i) {
    newer.push_back(
        wheel_->AfterFunc(absl::Milliseconds(5), [&] { ++new_runs; }).value());
  }
  // The old handle is still its own timer: Stop says it fired, Reset re-arms
  // the old callback; none of the newer timers is stopped or moved.
  EXPECT_FALSE(old_timer.Stop());
  EXPECT_FALSE(old_timer.Reset(absl::Milliseconds(1)));
  for (const Timer& t : newer) EXPECT_NE(t, old_timer);
  Advance(absl::Milliseconds(1));
  EXPECT_EQ(old_runs, 2);
  EXPECT_EQ(new_runs, 0);
  Advance(absl::Milliseconds(4));
  EXPECT_EQ(new_runs, 1000);
  EXPECT_EQ(churn_runs, 10000);
  EXPECT_EQ(wheel_->Pending(), 0);
}

}  // namespace
}  // namespace timingwheel
