// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// callback.h: how both wheels keep a callback inside the timer's node,
// without absl::AnyInvocable's 32 bytes and manager call. Internal: nothing
// here is for users to name; it is public only because the templated
// members of TimingWheel and LoopWheel build the callable at the call site.
//
// A wheel's templated AfterFunc (and At, AtClockTime, Every, ScheduleFunc)
// takes any callable `void()` as its own type `Fn`, so a lambda goes into
// the node as it is: no conversion to a type-erased wrapper on the way. The
// call site wraps it in a `Callable<Fn, kMaxInline>`, which keeps it inline
// when it may move bytes into a node (at most kMaxInline bytes, aligned to
// at most a pointer, moving without throwing), or moves it to the heap once
// (a CallbackBox, a pointer) when not; and hands the wheel a `CallbackRef`:
// the callable's address and its operations. The wheel moves it into the
// node's room (CallbackOps::move_to) and keeps only which operations: one
// constant table per callable type, shared by every node of that type. A
// LoopWheel's node keeps the table's address; a TimingWheel's keeps the
// table's number, which the table points to (CallbackOps::number): 32 bits
// where an address takes 64, which is what lets that node fit 48 bytes
// (lib/handles/timer_state.h, lib/handles/callback_numbers.h).
//
// Empty callables (a null function pointer, an empty std::function or
// absl::AnyInvocable) give a CallbackRef with null operations, which the
// wheels refuse with InvalidArgument.
//
// Thread-safety: stateless; the operations are called by whoever owns the
// node's callable at the time (lib/handles/timer_state.h,
// lib/faces/loop_node.h).

#ifndef TIMINGWHEEL_CALLBACK_H_
#define TIMINGWHEEL_CALLBACK_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

namespace timingwheel::internal {

// How a wheel moves, runs and destroys one type of callable that it keeps
// in a node's room; one constant table per type (kCallbackOps), so a node
// needs one pointer for all three.
struct CallbackOps {
  size_t size;
  // Move-constructs the callable at `from` into the room at `to`.
  void (*move_to)(void* from, void* to) noexcept;
  void (*run)(void* callable);
  // Null when there is nothing to destroy (trivially destructible).
  void (*destroy)(void* callable) noexcept;
  // The table's number in the process (callback_number<S>), given by the
  // library when a TimingWheel first keeps a callable of this type: the
  // table is constant, the number is not.
  std::atomic<uint32_t>* number;
  // The type has no state to keep: empty (a lambda capturing nothing),
  // trivially copyable and trivially destructible. Any object of it runs
  // the same, so a wheel keeps none (a bare node: lib/handles/timer_state.h,
  // lib/faces/loop_node.h).
  bool stateless;
};

// What a stateless callable runs on (CallbackOps::stateless): storage where
// an object of its type (empty, trivially copyable) begins its life as it is
// used, and which it never writes. A wheel keeps no object of such a type,
// and passes this to `run` instead; shared by all.
alignas(std::max_align_t) inline unsigned char stateless_callable[16];

// Where the number of kCallbackOps<S> is kept: 0 until one is given.
template <class S>
inline std::atomic<uint32_t> callback_number{0};

template <class S>
void CallbackMoveTo(void* from, void* to) noexcept {
  ::new (to) S(std::move(*static_cast<S*>(from)));
}
template <class S>
void CallbackRun(void* callable) {
  std::invoke(*static_cast<S*>(callable));
}
template <class S>
void CallbackDestroy(void* callable) noexcept {
  static_cast<S*>(callable)->~S();
}
template <class S>
inline constexpr CallbackOps kCallbackOps = {
    sizeof(S),
    &CallbackMoveTo<S>,
    &CallbackRun<S>,
    std::is_trivially_destructible_v<S> ? nullptr : &CallbackDestroy<S>,
    &callback_number<S>,
    (std::is_empty_v<S> && std::is_trivially_copyable_v<S> &&
     std::is_trivially_destructible_v<S>)};

// The most a LoopWheel's node keeps inline (lib/faces/loop_node.h).
inline constexpr size_t kLoopInlineCallable = 32;

// A callable too big for a node (or aligned beyond a pointer, or whose move
// may throw), moved to the heap: the node keeps this pointer.
template <class Fn>
struct CallbackBox {
  void operator()() { std::invoke(*fn); }
  std::unique_ptr<Fn> fn;
};

// The callable of one call, ready for the wheel to move into a node: `ops`
// null if it is empty.
struct CallbackRef {
  const CallbackOps* ops;
  void* callable;
};

// Holds the callable of one call on the caller's stack: inline when a node
// of the wheel may keep it (`kMaxInline` bytes at most), else boxed.
template <class Fn, size_t kMaxInline>
class Callable {
 public:
  static constexpr bool kInline =
      std::conjunction_v<std::bool_constant<sizeof(Fn) <= kMaxInline>,
                         std::bool_constant<alignof(Fn) <= alignof(void*)>,
                         std::is_nothrow_move_constructible<Fn>>;
  using Stored = std::conditional_t<kInline, Fn, CallbackBox<Fn>>;

  template <class F>
  Callable(std::in_place_t /*make*/, F&& f)
      : stored_(Make(std::forward<F>(f))) {}

  CallbackRef Ref() {
    if (Empty()) return {nullptr, nullptr};
    return {&kCallbackOps<Stored>, &stored_};
  }

 private:
  // Function pointers, absl::AnyInvocable and std::function may be empty: a
  // class that converts to bool only explicitly; a lambda converts
  // implicitly (to a function pointer) and is never empty.
  static constexpr bool kNullable =
      std::is_pointer_v<Fn> || std::is_member_pointer_v<Fn> ||
      (std::is_class_v<Fn> && std::is_constructible_v<bool, const Fn&> &&
       !std::is_convertible_v<const Fn&, bool>);

  template <class F>
  static Stored Make(F&& f) {
    if constexpr (kInline) {
      return Stored(std::forward<F>(f));
    } else {
      return Stored{std::make_unique<Fn>(std::forward<F>(f))};
    }
  }
  bool Empty() const {
    if constexpr (!kNullable) {
      return false;
    } else if constexpr (kInline) {
      return !static_cast<bool>(stored_);
    } else {
      return !static_cast<bool>(*stored_.fn);
    }
  }

  Stored stored_;
};

// A callable the templated members take: invocable as `void()`.
template <class F>
inline constexpr bool kIsCallback = std::is_invocable_v<std::decay_t<F>&>&&
    std::is_constructible_v<std::decay_t<F>, F>;

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_CALLBACK_H_
