// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// divider.h: floor division of a non-negative int64 by a divisor fixed in
// advance, with no division instruction: a shift for a power of two, else a
// multiplication by a precomputed reciprocal. A 64-bit `idiv` costs tens of
// cycles, and placing a timer divides twice (its bucket id by the level's
// tick width, the slot by wheel_size), turning a deadline into a tick once
// more; the default wheel_size (20) and tick (1 ms = 10^6 ns) are not powers
// of two, so a shift alone would not do.
//
// The reciprocal (Granlund and Montgomery, "Division by invariant integers
// using multiplication", 1994, theorem 4.2, for N = 63-bit dividends): for a
// divisor d >= 1 that is not a power of two, let l = ceil(log2 d) and
// m = floor(2^(63+l) / d) + 1. Then 2^(63+l) < m*d <= 2^(63+l) + d <
// 2^(63+l) + 2^l, which is the theorem's condition, so for every n in
// [0, 2^63):
//     floor(n / d) = floor(n * m / 2^(63+l)),
// and m < 2^64 (since d > 2^(l-1)), so n * m fits 127 bits. divider_test.cc
// checks it against `/` at every power of two and its neighbours, around
// every multiple of small divisors, and for the divisors the wheel uses.
//
// Part of the core (lib/core/): pure arithmetic; thread-compatible (const
// after construction).

#ifndef TIMINGWHEEL_LIB_CORE_DIVIDER_H_
#define TIMINGWHEEL_LIB_CORE_DIVIDER_H_

#include <cstdint>

namespace timingwheel::internal {

class Divider {
 public:
  // Divides by 1.
  Divider() = default;
  // Precondition: divisor >= 1.
  explicit Divider(int64_t divisor);

  int64_t divisor() const { return divisor_; }

  // floor(n / divisor()). Precondition: n >= 0.
  int64_t Floor(int64_t n) const {
    if (multiplier_ == 0) return n >> shift_;
    const auto product = static_cast<Uint128>(static_cast<uint64_t>(n)) *
                         static_cast<Uint128>(multiplier_);
    return static_cast<int64_t>(product >> shift_);
  }
  // n mod divisor(). Precondition: n >= 0.
  int64_t Remainder(int64_t n) const { return n - Floor(n) * divisor_; }
  // ceil(n / divisor()). Precondition: n >= 0.
  int64_t Ceil(int64_t n) const {
    const int64_t q = Floor(n);
    return q + (q * divisor_ != n);
  }

 private:
  __extension__ typedef unsigned __int128 Uint128;

  int64_t divisor_ = 1;
  uint64_t multiplier_ = 0;  // 0: a power of two, divided by shifting
  int shift_ = 0;            // log2(divisor), or 63 + l with the multiplier
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_CORE_DIVIDER_H_
