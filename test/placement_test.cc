// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// placement_test.cc: tests of the pure placement and release functions of
// lib/core/placement.h, without an engine, a lock or a node:
//   * FloorDiv / CeilDiv on negatives, zero and exact multiples;
//   * the geometry of every level (tick width, span, release offset) up to
//     the top level, whose span would overflow int64 and spans everything;
//   * PlaceInLevel (dividing with / and %, and with core/divider.h's
//     reciprocals, as the core does) and LevelFor against an oracle in
//     128-bit arithmetic (so it cannot overflow where the code under test
//     might), for wheel_size 2, 4, 20, 64 and 65536, at every boundary of
//     every level plus and minus one tick: first tick ahead, span, the
//     bucket past it, each bucket of the span, from current ticks aligned
//     and not aligned to each level's tick width, small and near INT64_MAX,
//     with expirations at 0 and INT64_MAX; exhaustively for small wheels,
//     every slot of every level;
//   * the same boundaries written out by hand for wheel_size 4;
//   * early release: a bucket is released at its expiration minus the tick
//     width of the level below, in the future, and at that tick every timer
//     of the bucket fits the level below;
//   * never early, never late: following a timer from bucket to bucket, each
//     released when placement says, it is due exactly at its expiration;
//   * the worked example and the level table of placement.h's top comment,
//     the table compared with the comment itself.

#include "core/placement.h"

#include <cstdint>
#include <fstream>
#include <limits>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/divider.h"
#include "gtest/gtest.h"

namespace timingwheel::internal {
namespace {

__extension__ typedef __int128 Int128;

constexpr int64_t kMinTick = std::numeric_limits<int64_t>::min();

// ---------------------------------------------------------------------------
// FloorDiv / CeilDiv

TEST(PlacementTest, FloorDivRoundsTowardNegativeInfinity) {
  EXPECT_EQ(FloorDiv(0, 4), 0);
  EXPECT_EQ(FloorDiv(1, 4), 0);
  EXPECT_EQ(FloorDiv(3, 4), 0);
  EXPECT_EQ(FloorDiv(4, 4), 1);  // exact multiple
  EXPECT_EQ(FloorDiv(5, 4), 1);
  EXPECT_EQ(FloorDiv(8, 4), 2);
  EXPECT_EQ(FloorDiv(-1, 4), -1);
  EXPECT_EQ(FloorDiv(-3, 4), -1);
  EXPECT_EQ(FloorDiv(-4, 4), -1);  // exact multiple
  EXPECT_EQ(FloorDiv(-5, 4), -2);
  EXPECT_EQ(FloorDiv(-8, 4), -2);
  EXPECT_EQ(FloorDiv(7, 1), 7);
  EXPECT_EQ(FloorDiv(-7, 1), -7);
  EXPECT_EQ(FloorDiv(kMaxTick, 1), kMaxTick);
  EXPECT_EQ(FloorDiv(kMaxTick, kMaxTick), 1);
  EXPECT_EQ(FloorDiv(-kMaxTick, kMaxTick), -1);
  EXPECT_EQ(FloorDiv(kMinTick, 2), kMinTick / 2);
  static_assert(FloorDiv(-1, 2) == -1);
}

TEST(PlacementTest, CeilDivRoundsTowardPositiveInfinity) {
  EXPECT_EQ(CeilDiv(0, 4), 0);
  EXPECT_EQ(CeilDiv(1, 4), 1);
  EXPECT_EQ(CeilDiv(3, 4), 1);
  EXPECT_EQ(CeilDiv(4, 4), 1);  // exact multiple
  EXPECT_EQ(CeilDiv(5, 4), 2);
  EXPECT_EQ(CeilDiv(-1, 4), 0);
  EXPECT_EQ(CeilDiv(-3, 4), 0);
  EXPECT_EQ(CeilDiv(-4, 4), -1);  // exact multiple
  EXPECT_EQ(CeilDiv(-5, 4), -1);
  EXPECT_EQ(CeilDiv(7, 1), 7);
  EXPECT_EQ(CeilDiv(-7, 1), -7);
  EXPECT_EQ(CeilDiv(kMaxTick, kMaxTick), 1);
  EXPECT_EQ(CeilDiv(kMaxTick - 1, kMaxTick), 1);
  EXPECT_EQ(CeilDiv(kMaxTick, 2), kMaxTick / 2 + 1);
  static_assert(CeilDiv(1, 2) == 1);
}

TEST(PlacementTest, FloorAndCeilAgreeWithRealDivisionExhaustively) {
  for (int64_t b = 1; b <= 25; ++b) {
    for (int64_t a = -200; a <= 200; ++a) {
      const int64_t floor = FloorDiv(a, b);
      const int64_t ceil = CeilDiv(a, b);
      ASSERT_LE(floor * b, a) << a << "/" << b;
      ASSERT_GT((floor + 1) * b, a) << a << "/" << b;
      ASSERT_GE(ceil * b, a) << a << "/" << b;
      ASSERT_LT((ceil - 1) * b, a) << a << "/" << b;
      ASSERT_EQ(ceil - floor, a % b == 0 ? 0 : 1) << a << "/" << b;
    }
  }
}

// ---------------------------------------------------------------------------
// The oracle: placement.h's rules in 128-bit arithmetic, level by level.

struct Expected {
  Fit fit;
  int slot = -1;
  int64_t bucket_tick = 0;
  int64_t release_tick = 0;
};

class Oracle {
 public:
  explicit Oracle(int w) : w_(w) {
    // The top level is the first whose span, w^(k+1), does not fit in int64.
    width_.push_back(1);
    while (width_.back() * w <= kMaxTick) width_.push_back(width_.back() * w);
    top_ = static_cast<int>(width_.size()) - 1;
    width_.push_back(width_.back() * w);
  }

