// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// loop_timer_id_test.cc: a LoopWheel's timers held by id (LoopTimerId:
// AfterFuncId, AtId, AtClockTimeId, and the wheel's Stop, Reset, Pending,
// Deadline and TimeLeft by id), on a ManualClock:
//   * an id does what a LoopTimer does while its timer is pending or
//     running, from outside and from the timer's own callback;
//   * once its timer ran or was stopped an id is spent: false and nullopt,
//     and Reset arms nothing, also when its node was reused by a new timer
//     (by id or by handle), when its chunk went back to the system (read
//     under AddressSanitizer: no report), and when that chunk came back to
//     a pool of another block size;
//   * an empty id, and an id of another wheel, name nothing, also where
//     that wheel reused the memory of the id's node;
//   * errors name the member; callables held by id are destroyed once, at
//     the latest when the wheel goes; the callable's destructor finds its
//     id spent.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "timingwheel/clock.h"
#include "timingwheel/loop_wheel.h"

namespace timingwheel {
namespace {

using ::testing::HasSubstr;

absl::Duration Ms(int64_t ms) { return absl::Milliseconds(ms); }

// The node an id names (its link: loop_engine.h), to see that a node was
// reused.
uint64_t NodeOf(LoopTimerId id) { return id.value() >> 33; }

class LoopTimerIdTest : public ::testing::Test {
 protected:
  explicit LoopTimerIdTest(int64_t spare_timers = 65536) {
    LoopOptions options;
    options.clock = clock_;
    options.spare_timers = spare_timers;
    wheel_ = LoopWheel::Create(std::move(options)).value();
  }
  int64_t RunAt(absl::Duration t) {
    clock_->Advance(t - clock_->Now());
    return wheel_->RunDue();
  }
  // Expects `id` to be spent: it names no pending timer, and changes none.
  void ExpectSpent(LoopTimerId id) {
    const int64_t pending = wheel_->Pending();
    EXPECT_FALSE(wheel_->Pending(id));
    EXPECT_EQ(wheel_->Deadline(id), std::nullopt);
    EXPECT_EQ(wheel_->TimeLeft(id), std::nullopt);
    EXPECT_FALSE(wheel_->Stop(id));
    EXPECT_FALSE(wheel_->Reset(id, Ms(5)));
    EXPECT_EQ(wheel_->Pending(), pending) << "a spent id changed a timer";
  }

