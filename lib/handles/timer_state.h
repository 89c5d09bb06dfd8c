// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// timer_state.h: one timer's node and the atomic state machine that decides
// every race on it.
//
// A `TimerNode` is what a `Timer` handle points to. It holds the callback, the
// deadline, its place in the bucket it sits in, and one atomic state
// word. The state word, not bucket membership, is the truth: the thread whose
// compare-and-swap moves a timer out of kPending (or kDispatched) decides
// whether it is stopped or runs. Membership only follows, which is why a
// Stop can win against a timer that is in transit between buckets or queued
// for a worker (DESIGN.md section 3, traps 4 and 5).
//
// The state word is `generation << 8 | linked bit | State` (the linked
// bit: kLinkedBit below). Every re-arm (Reset, the next
// run of a periodic timer) bumps the generation, so a worker task or a Stop
// that refers to an older arm can tell and does nothing.
//
//   from              event                          to
//   kPending          a bucket is flushed, it is due kDispatched (worker queue)
//   kPending          Stop / Shutdown, CancelAll     kStopped / kCancelled
//   kDispatched       a worker starts it             kRunning (one-shot) or
//                                                    kRunningArmed (periodic)
//   kDispatched       Stop / Shutdown, CancelAll     kStopped / kCancelled
//   kRunningArmed     Stop / Shutdown, CancelAll     kRunningStopped /
//                                                    kRunningCancelled
//   kRunning, kRunningStopped  Reset                 kRunningArmed
//   kRunningArmed     the callback returns           kPending, generation + 1,
//                                                    or kEnded when the
//                                                    schedule ends
//   kRunning          the callback returns           kDone
//   kRunningStopped   the callback returns           kStopped
//   kRunningCancelled the callback returns           kCancelled
//   kPending, kDispatched, kDone, kStopped, kEnded  Reset
//                                                    kPending, generation + 1
//   kCancelled is final (Shutdown or CancelAll), and so is kRunningCancelled
//   until it becomes kCancelled: the callback is destroyed, nothing re-arms.
//
// "Pending" in the API's sense (Pending(), Stop()'s true) is kPending,
// kDispatched and kRunningArmed. The three running states are one in the
// API (TimerState::kRunning); the state a run ends in remembers why it is not
// armed again: it ran (kDone), a Stop (kStopped), its schedule ended (kEnded),
// or a cancel (kCancelled).
//
// Locking:
//   * `state`, the reference count and the deadline (the CoreNode's
//     `expiration`) are atomics, touched without locks.
//   * `mu` (the node lock: one bit of the word that also holds the reference
//     count) serializes the threads that arm the node anew and set its
//     deadline: Reset, and the worker re-arming it after a run. It guards
//     the re-arm flag (`mu.has_rearm()`). The wheel's owner never takes it.
//     Its place among the locks: kNode in the lock table of lib/base/mutex.h.
//   * The deadline is written by the thread that arms the node (the caller
//     of AfterFunc before it hands the node on; Reset and the worker's
//     re-arm under `mu`, after their compare-and-swap), or, for an
//     unstamped first arm (StampDeadline below), by compare-and-swap by the
//     owner before it claims the link, or by a Deadline() under `mu`; it is
//     read by anyone:
//     the owner places the node by it. So a Reset may move it while the
//     owner still holds a link of the arm it ended: such a stale link is
//     placed by whatever deadline the owner reads, and dropped when met
//     (WheelCore::AdvanceSome reads it afresh at each placement). The owner
//     dispatches an arm only by a compare-and-swap from that arm's linked
//     word, after reading the deadline (acquire): a deadline of a later arm
//     is written after that arm's compare-and-swap, so having read it, the
//     owner's fails. Never early, with one deadline per node.
//   * The links in the core (CoreNode's prev and next) belong to the
//     thread that owns the wheel's core (the advancer, or Shutdown once it
//     has stopped): callers hand it arms and stops through the inbox
//     (lib/handoff/inbox.h) and never read them. The owner alone sets the
//     linked bit of the state word (by compare-and-swap, as every move).
//   * The callable: run by the thread that moved the node to a running
//     state; destroyed by the thread that cancelled it for good, or by the
//     last Unref.
//
// Lifetime: intrusive reference count. Each Timer handle holds one reference
// (and counts itself in the node's home, which keeps the engine alive; see
// NodeHome); whichever part of the wheel holds the node (a submission in the
// inbox, a bucket, a worker task) holds one more. A timer held by id
// (TimerId) has no handle: its node goes when the wheel's holders let go,
// as the timer ends. A thread with its id holds nothing, so it takes a
// reference for the length of a call by compare-and-swap, only while the
// count is above 0 and the node is held by id (TryRefById), after checking
// the id's generation in the state word; and the last reference of such a
// node is always released by a read-modify-write (Unref), since a
// reference may appear without a holder giving it. Both words of a block
// are written atomically when a node is made there (the constructor stores
// them), so these reads of a block that may be free or reused are never a
// data race; the node's callable's second block lives in a pool of its own,
// so an id's block is never a callable's bytes (NodePools). The last
// release destroys the node and hands its memory back to the engine's pool,
// which the releasing thread names (a periodic node's to the heap). Nothing
// here calls the engine.
//
// No write after hand-on (DESIGN.md, trap 12): a thread that hands a node on
// (pushes a submission, links it, queues its task) does so with a reference
// of its own making and touches the node no more through that reference.

