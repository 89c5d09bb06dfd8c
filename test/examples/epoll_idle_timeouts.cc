// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// Example: idle timeouts on your own epoll loop, with a LoopWheel and one
// timerfd.
//
// A server watches four connections (socketpairs: the loop holds one end, a
// client thread the other). Each connection has an idle timeout of 200 ms,
// a timer that closes it and is pushed out (Reset) whenever data arrives,
// held by id (a LoopTimerId: 8 bytes in the connection, nothing to
// release). The client writes to connections 0 and 1 every 10 ms for 400 ms,
// then closes them; it never writes to 2 and 3, which their timeouts close.
// The loop sleeps in epoll_wait on the sockets and on a timerfd armed from
// LoopWheel::TimeUntilNext (disarmed when nothing is pending), handles the
// I/O, then runs what is due (RunDue). Only the loop's thread touches the
// wheel.
//
// Checks (exit status 1 on failure): exactly connections 2 and 3 were
// closed by their timeouts, neither before its idle deadline, and 0 and 1
// by the client; and the loop woke only for I/O or a due bucket: at most one
// event per byte or close that arrived, and at most two timerfd expirations
// per timeout (the release of the level-1 bucket that holds a 200 ms timer,
// then its level-0 bucket), where a loop woken every 1 ms tick would have
// woken hundreds of times. Run by ctest as example_epoll_idle_timeouts.

#include <errno.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "timingwheel/clock.h"
#include "timingwheel/loop_wheel.h"

namespace {

constexpr absl::Duration kIdleTimeout = absl::Milliseconds(200);
constexpr int kConnections = 4;
constexpr int kTalking = 2;  // the client talks on 0 and 1, never on 2 and 3
constexpr absl::Duration kWriteEvery = absl::Milliseconds(10);
constexpr absl::Duration kTalkFor = absl::Milliseconds(400);
constexpr int kMaxEvents = 16;
constexpr uint64_t kTimerFdTag = ~uint64_t{0};  // the timerfd's epoll data

[[noreturn]] void Fail(const char* what) {
  std::perror(what);
  std::exit(1);
}

enum class Closed { kOpen, kByIdleTimeout, kByClient };

struct Connection {
  int fd = -1;                    // the server's end, watched by the loop
  timingwheel::LoopTimerId idle;  // closes the connection when it runs
  absl::Duration idle_deadline;   // its deadline, by the wheel's clock
  Closed closed = Closed::kOpen;
  bool closed_early = false;  // the timeout ran before idle_deadline
};

class Server {
 public:
  Server()
      : clock_(timingwheel::SteadyClock()),
        wheel_(timingwheel::LoopWheel::Create().value()),
        epoll_fd_(epoll_create1(EPOLL_CLOEXEC)),
        timer_fd_(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC)) {
    if (epoll_fd_ < 0) Fail("epoll_create1");
    if (timer_fd_ < 0) Fail("timerfd_create");
    Watch(timer_fd_, kTimerFdTag);
  }
  ~Server() {
    close(timer_fd_);
    close(epoll_fd_);
  }

  // Takes the server's end of a new connection: its idle timeout starts.
  void Accept(int fd) {
    const size_t index = connections_.size();
    Connection& c = connections_.emplace_back();
    c.fd = fd;
    c.idle = wheel_
                 ->AfterFuncId(kIdleTimeout,
                               [this, index] {
                                 Connection& idle = connections_[index];
                                 idle.closed_early =
                                     clock_->Now() < idle.idle_deadline;
                                 Close(idle, Closed::kByIdleTimeout);
                               })
                 .value();
    c.idle_deadline = *wheel_->Deadline(c.idle);
    Watch(fd, index);
    ++open_;
  }

