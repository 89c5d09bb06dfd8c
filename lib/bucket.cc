// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "bucket.h"

namespace timingwheel::internal {

void Bucket::Add(TimerNode* node) {
  node->slot = static_cast<uint32_t>(nodes_.size());
  nodes_.push_back(node);
  // This order, and Holds' reverse one: see Holds.
  node->bucket.store(this, std::memory_order_release);
  node->link_epoch.store(epoch_, std::memory_order_release);
}

void Bucket::Remove(TimerNode* node) {
  TimerNode* last = nodes_.back();
  nodes_[node->slot] = last;
  last->slot = node->slot;
  nodes_.pop_back();
  node->bucket.store(nullptr, std::memory_order_release);
}

bool Bucket::SetExpiration(int64_t expiration_tick) {
  if (expiration_tick_ != kNoExpiration) return false;
  expiration_tick_ = expiration_tick;
  return true;
}

void Bucket::Detach(NodeArray* out) {
  nodes_.swap(*out);
  expiration_tick_ = kNoExpiration;
  ++epoch_;
}

void Bucket::RemoveIf(absl::FunctionRef<bool(TimerNode*)> take,
                      std::vector<TimerNode*>* out) {
  // From the back: Remove moves the last node into the hole, one already
  // looked at.
  for (size_t i = nodes_.size(); i-- > 0;) {
    TimerNode* node = nodes_[i];
    if (!take(node)) continue;
    Remove(node);
    out->push_back(node);
  }
}

void Bucket::Flush(std::vector<TimerNode*>* out) {
  for (size_t i = 0; i < nodes_.size(); ++i) out->push_back(nodes_[i]);
  nodes_.clear();
  expiration_tick_ = kNoExpiration;
  ++epoch_;
}

}  // namespace timingwheel::internal