#ifndef TIMINGWHEEL_LIB_HANDLES_TIMER_STATE_H_
#define TIMINGWHEEL_LIB_HANDLES_TIMER_STATE_H_

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "base/mutex.h"
#include "base/no_sanitize.h"
#include "base/ref_counted.h"
#include "core/bucket.h"
#include "handles/callback_numbers.h"
#include "handles/node_pool.h"
#include "timingwheel/callback.h"
#include "timingwheel/scheduler.h"
#include "timingwheel/timingwheel.h"

namespace timingwheel::internal {

class Engine;

// Matches every generation where a generation is asked for.
inline constexpr uint64_t kAnyGeneration = ~uint64_t{0};

// An engine's node memory (see the byte map below): blocks of a node with
// its room (`nodes`), blocks of a bare node, for a stateless callable
// (`bare`), and a callable's second block (`callables`). Nodes and second
// blocks are the same size but never share a pool: a timer id names a block
// of `nodes` or `bare` and reads its state word before it knows whether the
// node is still its own (TimerNode::LoadStateAt), which must never be a
// callable's bytes, being written. Each pool has a thread cache slot of its
// own (node_pool.h), so a thread making all kinds keeps all cached.
struct NodePools {
  // Each pool keeps `spare_blocks` free blocks' memory when timers end;
  // `tail` finishes their give-back work (node_pool.h).
  NodePools(int64_t spare_blocks, NodePool::Tail tail);

  NodePool nodes;
  NodePool bare;
  NodePool callables;
};

// Where a handle counts itself: one lane of an engine (engine.h). A handle
// (Timer) keeps the home of the thread that made it, and counts itself
// there while it lives (a copy in the same home). While the engine's owner
// holds it, the count carries a bias of 1, so a handle's birth and death write
// only this count, never the engine's; when the owner lets go (ReleaseBias),
// the bias becomes the home's reference on the engine, held until its last
// handle goes.
//
// Why handles and not nodes: every other holder of a node holds the engine
// too. A bucket or the advancer holds it through the owner (Shutdown, before
// the owner lets go, empties every bucket) or the advancer's thread
// reference; a worker through its thread's; a task handed to an executor
// through its own; Shutdown through its caller, the owner. Only a handle can
// outlive all of those. So the engine, and the pools with it, outlives every
// node; and a worker that finishes a callback writes no count that other
// workers write too. A handle releases its node first, then its count, so a
// node destroyed by its last handle (with its callback, which may hold other
// handles) is freed while the engine still lives.
// Thread-safe; the count is on a cache line of its own.
class NodeHome {
 public:
  // `engine` is only handed on (to a Timer); `owner` is the same engine's
  // lifetime; `pools` is where its nodes' memory goes back.
  NodeHome(NodePools* pools, RefCounted* owner, Engine* engine, int lane)
      : pools_(pools), owner_(owner), engine_(engine), lane_(lane) {}
  NodeHome(const NodeHome&) = delete;
  NodeHome& operator=(const NodeHome&) = delete;

