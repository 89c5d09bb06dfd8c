// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// timer_state_test.cc: tests of lib/handles/timer_state.h: the packing of the
// state word (`generation << 8 | State`) round-trips for every state and for
// large generations; IsPending is true exactly for kPending, kDispatched and
// kRunningArmed, IsRunning for the four running states, and EndOfRun maps
// each running state not armed again to the state its run ends in; a new
// TimerNode starts in (0, kPending) with one reference,
// and its reference count decides its lifetime: the callback (and whatever
// it captured) is destroyed when the last reference goes, not before, and a
// node keeps its engine alive; a periodic node carries its scheduler (apart
// from the one-shot node's pooled memory) until then too.

#include "handles/timer_state.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "handles/callback_numbers.h"
#include "test_util.h"
#include "timingwheel/scheduler.h"

namespace timingwheel::internal {
namespace {

constexpr State kAllStates[] = {
    State::kPending,      State::kDispatched,     State::kRunning,
    State::kRunningArmed, State::kDone,           State::kStopped,
    State::kCancelled,    State::kRunningStopped, State::kRunningCancelled,
    State::kEnded,
};

TEST(TimerStateTest, StateWordRoundTripsEveryStateAndGeneration) {
  const uint64_t kMaxGeneration = std::numeric_limits<uint64_t>::max() >> 8;
  for (State state : kAllStates) {
    for (uint64_t gen :
         {uint64_t{0}, uint64_t{1}, uint64_t{2}, uint64_t{255}, uint64_t{256},
          uint64_t{1} << 32, (uint64_t{1} << 55) + 1, kMaxGeneration - 1,
          kMaxGeneration}) {
      const uint64_t word = MakeStateWord(gen, state);
      EXPECT_EQ(StateOf(word), state) << "gen " << gen;
      EXPECT_EQ(GenerationOf(word), gen) << "state " << static_cast<int>(state);
    }
  }
}

TEST(TimerStateTest, StateWordLayoutIsGenerationShiftedByEight) {
  EXPECT_EQ(MakeStateWord(0, State::kPending), 1u);
  EXPECT_EQ(MakeStateWord(1, State::kPending), 0x101u);
  EXPECT_EQ(MakeStateWord(0x1234, State::kCancelled), 0x123407u);
  static_assert(StateOf(MakeStateWord(9, State::kDone)) == State::kDone);
  static_assert(GenerationOf(MakeStateWord(9, State::kDone)) == 9);
  static_assert(OfGeneration(MakeStateWord(9, State::kDone), 9));
  static_assert(!OfGeneration(MakeStateWord(9, State::kDone), 8));
  static_assert(OfGeneration(MakeStateWord(9, State::kDone), kAnyGeneration));
}

TEST(TimerStateTest, StatesAndGenerationsGiveDistinctWords) {
  std::vector<uint64_t> words;
  for (uint64_t gen = 0; gen < 4; ++gen) {
    for (State state : kAllStates) words.push_back(MakeStateWord(gen, state));
  }
  for (size_t i = 0; i < words.size(); ++i) {
    for (size_t j = i + 1; j < words.size(); ++j) {
      EXPECT_NE(words[i], words[j]) << i << " " << j;
    }
  }
}

TEST(TimerStateTest, NextGenerationChangesOnlyTheGeneration) {
  for (State state : kAllStates) {
    const uint64_t word = MakeStateWord(41, state);
    const uint64_t next = MakeStateWord(GenerationOf(word) + 1, StateOf(word));
    EXPECT_EQ(StateOf(next), state);
    EXPECT_EQ(GenerationOf(next), 42u);
  }
}

TEST(TimerStateTest, IsPendingForPendingDispatchedAndRunningArmedOnly) {
  EXPECT_TRUE(IsPending(State::kPending));
  EXPECT_TRUE(IsPending(State::kDispatched));
  EXPECT_TRUE(IsPending(State::kRunningArmed));
  EXPECT_FALSE(IsPending(State::kRunning));
  EXPECT_FALSE(IsPending(State::kDone));
  EXPECT_FALSE(IsPending(State::kStopped));
  EXPECT_FALSE(IsPending(State::kCancelled));
  EXPECT_FALSE(IsPending(State::kRunningStopped));
  EXPECT_FALSE(IsPending(State::kRunningCancelled));
  EXPECT_FALSE(IsPending(State::kEnded));
}

TEST(TimerStateTest, IsRunningForTheFourRunningStatesOnly) {
  for (State state : kAllStates) {
    const bool running =
        state == State::kRunning || state == State::kRunningArmed ||
        state == State::kRunningStopped || state == State::kRunningCancelled;
    EXPECT_EQ(IsRunning(state), running) << static_cast<int>(state);
  }
}

TEST(TimerStateTest, ARunNotArmedAgainEndsAsItsRunningStateSays) {
  EXPECT_EQ(EndOfRun(State::kRunning), State::kDone);
  EXPECT_EQ(EndOfRun(State::kRunningStopped), State::kStopped);
  EXPECT_EQ(EndOfRun(State::kRunningCancelled), State::kCancelled);
}

class TimerNodeTest : public ::testing::Test {
 protected:
  // A node of `nodes_`'s pool holding `f`, as the wheel makes one.
  template <class F>
  TimerNode* New(F f, std::unique_ptr<Scheduler> scheduler = nullptr,
                 int32_t refs = 1) {
    WheelCallable<F> callable(std::in_place, std::move(f));
    return TimerNode::New(pools(), callable.Ref(), std::move(scheduler), refs);
  }
  // The same for a type whose operations have no number (the process gave
  // them all): the node keeps them on the heap with the callable.
  template <class F>
  TimerNode* NewUnnumbered(F f) {
    WheelCallable<F> callable(std::in_place, std::move(f));
    CallbackRef ref = callable.Ref();
    ref.ops->number->store(kNoNumberLeft);
    return TimerNode::New(pools(), ref);
  }
  // A node whose callback holds a DestructionCounter of `*destroyed`.
  TimerNode* NewCountedNode(std::atomic<int64_t>* destroyed,
                            int* runs = nullptr) {
    return New([counter = DestructionCounter(destroyed), runs] {
      if (runs != nullptr) ++*runs;
    });
  }
  NodePools* pools() const { return nodes_.pools(); }