  int w() const { return w_; }
  int top() const { return top_; }
  // Level k's tick width, w^k.
  Int128 width(int k) const { return width_[k]; }
  // Level k's current tick when level 0's is `now` (>= 0).
  Int128 Current(int k, int64_t now) const {
    return now / width_[k] * width_[k];
  }

  // Where `e` goes in level k of a wheel whose level 0 is at `now`.
  Expected Place(int k, int64_t now, int64_t e) const {
    const Int128 width = width_[k];
    const Int128 current = Current(k, now);
    Expected want;
    if (k == 0 && e <= current) {
      want.fit = Fit::kDue;
      return want;
    }
    if (k > 0 && e < current + width) {
      want.fit = Fit::kLower;
      return want;
    }
    if (k == top_ || e < current + width * w_) {
      want.fit = Fit::kInSpan;
    } else if (e < current + width * (w_ + 1)) {
      want.fit = Fit::kPastSpan;
    } else {
      want.fit = Fit::kHigher;
      return want;
    }
    const Int128 id = e / width;  // e > current >= 0
    want.slot = static_cast<int>(id % w_);
    want.bucket_tick = static_cast<int64_t>(id * width);
    want.release_tick =
        static_cast<int64_t>(id * width - (k == 0 ? 0 : width / w_));
    return want;
  }

  // The lowest level whose span or the bucket past it covers `e`.
  int Level(int64_t now, int64_t e) const {
    for (int k = 0; k < top_; ++k) {
      if (e < Current(k, now) + width_[k] * (w_ + 1)) return k;
    }
    return top_;
  }

