// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// test_util.h: what several tests share to drive a wheel deterministically.
//
// `TestNodes` is a home for the TimerNodes that the unit tests of buckets,
// levels and timer states make directly, with no engine.
//
// `TimingWheelTestPeer` reaches the engine behind a TimingWheel (declared a
// friend there), and `EngineTestPeer` the wheel inside an engine, for tests
// that check where timers sit. `TimingWheelTestPeer::WaitIdle` is
// TimingWheel::WaitIdle: every bucket that is due by the clock has been
// flushed and every due callback has returned. With a ManualClock that makes
// a test exact: advance, wait idle, then check what ran.
//
// `ManualWheelTest` is a fixture on that: a TimingWheel on a ManualClock and
// an Advance that moves the clock and waits until the wheel is quiescent.
//
// `ThreadNames` lists the names of the process's threads.
//
// `Event` is a one-shot notification on std::mutex (absl::Notification is
// invisible to ThreadSanitizer with Debian's Abseil; see STYLE.md) whose wait
// is bounded, so that a failing test fails instead of hanging.
//
// `RunLog` records the clock readings at which one timer's callback ran, for
// the stress and model tests to compare with what the contract allows.

#ifndef TIMINGWHEEL_TEST_TEST_UTIL_H_
#define TIMINGWHEEL_TEST_TEST_UTIL_H_

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/time/time.h"
#include "engine.h"
#include "gtest/gtest.h"
#include "timingwheel/clock.h"
#include "timingwheel/timingwheel.h"

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define TIMINGWHEEL_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define TIMINGWHEEL_TEST_SANITIZED 1
#endif
#endif

namespace timingwheel {

// Whether this build runs under ThreadSanitizer or AddressSanitizer, which
// slow everything down: tests size their work and real-time bounds by it.
#ifdef TIMINGWHEEL_TEST_SANITIZED
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

// Reaches inside an engine and its wheel, for tests that check where timers
// sit.
class EngineTestPeer {
 public:
  static internal::Wheel& WheelOf(internal::Engine& engine) {
    return engine.wheel_;
  }
  // The lowest level of the calling thread's lane, which holds the timers
  // this thread creates; tests walk the levels up from it.
  static const internal::WheelLevel& LowestLevel(internal::Wheel& wheel) {
    return *wheel.lanes_[wheel.HomeOfThisThread()->lane()]->level0;
  }
  static const internal::WheelLevel& LowestLevel(internal::Engine& engine) {
    return LowestLevel(engine.wheel_);
  }
  // Levels created so far, the most of any lane.
  static int Levels(internal::Wheel& wheel) {
    int most = 0;
    for (const auto& lane : wheel.lanes_) {
      int levels = 0;
      for (const internal::WheelLevel* level = lane->level0.get();
           level != nullptr; level = level->overflow()) {
        ++levels;
      }
      most = std::max(most, levels);
    }
    return most;
  }
  static int Levels(internal::Engine& engine) { return Levels(engine.wheel_); }
  // Buckets waiting in the delay queue.
  static int64_t QueuedBuckets(internal::Engine& engine) {
    return engine.wheel_.queue().size();
  }
};

class TimingWheelTestPeer {
 public:
  static internal::Engine& GetEngine(TimingWheel& wheel) {
    return *wheel.engine_;
  }
  static void WaitIdle(TimingWheel& wheel) { wheel.WaitIdle(); }
};

// A fixture with a TimingWheel of `kWorkers` workers on a ManualClock.
// `Base` is ::testing::Test or a TestWithParam<T>.
template <int kWorkers, class Base = ::testing::Test>
class ManualWheelTest : public Base {
 protected:
  ManualWheelTest() {
    Options options;
    options.clock = clock_;
    options.workers = kWorkers;
    wheel_ = TimingWheel::Create(std::move(options)).value();
  }
  // Moves the clock by `d` and waits until everything due has run.
  void Advance(absl::Duration d) {
    clock_->Advance(d);
    TimingWheelTestPeer::WaitIdle(*wheel_);
  }

  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>();
  std::unique_ptr<TimingWheel> wheel_;
};

// Timer nodes without an engine, for the tests of the parts below it
// (buckets, levels, the node itself): a node pool and one NodeHome, kept
// alive by their nodes like an engine's. NewNode makes a one-shot node with an
// empty callback and one reference, which the TestNodes releases when it goes
// (the home goes with the last node).
class TestNodes {
 public:
  // The home's owner: counts its destruction in `*destroyed`, if given.
  class Home : public internal::RefCounted {
   public:
    explicit Home(std::atomic<int>* destroyed) : destroyed_(destroyed) {}
    ~Home() override {
      if (destroyed_ != nullptr) destroyed_->fetch_add(1);
    }
    internal::NodePool pool{sizeof(internal::TimerNode),
                            alignof(internal::TimerNode)};
    internal::NodeHome home{&pool, this, nullptr, 0};

   private:
    std::atomic<int>* const destroyed_;
  };

  explicit TestNodes(std::atomic<int>* destroyed = nullptr)
      : home_(new Home(destroyed)) {}
  TestNodes(const TestNodes&) = delete;
  TestNodes& operator=(const TestNodes&) = delete;
  ~TestNodes() {
    for (internal::TimerNode* node : nodes_) node->Unref();
    Release();
  }

  internal::NodeHome* home() const { return &home_->home; }

  internal::TimerNode* NewNode() {
    auto* node = internal::TimerNode::New(home(), [] {});
    nodes_.push_back(node);
    return node;
  }

  // Lets go of the home as an engine's owner does: it lives on until its
  // last node goes.
  void Release() {
    if (home_ == nullptr) return;
    home_->home.ReleaseBias();
    home_ = nullptr;
  }

 private:
  Home* home_;
  std::vector<internal::TimerNode*> nodes_;
};

class Event {
 public:
  void Notify() {
    std::lock_guard<std::mutex> lock(mu_);
    notified_ = true;
    cv_.notify_all();
  }
  // True once notified; false if `limit` passed first.
  [[nodiscard]] bool Wait(absl::Duration limit = absl::Seconds(60)) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, absl::ToChronoNanoseconds(limit),
                        [this] { return notified_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool notified_ = false;
};

// The names of this process's threads (/proc/self/task/*/comm).
inline std::multiset<std::string> ThreadNames() {
  std::multiset<std::string> names;
  std::error_code error;
  for (const auto& entry :
       std::filesystem::directory_iterator("/proc/self/task", error)) {
    std::ifstream comm(entry.path() / "comm");
    std::string name;
    if (std::getline(comm, name)) names.insert(name);
  }
  return names;
}

// The clock readings at which one timer's callback ran.
class RunLog {
 public:
  explicit RunLog(std::shared_ptr<Clock> clock) : clock_(std::move(clock)) {}
  static absl::AnyInvocable<void()> Callback(std::shared_ptr<RunLog> log) {
    return [log] { log->Record(); };
  }
  void Record() {
    const absl::Duration now = clock_->Now();
    std::lock_guard<std::mutex> lock(mu_);
    runs_.push_back(now);
  }
  std::vector<absl::Duration> runs() const {
    std::lock_guard<std::mutex> lock(mu_);
    return runs_;
  }
  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return runs_.size();
  }

 private:
  const std::shared_ptr<Clock> clock_;
  mutable std::mutex mu_;
  std::vector<absl::Duration> runs_;
};

}  // namespace timingwheel

#endif  // TIMINGWHEEL_TEST_TEST_UTIL_H_
