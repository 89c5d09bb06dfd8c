// Copyright 2026 The timingwheel Authors.

#include "fast_clock.h"

#include <atomic>
#include <chrono>
#include <fstream>
#include <string>

#include "absl/base/attributes.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace timingwheel::internal {
namespace {

// The rate is first measured over this much steady time.
constexpr int64_t kCalibrateNs = 10'000'000;
// A base older than this is refreshed.
constexpr int64_t kRefreshNs = 50'000'000;
// The scaled rate is this much above the measured one (NTP slews at most
// 0.05 %).
constexpr double kRateSlack = 0.002;
// Added to every reading: covers a TSC read reordered before the call.
constexpr int64_t kSlackNs = 1000;
// A (TSC, steady) pair whose two steady reads are further apart than this was
// interrupted, and is read again.
constexpr int64_t kMaxPairGapNs = 2000;

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

#if defined(__x86_64__)
uint64_t ReadTsc() { return __rdtsc(); }

bool KernelKeepsTimeWithTsc() {
  std::ifstream in(
      "/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string source;
  return static_cast<bool>(in >> source) && source == "tsc";
}
#else
uint64_t ReadTsc() { return 0; }
bool KernelKeepsTimeWithTsc() { return false; }
#endif

// A TSC reading and a steady reading at or after it (by less than
// kMaxPairGapNs, unless every try was interrupted); `before` is a steady
// reading at or before the TSC reading.
struct Pair {
  int64_t before;
  uint64_t tsc;
  int64_t ns;
};
Pair ReadPair() {
  Pair pair{};
  for (int i = 0; i < 8; ++i) {
    pair.before = SteadyNs();
    pair.tsc = ReadTsc();
    pair.ns = SteadyNs();
    if (pair.ns - pair.before <= kMaxPairGapNs) break;
  }
  return pair;
}

enum Mode : int {
  kUnknown = 0,      // nobody called yet
  kCalibrating = 1,  // anchored; measuring the rate
  kTsc = 2,          // the fast path is on
  kOff = 3,          // steady_clock reads only
};

class Calibration {
 public:
  int64_t Now() {
    if (mode_.load(std::memory_order_acquire) == kTsc) {
      const uint64_t seq = seq_.load(std::memory_order_acquire);
      const uint64_t tsc = ReadTsc();
      const uint64_t base_tsc = base_tsc_.load(std::memory_order_relaxed);
      const int64_t base_ns = base_ns_.load(std::memory_order_relaxed);
      const uint64_t mult = mult_.load(std::memory_order_relaxed);
      const uint64_t refresh_ticks =
          refresh_ticks_.load(std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_acquire);
      const uint64_t ticks = tsc - base_tsc;  // huge if tsc < base_tsc
      if ((seq & 1) == 0 && seq_.load(std::memory_order_relaxed) == seq &&
          ticks <= refresh_ticks) {
        // ticks * mult fits: refresh_ticks is 50 ms of ticks and mult about
        // 2^32 ns per tick.
        return base_ns + static_cast<int64_t>((ticks * mult) >> 32) + kSlackNs;
      }
    }
    return Slow();
  }

  bool UsesTsc() const { return mode_.load(std::memory_order_acquire) == kTsc; }

 private:
  int64_t Slow() {
    int mode = mode_.load(std::memory_order_acquire);
    if (mode == kOff) return SteadyNs();
    if (mode == kUnknown) {
      // One thread checks the kernel's clocksource and anchors the rate.
      uint64_t seq = 0;
      if (!seq_.compare_exchange_strong(seq, 1, std::memory_order_acquire)) {
        return SteadyNs();
      }
      if (!KernelKeepsTimeWithTsc()) {
        mode_.store(kOff, std::memory_order_release);
      } else {
        const Pair anchor = ReadPair();
        anchor_tsc_.store(anchor.tsc, std::memory_order_relaxed);
        anchor_ns_.store(anchor.ns, std::memory_order_relaxed);
        mode_.store(kCalibrating, std::memory_order_release);
      }
      seq_.store(2, std::memory_order_release);
      return SteadyNs();
    }
    // kCalibrating, or kTsc with an old base: refresh, one thread at a time.
    uint64_t seq = seq_.load(std::memory_order_relaxed);
    if ((seq & 1) != 0 || !seq_.compare_exchange_strong(
                              seq, seq + 1, std::memory_order_acquire)) {
      return SteadyNs();
    }
    const Pair now = ReadPair();
    const uint64_t anchor_tsc = anchor_tsc_.load(std::memory_order_relaxed);
    const int64_t anchor_ns = anchor_ns_.load(std::memory_order_relaxed);
    mode = mode_.load(std::memory_order_relaxed);
    if (mode == kTsc) {
      // Check the bound the old base gave at this instant.
      const double ticks = static_cast<double>(
          now.tsc - base_tsc_.load(std::memory_order_relaxed));
      const double bound =
          static_cast<double>(base_ns_.load(std::memory_order_relaxed)) +
          ticks * static_cast<double>(mult_.load(std::memory_order_relaxed)) /
              4294967296.0 +
          static_cast<double>(kSlackNs);
      if (bound < static_cast<double>(now.before) || now.tsc < anchor_tsc) {
        mode_.store(kOff, std::memory_order_release);
        seq_.store(seq + 2, std::memory_order_release);
        return now.ns;
      }
    } else if (now.ns - anchor_ns < kCalibrateNs) {
      seq_.store(seq + 2, std::memory_order_release);
      return now.ns;  // still measuring
    }
    if (now.tsc <= anchor_tsc) {  // the TSC did not move: not usable
      mode_.store(kOff, std::memory_order_release);
      seq_.store(seq + 2, std::memory_order_release);
      return now.ns;
    }
    const double ns_per_tick = static_cast<double>(now.ns - anchor_ns) /
                               static_cast<double>(now.tsc - anchor_tsc);
    base_tsc_.store(now.tsc, std::memory_order_relaxed);
    base_ns_.store(now.ns, std::memory_order_relaxed);
    mult_.store(
        static_cast<uint64_t>(ns_per_tick * (1 + kRateSlack) * 4294967296.0),
        std::memory_order_relaxed);
    refresh_ticks_.store(
        static_cast<uint64_t>(static_cast<double>(kRefreshNs) / ns_per_tick),
        std::memory_order_relaxed);
    seq_.store(seq + 2, std::memory_order_release);
    if (mode != kTsc) mode_.store(kTsc, std::memory_order_release);
    return now.ns;
  }

  std::atomic<int> mode_{kUnknown};
  std::atomic<uint64_t> seq_{0};  // odd while one thread updates the fields
  std::atomic<uint64_t> anchor_tsc_{0};
  std::atomic<int64_t> anchor_ns_{0};
  std::atomic<uint64_t> base_tsc_{0};
  std::atomic<int64_t> base_ns_{0};
  std::atomic<uint64_t> mult_{0};  // ns per tick * (1 + kRateSlack), * 2^32
  std::atomic<uint64_t> refresh_ticks_{0};
};

ABSL_CONST_INIT Calibration calibration;

}  // namespace

int64_t SteadyNowNotBeforeNs() { return calibration.Now(); }

bool FastClockUsesTsc() { return calibration.UsesTsc(); }

}  // namespace timingwheel::internal
