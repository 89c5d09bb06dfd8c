// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// placement.h: where a timer goes in the hierarchical wheel and when its
// bucket is released, as pure functions of a level's geometry, the level's
// current tick and the timer's expiration tick. No locks, no nodes:
// WheelCore (core/wheel_core.h) applies them to its levels, and
// placement_test.cc checks them at every level boundary plus and minus one.
//
// Units. Everything is in whole ticks of level 0 (`Options::tick`), counted
// from the engine's origin, in int64: about 292 years at 1 ns. An instant is
// a `*_tick` (`now_tick`, `current_tick`, `expiration_tick`, `release_tick`);
// a width is a `tick_width` or a `span`.
//
// Geometry. Level k has `wheel_size` buckets, each `tick_width = wheel_size^k`
// ticks wide, and spans `span = tick_width * wheel_size`; the next level's
// tick width is this level's span. A level whose span would overflow int64
// spans everything (span = INT64_MAX) and is the top level: no timer is ever
// too far for it. Each level has a current tick, a multiple of its tick
// width that only grows; the advancer moves every level to the same instant,
// rounded down to the level's tick width (CurrentAt).
//
// Placement (Kafka's `add`, with "due" meaning expiration <= current, which
// together with deadlines rounded UP to a tick means never early). For a
// level with current tick c and a timer expiring at e (PlaceInLevel):
//   level 0: e <= c                          -> kDue: run it now
//   level k: e <  c + tick_width             -> kLower: it fits a lower level
//   any:     e <  c + span                   -> kInSpan: bucket e / tick_width
//            e <  c + span + tick_width      -> kPastSpan: the one bucket past
//                                               the span (id c / tick_width +
//                                               wheel_size), only if its slot
//                                               is free, i.e. the bucket of id
//                                               c / tick_width was flushed
//                                               (the caller checks)
//            otherwise                       -> kHigher: an overflow level
// The bucket of id `e / tick_width` sits in slot `id % wheel_size` and
// expires at `id * tick_width`, the start of its range. A slot holds one
// bucket id at a time: the ids in use are c/tick_width + 1 .. c/tick_width +
// wheel_size, and the last one only in a slot whose bucket is empty or has
// that id. LevelFor gives the level a timer lands in: the lowest whose span,
// or the bucket past it, covers the expiration.
//
// Early release. A bucket of level k >= 1 is offered to the delay queue at
// its expiration minus its `release_offset`, the tick width of level k-1
// (ReleaseTick). Released then, the advancer moves every level to that
// instant, and every timer of the bucket fits level k-1 (its span plus the
// one bucket past it covers exactly this bucket's range), or a lower one. So
// a big bucket cascades one lower tick before its timers can be due, not
// while they already are: a million timers over a second land in 400 ms
// buckets of 400,000 at the defaults, which then cascade 20 ms ahead. Never
// early still holds: only level 0 says kDue, and only for e <= c.
//
// Levels for the defaults (tick 1 ms, wheel_size 20). Ten of them cover the
// 292 years a deadline can be; PlacementTest.LevelTableForTheDefaults
// derives this table from GeometryOfLevel and compares it with this comment:
//
//   level  tick width    span
//   0      1 ms          20 ms
//   1      20 ms         400 ms
//   2      400 ms        8 s
//   3      8 s           2 min 40 s
//   4      2 min 40 s    53 min 20 s
//   5      53 min 20 s   17.8 h
//   6      17.8 h        14.8 days
//   7      14.8 days     296 days
//   8      296 days      16.2 years
//   9      16.2 years    325 years
//
// Worked example (tick 1 ms, wheel_size 4, all levels at 0;
// PlacementTest.DesignWorkedExample): AfterFunc(3 ms) goes to level 0, bucket
// @3. AfterFunc(9 ms) to level 1 (tick width 4), bucket @8, released at 7
// (offset 1). AfterFunc(40 ms) to level 2 (tick width 16), bucket @32,
// released at 28 (offset 4). At t=3 bucket @3 is released and its timer
// runs. At t=7 bucket @8 is released and the 9 ms timer cascades to level 0,
// bucket @9, where it runs at t=9. At t=28 the 40 ms timer cascades to level
// 1, bucket @40 (released at 39), at t=39 to level 0, bucket @40, and runs at
// t=40.
//
// Preconditions throughout: current_tick >= 0 and now_tick >= 0 (ticks count
// from the origin), and `expiration_tick - current_tick` (or `- now_tick`)
// does not overflow, which holds for any expiration_tick >= -1 (the engine's
// are >= 1; the tests also place some in the past). No other difference can
// then overflow.
//
// Thread-safety: pure functions of their arguments; call them from anywhere.

#ifndef TIMINGWHEEL_LIB_CORE_PLACEMENT_H_
#define TIMINGWHEEL_LIB_CORE_PLACEMENT_H_

#include <cstdint>
#include <limits>

namespace timingwheel::internal {

// The largest tick; also the span of a level that spans everything.
inline constexpr int64_t kMaxTick = std::numeric_limits<int64_t>::max();

// floor(a / b) and ceil(a / b) for b > 0 and any a.
constexpr int64_t FloorDiv(int64_t a, int64_t b) {
  return a / b - ((a % b != 0) && (a < 0));
}
constexpr int64_t CeilDiv(int64_t a, int64_t b) {
  return a / b + ((a % b != 0) && (a > 0));
}

// One level's shape, in ticks of level 0.
struct LevelGeometry {
  int64_t tick_width;      // one bucket: wheel_size^k at level k
  int64_t span;            // tick_width * wheel_size, or kMaxTick if that
                           // overflows: the level spans everything
  int64_t release_offset;  // how early a bucket is released: tick_width /
                           // wheel_size (level k-1's width), 0 at level 0
  int wheel_size;