  std::atomic<int> homes_destroyed_{0};
  TestNodes nodes_{&homes_destroyed_};
};

// A million pending timers are a million nodes: on x86-64 (LP64, libstdc++)
// the member order packs one into 32 bytes, and with the 16-byte room after
// it into 48, a block of the engine's node pool; a node of a stateless
// callable is bare, 32 bytes; a periodic node is 48, its scheduler and run
// count on the heap. (A debug build's node lock carries its rank, so the
// node is bigger there.)
#if defined(__x86_64__) && defined(__GLIBCXX__) && defined(NDEBUG)
TEST(TimerNodeLayoutTest, IsThirtyTwoBytesAndFortyEightWithItsRoom) {
  EXPECT_EQ(sizeof(TimerNode), 32u);
  EXPECT_EQ(kBareBlock, 32u);
  EXPECT_EQ(kNodeBlock, 48u);
}
#endif

// Stateless: empty, trivially copyable and trivially destructible, so that
// any object of the type runs the same.
TEST(CallbackOpsTest, StatelessOnlyForTypesWithNoStateToKeep) {
  auto nothing = [] {};
  int x = 0;
  auto one_pointer = [&x] { ++x; };
  struct EmptyWithDestructor {
    ~EmptyWithDestructor() {}  // NOLINT: not trivial on purpose
    void operator()() const {}
  };
  void (*pointer)() = +[] {};
  EXPECT_TRUE(kCallbackOps<decltype(nothing)>.stateless);
  EXPECT_FALSE(kCallbackOps<decltype(one_pointer)>.stateless);
  EXPECT_FALSE(kCallbackOps<EmptyWithDestructor>.stateless);
  EXPECT_FALSE(kCallbackOps<decltype(pointer)>.stateless);
  one_pointer();
  EXPECT_EQ(x, 1);
}

int stateless_runs = 0;

// A stateless callable takes a bare node, a block of the bare pool and none
// of the other; it runs every time it is run, and the node's memory goes
// back to the bare pool (ASan checks no block is used after its Free).
TEST_F(TimerNodeTest, AStatelessCallableTakesABareNodeAndRuns) {
  stateless_runs = 0;
  const size_t nodes_held = pools()->nodes.HeldBytes();
  EXPECT_EQ(pools()->bare.HeldBytes(), 0u);
  TimerNode* bare = New([] { ++stateless_runs; });
  EXPECT_GT(pools()->bare.HeldBytes(), 0u);
  EXPECT_EQ(pools()->nodes.HeldBytes(), nodes_held);
  bare->RunCallback();
  bare->RunCallback();
  EXPECT_EQ(stateless_runs, 2);
  // A node with a room beside it, from the other pool: neither is touched
  // by the other (ASan's poisoning of free blocks would tell).
  int runs = 0;
  TimerNode* roomy = New([&runs] { ++runs; });
  roomy->RunCallback();
  EXPECT_EQ(runs, 1);
  bare->DestroyCallback(pools());
  bare->Unref(pools());
  roomy->Unref(pools());
  EXPECT_EQ(stateless_runs, 2);
  // Reused: the bare pool's freed block comes back first.
  TimerNode* again = New([] { ++stateless_runs; });
  EXPECT_EQ(again, bare);
  again->RunCallback();
  EXPECT_EQ(stateless_runs, 3);
  again->Unref(pools());
}

// Where a callable goes: up to kRoom bytes in the node, up to a block in a
// second block of the pool, beyond that boxed on the heap by the call site.
// Each runs and is destroyed once, and the blocks go back (ASan checks no
// block is used after its Free).
TEST_F(TimerNodeTest, CallablesOfEverySizeRunAndAreDestroyedOnce) {
  std::atomic<int64_t> destroyed{0};
  int runs = 0;
  auto in_room = [counter = DestructionCounter(&destroyed), &runs] { ++runs; };
  static_assert(sizeof(in_room) <= TimerNode::kRoom);
  std::array<int64_t, 4> wide{1, 2, 3, 5};
  auto in_block = [counter = DestructionCounter(&destroyed), &runs, wide] {
    runs += static_cast<int>(wide[3]);
  };
  static_assert(sizeof(in_block) > TimerNode::kRoom &&
                sizeof(in_block) <= kWheelBlockCallable);
  std::array<int64_t, 12> huge{};
  huge[11] = 100;
  auto boxed = [counter = DestructionCounter(&destroyed), &runs, huge] {
    runs += static_cast<int>(huge[11]);
  };
  static_assert(sizeof(boxed) > kWheelBlockCallable);
  std::vector<TimerNode*> nodes{
      New(std::move(in_room)), New(std::move(in_block)), New(std::move(boxed))};
  EXPECT_EQ(destroyed.load(), 0);  // the moved-from copies count nothing
  for (TimerNode* node : nodes) node->RunCallback();
  EXPECT_EQ(runs, 106);
  nodes[0]->DestroyCallback(pools());
  EXPECT_EQ(destroyed.load(), 1);
  nodes[0]->DestroyCallback(pools());  // once only
  EXPECT_EQ(destroyed.load(), 1);
  for (TimerNode* node : nodes) node->Unref(pools());
  EXPECT_EQ(destroyed.load(), 3);
}

// Operations without a number (once the process has numbered
// kCallbackOpsNumbers types) go to the heap beside the callable: it runs,
// and is destroyed once, as any other.
TEST_F(TimerNodeTest, ACallableWithoutANumberRunsAndIsDestroyedOnce) {
  std::atomic<int64_t> destroyed{0};
  int runs = 0;
  auto small = [counter = DestructionCounter(&destroyed), &runs] { ++runs; };
  std::array<int64_t, 4> wide{1, 2, 3, 10};
  auto in_block = [counter = DestructionCounter(&destroyed), &runs, wide] {
    runs += static_cast<int>(wide[3]);
  };
  std::vector<TimerNode*> nodes{NewUnnumbered(std::move(small)),
                                NewUnnumbered(std::move(in_block))};
  for (TimerNode* node : nodes) node->RunCallback();
  EXPECT_EQ(runs, 11);
  nodes[1]->DestroyCallback(pools());
  nodes[1]->DestroyCallback(pools());  // once only
  EXPECT_EQ(destroyed.load(), 1);
  for (TimerNode* node : nodes) node->Unref(pools());
  EXPECT_EQ(destroyed.load(), 2);
}

// The reference count shares its word with the node lock and two flags:
// neither moves the other.
TEST_F(TimerNodeTest, TheCountTheLockAndTheFlagsLeaveEachOtherAlone) {
  std::atomic<int64_t> destroyed{0};
  TimerNode* node = NewCountedNode(&destroyed);
  node->Ref();
  {
    SpinLockHolder lock(&node->mu);
    EXPECT_FALSE(node->mu.has_rearm());
    node->mu.set_has_rearm(true);
    node->Ref();  // under the lock: the count moves, the lock holds
    EXPECT_TRUE(node->mu.has_rearm());
    EXPECT_TRUE(node->UnrefIfNotLast());
  }
  {
    SpinLockHolder lock(&node->mu);  // unlocked above: taken again
    EXPECT_TRUE(node->mu.has_rearm());
    node->mu.set_has_rearm(false);
    EXPECT_FALSE(node->mu.has_rearm());
  }
  EXPECT_TRUE(node->UnrefIfNotLast());   // 2 -> 1
  EXPECT_FALSE(node->UnrefIfNotLast());  // the last stays
  EXPECT_EQ(destroyed.load(), 0);
  node->Unref(pools());
  EXPECT_EQ(destroyed.load(), 1);
}

// Threads taking the node lock while others move the count: the lock
// excludes (a plain counter under it loses no increment) and the count ends
// where it began.
TEST_F(TimerNodeTest, TheNodeLockExcludesWhileTheCountMoves) {
  std::atomic<int64_t> destroyed{0};
  TimerNode* node = NewCountedNode(&destroyed);
  int64_t under_lock = 0;
  constexpr int kThreads = 4;
  constexpr int kRounds = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRounds; ++i) {
        if (t % 2 == 0) {
          SpinLockHolder lock(&node->mu);
          ++under_lock;
        } else {
          node->Ref();
          EXPECT_TRUE(node->UnrefIfNotLast());
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(under_lock, int64_t{kThreads / 2} * kRounds);
  EXPECT_FALSE(node->UnrefIfNotLast());  // one reference, as it began
  node->Unref(pools());
  EXPECT_EQ(destroyed.load(), 1);
}

TEST_F(TimerNodeTest, NewNodeIsPendingGenerationZeroInNoBucket) {
  std::atomic<int64_t> destroyed{0};
  TimerNode* node = NewCountedNode(&destroyed);
  EXPECT_EQ(node->LoadState(), MakeStateWord(0, State::kPending));
  EXPECT_FALSE(node->periodic());
  EXPECT_FALSE(node->linked());
  EXPECT_EQ(node->runs(), 0);
  node->Unref(pools());
}

// A scheduler that counts its destruction.
class CountedScheduler : public Scheduler {
 public:
  explicit CountedScheduler(std::atomic<int64_t>* destroyed)
      : destroyed_(destroyed) {}
  ~CountedScheduler() override { destroyed_->fetch_add(1); }
  std::optional<absl::Duration> NextDelay(
      const ScheduleContext& /*context*/) override {
    return absl::Milliseconds(7);
  }

 private:
  std::atomic<int64_t>* const destroyed_;
};

TEST_F(TimerNodeTest, PeriodicNodeCarriesItsSchedulerUntilTheLastReference) {
  std::atomic<int64_t> callbacks_destroyed{0};
  std::atomic<int64_t> schedulers_destroyed{0};
  auto scheduler = std::make_unique<CountedScheduler>(&schedulers_destroyed);
  Scheduler* const raw = scheduler.get();
  TimerNode* node = New([counter = DestructionCounter(&callbacks_destroyed)] {},
                        std::move(scheduler), /*refs=*/2);
  EXPECT_TRUE(node->periodic());
  EXPECT_EQ(&node->scheduler(), raw);
  EXPECT_EQ(node->scheduler().NextDelay({}), absl::Milliseconds(7));
  EXPECT_EQ(node->LoadState(), MakeStateWord(0, State::kPending));
  node->Unref(pools());
  EXPECT_EQ(callbacks_destroyed.load(), 0);
  EXPECT_EQ(schedulers_destroyed.load(), 0);
  node->Unref(pools());  // the last: callback and scheduler go with the node
  EXPECT_EQ(callbacks_destroyed.load(), 1);
  EXPECT_EQ(schedulers_destroyed.load(), 1);
}

TEST_F(TimerNodeTest, CasStateSucceedsOnlyFromTheExpectedWord) {
  std::atomic<int64_t> destroyed{0};
  TimerNode* node = NewCountedNode(&destroyed);
  uint64_t expected = MakeStateWord(1, State::kPending);  // wrong generation
  EXPECT_FALSE(node->CasState(expected, MakeStateWord(1, State::kStopped)));
  EXPECT_EQ(expected, MakeStateWord(0, State::kPending));  // what it saw
  EXPECT_TRUE(node->CasState(expected, MakeStateWord(0, State::kDispatched)));
  EXPECT_EQ(node->LoadState(), MakeStateWord(0, State::kDispatched));
  node->Unref(pools());
}

TEST_F(TimerNodeTest, OneReferenceUnrefDestroysTheCallback) {
  std::atomic<int64_t> destroyed{0};
  TimerNode* node = NewCountedNode(&destroyed);
  EXPECT_EQ(destroyed.load(), 0);
  node->Unref(pools());
  EXPECT_EQ(destroyed.load(), 1);
}

TEST_F(TimerNodeTest, CallbackLivesUntilTheLastReference) {
  std::atomic<int64_t> destroyed{0};
  int runs = 0;
  TimerNode* node = NewCountedNode(&destroyed, &runs);
  node->Ref();
  node->Ref();  // three references
  node->Unref(pools());
  EXPECT_EQ(destroyed.load(), 0);
  node->RunCallback();  // still usable
  EXPECT_EQ(runs, 1);
  node->Unref(pools());
  EXPECT_EQ(destroyed.load(), 0);
  node->Unref(pools());
  EXPECT_EQ(destroyed.load(), 1);
}

TEST_F(TimerNodeTest, ClearedCallbackIsDestroyedBeforeTheNode) {
  // What Shutdown does for a cancelled node.
  std::atomic<int64_t> destroyed{0};
  TimerNode* node = NewCountedNode(&destroyed);
  node->DestroyCallback(pools());
  EXPECT_EQ(destroyed.load(), 1);
  node->Unref(pools());
  EXPECT_EQ(destroyed.load(), 1);
}

TEST_F(TimerNodeTest, ConcurrentUnrefsDestroyExactlyOnce) {
  constexpr int kThreads = 4;
  constexpr int kRefsPerThread = 1000;
  for (int round = 0; round < 20; ++round) {
    std::atomic<int64_t> destroyed{0};
    TimerNode* node = NewCountedNode(&destroyed);
    for (int i = 0; i < kThreads * kRefsPerThread - 1; ++i) node->Ref();
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([node, pool = pools()] {
        for (int i = 0; i < kRefsPerThread; ++i) node->Unref(pool);
      });
    }
    for (std::thread& thread : threads) thread.join();
    EXPECT_EQ(destroyed.load(), 1) << "round " << round;
  }
}

TEST_F(TimerNodeTest, AHandleKeepsItsNodesHomeAlive) {
  // The home's owner lets go first; the handle's release then frees the node
  // and releases the owner too, in that order (AddressSanitizer checks that
  // the node's memory is not freed into a pool already gone).
  std::atomic<int64_t> destroyed{0};
  TimerNode* node = NewCountedNode(&destroyed);
  NodeHome* home = nodes_.home();
  home->AddHandle();  // as a Timer adopting the node's reference
  nodes_.Release();
  EXPECT_EQ(homes_destroyed_.load(), 0);
  EXPECT_EQ(home->lane(), 0);  // still a live home
  node->ReleaseHandle(home);
  EXPECT_EQ(destroyed.load(), 1);
  EXPECT_EQ(homes_destroyed_.load(), 1);
}

TEST_F(TimerNodeTest, AHomeWithoutHandlesGoesWithItsOwner) {
  // Nodes without handles do not hold the home: whoever holds them holds the
  // engine (NodeHome).
  std::atomic<int64_t> destroyed{0};
  TimerNode* node = NewCountedNode(&destroyed);
  node->Unref(pools());
  EXPECT_EQ(destroyed.load(), 1);
  nodes_.Release();
  EXPECT_EQ(homes_destroyed_.load(), 1);
}

TEST_F(TimerNodeTest, CancelEndsOnlyAPendingOrDispatchedArmOfItsGeneration) {
  std::atomic<int64_t> destroyed{0};
  TimerNode* node = NewCountedNode(&destroyed);
  EXPECT_FALSE(node->Cancel(1));  // another generation
  uint64_t word = MakeStateWord(0, State::kPending);
  ASSERT_TRUE(node->CasState(word, MakeStateWord(0, State::kDispatched)));
  EXPECT_TRUE(node->Cancel(0));
  EXPECT_EQ(node->LoadState(), MakeStateWord(0, State::kCancelled));
  EXPECT_FALSE(node->Cancel(kAnyGeneration));  // final
  node->Unref(pools());
  TimerNode* running = NewCountedNode(&destroyed);
  word = MakeStateWord(0, State::kPending);
  ASSERT_TRUE(running->CasState(word, MakeStateWord(3, State::kRunning)));
  EXPECT_FALSE(running->Cancel(kAnyGeneration));
  word = MakeStateWord(3, State::kRunning);
  ASSERT_TRUE(running->CasState(word, MakeStateWord(4, State::kPending)));
  EXPECT_TRUE(running->Cancel(kAnyGeneration));
  running->Unref(pools());
}

}  // namespace
}  // namespace timingwheel::internal
