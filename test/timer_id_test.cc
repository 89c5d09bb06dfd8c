// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// timer_id_test: timers scheduled by id on a TimingWheel
// (TimingWheel::AfterFuncId, TimerId in timer.h): the same contract as a
// handle's (never early, Stop's true means never run, nothing lost), the
// id's own rules (spent once run or stopped; a spent, empty, foreign or
// forged id answers false or nullopt and touches nothing), the node freed as
// the timer ends, and the races between threads that hold one id. Driven by a
// ManualClock; the concurrent tests check counts, not timings.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "handles/timer_state.h"
#include "test_util.h"
#include "timingwheel/timer.h"
#include "timingwheel/timingwheel.h"

namespace timingwheel {
namespace {

constexpr absl::Duration kTick = absl::Milliseconds(1);

class TimerIdTest : public ManualWheelTest</*kWorkers=*/2> {
 protected:
  std::shared_ptr<RunLog> NewLog() { return std::make_shared<RunLog>(clock_); }

  // AfterFuncId(d) recording into `log`; the test fails if it is refused.
  TimerId After(absl::Duration d, const std::shared_ptr<RunLog>& log) {
    absl::StatusOr<TimerId> id = wheel_->AfterFuncId(d, RunLog::Callback(log));
    EXPECT_TRUE(id.ok()) << id.status();
    return id.ok() ? *id : TimerId();
  }
};

TEST_F(TimerIdTest, RunsOnceAtItsDeadlineAndIsThenSpent) {
  auto log = NewLog();
  const TimerId id = After(absl::Milliseconds(5), log);
  EXPECT_TRUE(static_cast<bool>(id));
  EXPECT_NE(id.value(), 0u);
  EXPECT_TRUE(wheel_->Pending(id));
  EXPECT_EQ(wheel_->Deadline(id), absl::Milliseconds(5));
  EXPECT_EQ(wheel_->TimeLeft(id), absl::Milliseconds(5));
  Advance(absl::Milliseconds(5) - absl::Nanoseconds(1));
  EXPECT_EQ(log->count(), 0);
  EXPECT_EQ(wheel_->TimeLeft(id), absl::Nanoseconds(1));
  Advance(absl::Nanoseconds(1));
  EXPECT_EQ(log->count(), 1);
  EXPECT_EQ(log->last_run(), absl::Milliseconds(5));
  EXPECT_FALSE(wheel_->Pending(id));
  EXPECT_EQ(wheel_->Deadline(id), std::nullopt);
  EXPECT_EQ(wheel_->TimeLeft(id), std::nullopt);
  EXPECT_FALSE(wheel_->Stop(id));
  EXPECT_FALSE(wheel_->Reset(id, kTick));  // spent: arms nothing
  Advance(absl::Milliseconds(10));
  EXPECT_EQ(log->count(), 1);
  EXPECT_EQ(wheel_->Pending(), 0);
  EXPECT_EQ(wheel_->GetStats().fired, 1);
}

TEST_F(TimerIdTest, AtClockTimeIdRunsAtThePointItself) {
  auto log = NewLog();
  Advance(absl::Milliseconds(1));
  const absl::Duration when = clock_->Now() + absl::Milliseconds(7);  // 8 ms
  absl::StatusOr<TimerId> id =
      wheel_->AtClockTimeId(when, RunLog::Callback(log));
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(wheel_->Deadline(*id), when);
  Advance(absl::Milliseconds(7) - absl::Nanoseconds(1));
  EXPECT_EQ(log->count(), 0);
  Advance(absl::Nanoseconds(1));
  EXPECT_EQ(log->count(), 1);
  EXPECT_EQ(log->last_run(), when);
  EXPECT_FALSE(wheel_->Reset(*id, kTick));  // spent
  // A point already passed runs as soon as possible and keeps its deadline.
  absl::StatusOr<TimerId> late = wheel_->AtClockTimeId(
      clock_->Now() - absl::Milliseconds(1), RunLog::Callback(log));
  ASSERT_TRUE(late.ok()) << late.status();
  WaitIdle();
  EXPECT_EQ(log->count(), 2);
  EXPECT_EQ(
      wheel_->AtClockTimeId(absl::InfiniteDuration(), [] {}).status().code(),
      absl::StatusCode::kInvalidArgument);
}

TEST_F(TimerIdTest, AtIdTakesSteadyClockPointsOnASteadyWheelOnly) {
  absl::StatusOr<TimerId> refused =
      wheel_->AtId(std::chrono::steady_clock::now(), [] {});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("AtClockTimeId"),
            absl::string_view::npos)
      << refused.status();
  std::unique_ptr<TimingWheel> steady = TimingWheel::Create().value();
  Event ran;
  absl::StatusOr<TimerId> id = steady->AtId(
      std::chrono::steady_clock::now() + std::chrono::milliseconds(2),
      [&ran] { ran.Notify(); });
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_TRUE(ran.Wait());
  steady->WaitIdle();
  EXPECT_FALSE(steady->Pending(*id));
}

TEST_F(TimerIdTest, StopIsTrueOnceAndTheCallbackNeverRuns) {
  auto log = NewLog();
  const TimerId id = After(absl::Milliseconds(5), log);
  Advance(absl::Milliseconds(2));  // the advancer has taken it
  EXPECT_TRUE(wheel_->Stop(id));
  EXPECT_FALSE(wheel_->Stop(id));
  EXPECT_FALSE(wheel_->Pending(id));
  EXPECT_FALSE(wheel_->Reset(id, kTick));  // spent
  Advance(absl::Milliseconds(10));
  EXPECT_EQ(log->count(), 0);
  EXPECT_EQ(wheel_->Pending(), 0);
  EXPECT_EQ(wheel_->GetStats().stopped, 1);
}

TEST_F(TimerIdTest, PairsOnOneThreadEndBeforeTheWheelSeesThem) {
  // AfterFuncId + Stop(id) at once: the Stop takes the arm back from this
  // thread's lane (its fast path), or stops it where the advancer put it.
  constexpr int kPairs = 5000;
  auto log = NewLog();
  for (int i = 0; i < kPairs; ++i) {
    const TimerId id = After(kTick * (1 + i % 50), log);
    ASSERT_TRUE(wheel_->Stop(id)) << i;
    ASSERT_FALSE(wheel_->Stop(id)) << i;
    ASSERT_FALSE(wheel_->Pending(id)) << i;
  }
  EXPECT_EQ(wheel_->Pending(), 0);
  EXPECT_EQ(wheel_->GetStats().stopped, kPairs);
  Advance(kTick * 60);
  EXPECT_EQ(log->count(), 0);
}

TEST_F(TimerIdTest, ResetMovesTheDeadlineAndKeepsTheId) {
  auto log = NewLog();
  const TimerId id = After(absl::Milliseconds(5), log);
  EXPECT_TRUE(wheel_->Reset(id, absl::Milliseconds(10)));  // before the take
  Advance(absl::Milliseconds(3));
  EXPECT_EQ(wheel_->Deadline(id), absl::Milliseconds(10));
  EXPECT_TRUE(wheel_->Reset(id, absl::Milliseconds(20)));  // taken, linked
  EXPECT_EQ(wheel_->Deadline(id), absl::Milliseconds(23));
  Advance(absl::Milliseconds(19));  // 22 ms: past both earlier deadlines
  EXPECT_EQ(log->count(), 0);
  EXPECT_TRUE(wheel_->Pending(id));
  Advance(absl::Milliseconds(1));
  EXPECT_EQ(log->count(), 1);
  EXPECT_EQ(log->last_run(), absl::Milliseconds(23));
  EXPECT_FALSE(wheel_->Pending(id));
  EXPECT_EQ(wheel_->GetStats().fired, 1);
}

TEST_F(TimerIdTest, ResetManyTimesThenStopEndsIt) {
  // The arm's part of the generation counts on; the id stays the same.
  auto log = NewLog();
  const TimerId id = After(absl::Milliseconds(5), log);
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(wheel_->Reset(id, absl::Milliseconds(5 + i % 7))) << i;
    if (i % 100 == 0) Advance(absl::Microseconds(100));
  }
  EXPECT_TRUE(wheel_->Stop(id));
  Advance(absl::Milliseconds(20));
  EXPECT_EQ(log->count(), 0);
  EXPECT_EQ(wheel_->Pending(), 0);
}

