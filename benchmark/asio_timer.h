// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// asio_timer.h: `AsioTimer`, the second baseline: Boost.Asio `steady_timer`s
// on one `io_context` run by one thread, with the mini-API of HeapTimer.
//
// This is what a server already built on Asio does for its timeouts, so it
// is the baseline such a user would compare timingwheel with. Asio keeps its
// timers in a binary heap inside the reactor (guarded by the reactor's
// mutex) and arms a timerfd for the earliest one, so it costs O(log n) per
// add and cancel plus a syscall whenever the earliest deadline changes.
//
// Thread-safety, done the way the Asio documentation asks for it: an
// `io_context` is safe to use from any thread, a `steady_timer` object is
// not ("distinct objects: safe; shared objects: unsafe"). So:
//   * AfterFunc constructs the timer and calls `async_wait` on the caller's
//     thread. That is safe because no other thread can see this new timer
//     object yet, and the io_context it registers with is thread-safe.
//   * Stop does not call `cancel()` from the caller's thread: the io thread
//     may be completing that very timer. It decides the race with one atomic
//     state per timer (pending -> stopped by Stop, pending -> fired by the
//     completion handler; exactly one compare-and-swap wins), then posts the
//     `cancel()` to the io_context. With a single thread running the
//     io_context that thread is an implicit strand, so every later touch of
//     the timer object happens on it. The cancel only frees the timer early;
//     correctness comes from the atomic. A mutex around the timer would not
//     help: the io thread touches timer internals under Asio's own lock, not
//     ours, which is why the documented rule is "one thread per timer".
// Callbacks run on the io thread (a real Asio user would not add a pool
// for trivial completion handlers), so `workers` is ignored.
//
// Example:
//
//   timingwheel::bench::AsioTimer timers;
//   auto h = timers.AfterFunc(absl::Seconds(1), [] { Retry(); });
//   h.Stop();  // true: Retry() will never start
//   timers.Shutdown();
//
// Threads: callers (any thread) call AfterFunc, Handle::Stop, Pending,
// Shutdown; the `io` thread runs completion handlers, posted cancels and
// the callbacks. No lock of ours exists; atomics:
//   * Entry::state: CAS with acq_rel, so the winner sees the timer's setup
//     and a fired callback sees everything written before AfterFunc.
//   * pending_: relaxed counter (a statistic, never used to synchronize).
//   * closed_: release by Shutdown, acquire by AfterFunc and Stop.
// Handles must not be used after the AsioTimer is destroyed, nor concurrently
// with Shutdown.

#ifndef TIMINGWHEEL_BENCHMARK_ASIO_TIMER_H_
#define TIMINGWHEEL_BENCHMARK_ASIO_TIMER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <utility>

#include "absl/functional/any_invocable.h"
#include "absl/time/time.h"
#include "boost/asio/executor_work_guard.hpp"
#include "boost/asio/io_context.hpp"
#include "boost/asio/post.hpp"
#include "boost/asio/steady_timer.hpp"
#include "boost/system/error_code.hpp"

namespace timingwheel {
namespace bench {

class AsioTimer {
 private:
  enum State : int { kPending, kStopped, kFired };

  struct Entry {
    Entry(boost::asio::io_context& io, absl::AnyInvocable<void()> f)
        : timer(io), callback(std::move(f)) {}
    boost::asio::steady_timer timer;
    absl::AnyInvocable<void()> callback;
    std::atomic<int> state{kPending};
  };

 public:
  // Refers to one timer. A default-constructed handle, or one returned after
  // Shutdown, refers to nothing and Stop returns false.
  class Handle {
   public:
    Handle() = default;

    // Returns true if this call won the timer before its handler did: the
    // callback will never start.
    bool Stop() {
      if (entry_ == nullptr || owner_->closed_.load(std::memory_order_acquire))
        return false;
      int expected = kPending;
      if (!entry_->state.compare_exchange_strong(expected, kStopped,
                                                 std::memory_order_acq_rel)) {
        return false;
      }
      owner_->pending_.fetch_sub(1, std::memory_order_relaxed);
      // Free the Asio timer (and its slot in Asio's heap) now rather than at
      // its deadline; see the file comment for why this is posted.
      boost::asio::post(owner_->io_, [e = entry_] { e->timer.cancel(); });
      return true;
    }

    explicit operator bool() const { return entry_ != nullptr; }

   private:
    friend class AsioTimer;
    Handle(AsioTimer* owner, std::shared_ptr<Entry> entry)
        : owner_(owner), entry_(std::move(entry)) {}

    AsioTimer* owner_ = nullptr;
    std::shared_ptr<Entry> entry_;
  };

  // Starts the io thread. `workers` is accepted for symmetry and ignored.
  explicit AsioTimer(int workers = 1)
      : work_(boost::asio::make_work_guard(io_)),
        thread_([this] { io_.run(); }) {
    static_cast<void>(workers);
  }
  AsioTimer(const AsioTimer&) = delete;
  AsioTimer& operator=(const AsioTimer&) = delete;
  // Shutdown(); then destroying io_ destroys the handlers still queued.
  ~AsioTimer() { Shutdown(); }

  // Runs `f` on the io thread once `d` has passed.
  Handle AfterFunc(absl::Duration d, absl::AnyInvocable<void()> f) {
    if (closed_.load(std::memory_order_acquire)) return Handle();
    auto entry = std::make_shared<Entry>(io_, std::move(f));
    pending_.fetch_add(1, std::memory_order_relaxed);
    entry->timer.expires_after(absl::ToChronoNanoseconds(d));
    entry->timer.async_wait(
        [this, entry](const boost::system::error_code& error) {
          if (error) return;  // Cancelled by Stop.
          int expected = kPending;
          if (!entry->state.compare_exchange_strong(
                  expected, kFired, std::memory_order_acq_rel)) {
            return;  // Stop won; its posted cancel() will find nothing.
          }
          pending_.fetch_sub(1, std::memory_order_relaxed);
          entry->callback();
          entry->callback = nullptr;
        });
    return Handle(this, std::move(entry));
  }

  // Timers neither fired nor stopped.
  int64_t Pending() const {
    return closed_.load(std::memory_order_acquire)
               ? 0
               : pending_.load(std::memory_order_relaxed);
  }

  // Stops the io thread (the callbacks of pending timers never run) and
  // returns how many timers were pending; later calls return 0.
  int64_t Shutdown() {
    if (closed_.exchange(true, std::memory_order_acq_rel)) return 0;
    work_.reset();
    io_.stop();
    thread_.join();
    return pending_.exchange(0, std::memory_order_relaxed);
  }

 private:
  boost::asio::io_context io_{1};  // Concurrency hint: one thread runs it.
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type>
      work_;
  std::atomic<int64_t> pending_{0};
  std::atomic<bool> closed_{false};
  std::thread thread_;
};

}  // namespace bench
}  // namespace timingwheel

#endif  // TIMINGWHEEL_BENCHMARK_ASIO_TIMER_H_
