// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "handoff/inbox.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "handoff/asymmetric_fence.h"

namespace timingwheel::internal {
namespace {

// Four lanes per hardware thread: callers may outnumber the cores, and the
// process's other threads (another wheel's callers, a worker re-arming) hold
// numbers too; lanes only pick a NodeHome (inbox.h).
constexpr int kLanesPerHardwareThread = 4;
constexpr int kMinLanes = 4;

// Bit i set: a live thread holds number i (Inbox::ClaimThreadNumber). The
// shared ring's bit is set for good: nobody claims it.
std::atomic<uint64_t> held_numbers{uint64_t{1} << Inbox::kSharedRing};

// Gives the thread's number back when it exits. The thread may push after
// that (in other thread_local destructors that stop timers, say): it then
// pushes to the shared ring, so that the next holder of the number is its
// ring's only producer.
struct NumberRelease {
  int number = -1;
  ~NumberRelease();
};

// A power of two, so that a thread's lane is its number's low bits.
int LaneCount() {
  const int wanted = kLanesPerHardwareThread *
                     static_cast<int>(std::thread::hardware_concurrency());
  int lanes = kMinLanes;
  while (lanes < wanted && lanes < Inbox::kRings) lanes *= 2;
  return lanes;
}

RingChunk::Slot& SlotAt(RingChunk* chunk, uint64_t index) {
  return chunk->items[index - chunk->first];
}

}  // namespace

// The shared ring's pushers take its producer lock; a ring's own thread
// needs none. A conditional lock, which the analysis cannot follow: the
// ring's producer fields are documented, not annotated.
class Inbox::ProducerLock {
 public:
  ProducerLock(Ring& ring, int number) ABSL_NO_THREAD_SAFETY_ANALYSIS
      : mu_(number == kSharedRing ? &ring.producer_mu : nullptr) {
    if (mu_ != nullptr) mu_->Lock();
  }
  ~ProducerLock() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    if (mu_ != nullptr) mu_->Unlock();
  }
  ProducerLock(const ProducerLock&) = delete;
  ProducerLock& operator=(const ProducerLock&) = delete;

 private:
  SpinLock* const mu_;
};

NumberRelease::~NumberRelease() {
  Inbox::LeaveNumber();
  // Release: the ring's producer fields go to the next holder (acquire).
  held_numbers.fetch_and(~(uint64_t{1} << number), std::memory_order_release);
}

void Inbox::LeaveNumber() { tls_thread_number = kSharedRing; }

int Inbox::ClaimThreadNumber() {
  uint64_t held = held_numbers.load(std::memory_order_relaxed);
  for (;;) {
    if (held == ~uint64_t{0}) return kSharedRing;  // more live threads
    const int number = __builtin_ctzll(~held);
    if (held_numbers.compare_exchange_weak(held, held | uint64_t{1} << number,
                                           std::memory_order_acquire,
                                           std::memory_order_relaxed)) {
      thread_local NumberRelease release;
      release.number = number;
      return number;
    }
  }
}

Inbox::Taken::~Taken() { FreeChain(head_); }

void Inbox::Taken::Append(const Submission& s, SubmissionChunk** spare) {
  SubmissionChunk* tail = tail_;
  if (tail == nullptr || tail->count == SubmissionChunk::kCapacity) {
    SubmissionChunk* chunk = *spare;
    if (chunk != nullptr) {
      *spare = chunk->next;
      chunk->next = nullptr;
      chunk->count = 0;
    } else {
      chunk = new SubmissionChunk;
    }
    if (tail == nullptr) {
      head_ = chunk;
    } else {
      tail->next = chunk;
    }
    tail_ = tail = chunk;
  }
  tail->items[tail->count++] = s;
  ++size_;
}

void Inbox::Taken::Splice(Taken* other) {
  if (other->head_ == nullptr) return;
  if (tail_ == nullptr) {
    head_ = other->head_;
  } else {
    tail_->next = other->head_;
  }
  tail_ = other->tail_;
  size_ += other->size_;
  other->head_ = other->tail_ = nullptr;
  other->size_ = 0;
}

Inbox::Inbox(int64_t tick_ns, bool real_time)
    : lane_mask_(LaneCount() - 1),
      tick_ns_(tick_ns),
      horizon_ticks_(std::max<int64_t>(1, kHorizonNs / tick_ns)),
      real_time_(real_time),
      asymmetric_(AsymmetricFence::Available()) {}

