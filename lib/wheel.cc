// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "wheel.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <thread>

namespace timingwheel::internal {
namespace {

// One lane per hardware thread, so that each thread scheduling timers usually
// has one of its own, at most kMaxLanes (each costs a set of levels and its
// own buckets in the delay queue).
constexpr int kMaxLanes = 16;
int LaneCount() {
  return std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1,
                    kMaxLanes);
}

}  // namespace

Wheel::Wheel(const TimeBase* time, int wheel_size, NodePool* pool,
             RefCounted* owner, Engine* engine)
    : time_(time),
      owner_(owner),
      queue_(time->shared_clock(), time->origin(), time->tick_ns()),
      lanes_(LaneCount()) {
  for (size_t i = 0; i < lanes_.size(); ++i) {
    lanes_[i] =
        std::make_unique<Lane>(pool, owner, engine, static_cast<int>(i));
    lanes_[i]->level0 = std::make_unique<WheelLevel>(1, wheel_size, 0, &queue_,
                                                     /*closed=*/false);
  }
}

int Wheel::NextLaneIndex() {
  static std::atomic<int> next{0};
  return next.fetch_add(1, std::memory_order_relaxed) &
         std::numeric_limits<int>::max();
}

Wheel::ArmResult Wheel::Arm(TimerNode* node, int64_t deadline_ns,
                            int64_t now_ns, uint64_t gen,
                            std::vector<DueTimer>* batch) {
  node->deadline_ns = deadline_ns;
  if (deadline_ns <= now_ns) return Dispatch(node, gen, batch);
  return Place(node, time_->TickOf(deadline_ns), gen, /*recheck=*/true, batch);
}

Wheel::ArmResult Wheel::ArmNew(TimerNode* node, int64_t deadline_ns,
                               int64_t now_ns, std::vector<DueTimer>* batch) {
  node->deadline_ns = deadline_ns;
  if (deadline_ns <= now_ns) return Dispatch(node, 0, batch);
  return Place(node, time_->TickOf(deadline_ns), 0, /*recheck=*/false, batch);
}

Wheel::ArmResult Wheel::Place(TimerNode* node, int64_t expiration_tick,
                              uint64_t gen, bool recheck,
                              std::vector<DueTimer>* batch) {
  WheelLevel* const lowest = lanes_[node->home->lane()]->level0.get();
  WheelLevel* level = lowest;
  for (;;) {
    level = level->Locate(expiration_tick);
    switch (level->Add(node, expiration_tick)) {
      case WheelLevel::AddResult::kAdded:
        return recheck ? ConfirmLinked(node, gen) : ArmResult::kArmed;
      case WheelLevel::AddResult::kDue:
        return Dispatch(node, gen, batch);
      case WheelLevel::AddResult::kClosed:
        return ArmResult::kClosed;
      case WheelLevel::AddResult::kRetry:
        level = lowest;
        break;
      case WheelLevel::AddResult::kTooFar:
        level = level->GetOrCreateOverflow();
        break;
    }
  }
}

Wheel::ArmResult Wheel::ConfirmLinked(TimerNode* node, uint64_t gen) {
  // A Stop changes the state, then reads `bucket`; this linker set `bucket`,
  // then reads the state here. Both are read-modify-writes or follow one on
  // the same atomic (Stop's CAS, this fetch_or), which the state's
  // modification order puts one before the other: if the Stop came first,
  // this sees it; if this came first, the Stop's CAS reads from it
  // (acquire) and so sees `bucket`, set before it (release). Either way one
  // of the two unlinks a stopped node: no stopped callback stays in a bucket
  // until its flush, up to an upper level's tick later.
  const uint64_t word = node->state.fetch_or(0, std::memory_order_acq_rel);
  if (word == MakeStateWord(gen, State::kPending)) return ArmResult::kArmed;
  if (Unlink(node, gen) == UnlinkResult::kUnlinked) {
    return ArmResult::kDropped;  // the caller's reference comes back
  }
  return ArmResult::kArmed;  // the Stop unlinked it, with its reference
}

Wheel::ArmResult Wheel::Dispatch(TimerNode* node, uint64_t gen,
                                 std::vector<DueTimer>* batch) {
  node->bucket.store(nullptr, std::memory_order_release);
  uint64_t expected = MakeStateWord(gen, State::kPending);
  if (!node->CasState(expected, MakeStateWord(gen, State::kDispatched))) {
    return ArmResult::kDropped;  // stopped meanwhile
  }
  batch->push_back({node, gen, node->deadline_ns});
  return ArmResult::kArmed;
}

void Wheel::AdvanceTo(int64_t release_tick) {
  for (const std::unique_ptr<Lane>& lane : lanes_) {
    lane->level0->Advance(release_tick);
  }
}

void Wheel::Detach(const DelayQueue::Entry& entry, NodeArray* out) {
  entry.bucket->level()->Detach(entry.bucket, out);
}

int64_t Wheel::ExpirationOf(const DelayQueue::Entry& entry) {
  return entry.release_tick + entry.bucket->level()->release_offset();
}

void Wheel::Close(std::vector<TimerNode*>* out) {
  for (const std::unique_ptr<Lane>& lane : lanes_) {
    for (WheelLevel* level = lane->level0.get(); level != nullptr;
         level = level->overflow()) {
      level->Close(out);
    }
  }
}

void Wheel::RemoveIf(absl::FunctionRef<bool(TimerNode*)> take,
                     std::vector<TimerNode*>* out) {
  for (const std::unique_ptr<Lane>& lane : lanes_) {
    for (WheelLevel* level = lane->level0.get(); level != nullptr;
         level = level->overflow()) {
      level->RemoveIf(take, out);
    }
  }
}

void Wheel::ReleaseOwner() {
  // The last home's release may delete the owner, and this wheel with it:
  // read the homes first. One provisional reference per home, so that no
  // home's release deletes the owner while the others are still visited.
  std::vector<NodeHome*> homes;
  for (const std::unique_ptr<Lane>& lane : lanes_) homes.push_back(&lane->home);
  RefCounted* const owner = owner_;
  owner->Ref(static_cast<int64_t>(homes.size()));
  owner->Unref();  // the owner's own; the provisional ones keep it
  for (NodeHome* home : homes) home->ReleaseBias();
}

}  // namespace timingwheel::internal
