// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// scheduler_internal.h: the schedules of scheduler.h as the wheel itself uses
// them. TimingWheel::Every is ScheduleFunc with a FixedRate: one schedule,
// one validation, errors named after the API function the user called.
// Defined in scheduler.cc.

#ifndef TIMINGWHEEL_LIB_BASE_SCHEDULER_INTERNAL_H_
#define TIMINGWHEEL_LIB_BASE_SCHEDULER_INTERNAL_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "timingwheel/scheduler.h"

namespace timingwheel::internal {

// FixedRate(period); `caller` ("FixedRate", "Every") begins its error message.
absl::StatusOr<std::unique_ptr<Scheduler>> NewFixedRate(absl::Duration period,
                                                        const char* caller);

}  // namespace timingwheel::internal

#endif  // TIMINGWHEEL_LIB_BASE_SCHEDULER_INTERNAL_H_