Inbox::~Inbox() {
  for (std::atomic<Ring*>& slot : rings_) {
    Ring* ring = slot.load(std::memory_order_acquire);
    if (ring == nullptr) continue;
    FreeRingChain(ring->head);
    delete ring->spare.load(std::memory_order_acquire);
    delete ring;
  }
  FreeChain(spare_);
}

void Inbox::FreeChain(SubmissionChunk* head) {
  while (head != nullptr) delete std::exchange(head, head->next);
}

void Inbox::FreeRingChain(RingChunk* head) {
  while (head != nullptr) {
    delete std::exchange(head, head->next.load(std::memory_order_relaxed));
  }
}

Inbox::Ring& Inbox::RingOf(int number) {
  Ring* ring = rings_[number].load(std::memory_order_acquire);
  if (ring != nullptr) return *ring;
  auto fresh = std::make_unique<Ring>();
  fresh->tail = fresh->head = new RingChunk;
  // A compare-and-swap: the shared ring's pushers may race to make it.
  if (!rings_[number].compare_exchange_strong(ring, fresh.get(),
                                              std::memory_order_acq_rel)) {
    delete fresh->head;
    return *ring;
  }
  created_.fetch_or(uint64_t{1} << number, std::memory_order_release);
  return *fresh.release();
}

void Inbox::Publish(Ring& ring, TimerNode* node, uint64_t gen,
                    Submission::Kind kind, bool urgent, int64_t call_ns) {
  const uint64_t index = ring.pushed;
  RingChunk* tail = ring.tail;
  if (index - tail->first == RingChunk::kCapacity) {
    RingChunk* chunk = ring.spare.exchange(nullptr, std::memory_order_acquire);
    if (chunk == nullptr) chunk = new RingChunk;
    chunk->next.store(nullptr, std::memory_order_relaxed);
    chunk->first = index;
    // Published with the slot, by the store below.
    tail->next.store(chunk, std::memory_order_relaxed);
    ring.tail = tail = chunk;
  }
  RingChunk::Slot& slot = SlotAt(tail, index);
  slot.node = node;
  slot.gen = gen;
  slot.kind = kind;
  slot.call_ns = call_ns;
  ring.pushed = index + 1;
  ring.pushes.store(ring.pushes.load(std::memory_order_relaxed) + 1,
                    std::memory_order_relaxed);
  // The count, with the owner's mark cleared (inbox.h).
  const uint64_t word = (index + 1) << 1;
  if (urgent || !asymmetric_) {
    // The store-then-load pair with the owner's Idle, or every pair when
    // fences are not asymmetric (inbox.h).
    ring.published.store(word, std::memory_order_seq_cst);
  } else {
    ring.published.store(word, std::memory_order_release);
    AsymmetricFence::Light();
  }
}

bool Inbox::TryRewind(Ring& ring) {
  // Fails if the owner marked the count since the push. The rewound count
  // is marked: the slot below it may have been marked before that push
  // (which cleared the mark), so it is never rewound, until the next push
  // makes its own slot the only one that may be.
  const uint64_t index = ring.pushed - 1;
  uint64_t expected = (index + 1) << 1;
  if (!ring.published.compare_exchange_strong(expected, index << 1 | 1,
                                              std::memory_order_acq_rel)) {
    return false;
  }
  ring.pushed = index;
  return true;
}

uint64_t Inbox::MarkPublished(Ring& ring, uint64_t taken) {
  uint64_t word = ring.published.load(std::memory_order_seq_cst);
  // Nothing to take; or marked already, and not pushed to since.
  if (word >> 1 == taken || (word & 1) != 0) return word >> 1;
  return ring.published.fetch_or(1, std::memory_order_seq_cst) >> 1;
}

bool Inbox::Push(TimerNode* node, uint64_t gen, Submission::Kind kind,
                 int64_t call_ns, int64_t tick) {
  if (closed_.load(std::memory_order_relaxed)) return false;
  const int number = ThreadNumber();
  Ring& ring = RingOf(number);
  const bool urgent = Urgent(tick, call_ns);
  bool wake;
  {
    ProducerLock lock(ring, number);
    Publish(ring, node, gen, kind, urgent, call_ns);
    // After the slot is in (inbox.h).
    if (closed_.load(std::memory_order_seq_cst)) {
      return !TryRewind(ring);
    }
    wake = tick < wake_tick_.load(std::memory_order_seq_cst) ||
           ring.pushed - ring.taken_mirror.load(std::memory_order_relaxed) ==
               kWakeAt;
  }
  if (wake) Wake();
  return true;
}