 private:
  int w_;
  int top_;
  std::vector<Int128> width_;  // w^0 .. w^(top + 1)
};

std::string FitName(Fit fit) {
  switch (fit) {
    case Fit::kDue:
      return "kDue";
    case Fit::kLower:
      return "kLower";
    case Fit::kInSpan:
      return "kInSpan";
    case Fit::kPastSpan:
      return "kPastSpan";
    case Fit::kHigher:
      return "kHigher";
  }
  return "?";
}

// Compares PlaceInLevel at every level, and LevelFor, with the oracle; also
// that the level LevelFor names takes the timer (or it is due) and the ones
// below send it up. (A level above may take it too: the rule is "less than
// one tick width ahead: lower", not "fits a lower level".) Plain
// comparisons, not a gtest assertion per level: this runs a million times.
bool MatchesOracle(const Oracle& oracle, int64_t now, int64_t e) {
  const int w = oracle.w();
  const std::string where =
      absl::StrCat("wheel_size ", w, " now ", now, " e ", e);
  const int level = LevelFor(w, now, e);
  if (level != oracle.Level(now, e)) {
    ADD_FAILURE() << where << ": LevelFor " << level << ", oracle "
                  << oracle.Level(now, e);
    return false;
  }
  LevelGeometry geometry = GeometryFor(1, w);
  for (int k = 0; k <= oracle.top(); ++k) {
    if (k > 0) geometry = OverflowOf(geometry);
    const int64_t current = geometry.CurrentAt(now);
    const LevelPlacement got = PlaceInLevel(geometry, current, e);
    // The core's way, by precomputed reciprocals: the same placement.
    const LevelPlacement fast = PlaceInLevel(
        geometry, current, e, Divider(geometry.tick_width), Divider(w));
    if (fast.fit != got.fit || fast.slot != got.slot ||
        fast.bucket_id != got.bucket_id ||
        fast.bucket_tick != got.bucket_tick ||
        fast.release_tick != got.release_tick) {
      ADD_FAILURE() << where << " level " << k << ": by Divider, slot "
                    << fast.slot << " @" << fast.bucket_tick
                    << "; by / and %, slot " << got.slot << " @"
                    << got.bucket_tick;
      return false;
    }
    const Expected want = oracle.Place(k, now, e);
    const bool takes = want.fit == Fit::kInSpan || want.fit == Fit::kPastSpan;
    if (current != oracle.Current(k, now) || got.fit != want.fit ||
        NeedsHigherLevel(geometry, current, e) != (want.fit == Fit::kHigher) ||
        (takes &&
         (got.slot != want.slot || got.bucket_tick != want.bucket_tick ||
          got.release_tick != want.release_tick ||
          got.bucket_id * geometry.tick_width != got.bucket_tick)) ||
        (k < level && want.fit != Fit::kHigher) ||
        (k == level && !takes && want.fit != Fit::kDue)) {
      ADD_FAILURE() << where << " level " << k << ": current " << current << " "
                    << FitName(got.fit) << " slot " << got.slot << " @"
                    << got.bucket_tick << " released " << got.release_tick
                    << "; oracle " << FitName(want.fit) << " slot " << want.slot
                    << " @" << want.bucket_tick << " released "
                    << want.release_tick << "; LevelFor " << level;
      return false;
    }
    // The right rotation: the bucket's range holds e.
    if (takes && (got.bucket_tick > e ||
                  Int128{got.bucket_tick} + geometry.tick_width <= e)) {
      ADD_FAILURE() << where << " level " << k << ": bucket @"
                    << got.bucket_tick << " does not hold e";
      return false;
    }
  }
  return true;
}

// ---------------------------------------------------------------------------
// Geometry

TEST(PlacementTest, GeometryOfEveryLevelUpToTheOneThatSpansEverything) {
  for (int w : {2, 3, 4, 5, 20, 64, 1000, 65536}) {
    SCOPED_TRACE(absl::StrCat("wheel_size ", w));
    const Oracle oracle(w);
    const int top = oracle.top();
    for (int k = 0; k <= top; ++k) {
      const LevelGeometry g = GeometryOfLevel(w, k);
      EXPECT_EQ(g.tick_width, oracle.width(k)) << k;
      EXPECT_EQ(g.span, k == top ? kMaxTick : oracle.width(k + 1)) << k;
      EXPECT_EQ(g.spans_everything(), k == top) << k;
      EXPECT_EQ(g.release_offset, k == 0 ? 0 : oracle.width(k - 1)) << k;
      EXPECT_EQ(g.is_level0(), k == 0) << k;
      EXPECT_EQ(g.wheel_size, w);
      EXPECT_EQ(ReleaseTick(g, g.tick_width), g.tick_width - g.release_offset);
      if (k < top) {
        const LevelGeometry up = OverflowOf(g);
        EXPECT_EQ(up.tick_width, g.span);
        EXPECT_EQ(up.span, GeometryOfLevel(w, k + 1).span);
        EXPECT_EQ(up.release_offset, g.tick_width);
      }
    }
    // The top level is the first whose span would overflow int64.
    EXPECT_GT(oracle.width(top + 1), kMaxTick);
    EXPECT_LE(oracle.width(top), kMaxTick);
    // Nothing is too far for it, from any current tick.
    const LevelGeometry g = GeometryOfLevel(w, top);
    for (int64_t now : {int64_t{0}, kMaxTick / 2, kMaxTick}) {
      EXPECT_FALSE(NeedsHigherLevel(g, g.CurrentAt(now), kMaxTick)) << now;
    }
    EXPECT_EQ(LevelFor(w, 0, kMaxTick), top);
  }
}

// ---------------------------------------------------------------------------
// Every boundary of every level, plus and minus one tick

// Current ticks: zero and one, tick widths of some levels and their
// neighbours (aligned to the level and not), a mix of digits, and near
// INT64_MAX.
std::vector<int64_t> NowTicks(const Oracle& oracle) {
  std::set<int64_t> nows = {0,
                            1,
                            12345678901,
                            kMaxTick / 3,
                            kMaxTick - kMaxTick / 7,
                            kMaxTick - 2,
                            kMaxTick - 1,
                            kMaxTick};
  const int top = oracle.top();
  for (int k : {1, 2, top / 2, top - 1, top}) {
    if (k < 1) continue;
    const Int128 width = oracle.width(k);
    for (Int128 now :
         {width - 1, width, width + 1, 3 * width + width / oracle.w() + 1,
          kMaxTick - width, kMaxTick - width * oracle.w()}) {
      if (now >= 0 && now <= kMaxTick) nows.insert(static_cast<int64_t>(now));
    }
  }
  return {nows.begin(), nows.end()};
}

// Expirations at the boundaries of every level from `now`, each plus and
// minus one: the first tick ahead, the end of the span, of the bucket past
// it, the start of every bucket of the span (a sample of them for huge
// wheel sizes), and the extremes (0 only where 0 - now fits in int64).
std::vector<int64_t> BoundaryExpirations(const Oracle& oracle, int64_t now) {
  const int w = oracle.w();
  std::set<Int128> points = {0, now, kMaxTick};
  for (int k = 0; k <= oracle.top(); ++k) {
    const Int128 width = oracle.width(k);
    const Int128 current = oracle.Current(k, now);
    points.insert(current + width);            // first tick not kLower
    points.insert(current + width * w);        // the bucket past the span
    points.insert(current + width * (w + 1));  // past that: kHigher
    const int step = w <= 64 ? 1 : w / 16;
    for (int j = 2; j < w; j += step) points.insert(current + j * width);
  }
  std::vector<int64_t> out;
  for (Int128 p : points) {
    for (Int128 e : {p - 1, p, p + 1}) {
      // In the past by a little, or by as much as int64 allows.
      if (e >= -2 && e <= kMaxTick && e - now >= kMinTick) {
        out.push_back(static_cast<int64_t>(e));
      }
    }
  }
  return out;
}

// The wheel sizes the boundary tests run: the smallest, small, the default,
// and large, whose top levels are 62, 31, 14, 10 and 3.
constexpr int kWheelSizes[] = {2, 4, 20, 64, 65536};

TEST(PlacementTest, EveryLevelBoundaryPlusMinusOneMatchesTheOracle) {
  for (int w : kWheelSizes) {
    const Oracle oracle(w);
    for (int64_t now : NowTicks(oracle)) {
      for (int64_t e : BoundaryExpirations(oracle, now)) {
        if (!MatchesOracle(oracle, now, e)) return;
      }
    }
  }
}

TEST(PlacementTest, LevelForChangesExactlyAtEachLevelsFirstTick) {
  // tokio's level_for test: level k starts where level k-1's span and the
  // bucket past it end; one tick before, it is still level k-1.
  for (int w : kWheelSizes) {
    const Oracle oracle(w);
    for (int64_t now : NowTicks(oracle)) {
      SCOPED_TRACE(absl::StrCat("wheel_size ", w, " now ", now));
      for (int k = 1; k <= oracle.top(); ++k) {
        const Int128 first =
            oracle.Current(k - 1, now) + oracle.width(k - 1) * (w + 1);
        if (first > kMaxTick) break;
        const int64_t e = static_cast<int64_t>(first);
        ASSERT_EQ(LevelFor(w, now, e - 1), k - 1) << "level " << k;
        ASSERT_EQ(LevelFor(w, now, e), k) << "level " << k;
        if (e < kMaxTick) {
          ASSERT_EQ(LevelFor(w, now, e + 1), k) << "level " << k;
        }
      }
    }
  }
}

TEST(PlacementTest, DueOnlyAtLevelZeroAndOnlyWhenExpirationIsNotAfterNow) {
  for (int w : kWheelSizes) {
    const Oracle oracle(w);
    for (int64_t now : NowTicks(oracle)) {
      for (int64_t e : BoundaryExpirations(oracle, now)) {
        LevelGeometry g = GeometryFor(1, w);
        for (int k = 0; k <= oracle.top(); ++k) {
          if (k > 0) g = OverflowOf(g);
          const bool due =
              PlaceInLevel(g, g.CurrentAt(now), e).fit == Fit::kDue;
          if (due != (k == 0 && e <= now)) {
            FAIL() << "wheel_size " << w << " now " << now << " e " << e
                   << " level " << k << (due ? " due" : " not due");
          }
        }
      }
    }
  }
}

TEST(PlacementTest, SmallWheelsExhaustivelyHitEverySlotOfEveryLevel) {
  for (int w : {2, 3, 4, 5, 20}) {
    const Oracle oracle(w);
    const int levels = w == 20 ? 3 : 4;
    const int64_t span = static_cast<int64_t>(oracle.width(levels));
    const int64_t w2 = int64_t{w} * w;
    const int64_t w3 = w2 * w;
    int64_t all_ones = 0;  // digit 1 at every level below the top one
    for (int64_t p = 1; p < span; p *= w) all_ones += p;
    // Currents with every digit (base w) pattern that matters: zero, one
    // tick in, the last tick of a turn, turn boundaries, a mix of digits.
    const std::set<int64_t> nows = {
        0,        1,        w - 1,          w,      w + 1,
        w2 - 1,   w2,       w2 + w + 1,     w3 - 1, w3 + w2 + w + 1,
        all_ones, span - 1, span + all_ones};
    std::set<std::pair<int, int>> hit;
    for (int64_t now : nows) {
      for (int64_t e = now - 2; e <= now + span + 2; ++e) {
        if (!MatchesOracle(oracle, now, e)) return;
        const int k = LevelFor(w, now, e);
        const LevelGeometry g = GeometryOfLevel(w, k);
        const LevelPlacement p = PlaceInLevel(g, g.CurrentAt(now), e);
        if (p.fit != Fit::kDue) hit.emplace(k, p.slot);
      }
    }
    for (int k = 0; k < levels; ++k) {
      for (int slot = 0; slot < w; ++slot) {
        EXPECT_TRUE(hit.count({k, slot}))
            << "wheel_size " << w << " level " << k << " slot " << slot;
      }
    }
  }
}

// The boundaries of each level, +-1 tick, written out by hand for wheel_size
// 4 (tick widths 1, 4, 16, 64, 256).
struct Case {
  int64_t e;
  int level;
  int slot;  // -1: due
  int64_t bucket_tick;
};

void CheckCases(int64_t now, const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrCat("now ", now, " e ", c.e));
    EXPECT_EQ(LevelFor(4, now, c.e), c.level);
    const LevelGeometry g = GeometryOfLevel(4, c.level);
    const LevelPlacement p = PlaceInLevel(g, g.CurrentAt(now), c.e);
    if (c.slot < 0) {
      EXPECT_EQ(p.fit, Fit::kDue);
      continue;
    }
    EXPECT_TRUE(p.fit == Fit::kInSpan || p.fit == Fit::kPastSpan);
    EXPECT_EQ(p.slot, c.slot);
    EXPECT_EQ(p.bucket_tick, c.bucket_tick);
    EXPECT_EQ(p.release_tick,
              c.bucket_tick - (c.level == 0 ? 0 : g.tick_width / 4));
    EXPECT_TRUE(MatchesOracle(Oracle(4), now, c.e));  // and so does the oracle
  }
}

