// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// metrics_text.h: a wheel's Stats in the Prometheus text exposition format,
// version 0.0.4, which Prometheus and the scrapers compatible with it read.
// No client library is needed: serve the string at your metrics endpoint
// with the header `Content-Type: text/plain; version=0.0.4`.
//
// Example:
//
//   std::string body = timingwheel::MetricsText(wheel->GetStats());
//
//   // Several wheels in one exposition, told apart by a `wheel` label:
//   std::string both = timingwheel::MetricsText(
//       {{"rpc", rpc_wheel->GetStats()}, {"cache", cache_wheel->GetStats()}});
//
// The metrics, each with its # HELP and # TYPE lines; durations in seconds:
//   name                                type       from Stats
//   timingwheel_timers_scheduled_total  counter    scheduled
//   timingwheel_timers_fired_total      counter    fired
//   timingwheel_timers_stopped_total    counter    stopped
//   timingwheel_timers_cancelled_total  counter    cancelled
//   timingwheel_callbacks_thrown_total  counter    callbacks_thrown
//   timingwheel_schedulers_thrown_total counter    schedulers_thrown
//   timingwheel_executor_threw_total    counter    executor_threw
//   timingwheel_executor_dropped_total  counter    executor_dropped
//   timingwheel_timers_pending          gauge      pending
//   timingwheel_worker_queue_depth      gauge      worker_queue_depth
//   timingwheel_lateness_seconds        histogram  lateness_buckets (_bucket,
//                                                  one per LatenessBucket,
//                                                  le="+Inf" last),
//                                                  lateness_sum (_sum),
//                                                  fired (_count)
//   timingwheel_lateness_max_seconds    gauge      lateness_max
//   timingwheel_recent_lateness_seconds gauge      recent.lateness_p50,
//                                                  _p99, _p999 and _max as
//                                                  quantile="0.5", "0.99",
//                                                  "0.999" and "1"
//   timingwheel_recent_timers_fired     gauge      recent.fired
//   timingwheel_recent_window_seconds   gauge      recent.span
//   timingwheel_handoffs_total          counter    handoffs
//   timingwheel_handoff_seconds         gauge      handoff_p50, _p99 and
//                                                  _max as quantile="0.5",
//                                                  "0.99" and "1"
//
// The counters and the histogram cover the wheel's whole life: let the
// monitoring system take rates and quantiles over the time it wants
// (PromQL: rate(timingwheel_timers_fired_total[5m]),
// histogram_quantile(0.99, rate(timingwheel_lateness_seconds_bucket[5m]))).
// The recent_* gauges are the last minute as GetStats saw it (see
// RecentStats), for a dashboard that reads values as they are.
//
// Thread-safety: a function of its arguments only; call it from any thread.

#ifndef TIMINGWHEEL_METRICS_TEXT_H_
#define TIMINGWHEEL_METRICS_TEXT_H_

#include <string>
#include <utility>
#include <vector>

#include "timingwheel/export.h"
#include "timingwheel/options.h"

namespace timingwheel {

// `stats` as a Prometheus text exposition, with no labels.
TIMINGWHEEL_EXPORT std::string MetricsText(const Stats& stats);

// The Stats of several wheels as one exposition: each sample is labelled
// wheel="<name>" (escaped as the format requires), the samples of one metric
// together after its # HELP and # TYPE lines, in the order given.
TIMINGWHEEL_EXPORT std::string MetricsText(
    const std::vector<std::pair<std::string, Stats>>& wheels);

}  // namespace timingwheel

#endif  // TIMINGWHEEL_METRICS_TEXT_H_
