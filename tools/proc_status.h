// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// proc_status.h: reads this process's memory figures from /proc/self/status,
// for the tools and benchmarks that report RSS (timingwheel_cli,
// timingwheel_soak, timingwheel_benchmark). Linux only.

#ifndef TIMINGWHEEL_TOOLS_PROC_STATUS_H_
#define TIMINGWHEEL_TOOLS_PROC_STATUS_H_

#include <cstdint>
#include <fstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace timingwheel {

// The value of a "Key:   123 kB" line of /proc/self/status (VmRSS, VmHWM,
// ...), in bytes; -1 if unavailable.
inline int64_t ProcStatusBytes(absl::string_view key) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    absl::string_view rest = line;
    if (!absl::ConsumePrefix(&rest, key) || !absl::ConsumePrefix(&rest, ":")) {
      continue;
    }
    rest = absl::StripAsciiWhitespace(rest);
    absl::ConsumeSuffix(&rest, "kB");
    rest = absl::StripAsciiWhitespace(rest);
    int64_t kb = 0;
    return absl::SimpleAtoi(rest, &kb) ? kb * 1024 : -1;
  }
  return -1;
}

}  // namespace timingwheel

#endif  // TIMINGWHEEL_TOOLS_PROC_STATUS_H_
