// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// wheel_core_test.cc: the single-owner core (lib/core/wheel_core.h) alone, no
// threads, no clock, no engine:
//   * DESIGN.md's worked example, bucket by bucket: where each timer sits,
//     when each bucket is released, when each timer comes out;
//   * Add of a due timer links nothing; Remove is O(1) and leaves no wake-up
//     behind; TakeAll empties every level; TakeNextBucket takes only the
//     next tick's level-0 bucket, of at most the size asked, and leaves the
//     levels where they are; levels are created only when a timer needs one;
//   * of buckets released at the same tick the lower level's goes first, so
//     a level-1 bucket's last timers find their level-0 slot free;
//   * cascades spread out (Advance kSpread, then CascadeSome) give the same
//     timers at the same wake-ups as cascades at once, a big bucket placed
//     over several wake-ups;
//   * AdvanceSome: a flush in slices; a cascade overtaken by the clock lets
//     the lower bucket it filled and its own due timers out at once; a flush
//     in progress still holds its timers for Remove and TakeAll;
//   * a model test: randomized Add / Remove / Advance sequences (short and
//     long delays, due ones, jumps of the clock, advances to the reported
//     next release; as the event-loop wheel drives the core, cascades at
//     once or spread, placed or left waiting; or as the threaded wheel's
//     advancer does, each advance in one call or in slices) against a
//     sorted multimap: every timer comes out exactly
//     once, never before its tick, never after the Advance that reached it,
//     in expiration order; NextRelease is never later than the earliest
//     timer and is empty exactly when no timer is linked.

#include "core/wheel_core.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "absl/random/distributions.h"
#include "arena_nodes.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "wheel_core_test_peer.h"

