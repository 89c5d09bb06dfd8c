// Copyright 2026 The timingwheel Authors.

#include "bucket.h"

namespace timingwheel::internal {

Bucket* Bucket::InTransit() {
  static Bucket marker(nullptr);
  return &marker;
}

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
  node->where.store(this, std::memory_order_release);
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

void Bucket::Flush(std::vector<TimerNode*>* out) {
  for (TimerNode* node = head_; node != nullptr;) {
    TimerNode* next = node->next;
    node->prev = node->next = nullptr;
    node->where.store(InTransit(), std::memory_order_release);
    out->push_back(node);
    node = next;
  }
  head_ = tail_ = nullptr;
  size_ = 0;
  expiration_tick_ = kNoExpiration;
}

}  // namespace timingwheel::internal
