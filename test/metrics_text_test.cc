// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// metrics_text_test.cc: MetricsText (metrics_text.h). A small parser of the
// Prometheus text format 0.0.4 reads the exposition back and checks it as a
// scraper would: every line a # HELP or # TYPE comment or a sample
// `name{labels} value`, names and labels valid, each family's HELP and TYPE
// once and before its samples, a family's lines together, histogram buckets
// cumulative up to le="+Inf" equal to _count; then every value against the
// Stats of a wheel on a ManualClock.

#include "timingwheel/metrics_text.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "gtest/gtest-spi.h"
#include "gtest/gtest.h"
#include "test_util.h"
#include "timingwheel/timingwheel.h"

namespace timingwheel {
namespace {

using Labels = std::map<std::string, std::string>;

struct Sample {
  std::string name;
  Labels labels;
  double value = 0;
  std::string text;  // the value as printed
};

struct Family {
  std::string help;
  std::string type;
  std::vector<Sample> samples;
};

// The families of an exposition by name, and the order they came in.
struct Exposition {
  std::map<std::string, Family> families;
  std::vector<std::string> order;
};

bool IsMetricName(absl::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        c == '_' || c == ':';
    if (!letter && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

bool IsLabelName(absl::string_view name) {
  return IsMetricName(name) && !absl::StrContains(name, ':') &&
         !absl::StartsWith(name, "__");
}

// A float as the format writes one (Go's ParseFloat: also +Inf, -Inf, NaN).
std::optional<double> ParseValue(const std::string& text) {
  if (text == "+Inf") return HUGE_VAL;
  if (text == "-Inf") return -HUGE_VAL;
  if (text == "NaN") return NAN;
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return std::nullopt;
  return value;
}

// The family a sample belongs to: its name, or for a histogram's or a
// summary's samples the name without _bucket / _sum / _count.
std::string FamilyOf(const Exposition& exposition, const std::string& name) {
  for (absl::string_view suffix : {"_bucket", "_sum", "_count"}) {
    if (!absl::EndsWith(name, suffix)) continue;
    const std::string base = name.substr(0, name.size() - suffix.size());
    auto it = exposition.families.find(base);
    if (it == exposition.families.end()) continue;
    if (it->second.type == "histogram" ||
        (it->second.type == "summary" && suffix != "_bucket")) {
      return base;
    }
  }
  return name;
}

// Parses `{a="x",b="y"}` from `line` at `*pos` (just after the name).
// Returns false on a syntax error.
bool ParseLabels(const std::string& line, size_t* pos, Labels* labels) {
  if (*pos >= line.size() || line[*pos] != '{') return true;
  ++*pos;
  while (*pos < line.size() && line[*pos] != '}') {
    const size_t eq = line.find('=', *pos);
    if (eq == std::string::npos) return false;
    const std::string name = line.substr(*pos, eq - *pos);
    if (!IsLabelName(name) || eq + 1 >= line.size() || line[eq + 1] != '"') {
      return false;
    }
    std::string value;
    size_t i = eq + 2;
    for (; i < line.size() && line[i] != '"'; ++i) {
      if (line[i] != '\\') {
        value += line[i];
        continue;
      }
      if (++i >= line.size()) return false;
      switch (line[i]) {
        case '\\':
          value += '\\';
          break;
        case '"':
          value += '"';
          break;
        case 'n':
          value += '\n';
          break;
        default:
          return false;
      }
    }
    if (i >= line.size()) return false;                      // no closing quote
    if (!labels->emplace(name, value).second) return false;  // twice
    *pos = i + 1;
    if (*pos < line.size() && line[*pos] == ',') ++*pos;
  }
  if (*pos >= line.size()) return false;
  ++*pos;  // '}'
  return true;
}

// Parses `text` into `*out`, adding a test failure for each rule it breaks
// (and stopping at a line it cannot read).
void ParseInto(const std::string& text, Exposition* exposition) {
  Exposition& out = *exposition;
  EXPECT_TRUE(absl::EndsWith(text, "\n")) << "the last line is not ended";
  std::string current;  // the family whose lines are being read
  std::set<std::pair<std::string, Labels>> seen_samples;
  for (absl::string_view view : absl::StrSplit(text, '\n')) {
    const std::string line(view);
    if (line.empty()) continue;  // after the last '\n'
    SCOPED_TRACE(line);
    std::string family_name;
    if (absl::StartsWith(line, "#")) {
      const std::vector<std::string> words =
          absl::StrSplit(line, absl::MaxSplits(' ', 3));
      ASSERT_GE(words.size(), 3u);
      ASSERT_EQ(words[0], "#");
      ASSERT_TRUE(words[1] == "HELP" || words[1] == "TYPE") << words[1];
      family_name = words[2];
      EXPECT_TRUE(IsMetricName(family_name));
      ASSERT_EQ(words.size(), 4u) << "no text after the name";
      Family& family = out.families[family_name];
      EXPECT_TRUE(family.samples.empty()) << "HELP or TYPE after a sample";
      if (words[1] == "HELP") {
        EXPECT_TRUE(family.help.empty()) << "a second HELP";
        EXPECT_FALSE(absl::StrContains(words[3], '\\'));
        family.help = words[3];
      } else {
        EXPECT_TRUE(family.type.empty()) << "a second TYPE";
        const std::set<std::string> types = {"counter", "gauge", "histogram",
                                             "summary", "untyped"};
        EXPECT_EQ(types.count(words[3]), 1u) << words[3];
        family.type = words[3];
      }
    } else {
      Sample sample;
      size_t pos = line.find_first_of("{ ");
      ASSERT_NE(pos, std::string::npos);
      sample.name = line.substr(0, pos);
      EXPECT_TRUE(IsMetricName(sample.name));
      ASSERT_TRUE(ParseLabels(line, &pos, &sample.labels));
      ASSERT_LT(pos, line.size());
      ASSERT_EQ(line[pos], ' ');
      // One value and no timestamp.
      sample.text = line.substr(pos + 1);
      const std::optional<double> value = ParseValue(sample.text);
      ASSERT_TRUE(value.has_value()) << sample.text;
      sample.value = *value;
      family_name = FamilyOf(out, sample.name);
      auto it = out.families.find(family_name);
      ASSERT_NE(it, out.families.end()) << "a sample with no HELP or TYPE";
      EXPECT_FALSE(it->second.help.empty()) << "no HELP";
      EXPECT_FALSE(it->second.type.empty()) << "no TYPE";
      EXPECT_TRUE(seen_samples.emplace(sample.name, sample.labels).second)
          << "the same sample twice";
      it->second.samples.push_back(std::move(sample));
    }
    if (family_name != current) {
      for (const std::string& earlier : out.order) {
        EXPECT_NE(earlier, family_name) << "the family's lines are apart";
      }
      out.order.push_back(family_name);
      current = family_name;
    }
  }
}

Exposition Parse(const std::string& text) {
  Exposition out;
  ParseInto(text, &out);
  return out;
}

struct Histogram {
  std::vector<std::pair<double, double>> buckets;  // (le, count)
  std::optional<double> sum;
};

// The histogram `name` of the wheel labelled `wheel` (empty: no label):
// checks that its buckets are in increasing order of `le`, cumulative, and
// end at le="+Inf" with _count, and that it has a _sum.
Histogram ReadHistogram(const Family& family, const std::string& name,
                        const Labels& wheel) {
  Histogram histogram;
  std::vector<std::pair<double, double>>& buckets = histogram.buckets;
  std::optional<double>& sum = histogram.sum;
  std::optional<double> count;
  for (const Sample& sample : family.samples) {
    Labels labels = sample.labels;
    std::string le;
    if (auto it = labels.find("le"); it != labels.end()) {
      le = it->second;
      labels.erase(it);
    }
    if (labels != wheel) continue;
    if (sample.name == name + "_bucket") {
      const std::optional<double> bound = ParseValue(le);
      EXPECT_TRUE(bound.has_value()) << le;
      if (!buckets.empty()) {
        EXPECT_GT(*bound, buckets.back().first) << "le not increasing";
        EXPECT_GE(sample.value, buckets.back().second) << "not cumulative";
      }
      buckets.emplace_back(*bound, sample.value);
    } else if (sample.name == name + "_sum") {
      sum = sample.value;
    } else if (sample.name == name + "_count") {
      count = sample.value;
    } else {
      ADD_FAILURE() << "in histogram " << name << ": " << sample.name;
    }
  }
  EXPECT_TRUE(sum.has_value());
  EXPECT_TRUE(count.has_value());
  if (buckets.empty() || !count.has_value()) {
    ADD_FAILURE() << "no buckets or no _count";
    return histogram;
  }
  EXPECT_EQ(buckets.back().first, HUGE_VAL) << "the last le is not +Inf";
  EXPECT_EQ(buckets.back().second, *count);
  return histogram;
}

// The one sample of `family` with labels `labels`.
const Sample& Only(const Exposition& exposition, const std::string& family,
                   const Labels& labels) {
  static const Sample kNone{};
  auto it = exposition.families.find(family);
  if (it == exposition.families.end()) {
    ADD_FAILURE() << "no family " << family;
    return kNone;
  }
  const Sample* found = nullptr;
  for (const Sample& sample : it->second.samples) {
    if (sample.labels != labels) continue;
    EXPECT_EQ(found, nullptr) << family << ": two samples";
    found = &sample;
  }
  if (found == nullptr) {
    ADD_FAILURE() << family << ": no sample";
    return kNone;
  }
  return *found;
}

double Seconds(absl::Duration d) { return absl::ToDoubleSeconds(d); }

// Checks every value of the wheel labelled `wheel` in `exposition` against
// `stats`.
void ExpectMatches(const Exposition& exposition, const Stats& stats,
                   const Labels& wheel) {
  const std::pair<const char*, int64_t> counts[] = {
      {"timingwheel_timers_scheduled_total", stats.scheduled},
      {"timingwheel_timers_fired_total", stats.fired},
      {"timingwheel_timers_stopped_total", stats.stopped},
      {"timingwheel_timers_cancelled_total", stats.cancelled},
      {"timingwheel_callbacks_thrown_total", stats.callbacks_thrown},
      {"timingwheel_schedulers_thrown_total", stats.schedulers_thrown},
      {"timingwheel_executor_threw_total", stats.executor_threw},
      {"timingwheel_executor_dropped_total", stats.executor_dropped},
      {"timingwheel_timers_pending", stats.pending},
      {"timingwheel_worker_queue_depth", stats.worker_queue_depth},
      {"timingwheel_recent_timers_fired", stats.recent.fired},
      {"timingwheel_handoffs_total", stats.handoffs},
  };
  for (const auto& [name, value] : counts) {
    const Sample& sample = Only(exposition, name, wheel);
    EXPECT_EQ(sample.text, std::to_string(value)) << name;
    const std::string& type = exposition.families.at(name).type;
    EXPECT_EQ(type, absl::EndsWith(name, "_total") ? "counter" : "gauge")
        << name;
  }
  const std::pair<const char*, absl::Duration> durations[] = {
      {"timingwheel_lateness_max_seconds", stats.lateness_max},
      {"timingwheel_recent_window_seconds", stats.recent.span},
  };
  for (const auto& [name, value] : durations) {
    EXPECT_EQ(Only(exposition, name, wheel).value, Seconds(value)) << name;
  }
  const std::pair<const char*, absl::Duration> quantiles[] = {
      {"0.5", stats.recent.lateness_p50},
      {"0.99", stats.recent.lateness_p99},
      {"0.999", stats.recent.lateness_p999},
      {"1", stats.recent.lateness_max},
  };
  for (const auto& [quantile, value] : quantiles) {
    Labels labels = wheel;
    labels["quantile"] = quantile;
    EXPECT_EQ(
        Only(exposition, "timingwheel_recent_lateness_seconds", labels).value,
        Seconds(value))
        << quantile;
  }
  const std::pair<const char*, absl::Duration> handoff_quantiles[] = {
      {"0.5", stats.handoff_p50},
      {"0.99", stats.handoff_p99},
      {"1", stats.handoff_max},
  };
  for (const auto& [quantile, value] : handoff_quantiles) {
    Labels labels = wheel;
    labels["quantile"] = quantile;
    EXPECT_EQ(Only(exposition, "timingwheel_handoff_seconds", labels).value,
              Seconds(value))
        << quantile;
  }

  const Family& lateness =
      exposition.families.at("timingwheel_lateness_seconds");
  EXPECT_EQ(lateness.type, "histogram");
  const Histogram histogram =
      ReadHistogram(lateness, "timingwheel_lateness_seconds", wheel);
  // Stats' buckets, whose last (if any) is +Inf, and the +Inf one in any
  // case: it counts every callback.
  std::vector<std::pair<double, double>> expected;
  for (const LatenessBucket& bucket : stats.lateness_buckets) {
    if (bucket.upper_bound == absl::InfiniteDuration()) continue;
    expected.emplace_back(Seconds(bucket.upper_bound), bucket.count);
  }
  expected.emplace_back(HUGE_VAL, stats.fired);
  EXPECT_EQ(histogram.buckets, expected);
  EXPECT_EQ(histogram.sum, Seconds(stats.lateness_sum));
}

// The parser is the instrument of these tests: it flags what a scraper
// would refuse, one rule at a time.
TEST(MetricsTextParserTest, FlagsBrokenExpositions) {
  EXPECT_FATAL_FAILURE(Parse("a 1\n"), "no HELP or TYPE");
  EXPECT_FATAL_FAILURE(Parse("# HELP a h\n# TYPE a gauge\na 1 1700000000\n"),
                       "1 1700000000");
  EXPECT_FATAL_FAILURE(Parse("# HELP a h\n# TYPE a gauge\na{b=\"1} 1\n"),
                       "ParseLabels");
  EXPECT_NONFATAL_FAILURE(Parse("# HELP a h\n# TYPE a gauge\na 1"),
                          "not ended");
  EXPECT_NONFATAL_FAILURE(Parse("# HELP 1a h\n"), "IsMetricName");
  EXPECT_NONFATAL_FAILURE(Parse("# HELP a h\n# TYPE a gauge\n"
                                "# HELP b h\n# TYPE b gauge\n"
                                "b 1\na{x=\"1\"} 2\n"),
                          "apart");
  EXPECT_NONFATAL_FAILURE(
      Parse("# HELP a h\n# TYPE a gauge\n# TYPE a counter\n"), "a second TYPE");
  static const char kNotCumulative[] =
      "# HELP h h\n# TYPE h histogram\n"
      "h_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n";
  EXPECT_NONFATAL_FAILURE(
      ReadHistogram(Parse(kNotCumulative).families.at("h"), "h", {}),
      "not cumulative");
  static const char kCountDiffers[] =
      "# HELP h h\n# TYPE h histogram\n"
      "h_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 3\nh_sum 1\nh_count 4\n";
  EXPECT_NONFATAL_FAILURE(
      ReadHistogram(Parse(kCountDiffers).families.at("h"), "h", {}), "count");
  static const char kNoInf[] =
      "# HELP h h\n# TYPE h histogram\n"
      "h_bucket{le=\"1\"} 2\nh_bucket{le=\"2\"} 2\nh_sum 1\nh_count 2\n";
  EXPECT_NONFATAL_FAILURE(
      ReadHistogram(Parse(kNoInf).families.at("h"), "h", {}), "+Inf");
}

// A wheel on a ManualClock with a little of everything: late callbacks, a
// throwing one, a periodic timer, stopped and pending timers.
class MetricsTextTest : public ManualWheelTest<1> {
 protected:
  void SetUp() override {
    Options options;
    options.workers = 1;
    options.on_failure = [](const Failure&) {};  // counted; no log line
    Start(std::move(options));
    for (int ms = 1; ms <= 5; ++ms) {
      ASSERT_TRUE(wheel_->AfterFunc(absl::Milliseconds(ms), [] {}).ok());
    }
    ASSERT_TRUE(
        wheel_
            ->AfterFunc(absl::Milliseconds(2),
                        [] { throw std::runtime_error("callback threw"); })
            .ok());
    Timer stopped = wheel_->AfterFunc(absl::Seconds(1), [] {}).value();
    ASSERT_TRUE(stopped.Stop());
    every_ = wheel_->Every(absl::Seconds(3), [] {}).value();
    ASSERT_TRUE(wheel_->AfterFunc(absl::Hours(1), [] {}).ok());
    Advance(absl::Milliseconds(20));  // six callbacks late, one threw
    // Whole seconds: Every's runs start on time.
    for (int s = 1; s <= 75; ++s) AdvanceTo(absl::Seconds(s));
    Advance(absl::Milliseconds(500));
  }

  Timer every_;
};

TEST_F(MetricsTextTest, ParsesAndMatchesGetStats) {
  const Stats stats = wheel_->GetStats();
  ASSERT_EQ(stats.callbacks_thrown, 1);
  ASSERT_GT(stats.lateness_max, absl::ZeroDuration());
  ASSERT_GT(stats.recent.fired, 0);
  ASSERT_LT(stats.recent.fired, stats.fired);
  ASSERT_GT(stats.handoffs, 0);
  const std::string text = MetricsText(stats);
  const Exposition exposition = Parse(text);
  EXPECT_EQ(exposition.order.size(), 17u);
  ExpectMatches(exposition, stats, {});
  // At rest, the exposition of a new snapshot is the same.
  EXPECT_EQ(MetricsText(wheel_->GetStats()), text);
}

TEST_F(MetricsTextTest, DurationsAreExactDecimalSeconds) {
  const std::string text = MetricsText(wheel_->GetStats());
  EXPECT_TRUE(absl::StrContains(
      text, "timingwheel_lateness_seconds_bucket{le=\"0.000001023\"} "));
  EXPECT_TRUE(absl::StrContains(
      text, "timingwheel_lateness_seconds_bucket{le=\"68.719476735\"} "));
  EXPECT_TRUE(
      absl::StrContains(text, "timingwheel_recent_window_seconds 65.5\n"));
  // 19, 18, 17, 16, 15 and 18 ms late (the callback that threw too).
  EXPECT_TRUE(
      absl::StrContains(text, "timingwheel_lateness_seconds_sum 0.103\n"));
  EXPECT_TRUE(
      absl::StrContains(text, "timingwheel_lateness_max_seconds 0.019\n"));
}

TEST_F(MetricsTextTest, SeveralWheelsAreLabelled) {
  auto other = OneWorkerWheel(clock_);
  ASSERT_TRUE(other->AfterFunc(absl::Minutes(5), [] {}).ok());
  const std::string odd_name = "odd \"name\" with \\ and\nline feed";
  const Stats first = wheel_->GetStats();
  const Stats second = other->GetStats();
  const Exposition exposition =
      Parse(MetricsText({{"rpc", first}, {odd_name, second}}));
  EXPECT_EQ(exposition.order.size(), 17u);
  ExpectMatches(exposition, first, {{"wheel", "rpc"}});
  ExpectMatches(exposition, second, {{"wheel", odd_name}});
  for (const auto& [name, family] : exposition.families) {
    for (const Sample& sample : family.samples) {
      EXPECT_EQ(sample.labels.count("wheel"), 1u) << sample.name;
    }
  }
}

TEST(MetricsTextEmptyTest, EmptyStatsAreAValidExposition) {
  const Exposition exposition = Parse(MetricsText(Stats{}));
  ExpectMatches(exposition, Stats{}, {});
  // No wheels: HELP and TYPE only.
  const Exposition none =
      Parse(MetricsText(std::vector<std::pair<std::string, Stats>>{}));
  EXPECT_EQ(none.order.size(), 17u);
  for (const auto& [name, family] : none.families) {
    EXPECT_TRUE(family.samples.empty()) << name;
  }
}

}  // namespace
}  // namespace timingwheel