Inbox::Unstamped Inbox::PushUnstamped(TimerNode* node, uint64_t gen,
                                      absl::FunctionRef<int64_t()> clock) {
  if (closed_.load(std::memory_order_relaxed)) return Unstamped::kClosed;
  const int number = ThreadNumber();
  Ring& ring = RingOf(number);
  bool wake;
  {
    ProducerLock lock(ring, number);
    const int64_t call_ns =
        ++ring.samples % kSampleEvery == 0 ? clock() : Submission::kNoCallTime;
    Publish(ring, node, gen, Submission::Kind::kArmUnstamped,
            /*urgent=*/false, call_ns);
    // After the slot is in (inbox.h): if the inbox closed or the owner no
    // longer polls, the slot comes back, unless the owner took it first.
    if (closed_.load(std::memory_order_seq_cst)) {
      return TryRewind(ring) ? Unstamped::kClosed : Unstamped::kPushed;
    }
    if (wake_tick_.load(std::memory_order_seq_cst) != kPolling) {
      return TryRewind(ring) ? Unstamped::kStampFirst : Unstamped::kPushed;
    }
    wake = ring.pushed - ring.taken_mirror.load(std::memory_order_relaxed) ==
           kWakeAt;
  }
  if (wake) Wake();
  return Unstamped::kPushed;
}

bool Inbox::Retract(const TimerNode* node, uint64_t gen) {
  const int number = ThreadNumber();
  Ring* ring = rings_[number].load(std::memory_order_acquire);
  if (ring == nullptr) return false;
  ProducerLock lock(*ring, number);
  // The latest slot is in the tail chunk, unless a rewind emptied it: then
  // the slot below is marked (TryRewind), and the chunk before may be gone.
  if (ring->pushed == ring->tail->first) return false;
  const RingChunk::Slot& slot = SlotAt(ring->tail, ring->pushed - 1);
  if (slot.node != node || slot.gen != gen ||
      slot.kind == Submission::Kind::kUnlink) {
    return false;
  }
  return TryRewind(*ring);
}

size_t Inbox::TakeRing(Ring& ring, Taken* out) {
  const uint64_t pushes = ring.pushes.load(std::memory_order_relaxed);
  const size_t pushed = pushes - std::exchange(ring.pushes_seen, pushes);
  uint64_t index = ring.taken;
  const uint64_t published = MarkPublished(ring, index);
  if (published == index) return pushed;
  RingChunk* head = ring.head;
  for (; index < published; ++index) {
    if (index - head->first == RingChunk::kCapacity) {
      RingChunk* passed = head;
      head = head->next.load(std::memory_order_relaxed);
      // The producer never looks back before its tail, which is past
      // `passed` now. Release: the reads of its slots come before the
      // producer writes them again.
      delete ring.spare.exchange(passed, std::memory_order_acq_rel);
    }
    // Below the marked count: written once and for all (see the top).
    const RingChunk::Slot& slot = SlotAt(head, index);
    out->Append({slot.node, slot.gen, slot.kind, slot.call_ns}, &spare_);
  }
  ring.head = head;
  ring.taken = index;
  ring.taken_mirror.store(index, std::memory_order_relaxed);
  return pushed;
}

size_t Inbox::Take(Taken* out, bool polling) {
  wake_tick_.store(polling ? kPolling : kAwake, std::memory_order_relaxed);
  if (polling) polled_since_fence_ = true;
  size_t pushes = std::exchange(held_pushes_, 0);
  out->Splice(&held_);
  ForEachRing(std::memory_order_acquire,
              [&](Ring& ring) { pushes += TakeRing(ring, out); });
  return pushes;
}

