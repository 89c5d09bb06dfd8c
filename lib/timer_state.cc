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
  // timer or one whose operations have no number, after its OutOfLine on
  // the heap.
  Storage storage = Storage::kRoom;
  void* extra = nullptr;
  const uint32_t number = scheduler != nullptr ? 0 : CallbackNumberOf(f.ops);
  if (number == 0) {
    storage = scheduler != nullptr ? Storage::kPeriodic : Storage::kHeap;
    extra = ::operator new(OutOfLine::kCallableOffset + f.ops->size);
    new (extra) OutOfLine(std::move(scheduler), f.ops);
  } else if (f.ops->size > kRoom) {
    storage = Storage::kBlock;
    extra = pool->Allocate();
  }
  void* memory;
  try {
    memory = pool->Allocate();
  } catch (...) {
    if (storage == Storage::kBlock) {
      pool->Free(extra);
    } else if (storage != Storage::kRoom) {
      static_cast<OutOfLine*>(extra)->~OutOfLine();
      ::operator delete(extra);
    }
    throw;
  }
  return new (memory) TimerNode(f, number, storage, extra, refs);
}

TimerNode::TimerNode(CallbackRef f, uint32_t number, Storage storage,
                     void* extra, int32_t refs)
    : state(MakeStateWord(0, State::kPending)),
      callable_(number << kNumberShift | static_cast<uint32_t>(storage)),
      mu(refs) {
  if (storage != Storage::kRoom) std::memcpy(room_, &extra, sizeof(extra));
  f.ops->move_to(f.callable, Callable());
}

void TimerNode::DestroyCallback(NodePool* pool) noexcept {
  if (mu.MarkCallableDestroyed()) DestroyCallable(pool);
}

void TimerNode::DestroyCallable(NodePool* pool) noexcept {
  const CallbackOps* ops = Ops();
  void* callable = Callable();
  if (ops->destroy != nullptr) ops->destroy(callable);
  if (storage() == Storage::kBlock) pool->Free(callable);
}

void TimerNode::Unref(NodePool* pool) {
  if (!mu.Unref()) return;
  if (!mu.callable_destroyed()) DestroyCallable(pool);
  if (out_of_line()) {
    OutOfLine* state = &out_of_line_state();
    state->~OutOfLine();
    ::operator delete(state);
  }
  this->~TimerNode();
  pool->Free(this);
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
  // periodic timer with none, this run's deadline (the byte map's
  // expiration).
  return expiration();
}

}  // namespace timingwheel::internal
