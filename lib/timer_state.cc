// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "timer_state.h"

#include <cstring>
#include <new>
#include <utility>

namespace timingwheel::internal {

TimerNode* TimerNode::New(NodePool* pool, CallbackRef f,
                          std::unique_ptr<Scheduler> scheduler, int32_t refs) {
  // A callable beyond the room takes a block of its own; the call site
  // boxed anything bigger than a block (callback.h). Either allocation may
  // throw std::bad_alloc, before anything is moved.
  void* block = f.ops->size > kRoom ? pool->Allocate() : nullptr;
  try {
    if (scheduler != nullptr) {
      return new PeriodicNode(f, block, std::move(scheduler), refs);
    }
    return new (pool->Allocate()) TimerNode(f, block, /*periodic=*/false, refs);
  } catch (...) {
    if (block != nullptr) pool->Free(block);
    throw;
  }
}

TimerNode::TimerNode(CallbackRef f, void* block, bool periodic, int32_t refs)
    : state(MakeStateWord(0, State::kPending)),
      ops_(f.ops),
      refs_(refs),
      periodic_(periodic),
      in_block_(block != nullptr) {
  void* to = room_;
  if (in_block_) {
    to = block;
    std::memcpy(room_, &block, sizeof(block));
  }
  f.ops->move_to(f.callable, to);
}

void TimerNode::DestroyCallback(NodePool* pool) noexcept {
  const CallbackOps* ops = std::exchange(ops_, nullptr);
  if (ops == nullptr) return;
  void* callable = Callable();
  if (ops->destroy != nullptr) ops->destroy(callable);
  if (in_block_) pool->Free(callable);
}

void TimerNode::Unref(NodePool* pool) {
  // A count of 1 is the caller's own reference, the last: no other thread
  // holds one, and only a holder takes another (Ref), so the count cannot
  // change any more and needs no read-modify-write. The acquire load pairs
  // with the other holders' releasing decrements, as the fetch_sub would.
  if (refs_.load(std::memory_order_acquire) != 1 &&
      refs_.fetch_sub(1, std::memory_order_acq_rel) != 1) {
    return;
  }
  DestroyCallback(pool);
  if (periodic_) {
    delete static_cast<PeriodicNode*>(this);
    return;
  }
  this->~TimerNode();
  pool->Free(this);
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
