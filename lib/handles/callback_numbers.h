// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// callback_numbers.h: the process's table of callable operations by number
// (include/timingwheel/callback.h), which a TimingWheel's node names in 32
// bits instead of a 64-bit pointer (lib/handles/timer_state.h's byte map).
//
// A table of operations is numbered when a TimingWheel first keeps a
// callable of its type (TimerNode::New asks CallbackNumberOf), and the
// number is kept beside the constant table, in the slot it points to
// (CallbackOps::number): after the first time, asking costs two loads. A
// number is never taken back: kCallbackOpsNumbers of them, 512 KiB of zero
// pages that only the slots written make resident (one page per 512 types).
// When none is left, a type's slot says so (kNoNumberLeft) and its nodes
// keep the table's address out of line instead (TimerNode's kHeap storage).
// One number per type and shared object (the slot is an inline variable:
// a plugin's library loaded anew numbers its types anew), so only a process
// of some 65,000 callable types runs out.
//
// Thread-safety: lock-free. A table's slot in g_callback_ops is written
// before its number is published (a release compare-and-swap into the
// type's slot, read with acquire), and whoever reads the slot got the
// number that way, or through a node handed on after. Two threads numbering
// one type at once both take a number; one is kept, the other is unused.

#ifndef TIMINGWHEEL_LIB_HANDLES_CALLBACK_NUMBERS_H_
#define TIMINGWHEEL_LIB_HANDLES_CALLBACK_NUMBERS_H_

#include <atomic>
#include <cstdint>

#include "timingwheel/callback.h"

namespace timingwheel::internal {

// How many numbers the process gives (number 0 is never given).
inline constexpr uint32_t kCallbackOpsNumbers = uint32_t{1} << 16;
// In a type's slot once no number was left for it.
inline constexpr uint32_t kNoNumberLeft = ~uint32_t{0};

// The tables, by number (slot 0 is never given).
extern const CallbackOps* g_callback_ops[kCallbackOpsNumbers];

// The operations of `number` (1 or more, given by NumberCallbackOps).
inline const CallbackOps* CallbackOpsOf(uint32_t number) {
  return g_callback_ops[number];
}

// A new number for `ops`: 1 and up, or 0 once every number is given.
uint32_t NumberCallbackOps(const CallbackOps* ops) noexcept;

// The number of `ops`'s type, given on its first call; 0 when none was
// left for it.
uint32_t NumberTypeOf(const CallbackOps* ops) noexcept;
inline uint32_t CallbackNumberOf(const CallbackOps* ops) {
  const uint32_t number = ops->number->load(std::memory_order_acquire);
  if (number == 0) return NumberTypeOf(ops);
  return number == kNoNumberLeft ? 0 : number;
}

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_HANDLES_CALLBACK_NUMBERS_H_