TEST(PlacementTest, LevelBoundariesPlusMinusOneTickFromZero) {
  // Levels from 0, each with the one bucket past its span (a fresh wheel's
  // slots are all free): L0 (1, 4], L1 [5, 20), L2 [20, 80), L3 [80, 320).
  CheckCases(0, {
                    {-1, 0, -1, -1},   // past: due
                    {0, 0, -1, -1},    // e == current: due
                    {1, 0, 1, 1},      // first tick ahead
                    {2, 0, 2, 2},      //
                    {3, 0, 3, 3},      // last tick of level 0's span
                    {4, 0, 0, 4},      // the bucket past it, in the slot of @0
                    {5, 1, 1, 4},      // first tick of level 1
                    {7, 1, 1, 4},      //
                    {8, 1, 2, 8},      //
                    {15, 1, 3, 12},    // last tick of level 1's span
                    {16, 1, 0, 16},    // the bucket past it
                    {19, 1, 0, 16},    // last tick of level 1
                    {20, 2, 1, 16},    // first tick of level 2
                    {31, 2, 1, 16},    //
                    {32, 2, 2, 32},    //
                    {63, 2, 3, 48},    // last tick of level 2's span
                    {64, 2, 0, 64},    // the bucket past it
                    {79, 2, 0, 64},    // last tick of level 2
                    {80, 3, 1, 64},    // first tick of level 3
                    {255, 3, 3, 192},  // last tick of level 3's span
                    {319, 3, 0, 256},  // last tick of level 3
                    {320, 4, 1, 256},  // first tick of level 4
                    {321, 4, 1, 256},  //
                });
}

