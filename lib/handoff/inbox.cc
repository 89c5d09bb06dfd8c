// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "handoff/inbox.h"

#include <algorithm>
#include <limits>
#include <thread>
#include <utility>

namespace timingwheel::internal {
namespace {

// Four lanes per hardware thread: callers may outnumber the cores (four
// threads on two cores shared two lanes and ran at half the rate of two
// threads), and the process's other threads (another wheel's callers, a
// worker re-arming) hold numbers too. An idle lane costs the owner nothing
// (it looks at the active ones) and an instance about 250 bytes (the lane
// and its NodeHome: BM_Instances grew by 1.5 KB from 2 lanes to 8).
constexpr int kLanesPerHardwareThread = 4;
constexpr int kMinLanes = 4;

// How far back Retract looks: a Stop soon after its AfterFunc finds it among
// the last few pushes of its thread.
constexpr size_t kRetractScan = 4;

// Bit i set: a live thread holds number i (Inbox::ClaimThreadNumber).
std::atomic<uint64_t> held_numbers{0};

// Gives the thread's number back when it exits. The thread keeps using it
// (in other thread_local destructors that stop timers, say): a thread that
// claims it meanwhile shares the lane, which the lane's lock makes safe.
struct NumberRelease {
  int number = -1;
  ~NumberRelease() {
    held_numbers.fetch_and(~(uint64_t{1} << number), std::memory_order_relaxed);
  }
};

// A power of two, so that a thread's lane is its number's low bits (a
// division would cost every call a few nanoseconds).
int LaneCount() {
  const int wanted = kLanesPerHardwareThread *
                     static_cast<int>(std::thread::hardware_concurrency());
  int lanes = kMinLanes;
  while (lanes < wanted && lanes < Inbox::kMaxLanes) lanes *= 2;
  return lanes;
}

}  // namespace

Inbox::Taken::~Taken() { FreeChain(head_); }

void Inbox::Taken::Append(SubmissionChunk* head, SubmissionChunk* tail,
                          size_t count) {
  if (tail_ == nullptr) {
    head_ = head;
  } else {
    tail_->next = head;
  }
  tail_ = tail;
  size_ += count;
}

Inbox::Inbox()
    : lane_mask_(LaneCount() - 1),
      lanes_(std::make_unique<Lane[]>(static_cast<size_t>(lanes()))) {}

Inbox::~Inbox() {
  for (int i = 0; i < lanes(); ++i) {
    Lane& lane = LaneAt(i);
    SpinLockHolder lock(&lane.mu);
    FreeChain(lane.head);
  }
  FreeChain(spare_);
}

void Inbox::FreeChain(SubmissionChunk* head) {
  while (head != nullptr) delete std::exchange(head, head->next);
}

int Inbox::ClaimThreadNumber() {
  static_assert(kMaxLanes <= 64, "a bit of held_numbers per number");
  uint64_t held = held_numbers.load(std::memory_order_relaxed);
  for (;;) {
    if (held == ~uint64_t{0}) {
      // More live threads than numbers: they share lanes anyway.
      static std::atomic<int> next{0};
      return kMaxLanes + (next.fetch_add(1, std::memory_order_relaxed) &
                          (std::numeric_limits<int>::max() / 2));
    }
    const int number = __builtin_ctzll(~held);
    // Relaxed: the number only picks a lane, whose lock orders the rest.
    if (held_numbers.compare_exchange_weak(held, held | uint64_t{1} << number,
                                           std::memory_order_relaxed)) {
      thread_local NumberRelease release;
      release.number = number;
      return number;
    }
  }
}

void Inbox::Append(Lane& lane, int index, TimerNode* node, uint64_t gen,
                   Submission::Kind kind, int64_t call_ns) {
  SubmissionChunk* tail = lane.tail;
  if (tail == nullptr || tail->count == SubmissionChunk::kCapacity) {
    // A page's malloc under the lock, once per kCapacity pushes beyond
    // the chunk the owner left (Take).
    SubmissionChunk* chunk = new SubmissionChunk;
    if (tail == nullptr) {
      lane.head = chunk;
    } else {
      tail->next = chunk;
    }
    lane.before_tail = tail;
    lane.tail = tail = chunk;
  }
  Submission& slot = tail->items[tail->count++];
  slot.node = node;
  slot.gen = gen;
  slot.kind = kind;
  slot.call_ns = call_ns;
  ++lane.count;
  if (lane.pushes++ == 0) {
    // seq_cst: the store-then-load pair with the owner's Idle and
    // StopPolling (inbox.h).
    active_.fetch_or(uint64_t{1} << index, std::memory_order_seq_cst);
  }
}

bool Inbox::Push(TimerNode* node, uint64_t gen, Submission::Kind kind,
                 int64_t call_ns, int64_t tick) {
  const int index = LaneOfThisThread();
  Lane& lane = LaneAt(index);
  bool wake;
  {
    SpinLockHolder lock(&lane.mu);
    if (lane.closed) return false;
    Append(lane, index, node, gen, kind, call_ns);
    lane.earliest = std::min(lane.earliest, tick);
    wake = tick < wake_tick_.load(std::memory_order_seq_cst) ||
           lane.count == kWakeAt;
  }
  if (wake) Wake();
  return true;
}

Inbox::Unstamped Inbox::PushUnstamped(TimerNode* node, uint64_t gen,
                                      absl::FunctionRef<int64_t()> clock) {
  const int index = LaneOfThisThread();
  Lane& lane = LaneAt(index);
  bool wake;
  {
    SpinLockHolder lock(&lane.mu);
    if (lane.closed) return Unstamped::kClosed;
    const int64_t call_ns =
        ++lane.samples % kSampleEvery == 0 ? clock() : Submission::kNoCallTime;
    Append(lane, index, node, gen, Submission::Kind::kArmUnstamped, call_ns);
    // After the submission is in and the lane's bit set (inbox.h).
    if (wake_tick_.load(std::memory_order_seq_cst) != kPolling) {
      // The owner stopped polling: take it back (nobody saw it, the lock is
      // held); the caller stamps it and pushes it again.
      --lane.tail->count;
      --lane.count;
      return Unstamped::kStampFirst;
    }
    ++lane.unstamped;
    wake = lane.count == kWakeAt;
  }
  if (wake) Wake();
  return Unstamped::kPushed;
}

bool Inbox::Retract(const TimerNode* node, uint64_t gen) {
  Lane& lane = LaneAt(LaneOfThisThread());
  SpinLockHolder lock(&lane.mu);
  // The latest kRetractScan submissions: the tail chunk's last, then, if it
  // holds fewer, the last of the chunk before it.
  size_t scan = kRetractScan;
  for (SubmissionChunk* chunk : {lane.tail, lane.before_tail}) {
    if (chunk == nullptr || scan == 0) break;
    Submission* items = chunk->items;
    const size_t count = chunk->count;
    const size_t here = std::min(count, scan);
    for (size_t i = count; i > count - here; --i) {
      const Submission& s = items[i - 1];
      if (s.node == node && s.gen == gen && s.arm()) {
        if (s.kind == Submission::Kind::kArmUnstamped) --lane.unstamped;
        std::copy(items + i, items + count, items + i - 1);
        --chunk->count;
        --lane.count;
        // An emptied lane asks for nothing; one that still holds some may
        // ask too early (its earliest is not recomputed), which costs the
        // owner one round at most: Take resets it.
        if (lane.count == 0) lane.earliest = kNever;
        return true;
      }
    }
    scan -= here;
  }
  return false;
}

size_t Inbox::Take(Taken* out, bool polling) {
  wake_tick_.store(polling ? kPolling : kAwake, std::memory_order_relaxed);
  // Cleared before the lanes are looked at: a push after a lane's look sets
  // its bit again. Acquire is not needed: each lane's lock orders its data.
  uint64_t active = active_.exchange(0, std::memory_order_relaxed);
  size_t pushes = 0;
  for (; active != 0; active &= active - 1) {
    Lane& lane = LaneAt(__builtin_ctzll(active));
    SpinLockHolder lock(&lane.mu);
    pushes += lane.pushes;
    lane.pushes = 0;
    lane.unstamped = 0;
    // Reset for an empty lane too: a Retract may have emptied it, and a
    // stale tick would keep Idle false, the owner going round without
    // sleeping.
    lane.earliest = kNever;
    if (lane.count == 0) continue;
    out->Append(lane.head, lane.tail, lane.count);
    lane.count = 0;
    lane.before_tail = nullptr;
    // A spare chunk for the lane's next pushes, so that a lane at a steady
    // rate does not go to malloc.
    SubmissionChunk* chunk = spare_;
    if (chunk != nullptr) {
      spare_ = chunk->next;
      --spare_count_;
      chunk->next = nullptr;
      chunk->count = 0;
    }
    lane.head = lane.tail = chunk;
  }
  return pushes;
}

void Inbox::StopPolling(absl::FunctionRef<int64_t()> now,
                        absl::FunctionRef<void(TimerNode*, int64_t)> stamp) {
  if (wake_tick_.load(std::memory_order_relaxed) != kPolling) return;
  // seq_cst: the store-then-load pair with PushUnstamped (inbox.h).
  wake_tick_.store(kAwake, std::memory_order_seq_cst);
  for (uint64_t active = active_.load(std::memory_order_seq_cst); active != 0;
       active &= active - 1) {
    Lane& lane = LaneAt(__builtin_ctzll(active));
    SpinLockHolder lock(&lane.mu);
    if (lane.unstamped == 0) continue;
    // Read under the lock: after every push it holds.
    const int64_t now_ns = now();
    for (SubmissionChunk* c = lane.head; c != nullptr; c = c->next) {
      for (size_t i = 0; i < c->count; ++i) {
        Submission& s = c->items[i];
        if (s.kind != Submission::Kind::kArmUnstamped) continue;
        stamp(s.node, now_ns);
        s.kind = Submission::Kind::kArm;
      }
    }
    lane.unstamped = 0;
  }
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

bool Inbox::Idle(int64_t wake_tick) {
  // seq_cst: the store-then-load pair with Push (inbox.h). A lane whose bit
  // is clear holds nothing (it was taken, and not pushed to since).
  wake_tick_.store(wake_tick, std::memory_order_seq_cst);
  for (uint64_t active = active_.load(std::memory_order_seq_cst); active != 0;
       active &= active - 1) {
    Lane& lane = LaneAt(__builtin_ctzll(active));
    SpinLockHolder lock(&lane.mu);
    if (lane.earliest < wake_tick || lane.count >= kWakeAt ||
        (lane.unstamped > 0 && wake_tick != kPolling)) {
      wake_tick_.store(kAwake, std::memory_order_relaxed);
      return false;
    }
  }
  return true;
}

void Inbox::Sleep() {
  MutexLock lock(&sleep_mu_);
  while (!woken_ && !closed_) sleep_cv_.Wait(&sleep_mu_);
  woken_ = false;
  wake_tick_.store(kAwake, std::memory_order_relaxed);
}

void Inbox::SleepFor(absl::Duration timeout) {
  MutexLock lock(&sleep_mu_);
  if (!woken_ && !closed_) sleep_cv_.WaitFor(&sleep_mu_, timeout);
  woken_ = false;
}

void Inbox::Wake() {
  MutexLock lock(&sleep_mu_);
  woken_ = true;
  sleep_cv_.NotifyOne();
}

void Inbox::Close(std::vector<Submission>* out) {
  {
    MutexLock lock(&sleep_mu_);
    closed_ = true;
    sleep_cv_.NotifyAll();
  }
  for (int i = 0; i < lanes(); ++i) {
    Lane& lane = LaneAt(i);
    SpinLockHolder lock(&lane.mu);
    lane.closed = true;
    for (const SubmissionChunk* c = lane.head; c != nullptr; c = c->next) {
      out->insert(out->end(), c->items, c->items + c->count);
    }
    FreeChain(lane.head);
    lane.head = lane.tail = lane.before_tail = nullptr;
    lane.count = 0;
    lane.unstamped = 0;
    lane.earliest = kNever;
  }
}

}  // namespace timingwheel::internal
