// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "threads/thread_starter.h"

#include <new>
#include <system_error>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace timingwheel::internal {

absl::StatusOr<std::thread> ThreadStarter::Start(
    absl::AnyInvocable<void()> body) {
  try {
    int64_t left = starts_left_.load(std::memory_order_relaxed);
    while (left > 0 && !starts_left_.compare_exchange_weak(
                           left, left - 1, std::memory_order_relaxed)) {
    }
    if (left == 0) {
      throw std::system_error(
          std::make_error_code(std::errc::resource_unavailable_try_again));
    }
    return std::thread(std::move(body));
  } catch (const std::system_error& e) {
    return absl::ResourceExhaustedError(
        absl::StrCat(e.what(), " (errno ", e.code().value(), ")"));
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError("out of memory (std::bad_alloc)");
  }
}

}  // namespace timingwheel::internal