TEST(PlacementTest, LevelBoundariesPlusMinusOneTickFromSix) {
  // now 6: level 0 at 6, level 1 at 4, levels 2 and 3 at 0.
  CheckCases(6, {
                    {5, 0, -1, -1},  // past: due
                    {6, 0, -1, -1},  // due
                    {7, 0, 3, 7},    // first tick ahead
                    {9, 0, 1, 9},    // last tick of level 0's span (6 + 4 - 1)
                    {10, 0, 2, 10},  // the bucket past it, in the slot of @6
                    {11, 1, 2, 8},   // first of level 1: bucket @8 (cascades)
                    {12, 1, 3, 12},  //
                    {19, 1, 0, 16},  // last tick of level 1's span (4 + 16 - 1)
                    {20, 1, 1, 20},  // the bucket past it
                    {23, 1, 1, 20},  // last tick of level 1
                    {24, 2, 1, 16},  // first tick of level 2
                    {63, 2, 3, 48},  // last tick of level 2's span
                    {79, 2, 0, 64},  // last tick of level 2
                    {80, 3, 1, 64},  // first tick of level 3
                    {255, 3, 3, 192}  // last tick of level 3's span
                });
}

TEST(PlacementTest, LevelBoundariesPlusMinusOneTickFromTwentyOne) {
  // now 21: level 0 at 21, level 1 at 20, level 2 at 16, level 3 at 0.
  CheckCases(21, {
                     {20, 0, -1, -1},   // due
                     {21, 0, -1, -1},   // due
                     {22, 0, 2, 22},    //
                     {24, 0, 0, 24},    // last tick of level 0's span
                     {25, 0, 1, 25},    // the bucket past it
                     {26, 1, 2, 24},    // first tick of level 1
                     {35, 1, 0, 32},    // last tick of level 1's span
                     {39, 1, 1, 36},    // last tick of level 1
                     {40, 2, 2, 32},    // first tick of level 2
                     {79, 2, 0, 64},    // last tick of level 2's span
                     {95, 2, 1, 80},    // last tick of level 2
                     {96, 3, 1, 64},    // first tick of level 3
                     {255, 3, 3, 192},  // last tick of level 3's span
                     {319, 3, 0, 256},  // last tick of level 3
                     {320, 4, 1, 256},  // first tick of level 4
                 });
}