TEST_F(TimerIdTest, AResetDuringItsOwnRunArmsItAgain) {
  std::atomic<TimerId> self{TimerId()};
  std::atomic<int> runs{0};
  TimingWheel* wheel = wheel_.get();
  absl::StatusOr<TimerId> id =
      wheel_->AfterFuncId(absl::Milliseconds(2), [&self, &runs, wheel] {
        if (runs.fetch_add(1) == 0) {
          const TimerId me = self.load();
          EXPECT_FALSE(wheel->Pending(me));  // running, not armed
          EXPECT_FALSE(wheel->Reset(me, absl::Milliseconds(3)));
          EXPECT_TRUE(wheel->Pending(me));
        }
      });
  ASSERT_TRUE(id.ok());
  self.store(*id);
  Advance(absl::Milliseconds(2));
  EXPECT_EQ(runs.load(), 1);
  EXPECT_TRUE(wheel_->Pending(*id));
  EXPECT_EQ(wheel_->Deadline(*id), absl::Milliseconds(5));
  Advance(absl::Milliseconds(3));
  EXPECT_EQ(runs.load(), 2);
  EXPECT_FALSE(wheel_->Pending(*id));
  EXPECT_FALSE(wheel_->Reset(*id, kTick));
}

TEST_F(TimerIdTest, AHandleFromItsCallbackFollowsAHandlesRules) {
  // Timer::Current() in the callback of a timer by id: the handle keeps the
  // node after the run, and its Reset arms the timer again, which the id
  // (spent by the run) could not; the id then names the armed timer.
  auto log = NewLog();
  auto handle = std::make_shared<Timer>();
  absl::StatusOr<TimerId> id =
      wheel_->AfterFuncId(absl::Milliseconds(2), [log, handle] {
        log->Record();
        if (!*handle) *handle = Timer::Current();
      });
  ASSERT_TRUE(id.ok());
  Advance(absl::Milliseconds(2));
  ASSERT_EQ(log->count(), 1);
  ASSERT_TRUE(static_cast<bool>(*handle));
  EXPECT_EQ(handle->State(), TimerState::kFired);
  EXPECT_FALSE(wheel_->Reset(*id, kTick));  // spent: nothing armed
  EXPECT_FALSE(wheel_->Pending(*id));
  EXPECT_FALSE(handle->Reset(kTick));  // not pending, and arms it
  EXPECT_TRUE(wheel_->Pending(*id));
  Advance(kTick);
  EXPECT_EQ(log->count(), 2);
  EXPECT_FALSE(wheel_->Pending(*id));
  *handle = Timer();  // the callable holds `handle`: let go of the node
}

