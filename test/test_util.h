// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// test_util.h: what the tests share, each helper once. A test file that
// needs something like one of these uses it from here instead of writing its
// own.
//
// Driving a wheel deterministically:
//   * `TimingWheel::WaitIdle` (public) returns once every bucket that is due
//     by the clock has been flushed and every due callback has returned. With a
//     ManualClock that makes a test exact: advance, wait idle, then check what
//     ran; and it is how a test shows that something does NOT happen (wait
//     idle, then look at the counters), never by sleeping.
//   * `EngineOf` finds the engine behind a TimingWheel (through a timer of
//     the wheel, with no friend in the public header), and `EngineTestPeer`
//     reaches inside an engine, for tests that check where timers sit or how
//     often the advancer slept.
//   * `ThreadStarterTestPeer` makes the system refuse thread starts, for
//     tests of what the wheel does then.
//   * `ManualWheelTest` is a fixture on that: a TimingWheel on a ManualClock,
//     Start to rebuild it with other Options, and Advance / AdvanceTo, which
//     move the clock and wait until the wheel is quiescent.
//   * `TestNodes` is a home for the TimerNodes that the unit tests of timer
//     states make directly, with no engine.
//   * `JumpingClock` is a clock written with the public API only: real
//     time plus jumps that it announces with NotifyTimeChanged;
//     `SteppingClock` one that is set, backwards too (against the contract).
//
// Recording what ran:
//   * `RunLog` records the clock readings at which one timer's callback ran
//     and the thread of its last run.
//   * `DestructionCounter` counts the destructions of the callables that
//     hold it, to show that a callback was destroyed (once, and when).
//
// Waiting for threads, always bounded by `kPatience` so that a failing test
// fails instead of hanging (std::mutex, not absl::Notification, which is
// invisible to ThreadSanitizer with Debian's Abseil; see STYLE.md):
//   * `Event`: a one-shot notification ("it has happened"), waited for by the
//     test;
//   * `Gate`: what callbacks or tasks block on until the test opens it;
//   * `Eventually`: polls a condition that other threads will make true.
//
// `ThreadNames` lists the names of the process's threads; `kSanitized` says
// whether this is a ThreadSanitizer or AddressSanitizer build.

#ifndef TIMINGWHEEL_TEST_TEST_UTIL_H_
#define TIMINGWHEEL_TEST_TEST_UTIL_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "faces/engine.h"
#include "gtest/gtest.h"
#include "threads/thread_starter.h"
#include "timingwheel/clock.h"
#include "timingwheel/timingwheel.h"
#include "wheel_core_test_peer.h"

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

// Reaches inside an engine's core, for tests that check where timers sit:
// on the advancer's thread, which owns it, after the submissions made so far.
class EngineTestPeer {
 public:
  // The timers each level holds, lowest first (0 for a level not created).
  static std::vector<int64_t> LevelCounts(internal::Engine& engine,
                                          int levels) {
    std::vector<int64_t> counts;
    engine.advancer_.RunOnOwner([&] {
      counts =
          internal::WheelCoreTestPeer::CountsByLevel(engine.advancer_.core_);
    });
    counts.resize(static_cast<size_t>(levels), 0);
    return counts;
  }
  // Times the advancer went to sleep so far.
  static uint64_t AdvancerSleeps(const internal::Engine& engine) {
    return engine.advancer_.sleeps_.load(std::memory_order_relaxed);
  }
  // Makes the advancer poll at any rate of calls (the wheel's clock must be
  // SteadyClock()), from its next window of rounds on (lib/threads/advancer.h).
  static void PollAtAnyRate(internal::Engine& engine) {
    engine.advancer_.poll_from_rate_.store(0, std::memory_order_relaxed);
  }
  // The advancer's last sleep while polling (zero before the first).
  static absl::Duration PollSleep(const internal::Engine& engine) {
    return absl::Nanoseconds(
        engine.advancer_.poll_sleep_ns_.load(std::memory_order_relaxed));
  }
  // Whether the advancer polls now: AfterFunc then hands it arms unstamped.
  static bool Polling(const internal::Engine& engine) {
    return engine.inbox_.Polling();
  }
};

