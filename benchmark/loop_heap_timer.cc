// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// loop_heap_timer.cc: the event loop's heap of timers of loop_heap_timer.h.

#include "loop_heap_timer.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "heap_timer.h"

namespace timingwheel {
namespace bench {

bool LoopHeapTimer::Handle::Stop() {
  absl::AnyInvocable<void()> dropped;
  return owner_ != nullptr && owner_->heap_.Remove(id_, &dropped);
}

LoopHeapTimer::Handle LoopHeapTimer::AfterFunc(absl::Duration d,
                                               absl::AnyInvocable<void()> f) {
  return At(SteadyDeadlineNs(d), std::move(f));
}

LoopHeapTimer::Handle LoopHeapTimer::At(int64_t deadline_ns,
                                        absl::AnyInvocable<void()> f) {
  return Handle(this, heap_.Push(deadline_ns, std::move(f)));
}

std::optional<absl::Duration> LoopHeapTimer::TimeUntilNext() const {
  if (heap_.empty()) return std::nullopt;
  return absl::Nanoseconds(
      std::max<int64_t>(heap_.top_deadline_ns() - SteadyNowNs(), 0));
}

int64_t LoopHeapTimer::RunDue() { return RunDueAt(SteadyNowNs()); }

int64_t LoopHeapTimer::RunDueAt(int64_t now_ns) {
  int64_t ran = 0;
  while (!heap_.empty() && heap_.top_deadline_ns() <= now_ns) {
    absl::AnyInvocable<void()> callback = heap_.Pop();
    callback();
    ++ran;
  }
  return ran;
}

}  // namespace bench
}  // namespace timingwheel
