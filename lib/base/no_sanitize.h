// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// no_sanitize.h: lets a function read memory that AddressSanitizer holds
// poisoned. For the checks of a timer id, which read a word of the block the
// id names before they know whether that block is a live node of theirs (a
// free block is poisoned): the word's place in a block of a pool that still
// holds it is mapped whatever the block holds (lib/faces/loop_node.h,
// lib/handles/timer_state.h).

#ifndef TIMINGWHEEL_LIB_BASE_NO_SANITIZE_H_
#define TIMINGWHEEL_LIB_BASE_NO_SANITIZE_H_

#if defined(__SANITIZE_ADDRESS__)
#define TIMINGWHEEL_NO_SANITIZE_ADDRESS __attribute__((no_sanitize_address))
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TIMINGWHEEL_NO_SANITIZE_ADDRESS __attribute__((no_sanitize_address))
#endif
#endif
#ifndef TIMINGWHEEL_NO_SANITIZE_ADDRESS
#define TIMINGWHEEL_NO_SANITIZE_ADDRESS
#endif

#endif  // TIMINGWHEEL_LIB_BASE_NO_SANITIZE_H_