// Makes thread starts fail as the system would (ThreadStarter), for as long
// as it lives: `allowed` more starts succeed, every later one is refused.
class ThreadStarterTestPeer {
 public:
  explicit ThreadStarterTestPeer(int64_t allowed) {
    internal::ThreadStarter::starts_left_.store(allowed);
  }
  ThreadStarterTestPeer(const ThreadStarterTestPeer&) = delete;
  ThreadStarterTestPeer& operator=(const ThreadStarterTestPeer&) = delete;
  ~ThreadStarterTestPeer() { internal::ThreadStarter::starts_left_.store(-1); }
};

// A TimingWheel of one worker on `clock`, otherwise with the default Options;
// the test fails (at the .value()) if it cannot be created.
inline std::unique_ptr<TimingWheel> OneWorkerWheel(
    std::shared_ptr<Clock> clock) {
  Options options;
  options.clock = std::move(clock);
  options.workers = 1;
  return TimingWheel::Create(std::move(options)).value();
}

// A fixture with a TimingWheel of `kWorkers` workers (and otherwise the
// default Options) on a ManualClock. `Base` is ::testing::Test or a
// TestWithParam<T>.
template <int kWorkers, class Base = ::testing::Test>
class ManualWheelTest : public Base {
 protected:
  ManualWheelTest() {
    Options options;
    options.workers = kWorkers;
    Start(std::move(options));
  }

  // Replaces the wheel with one built from `options` on clock_ (whatever
  // clock `options` names).
  void Start(Options options) {
    wheel_.reset();
    options.clock = clock_;
    absl::StatusOr<std::unique_ptr<TimingWheel>> wheel =
        TimingWheel::Create(std::move(options));
    ASSERT_TRUE(wheel.ok()) << wheel.status();
    wheel_ = *std::move(wheel);
  }
  // Waits until everything due by the clock has run.
  void WaitIdle() { wheel_->WaitIdle(); }
  // Moves the clock by `d` and waits until everything due has run.
  void Advance(absl::Duration d) {
    clock_->Advance(d);
    WaitIdle();
  }
  // Moves the clock to `t` (never backwards) and waits.
  void AdvanceTo(absl::Duration t) { Advance(t - clock_->Now()); }

  const std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>();
  std::unique_ptr<TimingWheel> wheel_;
};

// Timer nodes without an engine, for the tests of the parts below it
// (buckets, levels, the node itself): node pools and one NodeHome, kept
// alive by handles like an engine's. NewNode makes a one-shot node with an
// empty callback and one reference, which the TestNodes releases when it goes,
// before the home.
class TestNodes {
 public:
  // The home's owner: counts its destruction in `*destroyed`, if given.
  class Home : public internal::RefCounted {
   public:
    explicit Home(std::atomic<int>* destroyed) : destroyed_(destroyed) {}
    ~Home() override {
      if (destroyed_ != nullptr) destroyed_->fetch_add(1);
    }
    internal::NodePools pools{kMaxSpareTimers,
                              internal::NodePool::Tail::kOwnerCalls};
    internal::NodeHome home{&pools, this, nullptr, 0};

   private:
    std::atomic<int>* const destroyed_;
  };

  explicit TestNodes(std::atomic<int>* destroyed = nullptr)
      : home_(new Home(destroyed)) {}
  TestNodes(const TestNodes&) = delete;
  TestNodes& operator=(const TestNodes&) = delete;
  ~TestNodes() {
    for (internal::TimerNode* node : nodes_) node->Unref(pools());
    Release();
  }

  internal::NodeHome* home() const { return &home_->home; }
  internal::NodePools* pools() const { return &home_->pools; }