  Engine* engine() const { return engine_; }
  NodePools* pools() const { return pools_; }
  int lane() const { return lane_; }
  void AddHandle() { handles_.fetch_add(1, std::memory_order_relaxed); }
  // Memory ordering: acq_rel, as for any reference count.
  void RemoveHandle() {
    if (handles_.fetch_sub(1, std::memory_order_acq_rel) == 1) owner_->Unref();
  }
  // The owner lets go. Precondition: it holds a reference on `owner` for
  // this home, which this home releases with its last handle (now, if none).
  void ReleaseBias() { RemoveHandle(); }

 private:
  NodePools* const pools_;
  RefCounted* const owner_;
  Engine* const engine_;
  const int lane_;
  alignas(64) std::atomic<int64_t> handles_{1};  // live handles, + 1 if owned
};

enum class State : uint8_t {
  kPending = 1,
  kDispatched = 2,
  kRunning = 3,
  kRunningArmed = 4,
  kDone = 5,
  kStopped = 6,
  kCancelled = 7,
  kRunningStopped = 8,
  kRunningCancelled = 9,
  kEnded = 10,
};

// Packs and unpacks the state word. Every word MakeStateWord makes has the
// linked bit clear: any move of the state ends the link's claim.
constexpr uint64_t MakeStateWord(uint64_t generation, State state) {
  return (generation << 8) | static_cast<uint64_t>(state);
}
constexpr State StateOf(uint64_t word) {
  return static_cast<State>(word & 0x7f);
}
// The linked bit: set by the owner alone, on (gen, kPending) once it has
// linked the node for arm `gen` in the core; cleared by every later move
// of the state (a Stop, a Reset, a dispatch, a cancel). So a node in a
// bucket whose word lacks it sits there for an arm that ended (a stale
// link the owner drops when it meets it), and the owner needs no copy of
// the generation it linked.
inline constexpr uint64_t kLinkedBit = 0x80;
constexpr bool IsLinkedPending(uint64_t word) {
  return (word & 0xff) == (kLinkedBit | static_cast<uint64_t>(State::kPending));
}
constexpr uint64_t GenerationOf(uint64_t word) { return word >> 8; }

// A timer held by id (TimerId: no handle) carries its id in the top half of
// the state word: the flag kByIdWord and 31 bits of the id's generation,
// which every arm of the node keeps; its arms are counted in the 24 bits
// below (the arm's part of the generation, which wraps there). A timer with
// handles counts its arms from 0 up in the whole generation, which never
// reaches the flag (2^55 arms). So the word alone tells whether it belongs
// to an id (IdOf), and an id's check and its arm are one compare-and-swap.
inline constexpr uint64_t kByIdWord = uint64_t{1} << 63;
inline constexpr int kArmBits = 24;
inline constexpr uint64_t kArmMask = (uint64_t{1} << kArmBits) - 1;
// The top half of the state word of a timer held by id `id_generation`
// (31 bits), and the generation of its first arm.
constexpr uint32_t IdWordOf(uint32_t id_generation) {
  return static_cast<uint32_t>(kByIdWord >> 32) | id_generation;
}
constexpr uint64_t FirstArmOf(uint32_t id_word) {
  return uint64_t{id_word} << (32 - 8);
}
// The top half of a state word: IdWordOf(...) for a timer held by id, else
// not (no flag).
constexpr uint32_t IdOf(uint64_t word) {
  return static_cast<uint32_t>(word >> 32);
}
// The generation of the arm after `gen`: + 1, within the arm's bits for a
// timer held by id.
constexpr uint64_t NextGeneration(uint64_t gen) {
  if ((gen & (kByIdWord >> 8)) == 0) return gen + 1;
  return (gen & ~kArmMask) | ((gen + 1) & kArmMask);
}
// Whether `gen` is a node's first arm (the one AfterFunc made).
constexpr bool IsFirstArm(uint64_t gen) {
  if ((gen & (kByIdWord >> 8)) == 0) return gen == 0;
  return (gen & kArmMask) == 0;
}
// Whether the word is of generation `gen` (of any, for kAnyGeneration).
constexpr bool OfGeneration(uint64_t word, uint64_t gen) {
  return gen == kAnyGeneration || GenerationOf(word) == gen;
}

// True for the states in which Stop() returns true.
constexpr bool IsPending(State s) {
  return s == State::kPending || s == State::kDispatched ||
         s == State::kRunningArmed;
}

// True while the callback runs.
constexpr bool IsRunning(State s) {
  return s == State::kRunning || s == State::kRunningArmed ||
         s == State::kRunningStopped || s == State::kRunningCancelled;
}

// The state a run that is not armed again ends in: kRunning -> kDone,
// kRunningStopped -> kStopped, kRunningCancelled -> kCancelled.
constexpr State EndOfRun(State running) {
  switch (running) {
    case State::kRunningStopped:
      return State::kStopped;
    case State::kRunningCancelled:
      return State::kCancelled;
    default:
      return State::kDone;
  }
}

// The node's reference count, its lock and three flags, in one word:
// refs << 4 | by id << 3 | callable destroyed << 2 | has_rearm << 1 |
// locked. A count's increment or decrement leaves the four low bits alone;
// the lock is a compare-and-swap on the whole word, so a count moving
// meanwhile only makes it try again. The count is the node's (Lifetime,
// above); the lock works as a SpinLock (lib/base/mutex.h) in one bit; the
// re-arm flag is guarded by the lock; the by-id flag is set once, at birth.
class ABSL_LOCKABLE NodeRefsAndLock : private lock_rank::Ranked {
 public:
  // Leaves the word as the block held it: Init stores it.
  NodeRefsAndLock() : Ranked(LockRank::kNode) {}
  // Stored, not initialized: a thread holding an id of the block's last
  // timer may read the word at any time (TryRefById), so the store is
  // atomic; release, after the node's state word (TimerNode's constructor),
  // so that a TryRefById that sees it sees the new timer's state.
  void Init(int32_t refs, bool by_id) {
    word_.store(static_cast<uint32_t>(refs) << kRefShift | (by_id ? kById : 0u),
                std::memory_order_release);
  }
  NodeRefsAndLock(const NodeRefsAndLock&) = delete;
  NodeRefsAndLock& operator=(const NodeRefsAndLock&) = delete;

