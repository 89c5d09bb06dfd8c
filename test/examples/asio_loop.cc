// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// Example: a LoopWheel on a Boost.Asio io_context, through one steady_timer.
//
// The io_context's thread owns the wheel. One steady_timer, the alarm, is
// armed for the wheel's next due bucket (TimeUntilNext) and cancelled when
// nothing is pending, so that io_context::run() returns once every timer
// ran or was stopped. Its handler runs what is due (RunDue) and arms it
// again. Timers are scheduled through WheelOnAsio::AfterFunc and Every,
// which bring the alarm forward when the new timer is due before it (a
// Reset to an earlier time would need the same; this example has none; a
// Stop leaves the alarm alone, which costs at most one wake-up that runs
// nothing).
//
// Five timers: two one-shots, one stopped at once, an Every that stops
// itself after two runs, and a last one-shot, scheduled first, so that the
// alarm has to move forward for the others. Checks (exit status 1 on
// failure): the order of the runs, none before its deadline, the stopped
// one never ran, the alarm moved forward, nothing is pending at the end,
// and the alarm fired at most twice per arm (the release of an upper-level
// bucket, then the level-0 bucket), never once per 1 ms tick. Run by ctest
// as example_asio_loop when Boost is found.

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "boost/asio/io_context.hpp"
#include "boost/asio/steady_timer.hpp"
#include "timingwheel/clock.h"
#include "timingwheel/loop_wheel.h"

namespace {

using timingwheel::LoopTimer;
using timingwheel::LoopWheel;

// Drives a LoopWheel from an io_context with one steady_timer; like the
// wheel, for the io_context's thread only.
class WheelOnAsio {
 public:
  WheelOnAsio(boost::asio::io_context& io, LoopWheel& wheel)
      : wheel_(wheel), alarm_(io, kNever) {}

  // The wheel's AfterFunc and Every, and the alarm brought forward if the
  // new timer needs it.
  absl::StatusOr<LoopTimer> AfterFunc(absl::Duration d,
                                      absl::AnyInvocable<void()> f) {
    absl::StatusOr<LoopTimer> timer = wheel_.AfterFunc(d, std::move(f));
    ArmIfEarlier();
    return timer;
  }
  absl::StatusOr<LoopTimer> Every(absl::Duration period,
                                  absl::AnyInvocable<void()> f) {
    absl::StatusOr<LoopTimer> timer = wheel_.Every(period, std::move(f));
    ArmIfEarlier();
    return timer;
  }

  std::chrono::steady_clock::time_point alarm() const {
    return alarm_.expiry();
  }
  int wake_ups() const { return wake_ups_; }

 private:
  static constexpr std::chrono::steady_clock::time_point kNever =
      std::chrono::steady_clock::time_point::max();

  // Arms the alarm for the wheel's next due bucket, or cancels it.
  void Arm() {
    std::optional<absl::Duration> wait = wheel_.TimeUntilNext();
    if (!wait.has_value()) {
      alarm_.expires_at(kNever);  // cancels the wait: run() may return
      return;
    }
    alarm_.expires_after(absl::ToChronoNanoseconds(*wait));
    alarm_.async_wait([this](const boost::system::error_code& error) {
      if (error) return;  // cancelled: armed again meanwhile
      ++wake_ups_;
      wheel_.RunDue();
      Arm();
    });
  }

  void ArmIfEarlier() {
    std::optional<absl::Duration> wait = wheel_.TimeUntilNext();
    if (wait.has_value() &&
        std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(*wait) <
            alarm_.expiry()) {
      Arm();
    }
  }

  LoopWheel& wheel_;
  boost::asio::steady_timer alarm_;
  int wake_ups_ = 0;
};

}  // namespace

int main() {
  const std::shared_ptr<timingwheel::Clock> clock = timingwheel::SteadyClock();
  boost::asio::io_context io;
  std::unique_ptr<LoopWheel> wheel = LoopWheel::Create().value();
  WheelOnAsio driver(io, *wheel);

  std::vector<std::string> ran;
  int early = 0;
  // A one-shot timer that records its name, and whether it ran before the
  // deadline the wheel gave it.
  auto one_shot = [&](std::string name, absl::Duration d) {
    auto deadline = std::make_shared<absl::Duration>();
    LoopTimer timer = driver
                          .AfterFunc(d,
                                     [&, name, deadline] {
                                       if (clock->Now() < *deadline) ++early;
                                       ran.push_back(name);
                                     })
                          .value();
    *deadline = *timer.Deadline();
    return timer;
  };

  LoopTimer last = one_shot("last", absl::Milliseconds(150));
  const std::chrono::steady_clock::time_point alarm_for_last = driver.alarm();
  LoopTimer first = one_shot("first", absl::Milliseconds(10));
  const bool moved_forward = driver.alarm() < alarm_for_last;
  LoopTimer stopped = one_shot("stopped", absl::Milliseconds(20));
  const bool stop_won = stopped.Stop();
  LoopTimer second = one_shot("second", absl::Milliseconds(30));
  int beats = 0;
  LoopTimer every;
  every = driver
              .Every(absl::Milliseconds(40),
                     [&] {
                       // Pending while it runs: Deadline() is this run's.
                       if (clock->Now() < *every.Deadline()) ++early;
                       ran.push_back("every");
                       if (++beats == 2) every.Stop();
                     })
              .value();

  io.run();  // returns when the alarm is cancelled: nothing pending

  const std::vector<std::string> expected = {"first", "second", "every",
                                             "every", "last"};
  const int arms = 6;  // five runs, and the stopped timer's
  const bool ok = ran == expected && early == 0 && stop_won && moved_forward &&
                  wheel->Pending() == 0 && driver.wake_ups() <= 2 * arms;
  for (const std::string& name : ran) std::printf("%s ", name.c_str());
  std::printf(
      "\nearly: %d, stopped: %d, alarm moved forward: %d, pending: "
      "%lld, wake-ups: %d\n%s\n",
      early, stop_won, moved_forward, static_cast<long long>(wheel->Pending()),
      driver.wake_ups(), ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}
