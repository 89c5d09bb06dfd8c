// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// thread_options_test.cc: Options::thread_name_prefix and
// Options::on_thread_start (timingwheel.h). The threads carry the prefix in
// /proc/self/task/*/comm, two wheels with two prefixes are told apart, the
// hook runs once on each of the wheel's threads (none with an executor) with
// its role and index, after the thread is named and before it takes any
// timer, and a prefix that does not leave the longest name within Linux's 15
// characters (or an empty one) is InvalidArgument saying how long it may be,
// checked at each boundary.

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util.h"
#include "timingwheel/timingwheel.h"

namespace timingwheel {
namespace {

using ::testing::HasSubstr;

std::string CurrentThreadName() {
  char name[32] = {};
  pthread_getname_np(pthread_self(), name, sizeof(name));
  return name;
}

// Every call of an on_thread_start hook: role, index, and what the thread
// looked like then.
class StartLog {
 public:
  struct Call {
    ThreadRole role;
    int index;
    std::string name;  // the thread's name when the hook ran
    std::thread::id thread;
  };

  std::function<void(ThreadRole, int)> Hook() {
    return [this](ThreadRole role, int index) {
      std::lock_guard<std::mutex> lock(mu_);
      calls_.push_back(
          {role, index, CurrentThreadName(), std::this_thread::get_id()});
    };
  }
  std::vector<Call> calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<Call> calls_;
};

std::set<std::tuple<ThreadRole, int, std::string>> RolesAndNames(
    const std::vector<StartLog::Call>& calls) {
  std::set<std::tuple<ThreadRole, int, std::string>> out;
  for (const StartLog::Call& call : calls) {
    out.insert({call.role, call.index, call.name});
  }
  return out;
}

TEST(ThreadOptionsTest, ThreadsCarryThePrefixInTheirNames) {
  StartLog log;
  Options options;
  options.clock = std::make_shared<ManualClock>();
  options.workers = 3;
  options.thread_name_prefix = "rpc";
  options.on_thread_start = log.Hook();
  auto wheel = TimingWheel::Create(std::move(options)).value();
  // Each thread is named before its hook runs: once all have run, all are.
  ASSERT_TRUE(Eventually([&] { return log.calls().size() == 5; }));
  const std::multiset<std::string> names = ThreadNames();
  for (const char* name : {"rpc-poller", "rpc-advancer", "rpc-worker-0",
                           "rpc-worker-1", "rpc-worker-2"}) {
    EXPECT_EQ(names.count(name), 1u) << name;
  }
  EXPECT_EQ(names.count("rpc-worker-3"), 0u);
}

TEST(ThreadOptionsTest, TwoWheelsWithTwoPrefixesAreToldApart) {
  StartLog log_a;
  StartLog log_b;
  auto make_options = [](const char* prefix, StartLog* log) {
    Options options;
    options.clock = std::make_shared<ManualClock>();
    options.workers = 1;
    options.thread_name_prefix = prefix;
    options.on_thread_start = log->Hook();
    return options;
  };
  auto wheel_a = TimingWheel::Create(make_options("cache", &log_a)).value();
  auto wheel_b = TimingWheel::Create(make_options("conn", &log_b)).value();
  ASSERT_TRUE(Eventually(
      [&] { return log_a.calls().size() == 3 && log_b.calls().size() == 3; }));
  const std::multiset<std::string> names = ThreadNames();
  for (const char* name : {"cache-poller", "cache-advancer", "cache-worker-0",
                           "conn-poller", "conn-advancer", "conn-worker-0"}) {
    EXPECT_EQ(names.count(name), 1u) << name;
  }
}

TEST(ThreadOptionsTest, HookRunsOnceOnEachThreadWithItsRoleAndIndex) {
  StartLog log;
  Options options;
  options.clock = std::make_shared<ManualClock>();
  options.workers = 3;
  options.on_thread_start = log.Hook();
  auto wheel = TimingWheel::Create(std::move(options)).value();
  wheel->Shutdown();  // joins every thread: every hook has returned
  const std::vector<StartLog::Call> calls = log.calls();
  ASSERT_EQ(calls.size(), 5u);
  EXPECT_EQ(RolesAndNames(calls),
            (std::set<std::tuple<ThreadRole, int, std::string>>{
                {ThreadRole::kPoller, 0, "tw-poller"},
                {ThreadRole::kAdvancer, 0, "tw-advancer"},
                {ThreadRole::kWorker, 0, "tw-worker-0"},
                {ThreadRole::kWorker, 1, "tw-worker-1"},
                {ThreadRole::kWorker, 2, "tw-worker-2"},
            }));
  std::set<std::thread::id> threads;
  for (const StartLog::Call& call : calls) threads.insert(call.thread);
  EXPECT_EQ(threads.size(), 5u) << "each on a thread of its own";
  EXPECT_EQ(threads.count(std::this_thread::get_id()), 0u);
}

TEST(ThreadOptionsTest, HookRunsBeforeTheWorkerTakesATimer) {
  // A worker's hook has returned before it runs any callback: a callback on
  // a worker finds that worker's hook call recorded.
  StartLog log;
  Options options;
  auto clock = std::make_shared<ManualClock>();
  options.clock = clock;
  options.workers = 2;
  options.on_thread_start = log.Hook();
  auto wheel = TimingWheel::Create(std::move(options)).value();
  std::atomic<int> found{-1};
  ASSERT_TRUE(wheel
                  ->AfterFunc(absl::ZeroDuration(),
                              [&] {
                                int hits = 0;
                                for (const StartLog::Call& call : log.calls()) {
                                  if (call.thread ==
                                      std::this_thread::get_id()) {
                                    ++hits;
                                  }
                                }
                                found = hits;
                              })
                  .ok());
  wheel->WaitIdle();
  EXPECT_EQ(found.load(), 1);
}

TEST(ThreadOptionsTest, WithAnExecutorOnlyThePollerAndAdvancerStart) {
  StartLog log;
  Options options;
  options.clock = std::make_shared<ManualClock>();
  options.executor = [](absl::AnyInvocable<void()> task) { task(); };
  options.thread_name_prefix = "ex";
  options.on_thread_start = log.Hook();
  auto wheel = TimingWheel::Create(std::move(options)).value();
  wheel->Shutdown();
  EXPECT_EQ(RolesAndNames(log.calls()),
            (std::set<std::tuple<ThreadRole, int, std::string>>{
                {ThreadRole::kPoller, 0, "ex-poller"},
                {ThreadRole::kAdvancer, 0, "ex-advancer"},
            }));
}

absl::Status CreateStatus(const std::string& prefix, int workers,
                          bool executor = false) {
  Options options;
  options.clock = std::make_shared<ManualClock>();
  options.workers = workers;
  options.thread_name_prefix = prefix;
  if (executor) {
    options.executor = [](absl::AnyInvocable<void()> task) { task(); };
  }
  return TimingWheel::Create(std::move(options)).status();
}

TEST(ThreadOptionsTest, PrefixLengthIsCheckedAtEachBoundary) {
  // The longest name must fit 15 characters: `-advancer` leaves 6, and
  // `-worker-N` leaves 6 up to 10 workers, 5 up to 100, 4 up to 1000, 3
  // beyond.
  struct Case {
    int workers;
    size_t longest_ok;
  } cases[] = {{1, 6},   {10, 6},   {11, 5},  {100, 5},
               {101, 4}, {1000, 4}, {1001, 3}};
  for (const Case& c : cases) {
    if (kSanitized && c.workers > 100) continue;  // threads are costly there
    const std::string fits(c.longest_ok, 'p');
    EXPECT_TRUE(CreateStatus(fits, c.workers).ok()) << c.workers;
    const std::string too_long(c.longest_ok + 1, 'p');
    const absl::Status status = CreateStatus(too_long, c.workers);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.workers;
    EXPECT_THAT(status.message(), HasSubstr("Options::thread_name_prefix"));
    EXPECT_THAT(status.message(), HasSubstr(absl::StrCat(
                                      "at most ", c.longest_ok, " characters")))
        << status;
  }
}

TEST(ThreadOptionsTest, WithAnExecutorOnlyTheAdvancerNameLimitsThePrefix) {
  EXPECT_TRUE(CreateStatus("pppppp", 1000, /*executor=*/true).ok());
  EXPECT_EQ(CreateStatus("ppppppp", 1000, /*executor=*/true).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ThreadOptionsTest, EmptyPrefixIsInvalidArgument) {
  const absl::Status status = CreateStatus("", 1);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("must not be empty"));
}

#ifdef __linux__
// The poller's timed sleeps end within 1 us of the head bucket's release
// time, not within Linux's default 50 us timer slack, by which every timer
// would be later.
TEST(ThreadOptionsTest, ThePollerSleepsWithAMicrosecondOfTimerSlack) {
  std::atomic<pid_t> poller_tid{0};
  Options options;
  options.workers = 1;
  options.on_thread_start = [&poller_tid](ThreadRole role, int) {
    if (role == ThreadRole::kPoller) poller_tid = gettid();
  };
  std::unique_ptr<TimingWheel> wheel =
      TimingWheel::Create(std::move(options)).value();
  ASSERT_TRUE(Eventually([&] { return poller_tid.load() != 0; }));
  const std::string path =
      absl::StrCat("/proc/", poller_tid.load(), "/timerslack_ns");
  if (!std::ifstream(path)) GTEST_SKIP() << "this kernel has no " << path;
  const auto slack_ns = [&path] {
    std::ifstream file(path);
    int64_t ns = -1;
    file >> ns;
    return ns;
  };
  EXPECT_TRUE(Eventually([&] { return slack_ns() == 1000; }))
      << path << ": " << slack_ns();
}
#endif

}  // namespace
}  // namespace timingwheel