  void Ref() { word_.fetch_add(kOneRef, std::memory_order_relaxed); }
  // Releases one reference; whether it was the last. For a node with
  // handles, a count of 1 is the caller's own, the last: no other thread
  // holds one, and only a holder takes another, so the count cannot change
  // any more and needs no read-modify-write. A node held by id may gain a
  // reference from a thread that holds none (TryRefById), so its count is
  // always decremented. Memory ordering: acq_rel (the acquire load pairs
  // with the other holders' releasing decrements, as the fetch_sub would),
  // so every write to the node by any holder happens before its deletion.
  bool Unref() {
    const uint32_t word = word_.load(std::memory_order_acquire);
    return (Refs(word) == 1 && (word & kById) == 0) ||
           Refs(word_.fetch_sub(kOneRef, std::memory_order_acq_rel)) == 1;
  }
  // A reference for a thread that holds none, from an id of the node: taken
  // only if the node is held by id and alive (a count above 0), whatever the
  // block holds now (it may be free, or another timer's). The block must be
  // mapped. Acquire: the holder then sees the node as made.
  TIMINGWHEEL_NO_SANITIZE_ADDRESS bool TryRefById() {
    auto* word = reinterpret_cast<uint32_t*>(&word_);
    uint32_t seen = __atomic_load_n(word, __ATOMIC_RELAXED);
    while ((seen & kById) != 0 && Refs(seen) > 0) {
      if (__atomic_compare_exchange_n(word, &seen, seen + kOneRef,
                                      /*weak=*/true, __ATOMIC_ACQUIRE,
                                      __ATOMIC_RELAXED)) {
        return true;
      }
    }
    return false;
  }
  // Releases the caller's reference if it is the only one and nothing else
  // is set in the word (no lock, re-arm or destroyed mark): the count goes
  // to 0, so no TryRefById can take one any more, and the node is the
  // caller's alone. One compare-and-swap (acq_rel, as Unref).
  bool TryReleaseSole() {
    uint32_t expected = kOneRef | kById;
    return word_.compare_exchange_strong(
        expected, kById, std::memory_order_acq_rel, std::memory_order_relaxed);
  }
  // Releases one reference unless it is the last, and says whether it did.
  // acq_rel, as Unref: this holder's writes happen before the deletion by
  // whichever holder releases the last reference.
  bool UnrefIfNotLast() {
    uint32_t word = word_.load(std::memory_order_relaxed);
    while (Refs(word) > 1) {
      if (word_.compare_exchange_weak(word, word - kOneRef,
                                      std::memory_order_acq_rel,
                                      std::memory_order_relaxed)) {
        return true;
      }
    }
    return false;
  }

