// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "timer_state.h"

#include <new>
#include <utility>

#include "engine.h"

namespace timingwheel::internal {

TimerNode* TimerNode::New(Engine* engine, absl::AnyInvocable<void()> callback,
                          std::unique_ptr<Scheduler> scheduler, int32_t refs,
                          int lane) {
  return new (engine->AllocateNode())
      TimerNode(engine, std::move(callback), std::move(scheduler), refs, lane);
}

TimerNode::TimerNode(Engine* engine, absl::AnyInvocable<void()> callback,
                     std::unique_ptr<Scheduler> scheduler, int32_t refs,
                     int lane)
    : callback(std::move(callback)),
      engine(engine),
      state(MakeStateWord(0, State::kPending)),
      scheduler(std::move(scheduler)),
      refs_(refs),
      lane(static_cast<uint8_t>(lane)) {
  engine->RefLane(lane);
}

void TimerNode::Unref() {
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  Engine* owner = engine;
  const int owner_lane = lane;
  this->~TimerNode();
  owner->FreeNode(this);
  owner->UnrefLane(owner_lane);
}

std::optional<int64_t> TimerNode::PendingDeadlineNs() {
  SpinLockHolder lock(&mu);
  const State s = StateOf(LoadState());
  if (!IsPending(s)) return std::nullopt;
  // Only a Reset leads to kRunningArmed with has_rearm set (a periodic
  // timer's worker enters kRunningArmed with it clear), so here it is this
  // run's Reset.
  if (s == State::kRunningArmed && has_rearm) return rearm_deadline_ns;
  return deadline_ns;
}

}  // namespace timingwheel::internal
