// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// faults_test.cc: what users get wrong or the world does to a wheel.
// A callback drops the last handle of another timer (pending or fired); a
// shutdown with a million timers pending destroys every callback (each
// captured object is released: LeakSanitizer and the use count check it);
// a handle to a fired timer stays its own and never touches a newer timer,
// however many timers were created and freed since; a Reset caught between
// its check that the wheel is open and arming its timer, while Shutdown runs,
// is waited for and its timer counted by Shutdown (a clock that blocks the
// Reset's thread inside Now() makes that interleaving certain). Create when
// the system refuses a thread is ResourceExhausted naming the thread, with
// every thread started joined and the engine destroyed: for each thread in
// turn through ThreadStarterTestPeer, and for real in a child process whose
// RLIMIT_AS leaves no room for 1024 workers' stacks (not under sanitizers).

#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util.h"
#include "timingwheel/timingwheel.h"

namespace timingwheel {
namespace {

using ::testing::HasSubstr;

class FaultsTest : public ManualWheelTest</*kWorkers=*/2> {};

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

// A ManualClock that parks the one thread it is told to, inside its next
// Now(), until released.
class ParkingClock : public ManualClock {
 public:
  absl::Duration Now() const override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (park_ == std::this_thread::get_id()) {
        park_ = std::thread::id();
        parked_ = true;
        cv_.notify_all();
        cv_.wait(lock, [this] { return released_; });
      }
    }
    return ManualClock::Now();
  }
  void ParkNextNowOn(std::thread::id id) {
    std::lock_guard<std::mutex> lock(mu_);
    park_ = id;
  }
  void WaitParked() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return parked_; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  mutable std::thread::id park_;
  mutable bool parked_ = false;
  bool released_ = false;
};

TEST(ResetRacingShutdownTest, ShutdownWaitsForTheResetAndCountsItsTimer) {
  auto clock = std::make_shared<ParkingClock>();
  std::unique_ptr<TimingWheel> wheel = OneWorkerWheel(clock);
  std::atomic<int> runs{0};
  Timer timer =
      wheel->AfterFunc(absl::Milliseconds(1), [&runs] { ++runs; }).value();
  clock->Advance(absl::Milliseconds(1));
  wheel->WaitIdle();
  ASSERT_EQ(runs, 1);  // fired: a Reset arms it anew

  // The Reset parks in Now(), after its check that the wheel is open.
  std::promise<bool> reset_result;
  std::thread resetter([&] {
    clock->ParkNextNowOn(std::this_thread::get_id());
    reset_result.set_value(timer.Reset(absl::Milliseconds(5)));
  });
  clock->WaitParked();
  auto shutdown =
      std::async(std::launch::async, [&] { return wheel->Shutdown(); });
  // Shutdown has closed the wheel (AfterFunc is refused) and is now waiting
  // for the Reset; release it only then. The probes that got in before are
  // pending timers that Shutdown cancels too.
  int probes = 0;
  while (wheel->AfterFunc(absl::Hours(1), [] {}).ok()) {
    ++probes;
    std::this_thread::yield();
  }
  EXPECT_EQ(shutdown.wait_for(std::chrono::milliseconds(50)),
            std::future_status::timeout)
      << "Shutdown returned with a Reset still arming its timer";
  clock->Release();
  resetter.join();
  // The Reset armed the fired timer anew (false: it was not pending), and
  // Shutdown cancelled that arm and counted it.
  EXPECT_FALSE(reset_result.get_future().get());
  EXPECT_EQ(shutdown.get(), 1 + probes);
  clock->Advance(absl::Milliseconds(10));
  EXPECT_EQ(runs, 1);
  const Stats stats = wheel->GetStats();
  EXPECT_EQ(stats.scheduled, 2 + probes);
  EXPECT_EQ(stats.fired, 1);
  EXPECT_EQ(stats.cancelled, 1 + probes);
  EXPECT_EQ(wheel->Pending(), 0);
}