  // Memory ordering: acquire on lock and release on unlock, as a mutex.
  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    WillLock();
    uint32_t word = word_.load(std::memory_order_relaxed);
    for (;;) {
      if ((word & kLocked) != 0) {
        std::this_thread::yield();
        word = word_.load(std::memory_order_relaxed);
      } else if (word_.compare_exchange_weak(word, word | kLocked,
                                             std::memory_order_acquire,
                                             std::memory_order_relaxed)) {
        return;
      }
    }
  }
  void Unlock() ABSL_UNLOCK_FUNCTION() {
    word_.fetch_and(~kLocked, std::memory_order_release);
    Unlocked();
  }

  // Whether a Reset made during a run left a re-arm (TimerNode's deadline).
  bool has_rearm() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(this) {
    return (word_.load(std::memory_order_relaxed) & kRearm) != 0;
  }
  void set_has_rearm(bool rearm) ABSL_EXCLUSIVE_LOCKS_REQUIRED(this) {
    if (rearm) {
      word_.fetch_or(kRearm, std::memory_order_relaxed);
    } else {
      word_.fetch_and(~kRearm, std::memory_order_relaxed);
    }
  }

  // Marks the node's callable destroyed; whether it was not yet. Only a
  // thread that may destroy it calls this (TimerNode::DestroyCallback), and
  // no two at once; a read-modify-write so that the count may move meanwhile.
  bool MarkCallableDestroyed() {
    return (word_.fetch_or(kDestroyed, std::memory_order_relaxed) &
            kDestroyed) == 0;
  }
  // Whether it is marked, for the holder of the last reference (the mark,
  // if any, happened before that reference's release: Unref's acquire).
  bool callable_destroyed() const {
    return (word_.load(std::memory_order_relaxed) & kDestroyed) != 0;
  }

 private:
  static constexpr uint32_t kLocked = 1;
  static constexpr uint32_t kRearm = 2;
  static constexpr uint32_t kDestroyed = 4;
  static constexpr uint32_t kById = 8;
  static constexpr int kRefShift = 4;
  static constexpr uint32_t kOneRef = uint32_t{1} << kRefShift;
  static constexpr uint32_t Refs(uint32_t word) { return word >> kRefShift; }

  // Not initialized by its constructor (trivial in C++17): see ours.
  std::atomic<uint32_t> word_;
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
};