  const std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>();
  std::unique_ptr<LoopWheel> wheel_;
};

TEST_F(LoopTimerIdTest, AnIdStopsResetsAndReportsItsTimerAsAHandleWould) {
  int runs = 0;
  const LoopTimerId id =
      wheel_->AfterFuncId(Ms(30), [&runs] { ++runs; }).value();
  EXPECT_TRUE(id);
  EXPECT_NE(id, LoopTimerId());
  EXPECT_TRUE(wheel_->Pending(id));
  EXPECT_EQ(wheel_->Deadline(id), Ms(30));
  clock_->Advance(Ms(10));
  EXPECT_EQ(wheel_->TimeLeft(id), Ms(20));
  // Activity: the timeout moves.
  EXPECT_TRUE(wheel_->Reset(id, Ms(50)));
  EXPECT_EQ(wheel_->Deadline(id), Ms(60));
  EXPECT_EQ(RunAt(Ms(59)), 0);
  EXPECT_EQ(RunAt(Ms(60)), 1);
  EXPECT_EQ(runs, 1);
  ExpectSpent(id);

  const LoopTimerId stopped =
      wheel_->AfterFuncId(std::chrono::milliseconds(5), [&runs] { ++runs; })
          .value();
  EXPECT_TRUE(wheel_->Stop(stopped));
  ExpectSpent(stopped);
  EXPECT_EQ(RunAt(Ms(100)), 0);
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(wheel_->Pending(), 0);
}

TEST_F(LoopTimerIdTest, AtIdAndAtClockTimeIdRunAtTheirPoint) {
  std::vector<int> runs;
  const LoopTimerId at_clock =
      wheel_->AtClockTimeId(Ms(20), [&runs] { runs.push_back(1); }).value();
  EXPECT_EQ(wheel_->Deadline(at_clock), Ms(20));
  EXPECT_EQ(RunAt(Ms(19)), 0);
  EXPECT_EQ(RunAt(Ms(20)), 1);
  EXPECT_THAT(runs, ::testing::ElementsAre(1));

  // At takes steady_clock's points: a wheel on SteadyClock() only.
  std::unique_ptr<LoopWheel> steady = LoopWheel::Create().value();
  const auto now = std::chrono::steady_clock::now();
  const LoopTimerId at =
      steady
          ->AtId(now - std::chrono::seconds(1), [&runs] { runs.push_back(2); })
          .value();
  EXPECT_TRUE(steady->Pending(at));
  EXPECT_EQ(steady->RunDue(), 1);
  EXPECT_THAT(runs, ::testing::ElementsAre(1, 2));
  EXPECT_FALSE(steady->Pending(at));
  absl::StatusOr<LoopTimerId> refused = wheel_->AtId(now, [] {});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("AtClockTime"));
}

TEST_F(LoopTimerIdTest, ACallbackStopsAndResetsItsOwnId) {
  LoopTimerId id;
  int runs = 0;
  std::vector<bool> stopped_while_running;
  id = wheel_
           ->AfterFuncId(Ms(10),
                         [&] {
                           ++runs;
                           // Started: Stop has nothing to prevent.
                           stopped_while_running.push_back(wheel_->Stop(id));
                           EXPECT_FALSE(wheel_->Pending(id));
                           // Re-armed when it returns (false: it was not
                           // pending), twice.
                           if (runs < 3) {
                             EXPECT_FALSE(wheel_->Reset(id, Ms(10)));
                             EXPECT_TRUE(wheel_->Pending(id));
                             EXPECT_EQ(wheel_->Deadline(id),
                                       clock_->Now() + Ms(10));
                           }
                         })
           .value();
  EXPECT_EQ(RunAt(Ms(10)), 1);
  EXPECT_TRUE(wheel_->Pending(id));
  EXPECT_EQ(RunAt(Ms(20)), 1);
  EXPECT_EQ(RunAt(Ms(30)), 1);
  EXPECT_EQ(runs, 3);
  EXPECT_THAT(stopped_while_running,
              ::testing::ElementsAre(false, false, false));
  ExpectSpent(id);
  EXPECT_EQ(RunAt(Ms(100)), 0);
  EXPECT_EQ(wheel_->Pending(), 0);

  // A Stop from its own callback cancels the re-arm a Reset made.
  int more = 0;
  LoopTimerId other;
  other = wheel_
              ->AfterFuncId(Ms(10),
                            [&] {
                              ++more;
                              EXPECT_FALSE(wheel_->Reset(other, Ms(10)));
                              EXPECT_TRUE(wheel_->Stop(other));
                            })
              .value();
  EXPECT_EQ(RunAt(Ms(110)), 1);
  EXPECT_EQ(RunAt(Ms(200)), 0);
  EXPECT_EQ(more, 1);
  ExpectSpent(other);
}

TEST_F(LoopTimerIdTest, ASpentIdDoesNotNameTheTimerThatReusedItsNode) {
  int runs = 0;
  const LoopTimerId first =
      wheel_->AfterFuncId(Ms(10), [&runs] { ++runs; }).value();
  ASSERT_TRUE(wheel_->Stop(first));
  // The block freed last is reused first (loop_node.h).
  const LoopTimerId second =
      wheel_->AfterFuncId(Ms(40), [&runs] { ++runs; }).value();
  ASSERT_EQ(NodeOf(second), NodeOf(first));
  EXPECT_NE(second, first);
  ExpectSpent(first);
  EXPECT_EQ(wheel_->Deadline(second), Ms(40));

  // Then a timer held by a handle in the same block.
  ASSERT_TRUE(wheel_->Stop(second));
  LoopTimer handle = wheel_->AfterFunc(Ms(50), [&runs] { ++runs; }).value();
  ExpectSpent(first);
  ExpectSpent(second);
  EXPECT_TRUE(handle.Pending());
  EXPECT_EQ(RunAt(Ms(50)), 1);
  EXPECT_EQ(runs, 1);

  // Ran, and reused by the timer scheduled next.
  const LoopTimerId third =
      wheel_->AfterFuncId(Ms(10), [&runs] { ++runs; }).value();
  EXPECT_EQ(RunAt(Ms(60)), 1);
  const LoopTimerId fourth =
      wheel_->AfterFuncId(Ms(10), [&runs] { ++runs; }).value();
  ASSERT_EQ(NodeOf(fourth), NodeOf(third));
  ExpectSpent(third);
  EXPECT_TRUE(wheel_->Pending(fourth));
}

class LoopTimerIdNoSpareTest : public LoopTimerIdTest {
 protected:
  LoopTimerIdNoSpareTest() : LoopTimerIdTest(/*spare_timers=*/0) {}
};

TEST_F(LoopTimerIdNoSpareTest, AnIdWhoseMemoryWentBackIsSpentAndSafe) {
  int64_t a = 1;
  int64_t b = 2;
  // A 16-byte capture: a node of 48 bytes, alone in its chunk, which goes
  // back to the system when the timer ends (no spare).
  const LoopTimerId small =
      wheel_->AfterFuncId(Ms(10), [a, b] { (void)(a + b); }).value();
  ASSERT_TRUE(wheel_->Stop(small));
  // Its memory is unmapped: a read would fault (or, under AddressSanitizer,
  // be reported).
  ExpectSpent(small);

  // The chunk comes back to the 32-byte pool (stateless callables): the
  // spent id names what is now the middle of another block.
  std::vector<LoopTimerId> bare;
  for (int i = 0; i < 8; ++i) {
    bare.push_back(wheel_->AfterFuncId(Ms(10), [] {}).value());
  }
  ExpectSpent(small);
  for (LoopTimerId id : bare) EXPECT_TRUE(wheel_->Pending(id));

  // And to the 48-byte pool again, with a new timer in that very block.
  for (LoopTimerId id : bare) ASSERT_TRUE(wheel_->Stop(id));
  const LoopTimerId again =
      wheel_->AfterFuncId(Ms(10), [a, b] { (void)(a + b); }).value();
  ExpectSpent(small);
  for (LoopTimerId id : bare) ExpectSpent(id);
  EXPECT_TRUE(wheel_->Pending(again));
  EXPECT_EQ(RunAt(Ms(10)), 1);
  ExpectSpent(again);
}

TEST_F(LoopTimerIdNoSpareTest, AnIdNamesNothingOfAWheelThatReusedItsMemory) {
  int64_t a = 1;
  const LoopTimerId theirs =
      wheel_->AfterFuncId(Ms(10), [a] { (void)a; }).value();
  ASSERT_TRUE(wheel_->Stop(theirs));  // its chunk goes back to the arena
  // The next wheel's first timer of the same size takes that chunk, and
  // the same block in it.
  std::unique_ptr<LoopWheel> next =
      LoopWheel::Create(LoopOptions{.clock = clock_, .spare_timers = 0})
          .value();
  const LoopTimerId ours = next->AfterFuncId(Ms(10), [a] { (void)a; }).value();
  ASSERT_EQ(NodeOf(ours), NodeOf(theirs));
  EXPECT_FALSE(next->Pending(theirs));
  EXPECT_FALSE(next->Stop(theirs));
  EXPECT_FALSE(next->Reset(theirs, Ms(50)));
  EXPECT_EQ(next->Deadline(ours), Ms(10));
  EXPECT_TRUE(next->Stop(ours));
}

TEST_F(LoopTimerIdTest, EmptyIdsAndIdsOfAnotherWheelNameNothing) {
  ExpectSpent(LoopTimerId());
  std::unique_ptr<LoopWheel> other =
      LoopWheel::Create(LoopOptions{.clock = clock_}).value();
  const LoopTimerId theirs = other->AfterFuncId(Ms(10), [] {}).value();
  const LoopTimerId ours = wheel_->AfterFuncId(Ms(10), [] {}).value();
  ExpectSpent(theirs);  // by this wheel
  EXPECT_TRUE(other->Pending(theirs));
  EXPECT_FALSE(other->Stop(ours));
  EXPECT_TRUE(wheel_->Pending(ours));
  EXPECT_TRUE(other->Stop(theirs));
  EXPECT_TRUE(wheel_->Stop(ours));

  absl::flat_hash_set<LoopTimerId> ids = {ours, theirs};
  EXPECT_EQ(ids.size(), 2u);
}

TEST_F(LoopTimerIdTest, ErrorsNameTheMember) {
  absl::StatusOr<LoopTimerId> infinite =
      wheel_->AfterFuncId(absl::InfiniteDuration(), [] {});
  EXPECT_EQ(infinite.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(infinite.status().message(), HasSubstr("AfterFuncId"));
  absl::StatusOr<LoopTimerId> empty =
      wheel_->AfterFuncId(Ms(1), absl::AnyInvocable<void()>());
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(empty.status().message(), HasSubstr("empty"));
  absl::StatusOr<LoopTimerId> at =
      wheel_->AtClockTimeId(-absl::InfiniteDuration(), [] {});
  EXPECT_EQ(at.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(at.status().message(), HasSubstr("AtClockTimeId"));

  std::unique_ptr<LoopWheel> small =
      LoopWheel::Create(LoopOptions{.clock = clock_, .max_pending = 1}).value();
  const LoopTimerId one = small->AfterFuncId(Ms(1), [] {}).value();
  absl::StatusOr<LoopTimerId> two = small->AfterFuncId(Ms(1), [] {});
  EXPECT_EQ(two.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(two.status().message(), HasSubstr("max_pending"));
  EXPECT_TRUE(small->Stop(one));
  EXPECT_TRUE(small->AfterFuncId(Ms(1), [] {}).ok());
  // An infinite Reset stops the timer, as a handle's does.
  const LoopTimerId reset = wheel_->AfterFuncId(Ms(1), [] {}).value();
  EXPECT_TRUE(wheel_->Reset(reset, absl::InfiniteDuration()));
  ExpectSpent(reset);
}

// Counts its live copies; its destructor may call into the wheel.
struct Tracked {
  explicit Tracked(int* live) : live(live) { ++*live; }
  Tracked(Tracked&& other) noexcept : live(other.live), on_destroy() {
    ++*live;
    std::swap(on_destroy, other.on_destroy);
  }
  Tracked(const Tracked&) = delete;
  ~Tracked() {
    if (on_destroy) on_destroy();
    --*live;
  }
  void operator()() const {}

  int* live;
  std::function<void()> on_destroy;
};

TEST_F(LoopTimerIdTest, CallablesAreDestroyedOnceAndFindTheirIdSpent) {
  int live = 0;
  LoopTimerId id;
  std::optional<bool> stop_from_destructor;
  {
    Tracked tracked(&live);
    tracked.on_destroy = [&] { stop_from_destructor = wheel_->Stop(id); };
    id = wheel_->AfterFuncId(Ms(10), std::move(tracked)).value();
  }
  EXPECT_EQ(live, 1);
  EXPECT_EQ(stop_from_destructor, std::nullopt);
  EXPECT_TRUE(wheel_->Stop(id));
  EXPECT_EQ(live, 0);
  EXPECT_EQ(stop_from_destructor, false);

  // Ran: destroyed after its run; pending when the wheel goes: then.
  (void)wheel_->AfterFuncId(Ms(10), Tracked(&live)).value();
  std::vector<LoopTimerId> pending;
  for (int i = 0; i < 100; ++i) {
    pending.push_back(wheel_->AfterFuncId(Ms(20 + i), Tracked(&live)).value());
  }
  EXPECT_EQ(live, 101);
  EXPECT_EQ(RunAt(Ms(10)), 1);
  EXPECT_EQ(live, 100);
  wheel_.reset();
  EXPECT_EQ(live, 0);
}

}  // namespace
}  // namespace timingwheel
