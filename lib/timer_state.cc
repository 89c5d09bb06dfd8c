// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "timer_state.h"

#include <new>
#include <utility>

namespace timingwheel::internal {

TimerNode* TimerNode::New(NodeHome* home, absl::AnyInvocable<void()>&& callback,
                          std::unique_ptr<Scheduler> scheduler, int32_t refs) {
  if (scheduler != nullptr) {
    return new PeriodicNode(home, std::move(callback), std::move(scheduler),
                            refs);
  }
  return new (home->Allocate())
      TimerNode(home, std::move(callback), /*periodic=*/false, refs);
}

TimerNode::TimerNode(NodeHome* home, absl::AnyInvocable<void()>&& callback,
                     bool periodic, int32_t refs)
    : callback(std::move(callback)),
      home(home),
      state(MakeStateWord(0, State::kPending)),
      refs_(refs),
      periodic_(periodic) {}

void TimerNode::Unref() {
  // A count of 1 is the caller's own reference, the last: no other thread
  // holds one, and only a holder takes another (Ref), so the count cannot
  // change any more and needs no read-modify-write. The acquire load pairs
  // with the other holders' releasing decrements, as the fetch_sub would.
  if (refs_.load(std::memory_order_acquire) != 1 &&
      refs_.fetch_sub(1, std::memory_order_acq_rel) != 1) {
    return;
  }
  if (periodic_) {
    delete static_cast<PeriodicNode*>(this);
    return;
  }
  NodeHome* const node_home = home;
  this->~TimerNode();
  node_home->Free(this);
}

bool TimerNode::UnrefIfNotLast() {
  int32_t refs = refs_.load(std::memory_order_relaxed);
  while (refs > 1) {
    // acq_rel, as Unref: this holder's writes happen before the deletion by
    // whichever holder releases the last reference.
    if (refs_.compare_exchange_weak(refs, refs - 1, std::memory_order_acq_rel,
                                    std::memory_order_relaxed)) {
      return true;
    }
  }
  return false;
}

bool TimerNode::Cancel(uint64_t gen) {
  for (;;) {
    uint64_t word = LoadState();
    const State s = StateOf(word);
    if (s != State::kPending && s != State::kDispatched) return false;
    if (!OfGeneration(word, gen)) return false;
    if (CasState(word, MakeStateWord(GenerationOf(word), State::kCancelled))) {
      return true;
    }
  }
}

std::optional<int64_t> TimerNode::PendingDeadlineNs() {
  SpinLockHolder lock(&mu);
  const State s = StateOf(LoadState());
  if (!IsPending(s)) return std::nullopt;
  // In kRunningArmed: the re-arm of a Reset made during this run, or, for a
  // periodic timer with none, this run's deadline (see `deadline_ns`).
  return deadline_ns.load(std::memory_order_relaxed);
}

}  // namespace timingwheel::internal
