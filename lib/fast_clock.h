// Copyright 2026 The timingwheel Authors.
//
// fast_clock.h: a cheap reading of std::chrono::steady_clock that is never
// behind it, for computing deadlines on the AfterFunc / Reset hot path.
//
// Why: on a VM a steady_clock read (vDSO clock_gettime) costs 25-35 ns, a
// third of an AfterFunc + Stop. Where the kernel itself keeps time with the
// TSC (clocksource "tsc": invariant and synchronized across CPUs), reading the
// TSC directly and scaling it costs about half that.
//
// The bet, and why it can never make a timer early: a deadline is `now + d`,
// and a timer is early only if `now` was taken as earlier than the real
// steady time. So this clock returns an UPPER bound of steady_clock::now():
//   base_ns + (tsc - base_tsc) * ns_per_tsc * (1 + kRateSlack) + kSlackNs
// where (base_tsc, base_ns) is a pair read TSC first, steady clock second (so
// base_ns is at or after the instant of base_tsc), the rate comes from the
// longest baseline seen (since the first call), kRateSlack (0.2 %) covers
// NTP's slew of CLOCK_MONOTONIC (at most 0.05 %) and kSlackNs the TSC read
// being reordered a little. The base is refreshed once its age passes 50 ms,
// so the bound is at most ~0.1 ms above the real time: a deadline may be up
// to 0.1 ms later than asked, never earlier. Each refresh checks the bound
// against a real reading and turns the fast path off for good if it ever
// failed.
//
// The workers use it for lateness too, which it can only overstate. Where an
// upper bound would mean early (is a bucket due, the worker's re-arm) the
// engine reads the real clock.
//
// Fallback: without the TSC clocksource (other kernels, other CPUs, the first
// 10 ms of the process while the rate is measured) it returns
// steady_clock::now() itself.
//
// Thread-safety: thread-safe, lock-free. The calibration is a sequence lock:
// readers retry nothing, they fall back to a real reading when a refresh is
// in progress; one refresher at a time (a CAS on the sequence). Memory
// ordering: the refresher publishes the fields (relaxed) between two release
// stores of the sequence; a reader loads the sequence (acquire), the fields,
// an acquire fence, and the sequence again.

#ifndef TIMINGWHEEL_LIB_FAST_CLOCK_H_
#define TIMINGWHEEL_LIB_FAST_CLOCK_H_

#include <cstdint>

namespace timingwheel::internal {

// Nanoseconds on std::chrono::steady_clock's epoch, at least the value
// steady_clock::now() has at the moment of the call, and less than 1 ms above
// it.
int64_t SteadyNowNotBeforeNs();

// Whether SteadyNowNotBeforeNs currently takes the TSC path (for tests and
// the benchmark report).
bool FastClockUsesTsc();

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_FAST_CLOCK_H_
