// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// ref_counted.h: the shared lifetime of an engine.
//
// An engine is used by threads that may outlive its owner: its poller,
// advancer and workers, a task handed to the user's executor, and every
// live Timer handle (through its node's lane, NodeHome). Each
// holds a reference; the last release destroys the object, on whichever
// thread that happens. The parts below the engine (the homes, the runner)
// hold it through this interface, so none of them includes the engine.
//
// Thread-safety: Ref and Unref are thread-safe. Memory ordering: Unref is
// acq_rel, so every write made by any holder happens before the destruction.

#ifndef TIMINGWHEEL_LIB_BASE_REF_COUNTED_H_
#define TIMINGWHEEL_LIB_BASE_REF_COUNTED_H_

#include <atomic>
#include <cstdint>

namespace timingwheel::internal {

class RefCounted {
 public:
  RefCounted(const RefCounted&) = delete;
  RefCounted& operator=(const RefCounted&) = delete;

  void Ref() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void Ref(int64_t n) { refs_.fetch_add(n, std::memory_order_relaxed); }
  // Releases one reference; the last one deletes the object.
  void Unref() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

 protected:
  RefCounted() = default;  // with one reference, the creator's
  virtual ~RefCounted() = default;

 private:
  std::atomic<int64_t> refs_{1};
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_BASE_REF_COUNTED_H_
