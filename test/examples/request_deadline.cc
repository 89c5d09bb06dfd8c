// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// Example: a per-connection idle deadline, pushed out on every activity.
//
// Each connection owns its deadline through a ScopedTimer. Activity calls
// Reset, which moves the deadline without allocating; a connection that stays
// idle past the deadline is closed by the timer's callback; a connection that
// goes away first takes its deadline with it (the guard stops the timer). Run
// by ctest as example_request_deadline.

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
  // Declared last, so destroyed first: the deadline is stopped before the
  // rest of the connection goes.
  timingwheel::ScopedTimer idle_deadline;
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
    auto close_if_alive = [weak] {
      if (auto c = weak.lock()) c->closed = true;
    };
    conn->idle_deadline = timingwheel::ScopedTimer(
        wheel->AfterFunc(kIdleTimeout, close_if_alive).value());
    connections.push_back(conn);
  }

  // Connection 1 is done before its deadline and goes away: its guard stops
  // the deadline, and the idle callback will never run.
  const timingwheel::Timer conn1_deadline = connections[1]->idle_deadline.get();
  connections[1].reset();
  const bool stopped = !conn1_deadline.Pending();

  // Connection 0 is busy: activity every 10 s keeps it open.
  for (int second = 0; second < 60; second += 10) {
    clock->Advance(absl::Seconds(10));
    connections[0]->idle_deadline->Reset(kIdleTimeout);
  }
  // Asked about itself, its deadline is a full timeout away.
  const absl::Duration conn0_left =
      connections[0]->idle_deadline->TimeLeft().value_or(absl::ZeroDuration());
  // Connection 2 was idle for 60 s: its callback closes it on a worker.
  // (A real server just goes on; the example waits to print the outcome.)
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  while (!connections[2]->closed && absl::Now() < give_up) {
    std::this_thread::yield();
  }
  std::printf("conn0 closed=%d (%s left) conn1 stopped=%d conn2 closed=%d\n",
              connections[0]->closed.load(),
              absl::FormatDuration(conn0_left).c_str(), stopped,
              connections[2]->closed.load());
  const bool ok = !connections[0]->closed && conn0_left == kIdleTimeout &&
                  stopped && wheel->GetStats().stopped == 1 &&
                  connections[2]->closed.load();
  wheel->Shutdown();
  return ok ? 0 : 1;
}