namespace timingwheel::internal {

namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// A test's timer: the core's node and a name, in the node arena (the core
// links nodes by their names there).
struct TestTimer : CoreNode, InArena {
  int id = 0;
};

// A new timer, kept for the test process's life (arena_nodes.h).
TestTimer& NewTimer() { return *new TestTimer; }
TestTimer& NewTimer(int id) {
  TestTimer& timer = NewTimer();
  timer.id = id;
  return timer;
}

// The ids of the due timers, taken out of `due`.
std::vector<int> Drain(std::vector<CoreNode*>* due) {
  std::vector<int> ids;
  for (CoreNode* node : *due) ids.push_back(static_cast<TestTimer*>(node)->id);
  due->clear();
  return ids;
}

// The same, sorted: for timers that come out in no particular order.
std::vector<int> DrainSorted(std::vector<CoreNode*>* due) {
  std::vector<int> ids = Drain(due);
  std::sort(ids.begin(), ids.end());
  return ids;
}

TEST(WheelCoreTest, DesignWorkedExample) {
  // DESIGN.md section 1 and core/placement.h: tick 1, wheel_size 4.
  WheelCore core(4);
  TestTimer& t3 = NewTimer();
  TestTimer& t9 = NewTimer();
  TestTimer& t40 = NewTimer();
  t3.id = 3;
  t9.id = 9;
  t40.id = 40;
  ASSERT_TRUE(core.Add(&t3, 3));
  ASSERT_TRUE(core.Add(&t9, 9));
  ASSERT_TRUE(core.Add(&t40, 40));
  EXPECT_EQ(WheelCoreTestPeer::LevelOf(core, &t3), 0);
  EXPECT_EQ(WheelCoreTestPeer::LevelOf(core, &t9), 1);   // bucket @8
  EXPECT_EQ(WheelCoreTestPeer::LevelOf(core, &t40), 2);  // bucket @32
  EXPECT_EQ(core.levels(), 3);
  EXPECT_EQ(core.size(), 3);

  std::vector<CoreNode*> due;
  // The releases, in order: @3 at 3, @8 at 7 (early by 1), then @9 at 9,
  // @32 at 28 (early by 4), @40 of level 1 at 39, @40 of level 0 at 40.
  std::vector<std::pair<int64_t, std::vector<int>>> seen;
  while (std::optional<int64_t> next = core.NextRelease()) {
    core.Advance(*next, &due);
    seen.emplace_back(*next, Drain(&due));
  }
  using Step = std::pair<int64_t, std::vector<int>>;
  EXPECT_THAT(seen, ElementsAre(Step{3, {3}}, Step{7, {}}, Step{9, {9}},
                                Step{28, {}}, Step{39, {}}, Step{40, {40}}));
  EXPECT_EQ(core.size(), 0);
}

TEST(WheelCoreTest, DueTimerIsNotLinked) {
  WheelCore core(20);
  std::vector<CoreNode*> due;
  core.Advance(100, &due);
  TestTimer& t = NewTimer();
  EXPECT_FALSE(core.Add(&t, 100));
  EXPECT_FALSE(core.Add(&t, -5));
  EXPECT_FALSE(t.linked());
  EXPECT_EQ(core.size(), 0);
  EXPECT_EQ(core.NextRelease(), std::nullopt);
  EXPECT_TRUE(core.Add(&t, 101));
  EXPECT_EQ(core.NextRelease(), 101);
}

TEST(WheelCoreTest, RemoveLeavesNoWakeUpBehind) {
  WheelCore core(20);
  TestTimer& early = NewTimer();
  TestTimer& late = NewTimer();
  ASSERT_TRUE(core.Add(&early, 5));
  ASSERT_TRUE(core.Add(&late, 50'000));
  EXPECT_EQ(core.NextRelease(), 5);
  core.Remove(&early);
  EXPECT_FALSE(early.linked());
  // The far timer's bucket is released early, but never at 5.
  const std::optional<int64_t> next = core.NextRelease();
  ASSERT_TRUE(next.has_value());
  EXPECT_GT(*next, 5);
  core.Remove(&late);
  EXPECT_EQ(core.NextRelease(), std::nullopt);
  EXPECT_EQ(core.size(), 0);
  std::vector<CoreNode*> due;
  EXPECT_EQ(core.Advance(100'000, &due), 0);
}

TEST(WheelCoreTest, TakeAllEmptiesEveryLevelAndLeavesNoWakeUp) {
  WheelCore core(4);
  TestTimer& a = NewTimer(1);
  TestTimer& b = NewTimer(2);
  TestTimer& c = NewTimer(3);
  ASSERT_TRUE(core.Add(&a, 2));
  ASSERT_TRUE(core.Add(&b, 30));
  ASSERT_TRUE(core.Add(&c, 1000));
  std::vector<CoreNode*> out;
  core.TakeAll(&out);
  EXPECT_THAT(DrainSorted(&out), ElementsAre(1, 2, 3));
  EXPECT_EQ(core.size(), 0);
  EXPECT_EQ(core.NextRelease(), std::nullopt);
  // Usable again.
  ASSERT_TRUE(core.Add(&a, 5));
  std::vector<CoreNode*> due;
  core.Advance(5, &due);
  EXPECT_THAT(Drain(&due), ElementsAre(1));
}

TEST(WheelCoreTest, TakeNextBucketTakesOnlyTheNextTicksLevelZeroBucket) {
  WheelCore core(4);
  std::vector<CoreNode*> due;
  core.Advance(10, &due, WheelCore::Cascades::kSpread);
  TestTimer& a = NewTimer(1);
  TestTimer& b = NewTimer(2);
  TestTimer& later = NewTimer(3);
  ASSERT_TRUE(core.Add(&a, 11));
  ASSERT_TRUE(core.Add(&b, 11));
  ASSERT_TRUE(core.Add(&later, 13));
  std::vector<CoreNode*> taken;
  // More than `most`: left where it is.
  EXPECT_EQ(core.TakeNextBucket(1, &taken), 0);
  EXPECT_EQ(core.NextRelease(), 11);
  EXPECT_EQ(core.TakeNextBucket(2, &taken), 2);
  EXPECT_THAT(DrainSorted(&taken), ElementsAre(1, 2));
  EXPECT_FALSE(a.linked());
  EXPECT_EQ(core.size(), 1);
  EXPECT_EQ(core.now_tick(), 10);  // the levels stay
  EXPECT_EQ(core.NextRelease(), 13);
  // The next tick's bucket is empty now: nothing more to take.
  EXPECT_EQ(core.TakeNextBucket(100, &taken), 0);
  // An Add for that tick goes into it anew, released at it.
  ASSERT_TRUE(core.Add(&a, 11));
  EXPECT_EQ(core.NextRelease(), 11);
  core.Advance(11, &due, WheelCore::Cascades::kSpread);
  EXPECT_THAT(Drain(&due), ElementsAre(1));
  // A bucket of level 1 next, released at the next tick (16..19, released a
  // level-0 tick width early, at 15): not taken.
  TestTimer& far = NewTimer();
  ASSERT_TRUE(core.Add(&far, 17));
  core.Remove(&later);
  core.Advance(14, &due, WheelCore::Cascades::kSpread);
  EXPECT_EQ(core.NextRelease(), 15);
  EXPECT_EQ(core.TakeNextBucket(100, &taken), 0);
  EXPECT_TRUE(far.linked());
}

TEST(WheelCoreTest, LevelsAreCreatedOnlyWhenNeeded) {
  WheelCore core(20);
  TestTimer& near = NewTimer();
  TestTimer& far = NewTimer();
  ASSERT_TRUE(core.Add(&near, 19));
  EXPECT_EQ(core.levels(), 1);
  ASSERT_TRUE(core.Add(&far, 8000));  // level 2 spans 8 s of 1 ms ticks
  EXPECT_EQ(core.levels(), 3);
  TestTimer& farthest = NewTimer();
  ASSERT_TRUE(core.Add(&farthest, std::numeric_limits<int64_t>::max()));
  EXPECT_EQ(WheelCoreTestPeer::LevelOf(core, &farthest), core.levels() - 1);
}

TEST(WheelCoreTest, ATimersSlotIsItsBucketIdModuloWheelSizeOnEveryLevel) {
  // Place counts a bucket's slot from its level's current slot instead of
  // dividing (WheelCore::SlotOf): the same slot, for every level, wheel
  // size and time, ids past the bucket after the span (the top level's)
  // included.
  std::mt19937_64 rng(11);
  for (const int wheel_size : {2, 3, 20, 64}) {
    WheelCore core(wheel_size);
    std::vector<CoreNode*> due;
    for (const int64_t now : {int64_t{0}, int64_t{1}, int64_t{977},
                              int64_t{123456789}, int64_t{1} << 40}) {
      core.Advance(now, &due);
      for (int i = 0; i < 300; ++i) {
        const int shift = static_cast<int>(rng() % 63);
        int64_t expiration =
            now + 1 + static_cast<int64_t>(rng() >> (1 + shift));
        if (i == 0) expiration = std::numeric_limits<int64_t>::max();
        TestTimer* timer = &NewTimer();
        ASSERT_TRUE(core.Add(timer, expiration));
        const int level = WheelCoreTestPeer::LevelOf(core, timer);
        ASSERT_GE(level, 0);
        const int64_t id =
            expiration / WheelCoreTestPeer::TickWidth(core, level);
        EXPECT_EQ(WheelCoreTestPeer::SlotOf(core, timer), id % wheel_size)
            << "wheel_size " << wheel_size << ", now " << now << ", expiration "
            << expiration << ", level " << level;
        core.Remove(timer);
      }
    }
  }
}

TEST(WheelCoreTest, AnAddBesideTheLastOneLandsWhereTheLevelTableSays) {
  // Add links a timer in the bucket of the Add before it, without walking
  // the levels, when its expiration is in the range the core remembered
  // (WheelCore::LastBucket): around every bucket edge and lower level's
  // reach, in units of 1, 3 and 1000 to a tick, it is the level LevelFor
  // gives and the slot of the bucket id, as for the first Add.
  std::mt19937_64 rng(29);
  for (const int wheel_size : {2, 3, 20}) {
    for (const int64_t unit : {int64_t{1}, int64_t{3}, int64_t{1000}}) {
      WheelCore core(wheel_size, unit);
      std::vector<CoreNode*> due;
      for (const int64_t now :
           {int64_t{0}, int64_t{5}, int64_t{977}, int64_t{123456}}) {
        core.Advance(now, &due);
        ASSERT_THAT(due, IsEmpty());
        for (int i = 0; i < 400; ++i) {
          int64_t width = 1;
          for (int k = static_cast<int>(rng() % 5); k > 0; --k) {
            width *= wheel_size;
          }
          const int64_t reach = 2 * width * wheel_size * unit;
          const int64_t first =
              (now + 1) * unit + static_cast<int64_t>(rng() % reach);
          TestTimer& before = NewTimer();
          ASSERT_TRUE(core.Add(&before, first));
          for (int j = 0; j < 8; ++j) {
            const int64_t expiration =
                first + static_cast<int64_t>(rng() % (4 * width * unit)) -
                2 * width * unit;
            const int64_t tick = (expiration + unit - 1) / unit;
            if (expiration <= 0 || tick <= now) continue;
            TestTimer& timer = NewTimer();
            ASSERT_TRUE(core.Add(&timer, expiration));
            const int level = LevelFor(wheel_size, now, tick);
            EXPECT_EQ(WheelCoreTestPeer::LevelOf(core, &timer), level)
                << "wheel_size " << wheel_size << ", unit " << unit << ", now "
                << now << ", after " << first << ": " << expiration;
            const int64_t id = tick / WheelCoreTestPeer::TickWidth(core, level);
            EXPECT_EQ(WheelCoreTestPeer::SlotOf(core, &timer), id % wheel_size)
                << "wheel_size " << wheel_size << ", unit " << unit << ", now "
                << now << ", after " << first << ": " << expiration;
            core.Remove(&timer);
            if (HasFailure()) return;
          }
          core.Remove(&before);
        }
      }
    }
  }
}

TEST(WheelCoreTest, ALevelZeroBucketDueWhenALevelOneBucketIsReleasedGoesFirst) {
  // wheel_size 4: the level-1 bucket @8 is released at 7, the tick of the
  // level-0 bucket @7. Its timer at 11 (7 + 4) goes to the bucket past
  // level 0's span, in the slot of @7: free only once @7 was flushed.
  WheelCore core(4);
  std::vector<CoreNode*> due;
  core.Advance(4, &due);
  TestTimer& at7 = NewTimer();
  TestTimer& at11 = NewTimer();
  at7.id = 7;
  at11.id = 11;
  ASSERT_TRUE(core.Add(&at11, 11));  // level 1, bucket @8
  ASSERT_TRUE(core.Add(&at7, 7));    // level 0, bucket @7
  EXPECT_EQ(WheelCoreTestPeer::LevelOf(core, &at11), 1);
  core.Advance(7, &due);
  EXPECT_THAT(Drain(&due), ElementsAre(7));
  EXPECT_EQ(WheelCoreTestPeer::LevelOf(core, &at11), 0);
  core.Advance(10, &due);
  EXPECT_THAT(Drain(&due), IsEmpty());
  core.Advance(11, &due);
  EXPECT_THAT(Drain(&due), ElementsAre(11));
}

TEST(WheelCoreTest, AJumpReleasesEverythingDueInExpirationOrder) {
  WheelCore core(8);
  std::vector<std::unique_ptr<TestTimer>> timers;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 2000; ++i) {
    timers.push_back(std::make_unique<TestTimer>());
    timers.back()->id = i;
    ASSERT_TRUE(
        core.Add(timers.back().get(), absl::Uniform<int64_t>(rng, 1, 100'000)));
  }
  std::vector<CoreNode*> due;
  EXPECT_EQ(core.Advance(1'000'000, &due), 2000);
  int64_t last = 0;
  int count = 0;
  for (CoreNode* node : due) {
    EXPECT_LE(last, node->expiration());
    last = node->expiration();
    ++count;
  }
  EXPECT_EQ(count, 2000);
  EXPECT_EQ(core.NextRelease(), std::nullopt);
}

TEST(WheelCoreTest, SpreadCascadesGiveTheSameTimersAtTheSameWakeUps) {
  // One timer at every tick up to 1200, and 400 more in [800, 1200): at
  // tick 0 those go to level 2 (bucket @800, released at 780 with 400 +
  // 20 timers). Driven by its NextRelease, a core spreading its cascades
  // (CascadeSome after each Advance) gives out the same timers at the same
  // ticks as one cascading at once, and places the big bucket over several
  // wake-ups, none with more than a quarter of it.
  WheelCore now(20);
  WheelCore spread(20);
  std::vector<std::unique_ptr<TestTimer>> timers;
  auto add = [&](int64_t tick) {
    for (WheelCore* core : {&now, &spread}) {
      timers.push_back(std::make_unique<TestTimer>());
      timers.back()->id = static_cast<int>(tick);
      ASSERT_TRUE(core->Add(timers.back().get(), tick));
    }
  };
  for (int64_t tick = 1; tick <= 1200; ++tick) add(tick);
  for (int64_t i = 0; i < 400; ++i) add(800 + i);
  using Step = std::pair<int64_t, std::vector<int>>;
  std::vector<Step> seen_now, seen_spread;
  std::vector<CoreNode*> due;
  while (std::optional<int64_t> next = now.NextRelease()) {
    now.Advance(*next, &due);
    seen_now.emplace_back(*next, Drain(&due));
  }
  int64_t most_placed = 0;
  int cascades = 0;
  while (std::optional<int64_t> next = spread.NextRelease()) {
    spread.Advance(*next, &due, WheelCore::Cascades::kSpread);
    seen_spread.emplace_back(*next, Drain(&due));
    const int64_t placed = spread.CascadeSome();
    most_placed = std::max(most_placed, placed);
    cascades += placed > 0;
  }
  EXPECT_EQ(seen_spread, seen_now);
  EXPECT_EQ(seen_now.size(), 1200u) << "a wake-up for every tick, no more";
  EXPECT_LE(most_placed, 420 / 4);
  EXPECT_GT(cascades, 19);
  EXPECT_EQ(spread.size(), 0);
}

// The model test: the core against a sorted multimap of (tick, id).
class Model {
 public:
  // `sliced`: advances as the threaded wheel's advancer makes them, else as
  // the event-loop wheel's.
  Model(int wheel_size, uint64_t seed, bool sliced)
      : core_(wheel_size), rng_(seed), sliced_(sliced) {}

  void Run(int steps) {
    for (int step = 0; step < steps; ++step) {
      const int op = absl::Uniform(rng_, 0, 10);
      if (op < 5) {
        AddOne();
      } else if (op < 7) {
        RemoveOne();
      } else {
        AdvanceOnce();
      }
      if (HasFatalFailure()) return;
    }
    // Drain: advance by the reported releases until nothing is left.
    while (std::optional<int64_t> next = core_.NextRelease()) {
      AdvanceTo(*next);
      if (HasFatalFailure()) return;
    }
    EXPECT_TRUE(expected_.empty()) << expected_.size() << " never came out";
    EXPECT_EQ(core_.size(), 0);
  }

 private:
  static bool HasFatalFailure() { return testing::Test::HasFatalFailure(); }

  int64_t Delay() {
    switch (absl::Uniform(rng_, 0, 6)) {
      case 0:
        return absl::Uniform<int64_t>(rng_, -3, 2);  // due, or the next tick
      case 1:
        return absl::Uniform<int64_t>(rng_, 1, 30);
      case 2:
        return absl::Uniform<int64_t>(rng_, 1, 1000);
      case 3:
        return absl::Uniform<int64_t>(rng_, 1, 100'000);
      case 4:
        return absl::Uniform<int64_t>(rng_, 1, 10'000'000);
      default:
        return int64_t{1} << absl::Uniform(rng_, 0, 40);
    }
  }

  void AddOne() {
    auto timer = std::make_unique<TestTimer>();
    timer->id = next_id_++;
    const int64_t expiration = core_.now_tick() + Delay();
    if (!core_.Add(timer.get(), expiration)) {
      ASSERT_LE(expiration, core_.now_tick()) << "refused a timer not due";
      ASSERT_FALSE(timer->linked());
      return;
    }
    ASSERT_GT(expiration, core_.now_tick());
    expected_.emplace(expiration, timer->id);
    linked_.push_back(timer.get());
    timers_.push_back(std::move(timer));
  }

  void RemoveOne() {
    if (linked_.empty()) return;
    const size_t i = absl::Uniform<size_t>(rng_, 0, linked_.size());
    TestTimer* timer = linked_[i];
    linked_[i] = linked_.back();
    linked_.pop_back();
    core_.Remove(timer);
    Erase(timer->expiration(), timer->id);
  }

  void AdvanceOnce() {
    std::optional<int64_t> next = core_.NextRelease();
    int64_t to = core_.now_tick();
    switch (absl::Uniform(rng_, 0, 4)) {
      case 0:
        to += absl::Uniform<int64_t>(rng_, 0, 3);
        break;
      case 1:
        to += absl::Uniform<int64_t>(rng_, 0, 500);
        break;
      case 2:
        to += absl::Uniform<int64_t>(rng_, 0, 200'000);
        break;
      default:
        if (next.has_value()) to = std::max(to, *next);  // a poller's wake-up
        break;
    }
    if (!expected_.empty()) {
      // Never later than the earliest timer: no timer runs late for want of
      // a wake-up.
      ASSERT_TRUE(next.has_value());
      ASSERT_LE(*next, expected_.begin()->first);
    } else {
      ASSERT_EQ(next, std::nullopt) << "a wake-up with no timer";
    }
    AdvanceTo(to);
  }

  void AdvanceTo(int64_t to) {
    std::vector<CoreNode*> due;
    int64_t appended = 0;
    if (sliced_) {
      // As the threaded wheel's advancer: at once, or in slices at one tick
      // (the same as one Advance).
      if (absl::Bernoulli(rng_, 0.5)) {
        appended = core_.Advance(to, &due);
      } else {
        const int64_t linked = core_.size();
        while (
            !core_.AdvanceSome(to, &due, absl::Uniform<int64_t>(rng_, 0, 8))) {
        }
        appended = linked - core_.size();
      }
    } else {
      // As the event-loop wheel: cascades at once, or spread out, then a
      // share placed (or not: a later Advance must place what is left in
      // time).
      const bool spread = absl::Bernoulli(rng_, 0.5);
      appended = core_.Advance(
          to, &due,
          spread ? WheelCore::Cascades::kSpread : WheelCore::Cascades::kNow);
      if (spread && absl::Bernoulli(rng_, 0.7)) core_.CascadeSome();
    }
    int64_t count = 0;
    int64_t last = std::numeric_limits<int64_t>::min();
    for (CoreNode* node : due) {
      auto* timer = static_cast<TestTimer*>(node);
      ++count;
      ASSERT_LE(timer->expiration(), to) << "early: timer " << timer->id;
      ASSERT_GE(timer->expiration(), last) << "out of order";
      last = timer->expiration();
      Erase(timer->expiration(), timer->id);
      linked_.erase(std::find(linked_.begin(), linked_.end(), timer));
    }
    ASSERT_EQ(count, appended);
    // Nothing due by `to` is left behind.
    if (!expected_.empty()) {
      ASSERT_GT(expected_.begin()->first, to)
          << "timer " << expected_.begin()->second << " late";
    }
    ASSERT_EQ(core_.size(), static_cast<int64_t>(expected_.size()));
  }

  void Erase(int64_t tick, int id) {
    auto [begin, end] = expected_.equal_range(tick);
    for (auto it = begin; it != end; ++it) {
      if (it->second == id) {
        expected_.erase(it);
        return;
      }
    }
    ADD_FAILURE() << "timer " << id << " at " << tick
                  << " came out twice, or at another tick";
  }

  WheelCore core_;
  std::mt19937_64 rng_;
  const bool sliced_;
  int next_id_ = 0;
  std::multimap<int64_t, int> expected_;
  std::vector<TestTimer*> linked_;
  std::vector<std::unique_ptr<TestTimer>> timers_;
};

TEST(WheelCoreTest, ACascadeOvertakenByTheClockLetsItsDueTimersOutAtOnce) {
  // wheel_size 4: 64 timers at tick 9 share the level-1 bucket @8, released
  // at 7. Its flush is sliced; once the clock has passed 9, the level-0
  // bucket @9 that the flush has filled so far is flushed first, and the
  // timers not moved yet come out due as they are reached: each slice
  // hands out due timers, none waits for the end of the cascade.
  WheelCore core(4);
  std::vector<TestTimer*> timers;
  for (int i = 0; i < 64; ++i) {
    timers.push_back(&NewTimer());
    timers.back()->id = i;
    ASSERT_TRUE(core.Add(timers.back(), 9));
  }
  std::vector<CoreNode*> due;
  EXPECT_FALSE(core.AdvanceSome(7, &due, 16));
  EXPECT_TRUE(due.empty()) << "moved down, not due at 7";
  EXPECT_FALSE(core.AdvanceSome(9, &due, 16));
  EXPECT_THAT(Drain(&due),
              ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))
      << "the bucket @9 waited for the end of the cascade";
  EXPECT_FALSE(core.AdvanceSome(9, &due, 16));
  EXPECT_EQ(Drain(&due).size(), 16u) << "reached, the rest are due";
  EXPECT_TRUE(core.AdvanceSome(9, &due, 1000));
  EXPECT_EQ(Drain(&due).size(), 32u);
  EXPECT_EQ(core.size(), 0);
  EXPECT_EQ(core.NextRelease(), std::nullopt);
}

TEST(WheelCoreTest, TimersOfAFlushInProgressCanBeRemovedAndTaken) {
  WheelCore core(4);
  std::vector<TestTimer*> timers;
  for (int i = 0; i < 8; ++i) {
    timers.push_back(&NewTimer());
    timers.back()->id = i;
    ASSERT_TRUE(core.Add(timers.back(), 9));
  }
  std::vector<CoreNode*> due;
  ASSERT_FALSE(core.AdvanceSome(7, &due, 2));
  EXPECT_EQ(core.NextRelease(), 7) << "a flush under way is work now";
  core.Remove(timers[5]);  // not moved yet
  core.Remove(timers[0]);  // moved to level 0
  EXPECT_EQ(core.size(), 6);
  std::vector<CoreNode*> all;
  core.TakeAll(&all);
  std::vector<int> taken = Drain(&all);
  std::sort(taken.begin(), taken.end());
  EXPECT_EQ(taken, (std::vector<int>{1, 2, 3, 4, 6, 7}));
  EXPECT_EQ(core.NextRelease(), std::nullopt);
}

// A flush's slice leaves the strands' new first nodes without their tags
// (NodeList::PopFrontUntagged); the slice's end writes them, so that a
// Remove between two slices unlinks a first node, a middle one and a last
// one of their strands correctly.
TEST(WheelCoreTest, RemovingTheNextTimersOfASlicedFlushLeavesTheRestIntact) {
  WheelCore core(4);
  std::vector<TestTimer*> timers;
  for (int i = 0; i < 64; ++i) {  // four to each of the 16 strands
    timers.push_back(&NewTimer());
    timers.back()->id = i;
    ASSERT_TRUE(core.Add(timers.back(), 9));
  }
  std::vector<CoreNode*> due;
  ASSERT_FALSE(core.AdvanceSome(7, &due, 20));  // 0..19 moved to level 0
  ASSERT_TRUE(due.empty());
  const std::vector<int> removed = {20, 21, 25, 35, 36, 50, 63};
  for (int id : removed) core.Remove(timers[id]);
  EXPECT_EQ(core.size(), 64 - static_cast<int64_t>(removed.size()));
  EXPECT_TRUE(core.AdvanceSome(7, &due, 1000));
  EXPECT_TRUE(due.empty());
  EXPECT_TRUE(core.AdvanceSome(9, &due, 1000));
  std::vector<int> ran = Drain(&due);
  std::sort(ran.begin(), ran.end());
  std::vector<int> expected;
  for (int i = 0; i < 64; ++i) {
    if (std::find(removed.begin(), removed.end(), i) == removed.end()) {
      expected.push_back(i);
    }
  }
  EXPECT_EQ(ran, expected);
  EXPECT_EQ(core.size(), 0);
  EXPECT_EQ(core.NextRelease(), std::nullopt);
}

class WheelCoreModelTest : public testing::TestWithParam<int> {};

TEST_P(WheelCoreModelTest, MatchesASortedMap) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    SCOPED_TRACE(testing::Message() << "seed " << seed);
    Model model(GetParam(), seed, /*sliced=*/seed % 2 == 0);
    model.Run(10'000);
    if (HasFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(WheelSizes, WheelCoreModelTest,
                         testing::Values(2, 3, 4, 20, 64, 65536));

}  // namespace
}  // namespace timingwheel::internal
