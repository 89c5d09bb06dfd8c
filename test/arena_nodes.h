// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// arena_nodes.h: nodes for the tests of the core, in the node arena.
//
// The core links nodes by their 32-bit names in the node arena
// (lib/handles/node_arena.h), so a node of a core test must live there, as the
// wheels' nodes do. A test node derives from InArena: `new` and
// std::make_unique then place it in the arena. Its memory is kept for the
// test process's life (a bump allocator over ranges of the arena, never
// reused): tests make thousands of nodes, not millions.

#ifndef TIMINGWHEEL_TEST_ARENA_NODES_H_
#define TIMINGWHEEL_TEST_ARENA_NODES_H_

#include <cstddef>
#include <mutex>

#include "handles/node_arena.h"

namespace timingwheel::internal {

class InArena {
 public:
  static void* operator new(size_t bytes) {
    static std::mutex mu;
    static char* next = nullptr;
    static char* end = nullptr;
    constexpr size_t kRange = size_t{1} << 20;
    const size_t rounded =
        (bytes + NodeLink::kUnit - 1) / NodeLink::kUnit * NodeLink::kUnit;
    std::lock_guard<std::mutex> lock(mu);
    if (next == nullptr || next + rounded > end) {
      next = static_cast<char*>(NodeArena::Get().Map(kRange));
      end = next + kRange;
    }
    void* node = next;
    next += rounded;
    return node;
  }
  // The memory stays with the test process (see above).
  static void operator delete(void* /*node*/) {}
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_TEST_ARENA_NODES_H_
