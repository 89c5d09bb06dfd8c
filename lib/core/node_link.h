// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// node_link.h: the 32-bit name of a timer node, by which the core's lists
// link their nodes (core/bucket.h) instead of by 8-byte pointers.
//
// Every timer node of the process lives in one range of address space,
// reserved once by the node arena (lib/handles/node_arena.h), which sets
// the range's base here before it hands out any memory. A node's name is
// its offset from that base in units of kUnit bytes: 31 bits name any node
// of a 32 GiB range (the top bit of a link is the core's: a list's tag, not
// a node), and 0 names none (the arena never hands out its first grain).
// The core needs only this; where the memory comes from, and when it goes
// back, is the handles' business.
//
// Thread-safety: the base is written once, before any node exists, and only
// read after: a node reaches a thread through memory that the arena handed
// out after the base was set.

#ifndef TIMINGWHEEL_LIB_CORE_NODE_LINK_H_
#define TIMINGWHEEL_LIB_CORE_NODE_LINK_H_

#include <cstddef>
#include <cstdint>

namespace timingwheel::internal {

class NodeLink {
 public:
  // The unit of a link, and the alignment of every node.
  static constexpr size_t kUnit = 16;
  // The base's alignment (4 MiB): a range of memory as aligned and as long
  // (a LoopWheel's chunk of nodes) is the range of links that share
  // `link / (kBaseAlign / kUnit)`.
  static constexpr size_t kBaseAlign = size_t{4} << 20;

  // The name of the node at `address` (in the range, aligned to kUnit), and
  // back.
  static uint32_t Of(const void* address) {
    return static_cast<uint32_t>((static_cast<const char*>(address) - base_) /
                                 kUnit);
  }
  static void* At(uint32_t link) { return base_ + size_t{link} * kUnit; }

 private:
  friend class NodeArena;  // sets the base, once

  static inline char* base_ = nullptr;
};

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_CORE_NODE_LINK_H_
