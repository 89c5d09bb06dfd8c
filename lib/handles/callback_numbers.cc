// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "handles/callback_numbers.h"

#include <atomic>

namespace timingwheel::internal {

const CallbackOps* g_callback_ops[kCallbackOpsNumbers];

namespace {
// The next number to give; kCallbackOpsNumbers once all are given.
std::atomic<uint32_t> next_number{1};
}  // namespace

uint32_t NumberCallbackOps(const CallbackOps* ops) noexcept {
  // Relaxed: the number is this call's alone; the slot's write reaches a
  // reader through whatever hands the number on (see the header).
  uint32_t number = next_number.load(std::memory_order_relaxed);
  do {
    if (number >= kCallbackOpsNumbers) return 0;
  } while (!next_number.compare_exchange_weak(number, number + 1,
                                              std::memory_order_relaxed));
  g_callback_ops[number] = ops;
  return number;
}

uint32_t NumberTypeOf(const CallbackOps* ops) noexcept {
  const uint32_t mine = NumberCallbackOps(ops);
  uint32_t expected = 0;
  // Release: the table's slot, written above, before the number.
  if (ops->number->compare_exchange_strong(
          expected, mine == 0 ? kNoNumberLeft : mine, std::memory_order_release,
          std::memory_order_acquire)) {
    return mine;
  }
  // Another thread numbered the type first: its number (mine goes unused).
  return expected == kNoNumberLeft ? 0 : expected;
}

}  // namespace timingwheel::internal