TEST(PlacementTest, LowerRuleIsLessThanOneTickWidthAheadNotFitsALowerLevel) {
  // wheel_size 4, level 0 at 6 and level 1 at 4: e = 9 fits level 0 (bucket
  // @9), but level 1, asked directly (after a stale Locate), takes it into
  // bucket @8, released at 7, from which it cascades to level 0 @9: never
  // early, never in a wrong rotation. Less than one tick width ahead of
  // level 1 (e < 8) it is kLower.
  const LevelGeometry level1 = GeometryOfLevel(4, 1);
  ASSERT_EQ(level1.CurrentAt(6), 4);
  EXPECT_EQ(LevelFor(4, 6, 9), 0);
  const LevelPlacement p = PlaceInLevel(level1, 4, 9);
  EXPECT_EQ(p.fit, Fit::kInSpan);
  EXPECT_EQ(p.bucket_tick, 8);
  EXPECT_EQ(p.release_tick, 7);
  EXPECT_EQ(PlaceInLevel(level1, 4, 7).fit, Fit::kLower);
  EXPECT_EQ(PlaceInLevel(level1, 4, -5).fit, Fit::kLower);  // past
}

// ---------------------------------------------------------------------------
// Early release

// A bucket of level k >= 1 expiring at `bucket_tick` is released at
// `release`, where the advancer moves every level. Each timer of its range
// (its first and last ticks, and the boundaries of the first, middle and
// last lower-level buckets inside it, +-1) is not due yet and fits level k-1
// (or lower); one that needs level k-1's bucket past the span needs the slot of
// that level's current bucket, which was released no later.
bool ReleasedBucketFitsBelow(int w, int k, int64_t bucket_tick,
                             int64_t release) {
  const LevelGeometry below = GeometryOfLevel(w, k - 1);
  const LevelGeometry level = OverflowOf(below);
  const Int128 end = Int128{bucket_tick} + level.tick_width;  // exclusive
  std::set<Int128> es = {bucket_tick, Int128{bucket_tick} + 1, end - 2,
                         end - 1};
  for (int j : {1, 2, w / 2, w - 2, w - 1}) {
    const Int128 b = bucket_tick + Int128{j} * below.tick_width;
    es.insert({b - 1, b, b + 1});
  }
  // A multiple of the lower level's tick width: its current tick there.
  bool ok = release == bucket_tick - below.tick_width &&
            below.CurrentAt(release) == release;
  for (Int128 wide : es) {
    if (!ok) break;
    if (wide < bucket_tick || wide >= end || wide > kMaxTick) continue;
    const int64_t e = static_cast<int64_t>(wide);
    const LevelPlacement p = PlaceInLevel(below, release, e);
    const int64_t current_id = release / below.tick_width;
    ok = e > release && LevelFor(w, release, e) <= k - 1 &&
         (p.fit == Fit::kInSpan ||
          (p.fit == Fit::kPastSpan && p.bucket_id == current_id + w &&
           ReleaseTick(below, current_id * below.tick_width) <= release));
    if (!ok) {
      ADD_FAILURE() << "timer @" << e << " at level " << k - 1 << ": "
                    << FitName(p.fit) << " bucket id " << p.bucket_id
                    << ", LevelFor " << LevelFor(w, release, e);
    }
  }
  if (!ok) {
    ADD_FAILURE() << "wheel_size " << w << " level " << k << " bucket @"
                  << bucket_tick << " released at " << release;
  }
  return ok;
}

