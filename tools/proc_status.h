// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// proc_status.h: reads this process's memory figures from /proc/self/status,
// for the tools and benchmarks that report RSS (timingwheel_cli,
// timingwheel_soak, timingwheel_benchmark), and the machine's physical
// memory, for the tools that refuse a run too big for it. Linux only.

#ifndef TIMINGWHEEL_TOOLS_PROC_STATUS_H_
#define TIMINGWHEEL_TOOLS_PROC_STATUS_H_

#include <unistd.h>

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

// The machine's physical memory in bytes; -1 if unknown.
inline int64_t PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return -1;
  return static_cast<int64_t>(pages) * page_size;
}

}  // namespace timingwheel

#endif  // TIMINGWHEEL_TOOLS_PROC_STATUS_H_