TEST_F(TimerIdTest, SpentIdsNameNothingAfterTheirMemoryIsReused) {
  // Each stopped timer's node is freed at once and its block taken again by
  // the next AfterFuncId (the thread's cache hands it back last in, first
  // out): a spent id must not reach the new timer there.
  auto log = NewLog();
  std::vector<TimerId> spent;
  std::vector<TimerId> live;
  for (int i = 0; i < 2000; ++i) {
    const TimerId id = After(absl::Milliseconds(50), log);
    ASSERT_TRUE(wheel_->Stop(id));
    spent.push_back(id);
    live.push_back(After(absl::Milliseconds(50), log));
  }
  // The blocks were reused: most new timers sit where a spent one was.
  constexpr uint64_t kLink = (uint64_t{1} << 31) - 1;
  int reused = 0;
  for (size_t i = 0; i < spent.size(); ++i) {
    if ((spent[i].value() & kLink) == (live[i].value() & kLink)) ++reused;
  }
  EXPECT_GT(reused, 1000);
  for (const TimerId& id : spent) {
    EXPECT_FALSE(wheel_->Pending(id));
    EXPECT_FALSE(wheel_->Stop(id));
    EXPECT_FALSE(wheel_->Reset(id, kTick));
    EXPECT_EQ(wheel_->Deadline(id), std::nullopt);
  }
  for (const TimerId& id : live) EXPECT_TRUE(wheel_->Pending(id));
  EXPECT_EQ(wheel_->Pending(), static_cast<int64_t>(live.size()));
  Advance(absl::Milliseconds(50));
  EXPECT_EQ(log->count(), static_cast<int>(live.size()));
}

