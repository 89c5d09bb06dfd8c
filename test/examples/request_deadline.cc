// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// Example: a per-connection idle deadline, pushed out on every activity.
//
// Each connection owns a Timer. Activity calls Reset, which moves the
// deadline without allocating; a connection that stays idle past the deadline
// is closed by the timer's callback. Run by ctest as example_request_deadline.

#include <atomic>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "timingwheel/timingwheel.h"

namespace {

struct Connection {
  int id = 0;
  std::atomic<bool> closed{false};
  timingwheel::Timer idle_deadline;
};

}  // namespace

int main() {
  auto clock = std::make_shared<timingwheel::ManualClock>();
  timingwheel::Options options;
  options.clock = clock;  // deterministic; a server would use the default
  options.workers = 1;
  auto wheel = timingwheel::TimingWheel::Create(std::move(options)).value();

  const absl::Duration kIdleTimeout = absl::Seconds(30);
  std::vector<std::shared_ptr<Connection>> connections;
  for (int i = 0; i < 3; ++i) {
    auto conn = std::make_shared<Connection>();
    conn->id = i;
    // The callback holds a weak_ptr: a connection that is gone is not kept
    // alive by its timer.
    std::weak_ptr<Connection> weak = conn;
    conn->idle_deadline = wheel
                              ->AfterFunc(kIdleTimeout,
                                          [weak] {
                                            if (auto c = weak.lock()) {
                                              c->closed = true;
                                            }
                                          })
                              .value();
    connections.push_back(conn);
  }

  // Connection 1 is done before its deadline and closes itself cleanly: its
  // deadline is stopped (true: the idle callback will never run).
  const bool stopped = connections[1]->idle_deadline.Stop();

  // Connection 0 is busy: activity every 10 s keeps it open.
  for (int second = 0; second < 60; second += 10) {
    clock->Advance(absl::Seconds(10));
    connections[0]->idle_deadline.Reset(kIdleTimeout);
  }
  // Connection 2 was idle for 60 s: its callback closes it on a worker.
  // (A real server just goes on; the example waits to print the outcome.)
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  while (!connections[2]->closed && absl::Now() < give_up) {
    std::this_thread::yield();
  }
  std::printf("conn0 closed=%d conn1 stopped=%d conn2 closed=%d\n",
              connections[0]->closed.load(), stopped,
              connections[2]->closed.load());
  const bool ok =
      !connections[0]->closed && stopped && connections[2]->closed.load();
  wheel->Shutdown();
  return ok ? 0 : 1;
}