  // The loop, until every connection is closed.
  void Run() {
    epoll_event events[kMaxEvents];
    while (open_ > 0) {
      // Sleep until I/O arrives or the wheel's next bucket is due.
      std::optional<absl::Duration> wait = wheel_->TimeUntilNext();
      itimerspec alarm = {};  // all zero: disarmed, nothing is pending
      if (wait.has_value()) {
        // A zero it_value would disarm it too: 1 ns fires at once.
        alarm.it_value =
            absl::ToTimespec(std::max(*wait, absl::Nanoseconds(1)));
      }
      timerfd_settime(timer_fd_, 0, &alarm, nullptr);
      const int n = epoll_wait(epoll_fd_, events, kMaxEvents, -1);
      if (n < 0 && errno != EINTR) Fail("epoll_wait");
      for (int i = 0; i < n; ++i) OnReady(events[i]);  // activity: Reset
      wheel_->RunDue();  // the timeouts now due close their connections
    }
  }

  const std::vector<Connection>& connections() const { return connections_; }
  int timer_events() const { return timer_events_; }
  int io_events() const { return io_events_; }
  int64_t pending() const { return wheel_->Pending(); }

 private:
  void Watch(int fd, uint64_t tag) {
    epoll_event event = {};
    event.events = EPOLLIN;
    event.data.u64 = tag;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) != 0) {
      Fail("epoll_ctl");
    }
  }

  void OnReady(const epoll_event& event) {
    if (event.data.u64 == kTimerFdTag) {
      ++timer_events_;
      uint64_t expirations;  // read to clear it; RunDue does the work
      if (read(timer_fd_, &expirations, sizeof expirations) < 0 &&
          errno != EAGAIN) {
        Fail("read(timerfd)");
      }
      return;
    }
    ++io_events_;
    Connection& c = connections_[event.data.u64];
    char buffer[64];
    const ssize_t got = read(c.fd, buffer, sizeof buffer);
    if (got > 0) {
      wheel_->Reset(c.idle, kIdleTimeout);  // activity: starts again
      c.idle_deadline = *wheel_->Deadline(c.idle);
    } else if (got == 0) {
      wheel_->Stop(c.idle);  // true: the timeout never runs
      Close(c, Closed::kByClient);
    } else if (errno != EAGAIN) {
      Fail("read");
    }
  }

  void Close(Connection& c, Closed why) {
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
    close(c.fd);
    c.closed = why;
    --open_;
  }

  const std::shared_ptr<timingwheel::Clock> clock_;
  std::unique_ptr<timingwheel::LoopWheel> wheel_;
  const int epoll_fd_;
  const int timer_fd_;
  std::vector<Connection> connections_;
  int open_ = 0;
  int timer_events_ = 0;
  int io_events_ = 0;
};

}  // namespace

int main() {
  Server server;
  std::vector<int> client_fds;
  for (int i = 0; i < kConnections; ++i) {
    int ends[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
                   ends) != 0) {
      Fail("socketpair");
    }
    server.Accept(ends[0]);
    client_fds.push_back(ends[1]);
  }

  int writes = 0;  // read after the join
  std::thread client([&] {
    const absl::Time until = absl::Now() + kTalkFor;
    while (absl::Now() < until) {
      for (int i = 0; i < kTalking; ++i) {
        if (write(client_fds[i], "x", 1) != 1) Fail("write");
        ++writes;
      }
      absl::SleepFor(kWriteEvery);
    }
    for (int i = 0; i < kTalking; ++i) close(client_fds[i]);
  });
  server.Run();
  client.join();
  for (int i = kTalking; i < kConnections; ++i) close(client_fds[i]);

  bool ok = server.pending() == 0;
  const int timeouts = kConnections - kTalking;
  for (int i = 0; i < kConnections; ++i) {
    const Connection& c = server.connections()[i];
    const Closed expected =
        i < kTalking ? Closed::kByClient : Closed::kByIdleTimeout;
    if (c.closed != expected || c.closed_early) ok = false;
    std::printf("connection %d: closed by %s%s\n", i,
                c.closed == Closed::kByClient        ? "the client"
                : c.closed == Closed::kByIdleTimeout ? "its idle timeout"
                                                     : "nobody",
                c.closed_early ? ", before its idle deadline" : "");
  }
  std::printf(
      "wake-up events: %d I/O (%d writes, %d closes), %d timerfd "
      "(%d timeouts)\n",
      server.io_events(), writes, kTalking, server.timer_events(), timeouts);
  if (server.io_events() > writes + kTalking) ok = false;
  if (server.timer_events() > 2 * timeouts) ok = false;
  std::printf("%s\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}
