// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// delay_queue_test.cc: tests of DelayQueue (lib/delay_queue.h), the one
// priority queue of buckets shared by every level. Buckets come out ordered by
// expiration; a bucket is due once the clock reaches origin + e * tick; Poll
// blocks until the head is due, then returns every due bucket at once, in
// order, and leaves the rest; an Offer that becomes the head wakes a waiting
// Poll; ManualClock::Advance wakes Poll; Close wakes Poll and makes it (and
// every later Poll) return false; IsIdle counts what Poll handed out until
// Done. On a clock of a user's own (real speed plus jumps, public API only), a
// jump wakes a Poll sleeping an hour; a clock whose RealTimeUntil keeps
// saying "no wait" for a head its Now() does not show due makes Poll sleep,
// not spin. A queue registers with its clock and
// leaves it when destroyed, also while other threads keep advancing the clock
// and other queues come and go (run these under ASan and TSan).
//
// Time is a ManualClock, except in the *RealClock tests that check a Poll
// sleeping an hour on the real clock is woken by Close, a due Offer or a
// jump of the clock. Poll
// runs in its own thread and every wait for it is bounded, so a missed wake-up
// fails the test instead of hanging it. The buckets are plain Bucket objects of
// no level: the queue only keeps their addresses.

#include "delay_queue.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <limits>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bucket.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util.h"
#include "timingwheel/clock.h"

namespace timingwheel::internal {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr auto kTimeout = std::chrono::seconds(10);
// How long a Poll that must keep blocking is watched.
constexpr auto kStillBlocked = std::chrono::milliseconds(50);
constexpr int64_t kMs = 1000 * 1000;

// The (expiration, bucket) pairs of `entries`, for matching.
std::vector<std::pair<int64_t, Bucket*>> Pairs(
    const std::vector<DelayQueue::Entry>& entries) {
  std::vector<std::pair<int64_t, Bucket*>> out;
  for (const DelayQueue::Entry& e : entries) {
    out.emplace_back(e.release_tick, e.bucket);
  }
  return out;
}

std::vector<int64_t> Expirations(const std::vector<DelayQueue::Entry>& e) {
  std::vector<int64_t> out;
  for (const DelayQueue::Entry& entry : e) out.push_back(entry.release_tick);
  return out;
}

// One Poll in its own thread.
class AsyncPoll {
 public:
  explicit AsyncPoll(DelayQueue* queue)
      : queue_(queue), future_(std::async(std::launch::async, [queue] {
          Result result;
          result.ok = queue->Poll(&result.entries);
          return result;
        })) {}
  // Never hangs: a Poll that did not return is unblocked by Close.
  ~AsyncPoll() {
    if (future_.valid() &&
        future_.wait_for(kTimeout) != std::future_status::ready) {
      ADD_FAILURE() << "Poll still blocked at the end of the test";
    }
    if (future_.valid() && future_.wait_for(std::chrono::seconds(0)) !=
                               std::future_status::ready) {
      queue_->Close();
    }
  }

  struct Result {
    bool ok = false;
    std::vector<DelayQueue::Entry> entries;
  };

  bool ReturnsWithin(std::chrono::milliseconds timeout) {
    return future_.wait_for(timeout) == std::future_status::ready;
  }
  // Waits for the Poll to return (bounded); closes the queue if it does not.
  Result Get() {
    if (!ReturnsWithin(
            std::chrono::duration_cast<std::chrono::milliseconds>(kTimeout))) {
      ADD_FAILURE() << "Poll did not return";
      queue_->Close();
    }
    return future_.get();
  }

 private:
  DelayQueue* const queue_;
  std::future<Result> future_;
};

class DelayQueueTest : public ::testing::Test {
 protected:
  DelayQueueTest()
      : clock_(std::make_shared<ManualClock>()),
        queue_(clock_, absl::ZeroDuration(), kMs) {
    for (int i = 0; i < 8; ++i)
      buckets_.push_back(std::make_unique<Bucket>(nullptr));
  }