// Create when the system refuses the thread after `allowed` started ones,
// on a ManualClock: checks the error, that every thread started ran its
// hook and was joined (the hook's count is final once Create returns), and
// that the engine is gone (the clock's only other owner).
void ExpectRefusedAfter(int allowed, Options options, const char* thread,
                        const char* asks_for) {
  SCOPED_TRACE(thread);
  auto clock = std::make_shared<ManualClock>();
  options.clock = clock;
  auto started = std::make_shared<std::atomic<int>>(0);
  options.on_thread_start = [started](ThreadRole, int) { ++*started; };
  absl::StatusOr<std::unique_ptr<TimingWheel>> wheel;
  {
    ThreadStarterTestPeer refuse(allowed);
    wheel = TimingWheel::Create(std::move(options));
  }
  ASSERT_FALSE(wheel.ok());
  EXPECT_EQ(wheel.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(wheel.status().message(),
              HasSubstr(absl::StrCat("TimingWheel::Create: cannot start a "
                                     "thread, ",
                                     thread,
                                     ": Resource temporarily unavailable "
                                     "(errno 11); the wheel asks for ",
                                     asks_for)));
  EXPECT_EQ(started->load(), allowed);
  EXPECT_EQ(clock.use_count(), 1) << "the engine was not destroyed";
}

TEST(ThreadRefusedTest, CreateIsResourceExhaustedAndStopsTheThreadsStarted) {
  // Three workers start first, then the poller, then the advancer.
  const char* const threads[] = {"worker 0 of 3", "worker 1 of 3",
                                 "worker 2 of 3", "the poller", "the advancer"};
  for (int allowed = 0; allowed < 5; ++allowed) {
    Options options;
    options.workers = 3;
    ExpectRefusedAfter(allowed, std::move(options), threads[allowed],
                       "5 threads (Options::workers = 3, a poller and an "
                       "advancer)");
  }
  ThreadStarterTestPeer refuse(/*allowed=*/5);
  Options options;
  options.clock = std::make_shared<ManualClock>();
  options.workers = 3;
  EXPECT_TRUE(TimingWheel::Create(std::move(options)).ok());
}

TEST(ThreadRefusedTest, WithAnExecutorOnlyThePollerAndTheAdvancerStart) {
  for (int allowed = 0; allowed < 2; ++allowed) {
    Options options;
    options.executor = [](absl::AnyInvocable<void()> task) { task(); };
    ExpectRefusedAfter(allowed, std::move(options),
                       allowed == 0 ? "the poller" : "the advancer",
                       "2 threads (a poller and an advancer; the executor "
                       "runs the callbacks)");
  }
}

// Create in a process whose address space holds a few more thread stacks
// only (RLIMIT_AS, which binds root too, where RLIMIT_NPROC does not), with
// 1024 workers: exits 0 if Create says ResourceExhausted, after printing the
// status.
[[noreturn]] void CreateBeyondTheAddressSpace() {
  std::ifstream statm("/proc/self/statm");
  uint64_t pages = 0;
  statm >> pages;
  const uint64_t headroom = uint64_t{64} << 20;  // 8 stacks of 8 MiB
  rlimit limit{};
  getrlimit(RLIMIT_AS, &limit);
  limit.rlim_cur =
      pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) + headroom;
  if (setrlimit(RLIMIT_AS, &limit) != 0) std::_Exit(3);
  Options options;
  options.clock = std::make_shared<ManualClock>();
  options.workers = 1024;
  absl::StatusOr<std::unique_ptr<TimingWheel>> wheel =
      TimingWheel::Create(std::move(options));
  if (wheel.ok()) {
    std::fprintf(stderr, "Create started all 1024 workers\n");
    std::_Exit(1);
  }
  std::fprintf(stderr, "%s\n", wheel.status().ToString().c_str());
  std::_Exit(wheel.status().code() == absl::StatusCode::kResourceExhausted ? 0
                                                                           : 2);
}

TEST(ThreadLimitDeathTest, CreateBeyondTheAddressSpaceIsResourceExhausted) {
  if (kSanitized) {
    GTEST_SKIP() << "the sanitizers reserve terabytes of address space, so "
                    "RLIMIT_AS cannot leave room for a few thread stacks";
  }
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(CreateBeyondTheAddressSpace(), ::testing::ExitedWithCode(0),
              "RESOURCE_EXHAUSTED: TimingWheel::Create: .*worker");
}

}  // namespace
}  // namespace timingwheel
