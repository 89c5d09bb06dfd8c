// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// Example: one timer per key (a tenant, a connection), the keys spread over
// several wheels by hash, armed, pushed out and stopped through the key.
//
// One wheel is enough for most processes (README.md, "Scale"); shard when
// one wheel's threads are the bottleneck, or to keep one group's callbacks
// from queueing behind another's. Each shard is a wheel with its own threads
// and a map from its keys to their timers under its own mutex; the wheel's
// calls never wait for a callback, so they are made with that mutex held,
// and a callback takes the mutex only to drop its key's entry. Run by ctest
// as example_sharded_wheels.

#include <atomic>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "timingwheel/timingwheel.h"

namespace {

class ShardedTimers {
 public:
  // `shards` wheels on `clock` (nullptr: the steady clock), one worker each,
  // their threads named tw0-..., tw1-... .
  static absl::StatusOr<std::unique_ptr<ShardedTimers>> Create(
      int shards, std::shared_ptr<timingwheel::Clock> clock) {
    if (shards < 1) return absl::InvalidArgumentError("shards must be >= 1");
    auto timers = std::unique_ptr<ShardedTimers>(new ShardedTimers());
    for (int i = 0; i < shards; ++i) {
      timingwheel::Options options;
      options.workers = 1;
      options.clock = clock;
      options.thread_name_prefix = "tw" + std::to_string(i);
      auto wheel = timingwheel::TimingWheel::Create(std::move(options));
      if (!wheel.ok()) return wheel.status();
      timers->shards_.push_back(std::make_unique<Shard>());
      timers->shards_.back()->wheel = *std::move(wheel);
    }
    return timers;
  }

  // Runs `f` after `d`, unless Stop(key) comes first; replaces (stops) the
  // key's pending timer, if any.
  absl::Status AfterFunc(const std::string& key, absl::Duration d,
                         absl::AnyInvocable<void()> f) {
    Shard& shard = ShardOf(key);
    std::lock_guard<std::mutex> lock(shard.mu);
    auto run = [&shard, key, f = std::move(f)]() mutable {
      {
        std::lock_guard<std::mutex> lock(shard.mu);
        auto it = shard.timers.find(key);
        if (it != shard.timers.end() &&
            it->second == timingwheel::Timer::Current()) {
          shard.timers.erase(it);
        }
      }
      f();
    };
    absl::StatusOr<timingwheel::Timer> timer =
        shard.wheel->AfterFunc(d, std::move(run));
    if (!timer.ok()) return timer.status();
    timingwheel::Timer& slot = shard.timers[key];
    slot.Stop();
    slot = *std::move(timer);
    return absl::OkStatus();
  }

  // Pushes the key's pending timer out to `d` from now. False if the key has
  // none (never armed, stopped, or its callback has started).
  bool Reset(const std::string& key, absl::Duration d) {
    Shard& shard = ShardOf(key);
    std::lock_guard<std::mutex> lock(shard.mu);
    auto it = shard.timers.find(key);
    if (it == shard.timers.end()) return false;
    if (it->second.Reset(d)) return true;
    // Its callback has started but not dropped the entry yet (it needs `mu`),
    // and Reset armed the timer again: undo that; the key has no timer now.
    it->second.Stop();
    shard.timers.erase(it);
    return false;
  }

  // Stops the key's pending timer: true means its callback never starts.
  bool Stop(const std::string& key) {
    Shard& shard = ShardOf(key);
    std::lock_guard<std::mutex> lock(shard.mu);
    auto it = shard.timers.find(key);
    if (it == shard.timers.end()) return false;
    const bool stopped = it->second.Stop();
    shard.timers.erase(it);
    return stopped;
  }

  // Each shard's pending timers: how evenly the keys spread.
  std::vector<int64_t> PendingByShard() const {
    std::vector<int64_t> pending;
    for (const auto& shard : shards_) {
      pending.push_back(shard->wheel->Pending());
    }
    return pending;
  }

  // For tests on a ManualClock: every shard's WaitIdle.
  void WaitIdle() const {
    for (const auto& shard : shards_) shard->wheel->WaitIdle();
  }

 private:
  struct Shard {
    std::mutex mu;
    std::unordered_map<std::string, timingwheel::Timer> timers;
    // Declared last, so destroyed first: its Shutdown waits for running
    // callbacks, which use `mu` and `timers`.
    std::unique_ptr<timingwheel::TimingWheel> wheel;
  };

  ShardedTimers() = default;

  Shard& ShardOf(const std::string& key) {
    return *shards_[std::hash<std::string>{}(key) % shards_.size()];
  }

  std::vector<std::unique_ptr<Shard>> shards_;
};

}  // namespace

int main() {
  // Deterministic: one ManualClock drives every shard. A server would pass
  // nullptr.
  auto clock = std::make_shared<timingwheel::ManualClock>();
  auto timers = ShardedTimers::Create(4, clock).value();

  // A quota window per tenant: 100 tenants, 30 s each.
  constexpr int kTenants = 100;
  std::vector<std::atomic<int>> expired(kTenants);
  auto tenant = [](int i) { return "tenant-" + std::to_string(i); };
  for (int i = 0; i < kTenants; ++i) {
    if (!timers
             ->AfterFunc(tenant(i), absl::Seconds(30),
                         [&expired, i] { ++expired[i]; })
             .ok()) {
      return 1;
    }
  }
  bool ok = true;
  for (int64_t pending : timers->PendingByShard()) ok &= pending > 0;

  // Tenants 0, 3, 6, ... leave: their timers stop. Tenants 1, 4, 7, ... are
  // active: their windows move to 60 s. Tenants 2, 5, 8, ... expire at 30 s.
  for (int i = 0; i < kTenants; i += 3) ok &= timers->Stop(tenant(i));
  for (int i = 1; i < kTenants; i += 3) {
    ok &= timers->Reset(tenant(i), absl::Seconds(60));
  }
  clock->Advance(absl::Seconds(30));
  timers->WaitIdle();
  int at_30s = 0;
  for (int i = 0; i < kTenants; ++i) {
    at_30s += expired[i];
    ok &= expired[i] == (i % 3 == 2 ? 1 : 0);
  }
  // An expired tenant's key has no timer left to stop or push out.
  ok &= !timers->Stop(tenant(2)) && !timers->Reset(tenant(5), absl::Seconds(1));

  clock->Advance(absl::Seconds(30));
  timers->WaitIdle();
  int at_60s = 0;
  for (int i = 0; i < kTenants; ++i) {
    at_60s += expired[i];
    ok &= expired[i] == (i % 3 == 0 ? 0 : 1);
  }
  for (int64_t pending : timers->PendingByShard()) ok &= pending == 0;

  std::printf("expired by 30 s: %d, by 60 s: %d, stopped: %d\n", at_30s, at_60s,
              (kTenants + 2) / 3);
  return ok ? 0 : 1;
}