void Inbox::StopPolling(absl::FunctionRef<int64_t()> now,
                        absl::FunctionRef<void(TimerNode*, int64_t)> stamp) {
  if (!polled_since_fence_) return;
  // The store-then-load pair with PushUnstamped (inbox.h).
  wake_tick_.store(kAwake, std::memory_order_seq_cst);
  polled_since_fence_ = false;
  AsymmetricFence::Heavy();
  Taken taken;
  ForEachRing(std::memory_order_seq_cst,
              [&](Ring& ring) { held_pushes_ += TakeRing(ring, &taken); });
  // Read after the take: after every push it holds.
  int64_t now_ns = Submission::kNoCallTime;
  for (SubmissionChunk* c = taken.head_; c != nullptr; c = c->next) {
    for (size_t i = 0; i < c->count; ++i) {
      Submission& s = c->items[i];
      if (s.kind != Submission::Kind::kArmUnstamped) continue;
      if (now_ns == Submission::kNoCallTime) now_ns = now();
      stamp(s.node, now_ns);
      s.kind = Submission::Kind::kArm;
    }
  }
  held_.Splice(&taken);
}

void Inbox::Recycle(Taken* taken) {
  SubmissionChunk* chunk = std::exchange(taken->head_, nullptr);
  taken->tail_ = nullptr;
  taken->size_ = 0;
  while (chunk != nullptr && spare_count_ < kSpareChunks) {
    SubmissionChunk* next = chunk->next;
    chunk->next = spare_;
    spare_ = chunk;
    ++spare_count_;
    chunk = next;
  }
  FreeChain(chunk);
}

bool Inbox::NeedsRound(Ring& ring, bool polling) {
  const uint64_t published = MarkPublished(ring, ring.taken);
  if (published - ring.taken >= kWakeAt) return true;
  if (polling) return false;
  RingChunk* chunk = ring.head;
  for (uint64_t index = ring.taken; index < published; ++index) {
    if (index - chunk->first == RingChunk::kCapacity) {
      chunk = chunk->next.load(std::memory_order_relaxed);
    }
    if (SlotAt(chunk, index).kind != Submission::Kind::kUnlink) return true;
  }
  return false;
}

bool Inbox::Idle(int64_t wake_tick, int64_t now_tick) {
  const bool polling = wake_tick == kPolling;
  // The store-then-load pair with the pushes (inbox.h).
  wake_tick_.store(wake_tick, std::memory_order_seq_cst);
  if (polling) {
    polled_since_fence_ = true;
  } else if (polled_since_fence_ || wake_tick == kNever ||
             wake_tick - now_tick > horizon_ticks_) {
    // A push published with a plain store may need this sleep to end
    // sooner: make it visible to the look below.
    polled_since_fence_ = false;
    AsymmetricFence::Heavy();
  }
  // Held submissions (StopPolling's) are work too.
  bool work = !held_.empty();
  ForEachRing(std::memory_order_seq_cst, [&](Ring& ring) {
    if (!work) work = NeedsRound(ring, polling);
  });
  if (work) wake_tick_.store(kAwake, std::memory_order_relaxed);
  return !work;
}

void Inbox::Sleep() {
  MutexLock lock(&sleep_mu_);
  while (!woken_ && !sleep_closed_) sleep_cv_.Wait(&sleep_mu_);
  woken_ = false;
  wake_tick_.store(kAwake, std::memory_order_relaxed);
}

void Inbox::SleepFor(absl::Duration timeout) {
  MutexLock lock(&sleep_mu_);
  if (!woken_ && !sleep_closed_) sleep_cv_.WaitFor(&sleep_mu_, timeout);
  woken_ = false;
}

void Inbox::Wake() {
  MutexLock lock(&sleep_mu_);
  woken_ = true;
  sleep_cv_.NotifyOne();
}

void Inbox::Close(std::vector<Submission>* out) {
  // The store-then-load pair with the pushes (inbox.h).
  closed_.store(true, std::memory_order_seq_cst);
  {
    MutexLock lock(&sleep_mu_);
    sleep_closed_ = true;
    sleep_cv_.NotifyAll();
  }
  AsymmetricFence::Heavy();
  Taken taken;
  taken.Splice(&held_);
  held_pushes_ = 0;
  ForEachRing(std::memory_order_seq_cst,
              [&](Ring& ring) { TakeRing(ring, &taken); });
  taken.ForEachChunk([out](const Submission* items, size_t n) {
    out->insert(out->end(), items, items + n);
  });
}

}  // namespace timingwheel::internal
