// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "handles/timer_state.h"

#include <cstring>
#include <new>
#include <utility>

namespace timingwheel::internal {

NodePools::NodePools(int64_t spare_blocks, NodePool::Tail tail)
    : nodes(kNodeBlock, alignof(TimerNode), spare_blocks, tail,
            /*cache_slot=*/0),
      bare(kBareBlock, alignof(TimerNode), spare_blocks, tail,
           /*cache_slot=*/1),
      callables(kWheelBlockCallable, alignof(TimerNode), spare_blocks, tail,
                /*cache_slot=*/2) {}

TimerNode* TimerNode::New(NodePools* pools, CallbackRef f,
                          std::unique_ptr<Scheduler> scheduler, int32_t refs,
                          uint32_t id_word) {
  // The callable goes nowhere (a stateless one: a bare node), to the room,
  // to a block of its own (the call site boxed anything bigger than a
  // block: callback.h), or, for a periodic timer or one whose operations
  // have no number, after its OutOfLine on the heap.
  Storage storage = Storage::kRoom;
  void* extra = nullptr;
  const uint32_t number = scheduler != nullptr ? 0 : CallbackNumberOf(f.ops);
  if (number == 0) {
    storage = scheduler != nullptr ? Storage::kPeriodic : Storage::kHeap;
    extra = ::operator new(OutOfLine::kCallableOffset + f.ops->size);
    new (extra) OutOfLine(std::move(scheduler), f.ops);
  } else if (f.ops->stateless) {
    storage = Storage::kBare;
  } else if (f.ops->size > kRoom) {
    storage = Storage::kBlock;
    extra = pools->callables.Allocate();
  }
  void* memory;
  try {
    memory = storage == Storage::kBare ? pools->bare.Allocate()
                                       : pools->nodes.Allocate();
  } catch (...) {
    if (storage == Storage::kBlock) {
      pools->callables.Free(extra);
    } else if (storage >= Storage::kHeap) {
      static_cast<OutOfLine*>(extra)->~OutOfLine();
      ::operator delete(extra);
    }
    throw;
  }
  return new (memory) TimerNode(f, number, storage, extra, refs, id_word);
}

TimerNode::TimerNode(CallbackRef f, uint32_t number, Storage storage,
                     void* extra, int32_t refs, uint32_t id_word)
    : callable_(number << kNumberShift | static_cast<uint32_t>(storage)) {
  // The state first, then the count (see NodeRefsAndLock::Init).
  state.store(MakeStateWord(FirstArmOf(id_word), State::kPending),
              std::memory_order_relaxed);
  mu.Init(refs, id_word != 0);
  // A stateless callable is not kept: trivially destructible, the caller's
  // object goes as it is.
  if (storage == Storage::kBare) return;
  if (storage != Storage::kRoom) std::memcpy(room(), &extra, sizeof(extra));
  f.ops->move_to(f.callable, Callable());
}

void TimerNode::DestroyCallback(NodePools* pools) noexcept {
  if (mu.MarkCallableDestroyed()) DestroyCallable(pools);
}

void TimerNode::DestroyCallable(NodePools* pools) noexcept {
  const CallbackOps* ops = Ops();
  void* callable = Callable();
  if (ops->destroy != nullptr) ops->destroy(callable);
  if (storage() == Storage::kBlock) pools->callables.Free(callable);
}

void TimerNode::Unref(NodePools* pools) {
  if (mu.Unref()) Destroy(pools);
}

TimerNode::SoleStop TimerNode::StopIfSole(uint64_t gen, NodePools* pools) {
  if (!mu.TryReleaseSole()) return SoleStop::kNotSole;
  // No other holder, and none can come: the state word is this thread's. A
  // store, not a compare-and-swap; for PendingId, which reads the word of a
  // block it holds no reference on, it no longer says pending.
  const uint64_t pending = MakeStateWord(gen, State::kPending);
  const bool stopped = LoadState() == pending;
  if (stopped) {
    state.store(MakeStateWord(gen, State::kStopped), std::memory_order_release);
  }
  // The word held no destroyed mark (TryReleaseSole): the callable is there.
  DestroyCallable(pools);
  DestroyNode(pools);
  return stopped ? SoleStop::kStopped : SoleStop::kNotPending;
}

void TimerNode::Destroy(NodePools* pools) {
  if (!mu.callable_destroyed()) DestroyCallable(pools);
  DestroyNode(pools);
}

void TimerNode::DestroyNode(NodePools* pools) {
  if (out_of_line()) {
    OutOfLine* state = &out_of_line_state();
    state->~OutOfLine();
    ::operator delete(state);
  }
  NodePool& pool = storage() == Storage::kBare ? pools->bare : pools->nodes;
  this->~TimerNode();
  pool.Free(this);
}

TimerNode* TimerNode::TryRefId(void* block, uint32_t id_word,
                               NodePools* pools) {
  auto* node = static_cast<TimerNode*>(block);
  if (IdOf(LoadStateAt(block)) != id_word || !node->mu.TryRefById()) {
    return nullptr;
  }
  // Held now: the block cannot change hands. Still the id's timer? (The
  // first check may have seen the one before.)
  if (IdOf(node->LoadState()) == id_word) return node;
  node->Unref(pools);
  return nullptr;
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

std::optional<int64_t> TimerNode::PendingDeadlineNs(
    absl::FunctionRef<int64_t()> now_ns) {
  SpinLockHolder lock(&mu);
  const State s = StateOf(LoadState());
  if (!IsPending(s)) return std::nullopt;
  if (s == State::kPending && expiration() < 0) StampDeadline(now_ns());
  // In kRunningArmed: the re-arm of a Reset made during this run, or, for a
  // periodic timer with none, this run's deadline (the byte map's
  // expiration).
  return expiration();
}

}  // namespace timingwheel::internal