// The node, byte by byte (x86-64, release build; a debug build's lock
// carries its rank, so the node is bigger there):
//
//   offset size  field
//    0      4    prev             \  CoreNode: the links are the owner's
//    4      4    next              > alone; the expiration is the deadline
//    8      8    expiration       /  of the node's current arm, in
//                                    nanoseconds since the engine's origin
//                                    (see Locking above)
//   16      8    state            generation << 8 | linked bit | State
//                                 (held by id: the id in the top half)
//   24      4    callable         the operations' number << 3 | where the
//                                 callable is (Storage); set once
//   28      4    mu               refs << 4 | by id << 3 | callable
//                                 destroyed << 2 | has_rearm << 1 | locked
//                                 (NodeRefsAndLock)
//   32     16    room             the callable (kRoom bytes), or a pointer
//                                 to where it is: in the block, after the
//                                 node (the class is the first 32 bytes)
//
// 48 bytes (kNodeBlock): a block of NodePools::nodes. A stateless callable
// (a lambda capturing nothing: CallbackOps::stateless) needs no room, since
// any object of its type runs the same: its node is bare, 32 bytes
// (kBareBlock), a block of NodePools::bare, and it runs on an object of its
// type begun in a buffer of no state (kBare; callback.h). A callable of at most
// kRoom bytes (a lambda capturing two pointers, `[this, id]`) lives in the
// room; one of at most kWheelBlockCallable (an absl::AnyInvocable, a lambda
// capturing up to six pointers) in a second block, of NodePools::callables;
// a bigger one was boxed on the heap by the call site (callback.h).
// The operations are named by number (lib/handles/callback_numbers.h), 32 bits;
// a callable without one (numbers run out after some 65,000 types) keeps them
// on the heap beside it (kHeap), as a periodic timer does (kPeriodic: its
// scheduler, run count, operations and callable on the heap, so that nothing a
// periodic timer alone needs is in a one-shot node). Every node is in the node
// arena (node_arena.h), so the core may name it by 32 bits.
//
// Which node a handle's engine is: no node says. A Timer keeps its node's
// home (NodeHome) itself, and every other holder of a node knows its engine
// and hands its pools to Unref.
// Aligned to the arena's unit, so that every block of the pools (and so
// every node) has a 32-bit name: 32 and 48 bytes are two and three units.
class alignas(NodeLink::kUnit) TimerNode : public CoreNode {
 public:
  // The callable kept in the node's block, after the node.
  static constexpr size_t kRoom = 16;
  // A new node from `pools` (periodic when `scheduler` is not null), in
  // kPending, with `refs` references for the caller, holding the callable
  // of `f` (not empty): generation 0, or, held by id (`id_word`, from
  // IdWordOf; 0: not), FirstArmOf(id_word). Throws std::bad_alloc, having
  // moved nothing, when there is no memory.
  static TimerNode* New(NodePools* pools, CallbackRef f,
                        std::unique_ptr<Scheduler> scheduler = nullptr,
                        int32_t refs = 1, uint32_t id_word = 0);
  TimerNode(const TimerNode&) = delete;
  TimerNode& operator=(const TimerNode&) = delete;

  void Ref() { mu.Ref(); }
  // A handle (Timer) counts itself in its home (NodeHome) while it lives,
  // besides its reference: a copy takes both, and a handle lets go of both,
  // the reference first.
  void RefHandle(NodeHome* home) {
    Ref();
    home->AddHandle();
  }
  void ReleaseHandle(NodeHome* home) {
    Unref(home->pools());
    home->RemoveHandle();
  }
  // Releases one reference; the last one destroys the callable (if still
  // there) and the node, and hands their memory back to `pools`, the pools
  // of the node's engine. Memory ordering: acq_rel, so every write to the
  // node by any holder happens before its deletion.
  void Unref(NodePools* pools);
  // What StopIfSole did.
  enum class SoleStop { kNotSole, kStopped, kNotPending };
  // For a node held by id whose caller holds a reference that no bucket,
  // task or submission stands behind (its first arm taken back from the
  // inbox): if that reference is the node's only one, stops arm `gen` if it
  // is still pending (kStopped; kNotPending if another thread ended it
  // first), and destroys the node. One compare-and-swap where a Stop then an
  // Unref take two. kNotSole: nothing done.
  SoleStop StopIfSole(uint64_t gen, NodePools* pools);
  // Releases one reference unless it is the last, and says whether it did: a
  // thread that must not destroy the node where it stands (the advancer in
  // the middle of a flush) keeps the last one for a later Unref.
  bool UnrefIfNotLast() { return mu.UnrefIfNotLast(); }

  // Compare-and-swap on the state word: acq_rel on success (a winner sees what
  // the previous owner wrote, and publishes its own writes), acquire on
  // failure.
  bool CasState(uint64_t& expected, uint64_t desired) {
    return state.compare_exchange_strong(expected, desired,
                                         std::memory_order_acq_rel,
                                         std::memory_order_acquire);
  }
  uint64_t LoadState() const { return state.load(std::memory_order_acquire); }
  // The state word of the node at `block`, for an id's check: the block may
  // be free or another timer's (its word then tells, IdOf), and must be
  // mapped (a block of a pool that still holds it).
  TIMINGWHEEL_NO_SANITIZE_ADDRESS static uint64_t LoadStateAt(
      const void* block) {
    const auto* node = static_cast<const TimerNode*>(block);
    return __atomic_load_n(reinterpret_cast<const uint64_t*>(&node->state),
                           __ATOMIC_ACQUIRE);
  }
  // A reference for a thread that holds none, from an id whose top half is
  // `id_word`: the node at `block` (mapped, as above) is then that id's, and
  // alive. False if the block is free, another timer's, or that timer ended
  // and was let go.
  static TimerNode* TryRefId(void* block, uint32_t id_word, NodePools* pools);

