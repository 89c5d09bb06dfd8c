// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "timer_state.h"

#include <cstring>
#include <new>
#include <utility>

namespace timingwheel::internal {

TimerNode* TimerNode::New(NodePool* pool, CallbackRef f,
                          std::unique_ptr<Scheduler> scheduler, int32_t refs) {
  // The callable goes to the room, to a block of its own (the call site
  // boxed anything bigger than a block: callback.h), or, for a periodic
  // timer, after its state on the heap.
  Storage storage = Storage::kRoom;
  void* extra = nullptr;
  if (scheduler != nullptr) {
    storage = Storage::kPeriodic;
    extra = ::operator new(PeriodicState::kCallableOffset + f.ops->size);
    new (extra) PeriodicState(std::move(scheduler));
  } else if (f.ops->size > kRoom) {
    storage = Storage::kBlock;
    extra = pool->Allocate();
  }
  void* memory;
  try {
    memory = pool->Allocate();
  } catch (...) {
    if (storage == Storage::kPeriodic) {
      static_cast<PeriodicState*>(extra)->~PeriodicState();
      ::operator delete(extra);
    } else if (storage == Storage::kBlock) {
      pool->Free(extra);
    }
    throw;
  }
  return new (memory) TimerNode(f, storage, extra, refs);
}

TimerNode::TimerNode(CallbackRef f, Storage storage, void* extra, int32_t refs)
    : state(MakeStateWord(0, State::kPending)),
      ops_(f.ops),
      refs_(refs),
      storage_(storage) {
  if (storage_ != Storage::kRoom) std::memcpy(room_, &extra, sizeof(extra));
  f.ops->move_to(f.callable, Callable());
}

void TimerNode::DestroyCallback(NodePool* pool) noexcept {
  const CallbackOps* ops = std::exchange(ops_, nullptr);
  if (ops == nullptr) return;
  void* callable = Callable();
  if (ops->destroy != nullptr) ops->destroy(callable);
  if (storage_ == Storage::kBlock) pool->Free(callable);
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
  if (periodic()) {
    PeriodicState* periodic = &periodic_state();
    periodic->~PeriodicState();
    ::operator delete(periodic);
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
