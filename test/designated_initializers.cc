// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// designated_initializers.cc: C++20 code that names only the Options members
// it sets, as designated initializers allow, leaving out the clock, the
// executor and the hooks. The test options_designated_initializers compiles
// it with g++ -std=c++20 -Wextra -Werror, under which a member left out that
// has no initializer of its own is an error (-Wmissing-field-initializers).

#include "timingwheel/timingwheel.h"

timingwheel::Options MakeOptions() {
  return {.tick = absl::Milliseconds(10),
          .wheel_size = 64,
          .workers = 2,
          .max_pending = 1000000,
          .thread_name_prefix = "io"};
}
