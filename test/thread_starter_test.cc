// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// thread_starter_test.cc: ThreadStarter (lib/threads/thread_starter.h). A start
// runs its body on a new thread; a start the system refuses (made so by
// ThreadStarterTestPeer: the same std::system_error a real refusal throws)
// is ResourceExhausted with the system's error, starts no thread and
// destroys the body unrun; the starts allowed before the refusals succeed,
// and once the peer is gone every start succeeds again.
// FaultsTest has the real refusal (RLIMIT_AS) and what the wheel does then.

#include "threads/thread_starter.h"

#include <atomic>
#include <cstdint>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util.h"

namespace timingwheel {
namespace {

using internal::ThreadStarter;
using ::testing::HasSubstr;

TEST(ThreadStarterTest, RunsTheBodyOnANewThread) {
  std::thread::id ran_on;
  absl::StatusOr<std::thread> thread =
      ThreadStarter::Start([&] { ran_on = std::this_thread::get_id(); });
  ASSERT_TRUE(thread.ok()) << thread.status();
  ASSERT_TRUE(thread->joinable());
  const std::thread::id id = thread->get_id();
  thread->join();
  EXPECT_EQ(ran_on, id);
  EXPECT_NE(ran_on, std::this_thread::get_id());
}

TEST(ThreadStarterTest, ARefusedStartIsResourceExhaustedAndDestroysTheBody) {
  std::atomic<int64_t> destroyed{0};
  std::atomic<int> runs{0};
  {
    ThreadStarterTestPeer refuse(/*allowed=*/0);
    absl::StatusOr<std::thread> thread = ThreadStarter::Start(
        [counter = DestructionCounter(&destroyed), &runs] { ++runs; });
    ASSERT_FALSE(thread.ok());
    EXPECT_EQ(thread.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_THAT(thread.status().message(),
                HasSubstr("Resource temporarily unavailable (errno 11)"));
  }
  EXPECT_EQ(destroyed.load(), 1);
  EXPECT_EQ(runs.load(), 0);
}

TEST(ThreadStarterTest, TheAllowedStartsSucceedThenEveryOneIsRefused) {
  std::atomic<int> runs{0};
  {
    ThreadStarterTestPeer refuse(/*allowed=*/2);
    for (int i = 0; i < 2; ++i) {
      absl::StatusOr<std::thread> thread =
          ThreadStarter::Start([&runs] { ++runs; });
      ASSERT_TRUE(thread.ok()) << i << ": " << thread.status();
      thread->join();
    }
    for (int i = 0; i < 3; ++i) {
      EXPECT_FALSE(ThreadStarter::Start([&runs] { ++runs; }).ok()) << i;
    }
  }
  absl::StatusOr<std::thread> thread =
      ThreadStarter::Start([&runs] { ++runs; });
  ASSERT_TRUE(thread.ok()) << thread.status();
  thread->join();
  EXPECT_EQ(runs.load(), 3);
}

}  // namespace
}  // namespace timingwheel