TEST_F(TimerIdTest, EmptyForeignAndForgedIdsAnswerFalse) {
  auto log = NewLog();
  std::vector<TimerId> mine;
  for (int i = 0; i < 100; ++i)
    mine.push_back(After(absl::Milliseconds(9), log));
  const TimerId empty;
  EXPECT_FALSE(static_cast<bool>(empty));
  EXPECT_FALSE(wheel_->Stop(empty));
  EXPECT_FALSE(wheel_->Reset(empty, kTick));
  EXPECT_FALSE(wheel_->Pending(empty));
  EXPECT_EQ(wheel_->Deadline(empty), std::nullopt);

  // Ids of another wheel (with the same clock): this one refuses them, and
  // they stay pending there.
  std::unique_ptr<TimingWheel> other = OneWorkerWheel(clock_);
  std::vector<TimerId> foreign;
  for (int i = 0; i < 100; ++i) {
    foreign.push_back(
        other->AfterFuncId(absl::Milliseconds(9), RunLog::Callback(log))
            .value());
  }
  for (const TimerId& id : foreign) {
    EXPECT_FALSE(wheel_->Pending(id));
    EXPECT_FALSE(wheel_->Stop(id));
    EXPECT_FALSE(wheel_->Reset(id, kTick));
    EXPECT_EQ(wheel_->Deadline(id), std::nullopt);
    EXPECT_TRUE(other->Pending(id));
  }

  // Forged: every bit of a real id flipped in turn, and random values. Each
  // names a block that is not a node of this wheel's, or not at its start,
  // or another generation: nothing happens (ASan and TSan watch the reads).
  std::mt19937_64 random(7);
  std::vector<uint64_t> forged;
  for (int bit = 0; bit < 64; ++bit) {
    forged.push_back(mine[static_cast<size_t>(bit)].value() ^
                     (uint64_t{1} << bit));
  }
  for (int i = 0; i < 1000; ++i) forged.push_back(random());
  for (int i = 0; i < 1000; ++i) {
    forged.push_back(mine[static_cast<size_t>(i) % mine.size()].value() +
                     static_cast<uint64_t>(i % 7 + 1));
  }
  for (uint64_t value : forged) {
    TimerId id;
    std::memcpy(static_cast<void*>(&id), &value, sizeof(id));
    if (std::find(mine.begin(), mine.end(), id) != mine.end()) continue;
    EXPECT_FALSE(wheel_->Pending(id)) << value;
    EXPECT_FALSE(wheel_->Stop(id)) << value;
    EXPECT_FALSE(wheel_->Reset(id, kTick)) << value;
    EXPECT_EQ(wheel_->Deadline(id), std::nullopt) << value;
  }
  for (const TimerId& id : mine) EXPECT_TRUE(wheel_->Pending(id));
  Advance(absl::Milliseconds(9));
  other->WaitIdle();
  EXPECT_EQ(log->count(), 200);  // this wheel's 100 and the other's 100
  EXPECT_EQ(wheel_->GetStats().stopped, 0);
}

// A callable whose bytes, read as a node's that begins 16 bytes before the
// room, look like a live timer's state word and count of an id.
struct LookAlike {
  uint64_t state_word;  // read as the state of a node 16 bytes further
  uint64_t count_word;  // its top half read as that node's count word
  void operator()() const {}
};

