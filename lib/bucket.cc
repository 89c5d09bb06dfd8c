// Copyright 2026 The timingwheel Authors.

#include "bucket.h"

namespace timingwheel::internal {

void Bucket::Add(TimerNode* node, uint64_t gen) {
  node->prev = tail_;
  node->next = nullptr;
  if (tail_ != nullptr) {
    tail_->next = node;
  } else {
    head_ = node;
  }
  tail_ = node;
  node->linked_gen = gen;
  // This order, and Holds' reverse one: see Holds.
  node->where.store(this, std::memory_order_release);
  node->link_epoch.store(epoch_, std::memory_order_release);
  ++size_;
}

void Bucket::Remove(TimerNode* node) {
  if (node->prev != nullptr) {
    node->prev->next = node->next;
  } else {
    head_ = node->next;
  }
  if (node->next != nullptr) {
    node->next->prev = node->prev;
  } else {
    tail_ = node->prev;
  }
  node->prev = node->next = nullptr;
  node->where.store(nullptr, std::memory_order_release);
  --size_;
}

bool Bucket::SetExpiration(int64_t expiration_tick) {
  if (expiration_tick_ != kNoExpiration) return false;
  expiration_tick_ = expiration_tick;
  return true;
}

TimerNode* Bucket::Detach() {
  TimerNode* list = head_;
  head_ = tail_ = nullptr;
  size_ = 0;
  expiration_tick_ = kNoExpiration;
  ++epoch_;
  return list;
}

void Bucket::Flush(std::vector<TimerNode*>* out) {
  for (TimerNode* node = Detach(); node != nullptr; node = node->next) {
    out->push_back(node);
  }
}

}  // namespace timingwheel::internal
