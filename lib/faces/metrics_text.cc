// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// metrics_text.cc: Stats as the Prometheus text exposition format 0.0.4 (see
// metrics_text.h). One table of metric families; each family prints its
// # HELP and # TYPE lines once, then its samples for every wheel given.
// Durations are printed as exact decimal seconds (to the nanosecond), counts
// as integers: no floating-point formatting is involved.

#include "timingwheel/metrics_text.h"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace timingwheel {
namespace {

// `d` in seconds, exactly to the nanosecond, with no trailing zeros:
// "0.000001023", "69", "+Inf".
std::string Seconds(absl::Duration d) {
  if (d == absl::InfiniteDuration()) return "+Inf";
  if (d == -absl::InfiniteDuration()) return "-Inf";
  std::string out = d < absl::ZeroDuration() ? "-" : "";
  absl::Duration rest;
  const int64_t seconds =
      std::llabs(absl::IDivDuration(d, absl::Seconds(1), &rest));
  absl::StrAppend(&out, seconds);
  int64_t ns = std::llabs(absl::ToInt64Nanoseconds(rest));
  if (ns == 0) return out;
  int digits = 9;
  while (ns % 10 == 0) {
    ns /= 10;
    --digits;
  }
  const std::string fraction = absl::StrCat(ns);
  absl::StrAppend(&out, ".",
                  std::string(digits - fraction.size(), '0') + fraction);
  return out;
}

// A label value as the format requires: backslash, double quote and line
// feed escaped.
std::string Escaped(absl::string_view value) {
  std::string out;
  for (const char c : value) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// Appends the sample `name{labels} value`: `wheel` is the wheel's label
// (`wheel="rpc"`, or empty), `extra` another (`le="0.5"`, or empty).
void AppendSample(std::string* out, absl::string_view name,
                  absl::string_view wheel, absl::string_view extra,
                  absl::string_view value) {
  absl::StrAppend(out, name);
  if (!wheel.empty() || !extra.empty()) {
    absl::StrAppend(out, "{", wheel,
                    !wheel.empty() && !extra.empty() ? "," : "", extra, "}");
  }
  absl::StrAppend(out, " ", value, "\n");
}

// The samples of one family for one wheel.
using SamplesFn = void (*)(std::string* out, absl::string_view name,
                           absl::string_view wheel, const Stats& stats);

struct Family {
  const char* name;
  const char* type;
  const char* help;
  SamplesFn samples;
};

// One sample, the count that `Member` points to.
template <int64_t Stats::*Member>
void Count(std::string* out, absl::string_view name, absl::string_view wheel,
           const Stats& stats) {
  AppendSample(out, name, wheel, "", absl::StrCat(stats.*Member));
}

void LatenessHistogram(std::string* out, absl::string_view name,
                       absl::string_view wheel, const Stats& stats) {
  const std::string bucket = absl::StrCat(name, "_bucket");
  for (const LatenessBucket& b : stats.lateness_buckets) {
    if (b.upper_bound == absl::InfiniteDuration()) continue;  // printed last
    AppendSample(out, bucket, wheel,
                 absl::StrCat("le=\"", Seconds(b.upper_bound), "\""),
                 absl::StrCat(b.count));
  }
  AppendSample(out, bucket, wheel, "le=\"+Inf\"", absl::StrCat(stats.fired));
  AppendSample(out, absl::StrCat(name, "_sum"), wheel, "",
               Seconds(stats.lateness_sum));
  AppendSample(out, absl::StrCat(name, "_count"), wheel, "",
               absl::StrCat(stats.fired));
}

void LatenessMax(std::string* out, absl::string_view name,
                 absl::string_view wheel, const Stats& stats) {
  AppendSample(out, name, wheel, "", Seconds(stats.lateness_max));
}

void RecentLateness(std::string* out, absl::string_view name,
                    absl::string_view wheel, const Stats& stats) {
  const std::pair<const char*, absl::Duration> quantiles[] = {
      {"0.5", stats.recent.lateness_p50},
      {"0.99", stats.recent.lateness_p99},
      {"0.999", stats.recent.lateness_p999},
      {"1", stats.recent.lateness_max},
  };
  for (const auto& [quantile, value] : quantiles) {
    AppendSample(out, name, wheel, absl::StrCat("quantile=\"", quantile, "\""),
                 Seconds(value));
  }
}

void HandOffWait(std::string* out, absl::string_view name,
                 absl::string_view wheel, const Stats& stats) {
  const std::pair<const char*, absl::Duration> quantiles[] = {
      {"0.5", stats.handoff_p50},
      {"0.99", stats.handoff_p99},
      {"1", stats.handoff_max},
  };
  for (const auto& [quantile, value] : quantiles) {
    AppendSample(out, name, wheel, absl::StrCat("quantile=\"", quantile, "\""),
                 Seconds(value));
  }
}

void RecentFired(std::string* out, absl::string_view name,
                 absl::string_view wheel, const Stats& stats) {
  AppendSample(out, name, wheel, "", absl::StrCat(stats.recent.fired));
}

void RecentWindow(std::string* out, absl::string_view name,
                  absl::string_view wheel, const Stats& stats) {
  AppendSample(out, name, wheel, "", Seconds(stats.recent.span));
}

constexpr Family kFamilies[] = {
    {"timingwheel_timers_scheduled_total", "counter",
     "Timers armed: AfterFunc, Every, ScheduleFunc, At, AtClockTime, and "
     "Reset of a timer not pending.",
     Count<&Stats::scheduled>},
    {"timingwheel_timers_fired_total", "counter",
     "Callbacks started; each run of a periodic timer counts.",
     Count<&Stats::fired>},
    {"timingwheel_timers_stopped_total", "counter",
     "Stop calls that returned true, and tasks the executor destroyed unrun.",
     Count<&Stats::stopped>},
    {"timingwheel_timers_cancelled_total", "counter",
     "Pending timers cancelled by Shutdown or CancelAll.",
     Count<&Stats::cancelled>},
    {"timingwheel_callbacks_thrown_total", "counter",
     "Callbacks that threw; the exception was caught.",
     Count<&Stats::callbacks_thrown>},
    {"timingwheel_schedulers_thrown_total", "counter",
     "Schedulers that threw when asked for the next run; their timers ended.",
     Count<&Stats::schedulers_thrown>},
    {"timingwheel_executor_threw_total", "counter",
     "Calls of Options::executor that threw.", Count<&Stats::executor_threw>},
    {"timingwheel_executor_dropped_total", "counter",
     "Tasks Options::executor destroyed unrun; their timers count as stopped.",
     Count<&Stats::executor_dropped>},
    {"timingwheel_timers_pending", "gauge",
     "Timers scheduled and not yet fired or stopped; periodic ones until "
     "stopped.",
     Count<&Stats::pending>},
    {"timingwheel_worker_queue_depth", "gauge",
     "Due callbacks waiting for a free worker.",
     Count<&Stats::worker_queue_depth>},
    {"timingwheel_lateness_seconds", "histogram",
     "How late callbacks started (start minus deadline, by the wheel's "
     "clock), since the wheel was created.",
     LatenessHistogram},
    {"timingwheel_lateness_max_seconds", "gauge",
     "The greatest lateness of a callback since the wheel was created.",
     LatenessMax},
    {"timingwheel_recent_lateness_seconds", "gauge",
     "Lateness quantiles of the callbacks started in the last minute "
     "(timingwheel_recent_window_seconds), within 12.5%; quantile 1 is the "
     "exact maximum; 0 when none started.",
     RecentLateness},
    {"timingwheel_recent_timers_fired", "gauge",
     "Callbacks started in the last minute "
     "(timingwheel_recent_window_seconds).",
     RecentFired},
    {"timingwheel_recent_window_seconds", "gauge",
     "The span the timingwheel_recent_ metrics cover: the last minute and "
     "the part of the current 10 s slot gone by (less for a younger wheel).",
     RecentWindow},
    {"timingwheel_handoffs_total", "counter",
     "Arms (new timers, Resets, periodic runs) the wheel's advancer took "
     "from the calling threads.",
     Count<&Stats::handoffs>},
    {"timingwheel_handoff_seconds", "gauge",
     "How long those arms waited, from the call to the advancer's take, by "
     "the wheel's clock, since the wheel was created; within 12.5%, quantile "
     "1 is the exact maximum; 0 when none.",
     HandOffWait},
};

// The exposition of the wheels given as (label, stats): each sample of a
// wheel carries its label (none when empty).
std::string Exposition(
    const std::vector<std::pair<std::string, const Stats*>>& wheels) {
  std::string out;
  for (const Family& family : kFamilies) {
    absl::StrAppend(&out, "# HELP ", family.name, " ", family.help, "\n",
                    "# TYPE ", family.name, " ", family.type, "\n");
    for (const auto& [label, stats] : wheels) {
      family.samples(&out, family.name, label, *stats);
    }
  }
  return out;
}

}  // namespace

std::string MetricsText(const Stats& stats) {
  return Exposition({{"", &stats}});
}

std::string MetricsText(
    const std::vector<std::pair<std::string, Stats>>& wheels) {
  std::vector<std::pair<std::string, const Stats*>> labelled;
  labelled.reserve(wheels.size());
  for (const auto& [name, stats] : wheels) {
    labelled.emplace_back(absl::StrCat("wheel=\"", Escaped(name), "\""),
                          &stats);
  }
  return Exposition(labelled);
}

}  // namespace timingwheel