TEST_F(TimerIdTest, AnIdNamingTheMiddleOfABlockIsRefused) {
  // An id is only good where a node begins: inside a node's block, the
  // "node" whose state word is the room's start has for its state word and
  // count the bytes of this callable (a kPending word of the id's generation, a
  // count of 1 held by id), and must not be read as a node all the same.
  const TimerId real =
      wheel_->AfterFuncId(absl::Milliseconds(5), [] {}).value();
  const uint64_t id_word = real.value() >> 32;
  const LookAlike look_alike{id_word << 32 | 1, uint64_t{0x18} << 32};
  const TimerId holder =
      wheel_->AfterFuncId(absl::Milliseconds(5), look_alike).value();
  // The node whose state word is the room's first 8 bytes (the state is 16
  // bytes into a node; the room follows the node, 32 bytes in a release
  // build).
  constexpr uint64_t kUnitsIn = (sizeof(internal::TimerNode) - 16) / 16;
  const uint64_t forged_value =
      (id_word << 32) | ((holder.value() & 0x7fffffff) + kUnitsIn);
  TimerId forged;
  std::memcpy(static_cast<void*>(&forged), &forged_value, sizeof(forged));
  EXPECT_FALSE(wheel_->Pending(forged));
  EXPECT_FALSE(wheel_->Stop(forged));
  EXPECT_EQ(wheel_->Deadline(forged), std::nullopt);
  EXPECT_TRUE(wheel_->Pending(real));
  EXPECT_TRUE(wheel_->Pending(holder));
  EXPECT_TRUE(wheel_->Stop(holder));
}

