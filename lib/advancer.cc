// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "advancer.h"

#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <algorithm>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "thread_starter.h"

namespace timingwheel::internal {
namespace {

// How far ahead the advancer prefetches the nodes of a flushed bucket.
constexpr size_t kPrefetch = 8;
// Nodes of a flushed bucket in one chunk: between two readings of the clock,
// two hand-offs of its due timers to the runner, two pauses, and two looks at
// the inbox (a multiple of it).
constexpr size_t kClockEvery = 1024;
constexpr size_t kFlushSlice = 4 * kClockEvery;
// A big bucket is mostly cache misses: fetch the node kPrefetch ahead.
void PrefetchAhead(const NodeArray& nodes, size_t i) {
  if (i + kPrefetch >= nodes.size()) return;
  const char* ahead = reinterpret_cast<const char*>(nodes[i + kPrefetch]);
  __builtin_prefetch(ahead, 1);
  __builtin_prefetch(ahead + 64, 1);
  __builtin_prefetch(ahead + sizeof(TimerNode) - 1, 1);
}

}  // namespace

Advancer::Advancer(Wheel* wheel, Runner* runner, const TimeBase* time,
                   TimerCounts* counts)
    : wheel_(wheel), runner_(runner), time_(time), counts_(counts) {}

absl::Status Advancer::Start(
    RefCounted* owner, const std::function<void(ThreadRole)>& on_thread_start) {
  // Each thread's reference is released as it exits, or here if it could
  // not start.
  owner->Ref();
  absl::StatusOr<std::thread> poller =
      ThreadStarter::Start([this, owner, on_thread_start] {
        on_thread_start(ThreadRole::kPoller);
        PollerLoop();
        owner->Unref();
      });
  if (!poller.ok()) {
    owner->Unref();
    return absl::ResourceExhaustedError(
        absl::StrCat("the poller: ", poller.status().message()));
  }
  poller_ = *std::move(poller);
  owner->Ref();
  absl::StatusOr<std::thread> advancer =
      ThreadStarter::Start([this, owner, on_thread_start] {
        on_thread_start(ThreadRole::kAdvancer);
        AdvancerLoop();
        owner->Unref();
      });
  if (!advancer.ok()) {
    owner->Unref();
    Stop();  // joins the poller
    return absl::ResourceExhaustedError(
        absl::StrCat("the advancer: ", advancer.status().message()));
  }
  advancer_ = *std::move(advancer);
  return absl::OkStatus();
}

void Advancer::Stop() {
  stopping_.store(true, std::memory_order_release);
  wheel_->queue().Close();
  {
    MutexLock lock(&inbox_mu_);
    inbox_closed_ = true;
    inbox_cv_.NotifyAll();
  }
  // A callback run inline on the advancer (the user's executor) may be the
  // caller: that thread cannot join itself. It is detached; it finds the
  // wheel closed when the callback returns, cancels what it still holds
  // (counted in Stats::cancelled) and exits.
  for (std::thread* thread : {&poller_, &advancer_}) {
    if (!thread->joinable()) continue;
    if (thread->get_id() == std::this_thread::get_id()) {
      thread->detach();
    } else {
      thread->join();
    }
  }
}

void Advancer::PollerLoop() {
#ifdef __linux__
  // Linux lets a timed sleep overrun by the thread's timer slack, 50 us by
  // default, to batch wake-ups; every timer would be that much later. The
  // poller wakes once per due bucket, not per tick, so it asks for 1 us.
  prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
#endif
  std::vector<DelayQueue::Entry> due;
  while (wheel_->queue().Poll(&due)) {
    MutexLock lock(&inbox_mu_);
    if (inbox_closed_) break;
    inbox_.insert(inbox_.end(), due.begin(), due.end());
    inbox_cv_.NotifyOne();
    due.clear();
  }
}

void Advancer::AdvancerLoop() {
  ReadyBuckets ready;  // released, not yet flushed
  // Stopped, the advancer stops even with buckets left: Shutdown cancels
  // their timers.
  while (!stopping_.load(std::memory_order_acquire)) {
    if (ready.empty() && !WaitInbox(&ready)) break;
    const DelayQueue::Entry entry = ready.top();
    ready.pop();
    Flush(entry, /*depth=*/0, &ready);
  }
}

bool Advancer::WaitInbox(ReadyBuckets* ready) {
  MutexLock lock(&inbox_mu_);
  while (inbox_.empty() && !inbox_closed_) inbox_cv_.Wait(&inbox_mu_);
  MoveInbox(ready);
  return !inbox_closed_;
}

void Advancer::TakeInbox(ReadyBuckets* ready) {
  MutexLock lock(&inbox_mu_);
  MoveInbox(ready);
}

void Advancer::MoveInbox(ReadyBuckets* ready) {
  if (inbox_closed_) return;
  for (const DelayQueue::Entry& entry : inbox_) ready->push(entry);
  inbox_.clear();
}

void Advancer::Flush(const DelayQueue::Entry& entry, int depth,
                     ReadyBuckets* ready) {
  Scratch& scratch = scratch_[depth];
  {
    MutexLock lock(&transit_mu_);
    wheel_->AdvanceTo(entry.release_tick);
    Wheel::Detach(entry, &detached_[depth]);
    next_[depth] = 0;
  }
  for (;;) {
    // The timers that came due while the bucket was moved run now instead
    // of waiting in a level-0 bucket for the end of this flush: a burst's
    // first callback does not wait for its whole cascade.
    const int64_t now_ns = time_->NowNs();
    bool done;
    size_t handled;
    {
      MutexLock lock(&transit_mu_);
      done = FlushChunk(depth, now_ns);
      handled = next_[depth];
    }
    runner_->HandOff(&scratch.hand_offs);
    if (done) break;
    if (ready != nullptr && handled % kFlushSlice == 0) {
      FlushEarlier(Wheel::ExpirationOf(entry), ready);
    }
  }
  // Released with no lock held: the last reference frees the node.
  for (TimerNode* node : scratch.dropped) node->Unref();
  scratch.dropped.clear();
  wheel_->queue().Done(1);
}

bool Advancer::FlushChunk(int depth, int64_t now_ns) {
  NodeArray& detached = detached_[depth];
  size_t& next = next_[depth];
  Scratch& scratch = scratch_[depth];
  const size_t end = std::min(detached.size(), next + kClockEvery);
  for (; next < end; ++next) {
    PrefetchAhead(detached, next);
    AddOrRun(detached[next], now_ns, &scratch);
  }
  // Let the workers start on a huge bucket before it is all moved. No node
  // lock is held here: a worker may run and free a node of the batch at
  // once.
  runner_->Queue(&scratch.batch, &scratch.hand_offs, &scratch.dropped);
  if (next < detached.size()) return false;
  detached.clear();
  next = 0;
  return true;
}

void Advancer::FlushEarlier(int64_t expiration, ReadyBuckets* ready) {
  TakeInbox(ready);
  while (!ready->empty() && Wheel::ExpirationOf(ready->top()) <= expiration) {
    const DelayQueue::Entry due = ready->top();
    ready->pop();
    Flush(due, /*depth=*/1, nullptr);
  }
}

void Advancer::ForEachInTransit(
    absl::FunctionRef<void(TimerNode*)> visit) const {
  for (int depth = 0; depth < kDepths; ++depth) {
    const NodeArray& detached = detached_[depth];
    for (size_t i = next_[depth]; i < detached.size(); ++i) visit(detached[i]);
  }
}

void Advancer::AddOrRun(TimerNode* node, int64_t now_ns, Scratch* scratch) {
  // The advancer holds the reference it took from the detached bucket. A due
  // arm takes it into the batch; an arm that may link the node into a bucket
  // gets a new one, since the advancer still touches the node after linking
  // it (Wheel::Arm's precondition) and lets go of its own only once it has
  // unlocked the node.
  bool release_own = true;
  {
    SpinLockHolder lock(&node->mu);
    const uint64_t word = node->LoadState();
    if (StateOf(word) != State::kPending) {
      node->bucket.store(nullptr, std::memory_order_release);  // stopped
    } else {
      const uint64_t gen = GenerationOf(word);
      const bool may_link = node->deadline_ns > now_ns;
      if (may_link) node->Ref();  // the new arm's
      const Wheel::ArmResult result =
          wheel_->Arm(node, node->deadline_ns, now_ns, gen, &scratch->batch);
      if (result == Wheel::ArmResult::kClosed && node->Cancel(gen)) {
        counts_->CancelledInTransit();
      }
      if (result != Wheel::ArmResult::kArmed && may_link) {
        node->Unref();  // the unused new one; the advancer's is still held
      }
      release_own = may_link || result != Wheel::ArmResult::kArmed;
    }
  }
  // The last reference is released at the end of the flush, not here: its
  // callback's destructor may call into the wheel.
  if (release_own && !node->UnrefIfNotLast()) {
    scratch->dropped.push_back(node);
  }
}

}  // namespace timingwheel::internal