  Bucket* b(int i) { return buckets_[i].get(); }

  std::shared_ptr<ManualClock> clock_;
  DelayQueue queue_;
  std::vector<std::unique_ptr<Bucket>> buckets_;
};

TEST_F(DelayQueueTest, NewQueueIsEmptyAndIdle) {
  EXPECT_EQ(queue_.size(), 0);
  EXPECT_TRUE(queue_.IsIdle());
}

TEST_F(DelayQueueTest, PollReturnsBucketsOrderedByExpiration) {
  queue_.Offer(b(0), 5);
  queue_.Offer(b(1), 1);
  queue_.Offer(b(2), 9);
  queue_.Offer(b(3), 3);
  queue_.Offer(b(4), 7);
  queue_.Offer(b(5), 0);
  EXPECT_EQ(queue_.size(), 6);
  clock_->Advance(absl::Milliseconds(100));
  std::vector<DelayQueue::Entry> out;
  ASSERT_TRUE(queue_.Poll(&out));  // all due: returns at once
  EXPECT_THAT(Pairs(out), ElementsAre(std::pair<int64_t, Bucket*>(0, b(5)),
                                      std::pair<int64_t, Bucket*>(1, b(1)),
                                      std::pair<int64_t, Bucket*>(3, b(3)),
                                      std::pair<int64_t, Bucket*>(5, b(0)),
                                      std::pair<int64_t, Bucket*>(7, b(4)),
                                      std::pair<int64_t, Bucket*>(9, b(2))));
  EXPECT_EQ(queue_.size(), 0);
}

TEST_F(DelayQueueTest, ManyOffersComeOutSorted) {
  // 200 buckets in a scrambled order (97 is coprime with 200).
  std::vector<std::unique_ptr<Bucket>> many;
  for (int i = 0; i < 200; ++i)
    many.push_back(std::make_unique<Bucket>(nullptr));
  for (int i = 0; i < 200; ++i) {
    const int e = (i * 97) % 200;
    queue_.Offer(many[e].get(), e);
  }
  clock_->Advance(absl::Seconds(1));
  std::vector<DelayQueue::Entry> out;
  ASSERT_TRUE(queue_.Poll(&out));
  ASSERT_EQ(out.size(), 200u);
  for (int i = 0; i < 200; ++i) {
    EXPECT_EQ(out[i].release_tick, i);
    EXPECT_EQ(out[i].bucket, many[i].get());
  }
}

TEST_F(DelayQueueTest, PollReturnsEveryDueBucketAndLeavesTheRest) {
  queue_.Offer(b(0), 2);
  queue_.Offer(b(1), 6);
  queue_.Offer(b(2), 4);
  queue_.Offer(b(3), 2);
  queue_.Offer(b(4), 5);
  clock_->Advance(absl::Milliseconds(4));
  std::vector<DelayQueue::Entry> out;
  ASSERT_TRUE(queue_.Poll(&out));
  EXPECT_THAT(Expirations(out), ElementsAre(2, 2, 4));
  EXPECT_EQ(queue_.size(), 2);
  queue_.Done(3);
  EXPECT_TRUE(queue_.IsIdle());

  clock_->Advance(absl::Milliseconds(2));
  out.clear();
  ASSERT_TRUE(queue_.Poll(&out));
  EXPECT_THAT(Pairs(out), ElementsAre(std::pair<int64_t, Bucket*>(5, b(4)),
                                      std::pair<int64_t, Bucket*>(6, b(1))));
}

TEST_F(DelayQueueTest, PollBlocksUntilTheHeadIsDue) {
  queue_.Offer(b(0), 5);
  queue_.Offer(b(1), 8);
  AsyncPoll poll(&queue_);
  EXPECT_FALSE(poll.ReturnsWithin(kStillBlocked));
  clock_->Advance(absl::Milliseconds(4));  // 1 ms short
  EXPECT_FALSE(poll.ReturnsWithin(kStillBlocked));
  clock_->Advance(absl::Nanoseconds(999999));  // 1 ns short
  EXPECT_FALSE(poll.ReturnsWithin(kStillBlocked));
  clock_->Advance(absl::Nanoseconds(1));  // exactly due
  AsyncPoll::Result result = poll.Get();
  EXPECT_TRUE(result.ok);
  EXPECT_THAT(Pairs(result.entries),
              ElementsAre(std::pair<int64_t, Bucket*>(5, b(0))));
  EXPECT_EQ(queue_.size(), 1);
}

TEST_F(DelayQueueTest, OneAdvancePastSeveralHeadsReleasesThemAllAtOnce) {
  queue_.Offer(b(0), 3);
  queue_.Offer(b(1), 1);
  queue_.Offer(b(2), 2);
  queue_.Offer(b(3), 10);
  AsyncPoll poll(&queue_);
  EXPECT_FALSE(poll.ReturnsWithin(kStillBlocked));
  clock_->Advance(absl::Milliseconds(3));
  AsyncPoll::Result result = poll.Get();
  EXPECT_TRUE(result.ok);
  EXPECT_THAT(Expirations(result.entries), ElementsAre(1, 2, 3));
}

TEST_F(DelayQueueTest, PollOnEmptyQueueWaitsForAnOffer) {
  AsyncPoll poll(&queue_);
  EXPECT_FALSE(poll.ReturnsWithin(kStillBlocked));
  queue_.Offer(b(0), 0);  // due at once (clock at 0)
  AsyncPoll::Result result = poll.Get();
  EXPECT_TRUE(result.ok);
  EXPECT_THAT(Pairs(result.entries),
              ElementsAre(std::pair<int64_t, Bucket*>(0, b(0))));
}

TEST_F(DelayQueueTest, EarlierOfferWakesPollWaitingForALaterHead) {
  clock_->Advance(absl::Milliseconds(7));
  queue_.Offer(b(0), 10);
  AsyncPoll poll(&queue_);
  EXPECT_FALSE(poll.ReturnsWithin(kStillBlocked));
  // Due already: only the Offer can wake the poller, the clock does not move.
  queue_.Offer(b(1), 5);
  AsyncPoll::Result result = poll.Get();
  EXPECT_TRUE(result.ok);
  EXPECT_THAT(Pairs(result.entries),
              ElementsAre(std::pair<int64_t, Bucket*>(5, b(1))));
  EXPECT_EQ(queue_.size(), 1);
}

TEST_F(DelayQueueTest, EarlierOfferNotYetDueMovesThePollDeadline) {
  queue_.Offer(b(0), 10);
  AsyncPoll poll(&queue_);
  EXPECT_FALSE(poll.ReturnsWithin(kStillBlocked));
  queue_.Offer(b(1), 6);
  EXPECT_FALSE(poll.ReturnsWithin(kStillBlocked));
  clock_->Advance(absl::Milliseconds(6));
  AsyncPoll::Result result = poll.Get();
  EXPECT_TRUE(result.ok);
  EXPECT_THAT(Expirations(result.entries), ElementsAre(6));
}

TEST_F(DelayQueueTest, LaterOfferDoesNotReleaseAnything) {
  queue_.Offer(b(0), 5);
  AsyncPoll poll(&queue_);
  queue_.Offer(b(1), 9);
  EXPECT_FALSE(poll.ReturnsWithin(kStillBlocked));
  clock_->Advance(absl::Milliseconds(5));
  EXPECT_THAT(Expirations(poll.Get().entries), ElementsAre(5));
}

TEST_F(DelayQueueTest, CloseWakesPollAndMakesItReturnFalse) {
  queue_.Offer(b(0), 1000 * 3600);  // an hour away
  AsyncPoll poll(&queue_);
  EXPECT_FALSE(poll.ReturnsWithin(kStillBlocked));
  queue_.Close();
  AsyncPoll::Result result = poll.Get();
  EXPECT_FALSE(result.ok);
  EXPECT_THAT(result.entries, IsEmpty());
}

TEST_F(DelayQueueTest, CloseWakesPollOnEmptyQueue) {
  AsyncPoll poll(&queue_);
  EXPECT_FALSE(poll.ReturnsWithin(kStillBlocked));
  queue_.Close();
  EXPECT_FALSE(poll.Get().ok);
}

TEST_F(DelayQueueTest, PollAfterCloseReturnsFalseEvenWithDueBuckets) {
  queue_.Offer(b(0), 0);
  queue_.Close();
  std::vector<DelayQueue::Entry> out;
  EXPECT_FALSE(queue_.Poll(&out));
  EXPECT_THAT(out, IsEmpty());
  EXPECT_FALSE(queue_.Poll(&out));
}

TEST_F(DelayQueueTest, IsIdleUntilSomethingIsDue) {
  queue_.Offer(b(0), 3);
  EXPECT_TRUE(queue_.IsIdle());  // queued, not due
  clock_->Advance(absl::Milliseconds(2));
  EXPECT_TRUE(queue_.IsIdle());
  clock_->Advance(absl::Milliseconds(1));
  EXPECT_FALSE(queue_.IsIdle());  // due, not polled
}

TEST_F(DelayQueueTest, HandedOutBucketsAreNotIdleUntilDone) {
  queue_.Offer(b(0), 1);
  queue_.Offer(b(1), 2);
  queue_.Offer(b(2), 50);
  clock_->Advance(absl::Milliseconds(2));
  std::vector<DelayQueue::Entry> out;
  ASSERT_TRUE(queue_.Poll(&out));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_FALSE(queue_.IsIdle());  // nothing due, two outstanding
  queue_.Done(1);
  EXPECT_FALSE(queue_.IsIdle());
  queue_.Done(1);
  EXPECT_TRUE(queue_.IsIdle());
  EXPECT_EQ(queue_.size(), 1);
}

TEST_F(DelayQueueTest, DoneCountsAcrossPolls) {
  queue_.Offer(b(0), 1);
  clock_->Advance(absl::Milliseconds(1));
  std::vector<DelayQueue::Entry> out;
  ASSERT_TRUE(queue_.Poll(&out));
  queue_.Offer(b(1), 1);  // due already
  ASSERT_TRUE(queue_.Poll(&out));
  EXPECT_EQ(out.size(), 2u);
  EXPECT_FALSE(queue_.IsIdle());
  queue_.Done(2);
  EXPECT_TRUE(queue_.IsIdle());
}

TEST(DelayQueueOriginTest, DueAtOriginPlusExpirationTimesTick) {
  auto clock = std::make_shared<ManualClock>();
  clock->Advance(absl::Seconds(1));
  // Origin 1 s + 3 ms, tick 1 us: bucket 7 is due at 1.003007 s.
  const absl::Duration origin = absl::Seconds(1) + absl::Milliseconds(3);
  DelayQueue queue(clock, origin, /*tick_ns=*/1000);
  Bucket bucket(nullptr);
  queue.Offer(&bucket, 7);
  clock->Advance(absl::Milliseconds(3) + absl::Nanoseconds(6999));
  EXPECT_TRUE(queue.IsIdle()) << clock->Now();  // 1 ns early
  clock->Advance(absl::Nanoseconds(1));
  EXPECT_FALSE(queue.IsIdle()) << clock->Now();
  std::vector<DelayQueue::Entry> out;
  ASSERT_TRUE(queue.Poll(&out));
  EXPECT_THAT(Expirations(out), ElementsAre(7));
}

TEST(DelayQueueOriginTest, FarExpirationDoesNotOverflow) {
  // About 292 years of 1 ns ticks: the largest expiration the engine makes.
  auto clock = std::make_shared<ManualClock>();
  DelayQueue queue(clock, absl::ZeroDuration(), /*tick_ns=*/1);
  Bucket far(nullptr);
  Bucket near(nullptr);
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  queue.Offer(&far, kMax);
  queue.Offer(&near, kMax - 1);
  clock->Advance(absl::Nanoseconds(kMax - 2));
  EXPECT_TRUE(queue.IsIdle());
  clock->Advance(absl::Nanoseconds(1));
  std::vector<DelayQueue::Entry> out;
  ASSERT_TRUE(queue.Poll(&out));
  EXPECT_THAT(Pairs(out),
              ElementsAre(std::pair<int64_t, Bucket*>(kMax - 1, &near)));
  clock->Advance(absl::InfiniteDuration());
  out.clear();
  ASSERT_TRUE(queue.Poll(&out));
  EXPECT_THAT(Pairs(out), ElementsAre(std::pair<int64_t, Bucket*>(kMax, &far)));
}

// With the real clock, nothing but a notify can end a wait for a bucket an
// hour away (the default Clock::WaitUntil sleeps until the deadline).
TEST(DelayQueueSteadyClockTest, CloseWakesPollWaitingAnHourAwayRealClock) {
  std::shared_ptr<Clock> clock = SteadyClock();
  DelayQueue queue(clock, clock->Now(), kMs);
  Bucket far(nullptr);
  queue.Offer(&far, 3600 * 1000);
  AsyncPoll poll(&queue);
  EXPECT_FALSE(poll.ReturnsWithin(kStillBlocked));
  const absl::Duration start = clock->Now();
  queue.Close();
  EXPECT_FALSE(poll.Get().ok);
  EXPECT_LT(clock->Now() - start, absl::Seconds(5));
}

TEST(DelayQueueSteadyClockTest, DueOfferWakesPollWaitingAnHourAwayRealClock) {
  std::shared_ptr<Clock> clock = SteadyClock();
  DelayQueue queue(clock, clock->Now(), kMs);
  Bucket far(nullptr);
  Bucket now(nullptr);
  queue.Offer(&far, 3600 * 1000);
  AsyncPoll poll(&queue);
  EXPECT_FALSE(poll.ReturnsWithin(kStillBlocked));
  const absl::Duration start = clock->Now();
  queue.Offer(&now, 0);  // due since the origin
  AsyncPoll::Result result = poll.Get();
  EXPECT_TRUE(result.ok);
  EXPECT_THAT(Pairs(result.entries),
              ElementsAre(std::pair<int64_t, Bucket*>(0, &now)));
  EXPECT_LT(clock->Now() - start, absl::Seconds(5));
  EXPECT_EQ(queue.size(), 1);
  queue.Done(1);
}

TEST(DelayQueueCustomClockTest, JumpWakesPollWaitingAnHourAwayRealClock) {
  auto clock = std::make_shared<JumpingClock>();
  DelayQueue queue(clock, clock->Now(), kMs);
  Bucket far(nullptr);
  Bucket farther(nullptr);
  queue.Offer(&far, 3600 * 1000);
  queue.Offer(&farther, 2 * 3600 * 1000);
  AsyncPoll poll(&queue);
  EXPECT_FALSE(poll.ReturnsWithin(kStillBlocked));
  const absl::Time start = absl::Now();
  clock->Jump(absl::Hours(1));
  AsyncPoll::Result result = poll.Get();
  EXPECT_TRUE(result.ok);
  EXPECT_THAT(Pairs(result.entries),
              ElementsAre(std::pair<int64_t, Bucket*>(3600 * 1000, &far)));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  queue.Done(1);
}

// A clock whose Now() is a manual time and whose RealTimeUntil always says
// "no wait" (a coarse Now() beside a fine sleep, as a user's clock may
// have): it counts the readings of Now().
class DisagreeingClock : public Clock {
 public:
  absl::Duration Now() const override {
    reads_.fetch_add(1, std::memory_order_relaxed);
    return absl::Nanoseconds(now_ns_.load(std::memory_order_acquire));
  }
  absl::Duration RealTimeUntil(absl::Duration) const override {
    return absl::ZeroDuration();
  }
  void Set(absl::Duration now) {
    now_ns_.store(absl::ToInt64Nanoseconds(now), std::memory_order_release);
  }
  int64_t reads() const { return reads_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> now_ns_{0};
  mutable std::atomic<int64_t> reads_{0};
};

TEST(DelayQueueCustomClockTest, ClockThatNeverSaysWaitDoesNotMakePollSpin) {
  auto clock = std::make_shared<DisagreeingClock>();
  DelayQueue queue(clock, absl::ZeroDuration(), kMs);
  Bucket later(nullptr);
  queue.Offer(&later, 10);  // 10 ms of the clock away
  AsyncPoll poll(&queue);
  EXPECT_FALSE(poll.ReturnsWithin(std::chrono::milliseconds(200)));
  // Spinning, the poller read the clock millions of times in 200 ms; with
  // sleeps of 1 ms (a tick) it reads it about twice each.
  EXPECT_LT(clock->reads(), 5000);
  clock->Set(absl::Milliseconds(10));
  AsyncPoll::Result result = poll.Get();
  EXPECT_TRUE(result.ok);
  EXPECT_THAT(Pairs(result.entries),
              ElementsAre(std::pair<int64_t, Bucket*>(10, &later)));
  queue.Done(1);
}

// Builds a queue on `clock` with one bucket far away and a Poll sleeping on
// it, then closes and destroys it, `rounds` times.
void MakePollAndDestroyQueues(const std::shared_ptr<ManualClock>& clock,
                              int rounds) {
  Bucket far(nullptr);
  for (int i = 0; i < rounds; ++i) {
    auto queue =
        std::make_unique<DelayQueue>(clock, clock->Now() + absl::Hours(1), kMs);
    queue->Offer(&far, 0);
    {
      AsyncPoll poll(queue.get());
      if (i % 2 == 0) std::this_thread::yield();  // sometimes let it sleep
      queue->Close();
      EXPECT_FALSE(poll.Get().ok);
    }
    queue.reset();  // while the clock keeps moving
  }
}

TEST(DelayQueueLifetimeTest,
     DestroyedWhileAnotherThreadKeepsAdvancingTheClock) {
  // A wake-up that outlived its queue would lock a destroyed mutex: a
  // use-after-free under ASan, a race under TSan.
  auto clock = std::make_shared<ManualClock>();
  std::atomic<bool> stop{false};
  std::thread advancer([&] {
    while (!stop.load()) clock->Advance(absl::Nanoseconds(1));
  });
  MakePollAndDestroyQueues(clock, 300);
  stop.store(true);
  advancer.join();
}

TEST(DelayQueueLifetimeTest, AdvanceRacesManyQueuesComingAndGoing) {
  // Queues register and unregister on one clock from several threads while
  // it advances; afterwards a new queue on it is still woken by Advance.
  auto clock = std::make_shared<ManualClock>();
  std::atomic<bool> stop{false};
  std::thread advancer([&] {
    while (!stop.load()) clock->Advance(absl::Nanoseconds(1));
  });
  std::vector<std::thread> builders;
  for (int t = 0; t < 3; ++t) {
    builders.emplace_back([&clock] { MakePollAndDestroyQueues(clock, 100); });
  }
  for (std::thread& builder : builders) builder.join();
  stop.store(true);
  advancer.join();

  DelayQueue queue(clock, clock->Now(), kMs);
  Bucket bucket(nullptr);
  queue.Offer(&bucket, 5);
  AsyncPoll poll(&queue);
  EXPECT_FALSE(poll.ReturnsWithin(kStillBlocked));
  clock->Advance(absl::Milliseconds(5));
  EXPECT_THAT(Expirations(poll.Get().entries), ElementsAre(5));
  queue.Done(1);
}

}  // namespace
}  // namespace timingwheel::internal
