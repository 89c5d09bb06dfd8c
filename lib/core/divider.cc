// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "core/divider.h"

namespace timingwheel::internal {

Divider::Divider(int64_t divisor) : divisor_(divisor) {
  const auto d = static_cast<uint64_t>(divisor);
  // l = ceil(log2 d): the bits of d - 1.
  const int l = d == 1 ? 0 : 64 - __builtin_clzll(d - 1);
  if ((d & (d - 1)) == 0) {
    shift_ = l;  // d = 2^l
    return;
  }
  shift_ = 63 + l;
  multiplier_ =
      static_cast<uint64_t>((static_cast<Uint128>(1) << shift_) / d + 1);
}

}  // namespace timingwheel::internal