  internal::TimerNode* NewNode() {
    internal::WheelCallable<void (*)()> callable(std::in_place, [] {});
    auto* node = internal::TimerNode::New(pools(), callable.Ref());
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

// How long a test waits for something that should happen at once before it
// gives up; only ever reached when the test fails.
inline constexpr absl::Duration kPatience = absl::Seconds(10);

// A one-shot notification: a thread says that something has happened, the
// test waits for it.
class Event {
 public:
  void Notify() {
    std::lock_guard<std::mutex> lock(mu_);
    notified_ = true;
    cv_.notify_all();
  }
  // True once notified; false if `limit` passed first.
  [[nodiscard]] bool Wait(absl::Duration limit = kPatience) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, absl::ToChronoNanoseconds(limit),
                        [this] { return notified_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool notified_ = false;
};

// What callbacks (or pool tasks) block on until the test opens it; once open,
// every Pass returns at once. A Pass gives up after `limit`, so that a failing
// test cannot hang.
class Gate {
 public:
  void Open() { open_.Notify(); }
  // True if the gate opened, false if `limit` passed first.
  bool Pass(absl::Duration limit = kPatience) { return open_.Wait(limit); }

 private:
  Event open_;
};

// A thread pool of the test's own, as a user's executor would hand tasks
// to: `threads` threads take the tasks given to Add in order and run them
// (Tasks::kRun) or destroy them unrun (Tasks::kDestroy). Joins its threads
// when destroyed, after the tasks left.
class ThreadPoolExecutor {
 public:
  enum class Tasks { kRun, kDestroy };
  explicit ThreadPoolExecutor(int threads = 2, Tasks tasks = Tasks::kRun)
      : tasks_mode_(tasks) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
  }
  ThreadPoolExecutor(const ThreadPoolExecutor&) = delete;
  ThreadPoolExecutor& operator=(const ThreadPoolExecutor&) = delete;
  ~ThreadPoolExecutor() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    for (std::thread& thread : threads_) thread.join();
  }
  void Add(absl::AnyInvocable<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      tasks_.push_back(std::move(task));
    }
    cv_.notify_one();
  }

 private:
  void Loop() {
    for (;;) {
      absl::AnyInvocable<void()> task;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return done_ || !tasks_.empty(); });
        if (tasks_.empty()) return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      if (tasks_mode_ == Tasks::kRun) task();
      // Else destroyed here, unrun, as `task` goes.
    }
  }

  const Tasks tasks_mode_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<absl::AnyInvocable<void()>> tasks_;
  bool done_ = false;
  std::vector<std::thread> threads_;
};

// The engine behind `wheel`, or nullptr (and the test fails) if it could not
// be found. A test may not reach into the wheel: the public header names no
// test (no test peer as its friend; issue 23), and the library keeps no
// accessor that only tests would use. So the engine is found the way the
// library itself finds the engine of the timer whose callback runs
// (Timer::Current: Engine::Current), from a callback of the wheel's own. The
// price: one timer, due at once, runs on the wheel (Stats count it: one more
// scheduled and fired), and when EngineOf returns it has run and the wheel is
// idle again, with nothing pending. Call it before the test makes its own
// timers.
inline internal::Engine* EngineOf(TimingWheel& wheel) {
  struct Found {
    Event ran;
    std::atomic<internal::Engine*> engine{nullptr};
  };
  // Shared with the callback, which may outlive a failed wait.
  auto found = std::make_shared<Found>();
  absl::StatusOr<Timer> probe = wheel.AfterFunc(absl::ZeroDuration(), [found] {
    found->engine.store(internal::Engine::Current());
    found->ran.Notify();
  });
  if (!probe.ok()) {
    ADD_FAILURE() << "EngineOf: " << probe.status();
    return nullptr;
  }
  if (!found->ran.Wait()) {
    ADD_FAILURE() << "EngineOf: the timer due at once did not run";
    return nullptr;
  }
  wheel.WaitIdle();
  return found->engine.load();
}

// Polls `done` (yielding in between) until it is true or `limit` passes;
// returns done(). For a condition other threads will make true; never for
// one that must stay false (wait until the wheel is idle instead).
inline bool Eventually(const std::function<bool()>& done,
                       absl::Duration limit = kPatience) {
  const absl::Time give_up = absl::Now() + limit;
  while (!done()) {
    if (absl::Now() > give_up) return done();
    std::this_thread::yield();
  }
  return true;
}

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