  // (gen, kPending or kDispatched) -> (gen, kCancelled), for any generation
  // with kAnyGeneration: the wheel is shut down, CancelAll found the node, or
  // the wheel could not take this arm. Returns whether this call cancelled
  // it.
  bool Cancel(uint64_t gen);

  // The deadline of the node's pending arm (IsPending), in nanoseconds since
  // the engine's origin; for kRunningArmed the re-arm a Reset left, if any,
  // else the deadline of the run in progress. std::nullopt when not pending.
  // Takes `mu`: every thread that moves the node into kPending with a new
  // deadline, or sets the re-arm, holds it (Reset, the worker's re-arm;
  // AfterFunc's node is not shared yet), so the state and the deadline read
  // under it belong to the same arm. The moves that need no lock (Stop, a
  // worker starting the callback, the owner's link and dispatch) change no
  // deadline.
  // An unstamped first arm (below) is stamped now, from `now_ns()`.
  std::optional<int64_t> PendingDeadlineNs(absl::FunctionRef<int64_t()> now_ns)
      ABSL_LOCKS_EXCLUDED(mu);

  // An unstamped first arm: AfterFunc handed the node on before reading the
  // clock (lib/handoff/inbox.h), and its expiration holds -d (d > 0, the
  // delay in nanoseconds) until whoever first needs the deadline stamps it
  // `now_ns + d` here, by compare-and-swap, from a reading taken after the
  // call: the owner when it has the submission in hand (or stops polling),
  // or a Deadline() asked before. Later stamps change nothing. Only such an
  // arm has a negative expiration while kPending: every other pending arm's
  // deadline lies after the clock's reading at its call (>= 0), and an arm
  // due at its call goes straight to kDispatched.
  void set_unstamped(int64_t d_ns) { set_expiration(-d_ns); }
  void StampDeadline(int64_t now_ns) {
    int64_t expiration = this->expiration();
    while (expiration < 0 && !CasExpiration(expiration, now_ns - expiration)) {
    }
  }

  // Runs the callable. Only the thread that moved the node to kRunning or
  // kRunningArmed calls it.
  void RunCallback() { Ops()->run(Callable()); }
  // Destroys the callable, if not done yet, and gives its second block back
  // to `pools`. Shutdown and CancelAll call it for a node they cancelled,
  // which nobody will run, and the runner for one cancelled while it ran,
  // once the run returned; else the last Unref does.
  void DestroyCallback(NodePools* pools) noexcept;

  // Stored by the constructor, not initialized: an id's check may read it
  // at any time (LoadStateAt).
  std::atomic<uint64_t> state;

 private:
  // Where the callable is.
  enum class Storage : uint8_t {
    kRoom,      // in the room; operations by number
    kBlock,     // in a second block (`callables`); operations by number
    kBare,      // stateless, kept nowhere: a bare node; operations by number
    kHeap,      // on the heap after its OutOfLine, with its operations
    kPeriodic,  // the same, with a scheduler
  };
  static constexpr uint32_t kStorageMask = 7;
  static constexpr int kNumberShift = 3;

  // The operations' number and the Storage.
  const uint32_t callable_;

 public:
  // The node lock and the reference count (see the byte map).
  NodeRefsAndLock mu;

  // Made by Every or ScheduleFunc.
  bool periodic() const { return storage() == Storage::kPeriodic; }
  // The periodic timer's scheduler; called only by the worker that ran the
  // callback. Precondition: periodic().
  Scheduler& scheduler();
  // The runs of a periodic timer started so far, the one in progress
  // included; 0 for a one-shot node. Any thread (relaxed: a count, ordered
  // with nothing).
  int64_t runs() const;
  // A periodic timer's run starts. Only the worker that starts it calls this,
  // so runs of one timer never count at once. Precondition: periodic().
  void CountRun();

  // What a kHeap or kPeriodic node keeps on the heap (below).
  struct OutOfLine;

