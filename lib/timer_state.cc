// Copyright 2026 The timingwheel Authors.

#include "timer_state.h"

#include <utility>

#include "engine.h"

namespace timingwheel::internal {

TimerNode::TimerNode(Engine* engine, absl::AnyInvocable<void()> callback,
                     int64_t period_ns, std::unique_ptr<Scheduler> scheduler,
                     int32_t refs)
    : engine(engine),
      period_ns(period_ns),
      scheduler(std::move(scheduler)),
      state(MakeStateWord(0, State::kPending)),
      callback(std::move(callback)),
      refs_(refs) {
  engine->Ref();
}

void TimerNode::Unref() {
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  Engine* owner = engine;
  delete this;
  owner->Unref();
}

}  // namespace timingwheel::internal