// A clock a user might write with the public API only: steady_clock plus
// jumps (a debugger's "skip ahead"). It keeps the default RealTimeUntil, so a
// sleeper sleeps in real time, and it notifies after each jump.
class JumpingClock : public Clock {
 public:
  absl::Duration Now() const override {
    return absl::FromChrono(
               std::chrono::steady_clock::now().time_since_epoch()) +
           absl::Nanoseconds(offset_ns_.load(std::memory_order_acquire));
  }
  // Moves the time forward by `d` (> 0) and wakes every wheel on the clock.
  void Jump(absl::Duration d) {
    offset_ns_.fetch_add(absl::ToInt64Nanoseconds(d),
                         std::memory_order_release);
    NotifyTimeChanged();
  }

 private:
  std::atomic<int64_t> offset_ns_{0};
};

// A clock that is set, in either direction: backwards breaks the Clock
// contract, as a simulator's clock may. Like ManualClock it never moves by
// itself (RealTimeUntil is infinite) and wakes the wheels on it when set.
class SteppingClock : public Clock {
 public:
  absl::Duration Now() const override {
    return absl::Nanoseconds(now_ns_.load(std::memory_order_acquire));
  }
  absl::Duration RealTimeUntil(absl::Duration) const override {
    return absl::InfiniteDuration();
  }
  void Set(absl::Duration now) {
    now_ns_.store(absl::ToInt64Nanoseconds(now), std::memory_order_release);
    NotifyTimeChanged();
  }

 private:
  std::atomic<int64_t> now_ns_{0};
};

// Records every run of one timer's callback: the clock reading of each, and
// the thread of the last. Callbacks hold it by shared_ptr (Callback), so it
// outlives every run. Thread-safe.
class RunLog {
 public:
  explicit RunLog(std::shared_ptr<Clock> clock) : clock_(std::move(clock)) {}

  // A callback that records its runs into `log`.
  static absl::AnyInvocable<void()> Callback(std::shared_ptr<RunLog> log) {
    return [log] { log->Record(); };
  }
  void Record() {
    const absl::Duration now = clock_->Now();
    std::lock_guard<std::mutex> lock(mu_);
    runs_.push_back(now);
    last_thread_ = std::this_thread::get_id();
  }

  // The clock readings of every run, in order.
  std::vector<absl::Duration> runs() const {
    std::lock_guard<std::mutex> lock(mu_);
    return runs_;
  }
  // How many runs.
  int count() const {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int>(runs_.size());
  }
  // The clock reading of the last run; -InfiniteDuration() before the first.
  absl::Duration last_run() const {
    std::lock_guard<std::mutex> lock(mu_);
    return runs_.empty() ? -absl::InfiniteDuration() : runs_.back();
  }
  // The thread of the last run; std::thread::id() before the first.
  std::thread::id last_thread() const {
    std::lock_guard<std::mutex> lock(mu_);
    return last_thread_;
  }

 private:
  const std::shared_ptr<Clock> clock_;
  mutable std::mutex mu_;
  std::vector<absl::Duration> runs_;
  std::thread::id last_thread_;
};

// Adds 1 to `*count` when destroyed, unless moved from: captured by a
// callback, it counts the destructions of that callback.
class DestructionCounter {
 public:
  explicit DestructionCounter(std::atomic<int64_t>* count) : count_(count) {}
  DestructionCounter(DestructionCounter&& other) noexcept
      : count_(std::exchange(other.count_, nullptr)) {}
  DestructionCounter& operator=(DestructionCounter&&) = delete;
  ~DestructionCounter() {
    if (count_ != nullptr) count_->fetch_add(1);
  }

 private:
  std::atomic<int64_t>* count_;
};

}  // namespace timingwheel

#endif  // TIMINGWHEEL_TEST_TEST_UTIL_H_
