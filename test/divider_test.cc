// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// divider_test.cc: lib/core/divider.h against the `/` and `%` of the
// compiler, for divisors that are powers of two and not, small and near
// INT64_MAX, and the ones the wheel uses (wheel sizes, their powers, tick
// widths in nanoseconds); dividends at 0, every power of two and its
// neighbours, every multiple of the divisor near them, and INT64_MAX.

#include "core/divider.h"

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace timingwheel::internal {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

std::vector<int64_t> Divisors() {
  std::vector<int64_t> divisors;
  for (int64_t d = 1; d <= 1000; ++d) divisors.push_back(d);
  for (int bit = 10; bit < 63; ++bit) {
    const int64_t p = int64_t{1} << bit;
    divisors.insert(divisors.end(), {p - 1, p, p + 1});
  }
  // Tick widths of every level for wheel sizes 20, 60 and 65536, and ticks
  // of 1 us, 1 ms, 1 s and 1 h in ns.
  for (int64_t size : {20, 60, 65536}) {
    for (int64_t width = 1; width <= kMax / size; width *= size) {
      divisors.push_back(width);
    }
  }
  divisors.insert(divisors.end(), {1'000, 1'000'000, 1'000'000'000,
                                   3'600'000'000'000, kMax - 1, kMax});
  return divisors;
}

std::vector<int64_t> Dividends(int64_t d) {
  std::vector<int64_t> dividends = {0, 1, 2, kMax - 1, kMax};
  for (int bit = 1; bit < 63; ++bit) {
    const int64_t p = int64_t{1} << bit;
    dividends.insert(dividends.end(), {p - 1, p, p + 1});
    // The multiple of d at or below p, those before and after it (when in
    // range), and their neighbours.
    const int64_t below = p / d * d;
    std::vector<int64_t> multiples = {below};
    if (below >= d) multiples.push_back(below - d);
    if (below <= kMax - 1 - d) multiples.push_back(below + d);
    for (int64_t m : multiples) {
      dividends.insert(dividends.end(), {m, m + 1});
      if (m >= 1) dividends.push_back(m - 1);
    }
  }
  const int64_t top = kMax / d * d;
  dividends.insert(dividends.end(), {top, top - 1});
  return dividends;
}

TEST(DividerTest, FloorRemainderAndCeilMatchDivision) {
  for (int64_t d : Divisors()) {
    const Divider divider(d);
    ASSERT_EQ(divider.divisor(), d);
    for (int64_t n : Dividends(d)) {
      ASSERT_EQ(divider.Floor(n), n / d) << n << " / " << d;
      ASSERT_EQ(divider.Remainder(n), n % d) << n << " % " << d;
      ASSERT_EQ(divider.Ceil(n), n / d + (n % d != 0)) << n << " / " << d;
    }
  }
}

TEST(DividerTest, RandomDividendsMatchDivision) {
  std::mt19937_64 rng(26);
  std::uniform_int_distribution<int64_t> any(0, kMax);
  for (int64_t d : Divisors()) {
    const Divider divider(d);
    for (int i = 0; i < 200; ++i) {
      const int64_t n = any(rng) >> (i % 63);
      ASSERT_EQ(divider.Floor(n), n / d) << n << " / " << d;
    }
  }
}

TEST(DividerTest, DefaultDividesByOne) {
  const Divider divider;
  EXPECT_EQ(divider.divisor(), 1);
  EXPECT_EQ(divider.Floor(kMax), kMax);
  EXPECT_EQ(divider.Remainder(kMax), 0);
}

}  // namespace
}  // namespace timingwheel::internal
