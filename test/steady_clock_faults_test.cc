// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// steady_clock_faults_test.cc: no callback starts before its deadline as
// std::chrono::steady_clock sees it, whatever the kernel's CLOCK_MONOTONIC
// does meanwhile. This binary interposes clock_gettime(), which libstdc++'s
// steady_clock::now() calls, and disturbs CLOCK_MONOTONIC the ways the world
// does: readings that arrive late while the process starts (a loaded or
// preempted host), a slew of up to 8 % either way (chrono/ntpd adjust the
// monotonic rate through the kernel tick), and a forward jump (a VM paused
// and resumed, a clocksource change). A deadline computed from any reading
// that can lag steady_clock, such as an extrapolated TSC, fires early here.
//
// Each test is its own process under ctest (gtest_discover_tests), so each
// fault starts before anything in the process has read the clock. Real-clock
// tests: the bound they check (never early) is exact; nothing is timed.

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "timingwheel/timingwheel.h"

namespace {

// The fault in force; read by every clock_gettime(CLOCK_MONOTONIC).
enum class Fault : int { kNone, kLateReads, kSlew, kJump };
std::atomic<Fault> fault{Fault::kNone};
std::atomic<int64_t> fault_start_ns{0};  // real CLOCK_MONOTONIC at activation
std::atomic<int64_t> slew_ppm{0};        // kSlew: rate - 1, in millionths

constexpr int64_t kLateReadNs = 300'000;       // kLateReads: 300 us late...
constexpr int64_t kLateWindowNs = 30'000'000;  // ...for the first 30 ms
constexpr int64_t kSlewAfterNs = 20'000'000;   // kSlew: 20 ms in
constexpr int64_t kJumpAfterNs = 20'000'000;   // kJump: 20 ms in...
constexpr int64_t kJumpByNs = 40'000'000;      // ...forward by 40 ms

int64_t RealMonotonicNs() {
  timespec ts{};
  syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// CLOCK_MONOTONIC as the fault makes it; still monotonic, as the kernel's is.
int64_t FaultedMonotonicNs() {
  const int64_t start = fault_start_ns.load(std::memory_order_acquire);
  switch (fault.load(std::memory_order_acquire)) {
    case Fault::kNone:
      return RealMonotonicNs();
    case Fault::kLateReads: {
      // The reading is taken only after a stall, as when the reading
      // thread is preempted between two clock reads.
      int64_t now = RealMonotonicNs();
      if (now - start < kLateWindowNs) {
        const int64_t until = now + kLateReadNs;
        while ((now = RealMonotonicNs()) < until) {
        }
      }
      return now;
    }
    case Fault::kSlew: {
      // From kSlewAfterNs on (after a clock reader had time to calibrate
      // itself against the unslewed rate).
      const int64_t real = RealMonotonicNs();
      const int64_t slewed = real - start - kSlewAfterNs;
      if (slewed <= 0) return real;
      // Smooth, as the kernel slews: slewed * ppm stays far below 2^63.
      return real +
             slewed * slew_ppm.load(std::memory_order_relaxed) / 1'000'000;
    }
    case Fault::kJump: {
      const int64_t real = RealMonotonicNs();
      return real - start >= kJumpAfterNs ? real + kJumpByNs : real;
    }
  }
  return RealMonotonicNs();
}

void StartFault(Fault f, int64_t ppm = 0) {
  slew_ppm.store(ppm, std::memory_order_relaxed);
  fault_start_ns.store(RealMonotonicNs(), std::memory_order_release);
  fault.store(f, std::memory_order_release);
}

}  // namespace

// The interposer: the executable's definition wins over libc's (and over a
// sanitizer runtime's weak interceptor). Other clocks read the real ones.
extern "C" int clock_gettime(clockid_t clock_id, timespec* ts) {
  if (clock_id != CLOCK_MONOTONIC) {
    return static_cast<int>(syscall(SYS_clock_gettime, clock_id, ts));
  }
  const int64_t ns = FaultedMonotonicNs();
  ts->tv_sec = ns / 1'000'000'000;
  ts->tv_nsec = ns % 1'000'000'000;
  return 0;
}

namespace timingwheel {
namespace {

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Outcome {
  int scheduled = 0;
  int ran = 0;
  int early = 0;
  int64_t worst_early_ns = 0;
};

// Schedules `rounds` x `per_round` one-shot timers of 200 us to 2 ms on a
// wheel with the default (steady) clock, spread over about `rounds` ms, and
// checks each callback's start against steady_clock.
Outcome RunTimers(int rounds, int per_round) {
  struct Probe {
    int64_t deadline_ns = 0;
    std::atomic<int64_t> started_ns{0};
  };
  std::vector<std::unique_ptr<Probe>> probes;
  Outcome outcome;
  {
    Options options;
    options.tick = absl::Microseconds(100);
    options.workers = 2;
    auto wheel = TimingWheel::Create(std::move(options)).value();
    for (int round = 0; round < rounds; ++round) {
      for (int i = 0; i < per_round; ++i) {
        const int64_t d_ns = 200'000 + (round * per_round + i) % 19 * 100'000;
        auto probe = std::make_unique<Probe>();
        Probe* p = probe.get();
        p->deadline_ns = SteadyNs() + d_ns;
        probes.push_back(std::move(probe));
        const bool ok =
            wheel
                ->AfterFunc(absl::Nanoseconds(d_ns),
                            [p] {
                              p->started_ns.store(SteadyNs(),
                                                  std::memory_order_release);
                            })
                .ok();
        EXPECT_TRUE(ok);
        outcome.scheduled += ok ? 1 : 0;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(700));
    }
    // Every timer is due within 2 ms of the last round; wait for them all
    // (bounded, generously), then shut down.
    const int64_t give_up = SteadyNs() + 20'000'000'000;
    for (const auto& probe : probes) {
      while (probe->started_ns.load(std::memory_order_acquire) == 0 &&
             SteadyNs() < give_up) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    }
    wheel->Shutdown();
  }
  for (const auto& probe : probes) {
    const int64_t started = probe->started_ns.load(std::memory_order_acquire);
    if (started == 0) continue;
    ++outcome.ran;
    if (started < probe->deadline_ns) {
      ++outcome.early;
      outcome.worst_early_ns =
          std::max(outcome.worst_early_ns, probe->deadline_ns - started);
    }
  }
  return outcome;
}

void ExpectNeverEarly(const Outcome& outcome) {
  EXPECT_EQ(outcome.ran, outcome.scheduled) << "timers lost";
  EXPECT_EQ(outcome.early, 0)
      << outcome.early << " of " << outcome.scheduled
      << " callbacks started before their deadline by steady_clock, the "
         "worst by "
      << outcome.worst_early_ns << " ns";
}

TEST(SteadyClockFaultsTest, NeverEarlyWithoutAFaultRealClock) {
  ExpectNeverEarly(RunTimers(/*rounds=*/60, /*per_round=*/4));
}

TEST(SteadyClockFaultsTest, NeverEarlyWhenReadingsArriveLateAtStartRealClock) {
  StartFault(Fault::kLateReads);
  ExpectNeverEarly(RunTimers(/*rounds=*/120, /*per_round=*/4));
}

TEST(SteadyClockFaultsTest,
     NeverEarlyWhenMonotonicSlewsTwoPercentFastRealClock) {
  StartFault(Fault::kSlew, /*ppm=*/20'000);
  ExpectNeverEarly(RunTimers(/*rounds=*/200, /*per_round=*/4));
}

TEST(SteadyClockFaultsTest,
     NeverEarlyWhenMonotonicSlewsEightPercentFastRealClock) {
  StartFault(Fault::kSlew, /*ppm=*/80'000);
  ExpectNeverEarly(RunTimers(/*rounds=*/200, /*per_round=*/4));
}

TEST(SteadyClockFaultsTest,
     NeverEarlyWhenMonotonicSlewsEightPercentSlowRealClock) {
  StartFault(Fault::kSlew, /*ppm=*/-80'000);
  ExpectNeverEarly(RunTimers(/*rounds=*/200, /*per_round=*/4));
}

TEST(SteadyClockFaultsTest, NeverEarlyWhenMonotonicJumpsForwardRealClock) {
  StartFault(Fault::kJump);
  ExpectNeverEarly(RunTimers(/*rounds=*/120, /*per_round=*/4));
}

}  // namespace
}  // namespace timingwheel