  constexpr bool is_level0() const { return tick_width == 1; }
  constexpr bool spans_everything() const { return span == kMaxTick; }
  // The level's current tick when the advancer has moved it to `now_tick`.
  constexpr int64_t CurrentAt(int64_t now_tick) const {
    return FloorDiv(now_tick, tick_width) * tick_width;
  }
};

// The level whose buckets are `tick_width` ticks wide (1 for level 0, a
// lower level's span above it). Preconditions: tick_width >= 1,
// wheel_size >= 2.
constexpr LevelGeometry GeometryFor(int64_t tick_width, int wheel_size) {
  return LevelGeometry{
      tick_width,
      tick_width > kMaxTick / wheel_size ? kMaxTick : tick_width * wheel_size,
      tick_width == 1 ? 0 : tick_width / wheel_size, wheel_size};
}

// The level above `lower`. Precondition: !lower.spans_everything().
constexpr LevelGeometry OverflowOf(const LevelGeometry& lower) {
  return GeometryFor(lower.span, lower.wheel_size);
}

// Level `level` (0 for the lowest) of a wheel of `wheel_size` buckets per
// level. Precondition: no level below it spans everything.
LevelGeometry GeometryOfLevel(int wheel_size, int level);

// Whether a timer expiring at `expiration_tick` is past the span of a level
// at `current_tick` and past the one bucket after it: kHigher. (The first
// comparison keeps the subtraction from overflowing for a timer in the past.)
constexpr bool NeedsHigherLevel(const LevelGeometry& level,
                                int64_t current_tick, int64_t expiration_tick) {
  const int64_t ahead = expiration_tick - current_tick;
  return !level.spans_everything() && ahead >= level.tick_width &&
         ahead - level.tick_width >= level.span;
}

// The tick at which a bucket of `level` expiring at `bucket_tick` is offered
// to the delay queue: early by the level's release offset.
constexpr int64_t ReleaseTick(const LevelGeometry& level, int64_t bucket_tick) {
  return bucket_tick - level.release_offset;
}

enum class Fit {
  kDue,       // level 0 only: expiration <= current, run it now
  kLower,     // above level 0: less than one tick width ahead
  kInSpan,    // a bucket of this level's span
  kPastSpan,  // the one bucket past the span, if its slot is free
  kHigher,    // past that bucket: an overflow level
};

// Where a timer goes in one level; the bucket fields are set for kInSpan and
// kPastSpan only.
struct LevelPlacement {
  Fit fit;
  int slot = -1;             // bucket_id % wheel_size
  int64_t bucket_id = 0;     // expiration_tick / tick_width
  int64_t bucket_tick = 0;   // bucket_id * tick_width: the bucket's expiration
  int64_t release_tick = 0;  // ReleaseTick(bucket_tick)
};

// Division by a level's tick width and by wheel_size with the compiler's
// `/` and `%`: what PlaceInLevel uses unless it is given core/divider.h's
// precomputed reciprocals (which the single-owner core keeps per level).
struct PlainDivision {
  int64_t divisor;
  constexpr int64_t Floor(int64_t n) const { return n / divisor; }
  constexpr int64_t Remainder(int64_t n) const { return n % divisor; }
};

// Where a timer expiring at `expiration_tick` goes in `level`, whose current
// tick is `current_tick` (a multiple of its tick width): the rules above.
// `by_width` and `by_size` divide a non-negative tick by the level's tick
// width (Floor) and a bucket id by wheel_size (Remainder): only ticks ahead of
// `current_tick` >= 0 are divided.
template <class WidthDivision, class SizeDivision>
constexpr LevelPlacement PlaceInLevel(const LevelGeometry& level,
                                      int64_t current_tick,
                                      int64_t expiration_tick,
                                      const WidthDivision& by_width,
                                      const SizeDivision& by_size) {
  const int64_t ahead = expiration_tick - current_tick;
  if (level.is_level0()) {
    if (ahead <= 0) return {Fit::kDue};
  } else if (ahead < level.tick_width) {
    return {Fit::kLower};
  }
  Fit fit = Fit::kInSpan;
  if (!level.spans_everything() && ahead >= level.span) {
    if (ahead - level.tick_width >= level.span) return {Fit::kHigher};
    fit = Fit::kPastSpan;
  }
  const int64_t id = by_width.Floor(expiration_tick);
  const int64_t bucket_tick = id * level.tick_width;
  return {fit, static_cast<int>(by_size.Remainder(id)), id, bucket_tick,
          ReleaseTick(level, bucket_tick)};
}
constexpr LevelPlacement PlaceInLevel(const LevelGeometry& level,
                                      int64_t current_tick,
                                      int64_t expiration_tick) {
  return PlaceInLevel(level, current_tick, expiration_tick,
                      PlainDivision{level.tick_width},
                      PlainDivision{level.wheel_size});
}

// The level (0 for the lowest) a timer expiring at `expiration_tick` lands
// in when every level's current tick is `now_tick` rounded down to its tick
// width, as the advancer leaves them: the lowest level whose span, or the
// one bucket past it, covers the expiration. WheelCore::Place walks the
// same way over the levels' own current ticks.
int LevelFor(int wheel_size, int64_t now_tick, int64_t expiration_tick);

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_CORE_PLACEMENT_H_