 private:
  // `number`: the operations' (0 for kHeap and kPeriodic); `extra`: the
  // second block (kBlock) or the OutOfLine (kHeap, kPeriodic).
  TimerNode(CallbackRef f, uint32_t number, Storage storage, void* extra,
            int32_t refs, uint32_t id_word);
  ~TimerNode() = default;

  Storage storage() const {
    return static_cast<Storage>(callable_ & kStorageMask);
  }
  bool out_of_line() const { return storage() >= Storage::kHeap; }
  // The kRoom bytes after the node, in its block (not a bare node's).
  unsigned char* room() const {
    return reinterpret_cast<unsigned char*>(const_cast<TimerNode*>(this)) +
           sizeof(TimerNode);
  }
  void* Extra() const {
    void* extra;
    std::memcpy(&extra, room(), sizeof(extra));
    return extra;
  }
  OutOfLine& out_of_line_state() const {
    return *static_cast<OutOfLine*>(Extra());
  }
  const CallbackOps* Ops() const;
  void* Callable();
  // Destroys the callable and gives its second block back to `pools`:
  // DestroyCallback's part after the mark, and the last Unref's (which
  // needs no mark: nobody else holds the node).
  void DestroyCallable(NodePools* pools) noexcept;
  // The last reference's work: destroys the callable (if still there) and
  // the node, and gives their memory back to `pools`.
  void Destroy(NodePools* pools);
  // Destroy's part after the callable: the node, its out-of-line state.
  void DestroyNode(NodePools* pools);
};

// The blocks of NodePools: a node with its room, and a bare node.
inline constexpr size_t kNodeBlock = sizeof(TimerNode) + TimerNode::kRoom;
inline constexpr size_t kBareBlock = sizeof(TimerNode);

// What a node keeps on the heap when its callable is not in the pool's
// blocks: a periodic timer's scheduler and run count (periodic timers are
// few), the operations of a callable without a number, and, right after,
// the callable.
struct TimerNode::OutOfLine {
  static constexpr size_t kCallableOffset = 32;

  OutOfLine(std::unique_ptr<Scheduler> scheduler, const CallbackOps* ops)
      : scheduler(std::move(scheduler)), ops(ops) {}
  void* callable() { return reinterpret_cast<char*>(this) + kCallableOffset; }

  const std::unique_ptr<Scheduler> scheduler;  // null for kHeap
  std::atomic<int64_t> runs{0};  // written by the worker that runs it
  const CallbackOps* const ops;
};
static_assert(sizeof(TimerNode::OutOfLine) <=
                  TimerNode::OutOfLine::kCallableOffset,
              "the callable follows the state");

inline const CallbackOps* TimerNode::Ops() const {
  if (out_of_line()) return out_of_line_state().ops;
  return CallbackOpsOf(callable_ >> kNumberShift);
}

inline void* TimerNode::Callable() {
  switch (storage()) {
    case Storage::kRoom:
      return room();
    case Storage::kBlock:
      return Extra();
    case Storage::kBare:
      return stateless_callable;
    case Storage::kHeap:
    case Storage::kPeriodic:
      return out_of_line_state().callable();
  }
  return room();
}

inline Scheduler& TimerNode::scheduler() {
  return *out_of_line_state().scheduler;
}

inline int64_t TimerNode::runs() const {
  if (!periodic()) return 0;
  return out_of_line_state().runs.load(std::memory_order_relaxed);
}

inline void TimerNode::CountRun() {
  std::atomic<int64_t>& runs = out_of_line_state().runs;
  runs.store(runs.load(std::memory_order_relaxed) + 1,
             std::memory_order_relaxed);
}

static_assert(kNodeBlock >= kWheelBlockCallable,
              "a callable the call site keeps inline fits a block");
static_assert(sizeof(TimerNode) % alignof(void*) == 0,
              "the room, after the node, is aligned for a pointer");

#ifdef NDEBUG
static_assert(sizeof(TimerNode) == 32 && kNodeBlock == 48 &&
                  sizeof(NodeRefsAndLock) == 4,
              "the node, as drawn above");
#endif

// One due arm of a timer, on its way to a worker: the node, the generation it
// was dispatched with (a task of an older arm does nothing) and that arm's
// deadline, for the lateness statistics.
struct DueTimer {
  TimerNode* node;
  uint64_t generation;
  int64_t deadline_ns;
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_HANDLES_TIMER_STATE_H_
