// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// cli_report.cc: derives rates and the verdict from a `RunResults`, and prints
// them as text or JSON (see cli_report.h). The JSON is written by hand, with a
// tiny object builder, so that the tool needs no JSON library.

#include "cli_report.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace timingwheel::cli {
namespace {

// ---------------------------------------------------------------------------
// Derived numbers, shared by both formats.

// `count` events over `d`, per second; 0 when `d` is not positive.
double PerSecond(double count, absl::Duration d) {
  const double seconds = absl::ToDoubleSeconds(d);
  return seconds > 0 ? count / seconds : 0;
}

double ScheduleRate(const RunResults& r) {
  return PerSecond(static_cast<double>(r.scheduled), r.schedule_time);
}

// Timers per second coming due, from the first deadline to the last: n
// deadlines span n-1 gaps. Set by the load (about --timers / --window, or the
// scheduling rate if that is lower), not by how the wheel fires.
double DueRate(const RunResults& r) {
  if (r.scheduled < 2) return 0;
  return PerSecond(static_cast<double>(r.scheduled - 1), r.deadline_span);
}

// Fires per second from the first fire to the last. It follows DueRate while
// the wheel keeps up; below it, the wheel fell behind and this is the rate at
// which it ran the callbacks.
double FireRate(const RunResults& r) {
  if (r.fired < 2) return 0;
  return PerSecond(static_cast<double>(r.fired - 1), r.fire_span);
}

// Peak RSS growth over the baseline per scheduled timer; -1 if unknown.
int64_t RssBytesPerTimer(const RunResults& r) {
  if (r.peak_rss_bytes < 0 || r.baseline_rss_bytes < 0 || r.scheduled == 0) {
    return -1;
  }
  return (r.peak_rss_bytes - r.baseline_rss_bytes) / r.scheduled;
}

// ---------------------------------------------------------------------------
// Text.

// "850 ns", "612.3 us", "1.02 ms", "1.234 s"; sign kept for early fires.
std::string FormatLateness(absl::Duration d) {
  const int64_t ns = absl::ToInt64Nanoseconds(d);
  const double abs_ns = std::fabs(static_cast<double>(ns));
  if (abs_ns < 1e3) return absl::StrFormat("%d ns", ns);
  if (abs_ns < 1e6) return absl::StrFormat("%.1f us", ns / 1e3);
  if (abs_ns < 1e9) return absl::StrFormat("%.2f ms", ns / 1e6);
  return absl::StrFormat("%.3f s", ns / 1e9);
}

std::string FormatSeconds(absl::Duration d) {
  return absl::StrFormat("%.3f s", absl::ToDoubleSeconds(d));
}

std::string FormatBytes(int64_t bytes) {
  if (bytes < 0) return "n/a";
  if (bytes < 1024) return absl::StrFormat("%d B", bytes);
  if (bytes < 1024 * 1024) return absl::StrFormat("%.1f KiB", bytes / 1024.0);
  return absl::StrFormat("%.1f MiB", bytes / (1024.0 * 1024.0));
}

// A count that must be 0: flagged when it is not.
std::string FormatMustBeZero(int64_t count) {
  return count == 0 ? "0" : absl::StrCat(count, "  <-- must be 0");
}

void AppendSection(std::string& out, absl::string_view title) {
  absl::StrAppend(&out, "\n", title, "\n");
}

void AppendRow(std::string& out, absl::string_view label,
               absl::string_view value) {
  absl::StrAppendFormat(&out, "  %-26s %s\n", label, value);
}

void AppendOptions(std::string& out, const RunOptions& o) {
  AppendSection(out, "Options");
  AppendRow(out, "timers", absl::StrCat(o.timers));
  AppendRow(out, "threads", absl::StrCat(o.threads));
  AppendRow(out, "tick", absl::FormatDuration(o.tick));
  AppendRow(out, "wheel_size", absl::StrCat(o.wheel_size));
  AppendRow(
      out, "workers",
      o.workers == 0
          ? absl::StrCat("0 (hardware concurrency: ", o.workers_resolved, ")")
          : absl::StrCat(o.workers));
  AppendRow(out, "window", absl::FormatDuration(o.window));
  AppendRow(out, "min_delay", absl::FormatDuration(o.min_delay));
  AppendRow(out, "grace", absl::FormatDuration(o.grace));
  AppendRow(out, "seed", absl::StrCat(o.seed));
}

void AppendScheduling(std::string& out, const RunResults& r) {
  AppendSection(out, "Scheduling (AfterFunc, all threads)");
  AppendRow(out, "scheduled", absl::StrCat(r.scheduled));
  AppendRow(out, "failed", FormatMustBeZero(r.schedule_errors));
  if (r.schedule_errors > 0) {
    AppendRow(out, "first error", r.first_schedule_error);
  }
  AppendRow(out, "time", FormatSeconds(r.schedule_time));
  AppendRow(out, "rate", FormatRate(ScheduleRate(r)));
}

void AppendFiring(std::string& out, const RunResults& r) {
  AppendSection(out, "Firing");
  AppendRow(out, "fired", absl::StrCat(r.fired));
  AppendRow(out, "first to last deadline", FormatSeconds(r.deadline_span));
  AppendRow(out, "first to last fire", FormatSeconds(r.fire_span));
  AppendRow(out, "due rate", FormatRate(DueRate(r)));
  AppendRow(out, "fire rate", FormatRate(FireRate(r)));
  if (r.gave_up) AppendRow(out, "gave up waiting", "yes (grace exceeded)");
}

void AppendLateness(std::string& out, const LatenessStats& l) {
  AppendSection(out, "Lateness (callback start - deadline, first fires)");
  if (l.count == 0) {
    AppendRow(out, "(no timer fired)", "");
    return;
  }
  AppendRow(out, "min", FormatLateness(l.min));
  AppendRow(out, "p50", FormatLateness(l.p50));
  AppendRow(out, "p99", FormatLateness(l.p99));
  AppendRow(out, "p99.9", FormatLateness(l.p999));
  AppendRow(out, "max", FormatLateness(l.max));
}

void AppendCorrectness(std::string& out, const RunResults& r) {
  AppendSection(out, "Correctness");
  AppendRow(out, "early fires", FormatMustBeZero(r.early));
  AppendRow(out, "lost (never fired)", FormatMustBeZero(r.lost));
  AppendRow(out, "doubled (fired > once)", FormatMustBeZero(r.doubled));
  AppendRow(out, "Pending() before Shutdown",
            absl::StrCat(r.pending_before_shutdown));
  AppendRow(out, "cancelled by Shutdown",
            absl::StrCat(r.cancelled_by_shutdown));
}

void AppendMemory(std::string& out, const RunResults& r) {
  AppendSection(out, "Memory");
  AppendRow(out, "peak RSS (VmHWM)", FormatBytes(r.peak_rss_bytes));
  AppendRow(out, "baseline RSS", FormatBytes(r.baseline_rss_bytes));
  AppendRow(out, "(peak - baseline)/timer", FormatBytes(RssBytesPerTimer(r)));
}

// ---------------------------------------------------------------------------
// JSON.

std::string JsonString(absl::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          absl::StrAppendFormat(&out, "\\u%04x", static_cast<int>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// Builds one JSON object, members in insertion order.
class JsonObject {
 public:
  JsonObject& Add(absl::string_view key, int64_t value) {
    return AddRaw(key, absl::StrCat(value));
  }
  JsonObject& Add(absl::string_view key, int value) {
    return AddRaw(key, absl::StrCat(value));
  }
  JsonObject& Add(absl::string_view key, uint64_t value) {
    return AddRaw(key, absl::StrCat(value));
  }
  JsonObject& Add(absl::string_view key, double value) {
    return AddRaw(key, std::isfinite(value) ? absl::StrFormat("%.3f", value)
                                            : std::string("null"));
  }
  JsonObject& Add(absl::string_view key, bool value) {
    return AddRaw(key, value ? "true" : "false");
  }
  JsonObject& Add(absl::string_view key, absl::string_view value) {
    return AddRaw(key, JsonString(value));
  }
  JsonObject& AddNanos(absl::string_view key, absl::Duration d) {
    return Add(key, absl::ToInt64Nanoseconds(d));
  }
  JsonObject& Add(absl::string_view key, const JsonObject& value) {
    return AddRaw(key, value.str());
  }
  // `json` must already be valid JSON.
  JsonObject& AddRaw(absl::string_view key, absl::string_view json) {
    absl::StrAppend(&members_, members_.empty() ? "" : ",", JsonString(key),
                    ":", json);
    return *this;
  }
  std::string str() const { return absl::StrCat("{", members_, "}"); }

 private:
  std::string members_;
};

JsonObject OptionsJson(const RunOptions& o) {
  JsonObject j;
  j.Add("timers", o.timers)
      .Add("threads", o.threads)
      .AddNanos("tick_ns", o.tick)
      .Add("wheel_size", o.wheel_size)
      .Add("workers", o.workers)
      .Add("workers_resolved", o.workers_resolved)
      .AddNanos("window_ns", o.window)
      .AddNanos("min_delay_ns", o.min_delay)
      .AddNanos("grace_ns", o.grace)
      .Add("seed", o.seed);
  return j;
}

JsonObject SchedulingJson(const RunResults& r) {
  JsonObject j;
  j.Add("scheduled", r.scheduled)
      .Add("failed", r.schedule_errors)
      .Add("first_error", r.first_schedule_error)
      .AddNanos("time_ns", r.schedule_time)
      .Add("timers_per_second", ScheduleRate(r));
  return j;
}

JsonObject FiringJson(const RunResults& r) {
  JsonObject j;
  j.Add("fired", r.fired)
      .AddNanos("first_to_last_deadline_ns", r.deadline_span)
      .AddNanos("first_to_last_ns", r.fire_span)
      .Add("due_timers_per_second", DueRate(r))
      .Add("timers_per_second", FireRate(r))
      .Add("gave_up", r.gave_up);
  return j;
}

// Lateness percentiles in nanoseconds; `null` each when nothing fired.
JsonObject LatenessJson(const LatenessStats& l) {
  const auto ns = [&l](absl::Duration d) {
    return l.count > 0 ? absl::StrCat(absl::ToInt64Nanoseconds(d))
                       : std::string("null");
  };
  JsonObject j;
  j.Add("count", l.count)
      .AddRaw("min_ns", ns(l.min))
      .AddRaw("p50_ns", ns(l.p50))
      .AddRaw("p99_ns", ns(l.p99))
      .AddRaw("p999_ns", ns(l.p999))
      .AddRaw("max_ns", ns(l.max));
  return j;
}

JsonObject MemoryJson(const RunResults& r) {
  JsonObject j;
  j.Add("peak_rss_bytes", r.peak_rss_bytes)
      .Add("baseline_rss_bytes", r.baseline_rss_bytes)
      .Add("rss_bytes_per_timer", RssBytesPerTimer(r));
  return j;
}

}  // namespace

std::string FormatRate(double per_second) {
  if (per_second >= 1e6) {
    return absl::StrFormat("%.2fM timers/s", per_second / 1e6);
  }
  if (per_second >= 1e3) {
    return absl::StrFormat("%.1fk timers/s", per_second / 1e3);
  }
  return absl::StrFormat("%.0f timers/s", per_second);
}

bool Passed(const RunResults& r) {
  return r.early == 0 && r.lost == 0 && r.doubled == 0 &&
         r.schedule_errors == 0;
}

std::string FormatText(const RunResults& r) {
  std::string out =
      absl::StrFormat("timingwheel_cli: %d timers from %d thread(s) over %s\n",
                      r.options.timers, r.options.threads,
                      absl::FormatDuration(r.options.window));
  AppendOptions(out, r.options);
  AppendScheduling(out, r);
  AppendFiring(out, r);
  AppendLateness(out, r.lateness);
  AppendCorrectness(out, r);
  AppendMemory(out, r);
  absl::StrAppend(&out, "\nResult: ", Passed(r) ? "PASS" : "FAIL", "\n");
  return out;
}

std::string FormatJson(const RunResults& r) {
  JsonObject j;
  j.Add("options", OptionsJson(r.options))
      .Add("scheduling", SchedulingJson(r))
      .Add("firing", FiringJson(r))
      .Add("lateness", LatenessJson(r.lateness))
      .Add("early", r.early)
      .Add("lost", r.lost)
      .Add("doubled", r.doubled)
      .Add("pending_before_shutdown", r.pending_before_shutdown)
      .Add("cancelled_by_shutdown", r.cancelled_by_shutdown)
      .Add("memory", MemoryJson(r))
      .Add("passed", Passed(r));
  return j.str() + "\n";
}

}  // namespace timingwheel::cli