TEST_F(TimerIdTest, ShutdownAndCancelAllCountThem) {
  auto log = NewLog();
  std::vector<TimerId> ids;
  for (int i = 0; i < 300; ++i) ids.push_back(After(kTick * (1 + i % 30), log));
  Advance(absl::Microseconds(500));  // half taken, half in the lanes
  for (int i = 0; i < 300; ++i) ids.push_back(After(kTick * (1 + i % 30), log));
  EXPECT_EQ(wheel_->CancelAll(), 600);
  for (const TimerId& id : ids) {
    EXPECT_FALSE(wheel_->Pending(id));
    EXPECT_FALSE(wheel_->Reset(id, kTick));
  }
  ids.clear();
  for (int i = 0; i < 200; ++i) ids.push_back(After(kTick * (1 + i % 30), log));
  EXPECT_EQ(wheel_->Shutdown(), 200);
  for (const TimerId& id : ids) {
    EXPECT_FALSE(wheel_->Pending(id));
    EXPECT_FALSE(wheel_->Stop(id));
  }
  EXPECT_EQ(log->count(), 0);
  EXPECT_EQ(wheel_->AfterFuncId(kTick, [] {}).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(TimerIdTest, ErrorsAreStatusesAsForAfterFunc) {
  absl::StatusOr<TimerId> infinite =
      wheel_->AfterFuncId(absl::InfiniteDuration(), [] {});
  EXPECT_EQ(infinite.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(infinite.status().message().find("AfterFuncId"),
            absl::string_view::npos)
      << infinite.status();
  absl::AnyInvocable<void()> empty;
  EXPECT_EQ(wheel_->AfterFuncId(kTick, std::move(empty)).status().code(),
            absl::StatusCode::kInvalidArgument);
  Options options;
  options.max_pending = 3;
  Start(std::move(options));
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(wheel_->AfterFuncId(kTick, [] {}).ok());
  EXPECT_EQ(wheel_->AfterFuncId(kTick, [] {}).status().code(),
            absl::StatusCode::kResourceExhausted);
  Advance(kTick);
  EXPECT_TRUE(wheel_->AfterFuncId(kTick, [] {}).ok());
}

TEST_F(TimerIdTest, ThreadsRacingOnOneIdDecideItOnce) {
  // Ids made by one thread and, at once, stopped, reset and asked about by
  // three others, while the clock moves and timers fire. A Stop's true is
  // once per timer (a stopped id is spent: no Reset arms it again); a Reset
  // during a run arms another (so a timer may run and then be stopped, or
  // run twice); each timer ends, nothing is left pending, and the wheel's
  // counts agree. For a timer no Reset was tried on, a true Stop found it
  // not started, so no run may start after it. (With a Reset, a run may
  // have started before a Stop that took its re-arm and reach its first
  // statement after: the history checker orders those.)
  constexpr int kTimers = kSanitized ? 3000 : 20000;
  std::vector<std::atomic<int>> runs(kTimers);
  std::vector<std::atomic<int>> stops(kTimers);
  std::vector<std::atomic<bool>> stopped(kTimers);
  std::vector<std::atomic<int>> resets(kTimers);  // Resets tried
  std::vector<std::atomic<TimerId>> ids(kTimers);
  std::atomic<int> runs_after_stop{0};
  std::atomic<int> made{0};
  std::atomic<bool> done{false};
  const auto stop = [&](int i, TimerId id) {
    if (!wheel_->Stop(id)) return;
    stops[static_cast<size_t>(i)]++;
    stopped[static_cast<size_t>(i)].store(true);
  };
  std::thread maker([&] {
    for (int i = 0; i < kTimers; ++i) {
      absl::StatusOr<TimerId> id = wheel_->AfterFuncId(
          absl::Microseconds(200 * (1 + i % 20)),
          [&runs, &stopped, &resets, &runs_after_stop, i] {
            const size_t at = static_cast<size_t>(i);
            // The Stop first: a Reset before it was
            // counted before it.
            if (stopped[at].load() && resets[at].load() == 0) {
              runs_after_stop++;
            }
            runs[at]++;
          });
      ASSERT_TRUE(id.ok()) << id.status();
      ids[static_cast<size_t>(i)].store(*id);
      made.store(i + 1, std::memory_order_release);
      // Some stopped at once by their maker (its lane's fast path).
      if (i % 5 == 0) stop(i, *id);
    }
  });
  std::vector<std::thread> racers;
  for (int r = 0; r < 3; ++r) {
    racers.emplace_back([&, r] {
      std::mt19937 random(static_cast<uint32_t>(r));
      while (!done.load(std::memory_order_acquire)) {
        const int n = made.load(std::memory_order_acquire);
        if (n == 0) continue;
        const int i = static_cast<int>(random() % static_cast<uint32_t>(n));
        const TimerId id = ids[static_cast<size_t>(i)].load();
        switch (random() % 4) {
          case 0:
            stop(i, id);
            break;
          case 1:
            resets[static_cast<size_t>(i)]++;
            wheel_->Reset(id, absl::Microseconds(300));
            break;
          case 2:
            wheel_->Pending(id);
            break;
          default:
            wheel_->TimeLeft(id);
            break;
        }
      }
    });
  }
  while (made.load() < kTimers) {
    clock_->Advance(absl::Microseconds(100));
    std::this_thread::yield();
  }
  maker.join();
  for (int step = 0; step < 50; ++step) {
    clock_->Advance(absl::Microseconds(100));
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  done.store(true, std::memory_order_release);
  for (std::thread& racer : racers) racer.join();
  Advance(absl::Seconds(1));
  EXPECT_EQ(runs_after_stop.load(), 0);
  int ran = 0;
  int stopped_true = 0;
  for (int i = 0; i < kTimers; ++i) {
    const size_t at = static_cast<size_t>(i);
    ASSERT_LE(stops[at].load(), 1) << i;
    ASSERT_GE(runs[at].load() + stops[at].load(), 1) << i << " lost";
    ASSERT_FALSE(wheel_->Pending(ids[at].load())) << i;
    ran += runs[at].load();
    stopped_true += stops[at].load();
  }
  const Stats stats = wheel_->GetStats();
  EXPECT_EQ(stats.fired, ran);
  EXPECT_EQ(stats.stopped, stopped_true);
  EXPECT_EQ(stats.pending, 0);
  EXPECT_EQ(wheel_->Pending(), 0);
}

}  // namespace
}  // namespace timingwheel
