// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "handoff/inbox.h"

#include <algorithm>
#include <thread>
#include <utility>

namespace timingwheel::internal {
namespace {

// One lane per hardware thread, so that each thread usually has one of its
// own, at most kMaxLanes (the owner looks at each before it sleeps).
constexpr int kMaxLanes = 16;
int LaneCount() {
  return std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1,
                    kMaxLanes);
}

// How far back Retract looks: a Stop soon after its AfterFunc finds it among
// the last few pushes of its thread.
constexpr size_t kRetractScan = 4;

}  // namespace

Inbox::Inbox() : lanes_(LaneCount()) {
  for (std::unique_ptr<Lane>& lane : lanes_) lane = std::make_unique<Lane>();
}

int Inbox::NextLaneIndex() {
  static std::atomic<int> next{0};
  return next.fetch_add(1, std::memory_order_relaxed) &
         std::numeric_limits<int>::max();
}

bool Inbox::Push(const Submission& s, int64_t tick) {
  Lane& lane = *lanes_[LaneOfThisThread()];
  bool wake;
  {
    SpinLockHolder lock(&lane.mu);
    if (lane.closed) return false;
    lane.submissions.push_back(s);
    lane.pushed = true;
    lane.earliest = std::min(lane.earliest, tick);
    // Relaxed: the lane's lock orders this load with the owner's store and
    // its look at the lane (Idle).
    wake = tick < wake_tick_.load(std::memory_order_relaxed) ||
           lane.submissions.size() == kWakeAt;
  }
  if (wake) Wake();
  return true;
}

bool Inbox::Retract(const TimerNode* node, uint64_t gen) {
  Lane& lane = *lanes_[LaneOfThisThread()];
  SpinLockHolder lock(&lane.mu);
  std::vector<Submission>& pushed = lane.submissions;
  const size_t scan = std::min(pushed.size(), kRetractScan);
  for (size_t i = pushed.size(); i > pushed.size() - scan; --i) {
    const Submission& s = pushed[i - 1];
    if (s.node == node && s.gen == gen && s.kind == Submission::Kind::kArm) {
      pushed.erase(pushed.begin() + static_cast<std::ptrdiff_t>(i - 1));
      // An emptied lane asks for nothing; one that still holds some may ask
      // too early (its earliest is not recomputed), which costs the owner
      // one round at most: Take resets it.
      if (pushed.empty()) lane.earliest = kNever;
      return true;
    }
  }
  return false;
}

bool Inbox::Take(std::vector<Submission>* out) {
  wake_tick_.store(kAwake, std::memory_order_relaxed);
  bool pushed = false;
  for (const std::unique_ptr<Lane>& lane : lanes_) {
    SpinLockHolder lock(&lane->mu);
    pushed = pushed || lane->pushed;
    lane->pushed = false;
    // Reset for an empty lane too: a Retract may have emptied it, and a
    // stale tick would keep Idle false, the owner going round without
    // sleeping.
    lane->earliest = kNever;
    if (lane->submissions.empty()) continue;
    if (out->empty()) {
      out->swap(lane->submissions);  // O(1): most rounds take one lane
    } else {
      out->insert(out->end(), lane->submissions.begin(),
                  lane->submissions.end());
      lane->submissions.clear();
    }
  }
  return pushed;
}

bool Inbox::Idle(int64_t wake_tick) {
  wake_tick_.store(wake_tick, std::memory_order_relaxed);
  for (const std::unique_ptr<Lane>& lane : lanes_) {
    SpinLockHolder lock(&lane->mu);
    if (lane->earliest < wake_tick || lane->submissions.size() >= kWakeAt) {
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
  for (const std::unique_ptr<Lane>& lane : lanes_) {
    SpinLockHolder lock(&lane->mu);
    lane->closed = true;
    out->insert(out->end(), lane->submissions.begin(), lane->submissions.end());
    lane->submissions.clear();
    lane->earliest = kNever;
  }
}

}  // namespace timingwheel::internal