TEST(PlacementTest, AReleasedBucketsTimersAllFitTheLevelBelow) {
  for (int w : kWheelSizes) {
    const Oracle oracle(w);
    std::set<std::pair<int, int64_t>> checked;  // (level, bucket tick)
    for (int64_t now : NowTicks(oracle)) {
      for (int64_t e : BoundaryExpirations(oracle, now)) {
        const int k = LevelFor(w, now, e);
        if (k == 0) continue;
        const LevelGeometry g = GeometryOfLevel(w, k);
        const LevelPlacement p = PlaceInLevel(g, g.CurrentAt(now), e);
        SCOPED_TRACE(absl::StrCat("wheel_size ", w, " now ", now, " e ", e));
        ASSERT_TRUE(p.fit == Fit::kInSpan || p.fit == Fit::kPastSpan);
        // Released in the future, before the timer is due.
        ASSERT_GT(p.release_tick, now);
        ASSERT_LT(p.release_tick, e);
        if (!checked.emplace(k, p.bucket_tick).second) continue;
        if (!ReleasedBucketFitsBelow(w, k, p.bucket_tick, p.release_tick)) {
          return;
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Never early, never late: a timer followed through its buckets

struct Hop {
  int level;
  int64_t bucket_tick;
  int64_t release_tick;
  bool operator==(const Hop& o) const {
    return level == o.level && bucket_tick == o.bucket_tick &&
           release_tick == o.release_tick;
  }
};

void PrintTo(const Hop& hop, std::ostream* os) {
  *os << "{level " << hop.level << ", @" << hop.bucket_tick << ", released "
      << hop.release_tick << "}";
}

// The buckets a timer expiring at `e`, placed when level 0 is at `now`, goes
// through: placed by LevelFor and PlaceInLevel, then placed again when its
// bucket is released (every level moved to the release tick), until it is
// due; `*due_at` is the tick at which it is. Stops at the first hop that
// does not move time forward (a bug), which the caller then sees.
std::vector<Hop> Follow(int w, int64_t now, int64_t e, int64_t* due_at) {
  std::vector<Hop> hops;
  for (;;) {
    const int k = LevelFor(w, now, e);
    const LevelGeometry g = GeometryOfLevel(w, k);
    const LevelPlacement p = PlaceInLevel(g, g.CurrentAt(now), e);
    if (p.fit == Fit::kDue) break;
    hops.push_back({k, p.bucket_tick, p.release_tick});
    if (p.release_tick <= now) break;
    now = p.release_tick;
  }
  *due_at = now;
  return hops;
}

// Whether a timer expiring at `e`, placed at `now`, is due exactly at `e`
// (at once if e <= now), going down one level or more at each cascade and
// through level 0's bucket @e last.
bool DueExactlyAtExpiration(int w, int64_t now, int64_t e) {
  int64_t due_at = 0;
  const std::vector<Hop> hops = Follow(w, now, e, &due_at);
  bool ok = e <= now
                ? hops.empty() && due_at == now
                : due_at == e && !hops.empty() && hops.back() == Hop{0, e, e};
  for (size_t i = 1; i < hops.size(); ++i) {
    ok = ok && hops[i].level < hops[i - 1].level;
  }
  if (!ok) {
    ADD_FAILURE() << "wheel_size " << w << " now " << now << " e " << e
                  << ": due at " << due_at << " through "
                  << ::testing::PrintToString(hops);
  }
  return ok;
}

TEST(PlacementTest, TimersAreDueExactlyAtTheirExpirationAtEveryBoundary) {
  for (int w : kWheelSizes) {
    const Oracle oracle(w);
    for (int64_t now : NowTicks(oracle)) {
      for (int64_t e : BoundaryExpirations(oracle, now)) {
        if (!DueExactlyAtExpiration(w, now, e)) return;
      }
    }
  }
}

TEST(PlacementTest, TimersAreDueExactlyAtTheirExpirationExhaustively) {
  for (int w : {2, 3, 4}) {
    for (int64_t now = 0; now <= 70; ++now) {
      for (int64_t e = now - 2; e <= now + 300; ++e) {
        if (!DueExactlyAtExpiration(w, now, e)) return;
      }
    }
  }
}

TEST(PlacementTest, DesignWorkedExample) {
  // tick 1 ms (a tick is a tick here), wheel_size 4, all levels at 0.
  EXPECT_EQ(GeometryOfLevel(4, 1).tick_width, 4);
  EXPECT_EQ(GeometryOfLevel(4, 1).release_offset, 1);
  EXPECT_EQ(GeometryOfLevel(4, 2).tick_width, 16);
  EXPECT_EQ(GeometryOfLevel(4, 2).release_offset, 4);
  int64_t due_at = 0;
  // AfterFunc(3 ms) -> level 0, bucket @3; at t=3 it is released and runs.
  EXPECT_EQ(Follow(4, 0, 3, &due_at), (std::vector<Hop>{{0, 3, 3}}));
  EXPECT_EQ(due_at, 3);
  // AfterFunc(9 ms) -> level 1, bucket @8, released at 7, when it cascades
  // to level 0, bucket @9, where it runs at t=9.
  EXPECT_EQ(Follow(4, 0, 9, &due_at), (std::vector<Hop>{{1, 8, 7}, {0, 9, 9}}));
  EXPECT_EQ(due_at, 9);
  // AfterFunc(40 ms) -> level 2, bucket @32, released at 28, when it
  // cascades to level 1, bucket @40, released at 39, when it cascades to
  // level 0, bucket @40, where it runs at t=40.
  EXPECT_EQ(Follow(4, 0, 40, &due_at),
            (std::vector<Hop>{{2, 32, 28}, {1, 40, 39}, {0, 40, 40}}));
  EXPECT_EQ(due_at, 40);
}

// ---------------------------------------------------------------------------
// The level table of placement.h

// A duration of `ms` milliseconds as the table writes it: exact below an
// hour ("2 min 40 s"), three significant digits above ("17.8 h").
std::string Human(int64_t ms) {
  if (ms < 1000) return absl::StrCat(ms, " ms");
  EXPECT_EQ(ms % 1000, 0) << ms;
  const int64_t s = ms / 1000;
  if (s < 3600) {
    if (s < 60) return absl::StrCat(s, " s");
    if (s % 60 == 0) return absl::StrCat(s / 60, " min");
    return absl::StrCat(s / 60, " min ", s % 60, " s");
  }
  const double hours = s / 3600.0;
  if (hours < 24) return absl::StrFormat("%.3g h", hours);
  const double days = hours / 24;
  if (days < 365) return absl::StrFormat("%.3g days", days);
  return absl::StrFormat("%.3g years", days / 365);
}

TEST(PlacementTest, LevelTableForTheDefaults) {
  // tick 1 ms, wheel_size 20: a tick is a millisecond.
  constexpr int kWheelSize = 20;
  std::string table = "//   level  tick width    span\n";
  for (int k = 0; k < 10; ++k) {
    const LevelGeometry g = GeometryOfLevel(kWheelSize, k);
    absl::StrAppendFormat(&table, "//   %-6d %-13s %s\n", k,
                          Human(g.tick_width), Human(g.span));
  }
  // Ten levels hold every deadline: the latest is INT64_MAX ns from the
  // start, about 292 years, whenever it is scheduled.
  const int64_t latest = kMaxTick / 1000000;
  EXPECT_EQ(LevelFor(kWheelSize, 0, latest), 9);
  for (int64_t now : {latest / 3, latest / 2, latest - 1}) {
    EXPECT_LE(LevelFor(kWheelSize, now, latest), 9) << now;
  }
  const std::string path = TIMINGWHEEL_SOURCE_DIR "/lib/core/placement.h";
  std::ifstream file(path);
  ASSERT_TRUE(file.is_open()) << path;
  std::stringstream contents;
  contents << file.rdbuf();
  EXPECT_NE(contents.str().find(table), std::string::npos)
      << path << " should hold this table, derived from GeometryOfLevel:\n"
      << table;
}

}  // namespace
}  // namespace timingwheel::internal
