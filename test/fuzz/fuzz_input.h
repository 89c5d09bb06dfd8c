// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// fuzz_input.h: the input bytes of a libFuzzer target, read from the front
// (timingwheel_fuzz.cc, loop_wheel_fuzz.cc); every read past the end
// yields 0, so that any input is a whole program.

#ifndef TIMINGWHEEL_TEST_FUZZ_FUZZ_INPUT_H_
#define TIMINGWHEEL_TEST_FUZZ_FUZZ_INPUT_H_

#include <cstddef>
#include <cstdint>

namespace timingwheel {

// The input bytes, read from the front; 0 past the end.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool empty() const { return pos_ >= size_; }
  uint8_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  uint64_t Uint(int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= uint64_t{Byte()} << (8 * i);
    return v;
  }

 private:
  const uint8_t* const data_;
  const size_t size_;
  size_t pos_ = 0;
};

}  // namespace timingwheel

#endif  // TIMINGWHEEL_TEST_FUZZ_FUZZ_INPUT_H_
