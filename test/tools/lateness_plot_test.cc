// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0

#include "lateness_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "cli_report.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace timingwheel::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// "" if the elements of `xml` nest: after the prolog, one root element, every
// start tag closed by the matching end tag, attribute values quoted, and every
// '&' the start of one of XML's five entities. Not a full XML parser (the CLI
// test parses the real output with one), but enough to catch a broken writer.
std::string NestingError(absl::string_view xml) {
  if (absl::StartsWith(xml, "<?")) xml.remove_prefix(xml.find("?>") + 2);
  std::vector<std::string> open;
  bool had_root = false;
  for (size_t i = 0; i < xml.size(); ++i) {
    if (xml[i] == '&') {
      const absl::string_view rest = xml.substr(i);
      if (!absl::StartsWith(rest, "&amp;") && !absl::StartsWith(rest, "&lt;") &&
          !absl::StartsWith(rest, "&gt;") &&
          !absl::StartsWith(rest, "&quot;") &&
          !absl::StartsWith(rest, "&apos;")) {
        return "stray '&' at " + std::to_string(i);
      }
    }
    if (xml[i] != '<') continue;
    size_t end = i + 1;
    bool in_quotes = false;
    while (end < xml.size() && (in_quotes || xml[end] != '>')) {
      if (xml[end] == '"') in_quotes = !in_quotes;
      if (!in_quotes && xml[end] == '<') return "'<' inside a tag";
      ++end;
    }
    if (end == xml.size()) return "unterminated tag";
    const absl::string_view tag = xml.substr(i + 1, end - i - 1);
    const absl::string_view name = tag.substr(0, tag.find_first_of(" \n/"));
    if (absl::StartsWith(tag, "/")) {
      const std::string closing(tag.substr(1));
      if (open.empty() || open.back() != closing) {
        return "unexpected </" + closing + ">";
      }
      open.pop_back();
    } else {
      if (open.empty() && had_root) return "a second root element";
      had_root = true;
      if (!absl::EndsWith(tag, "/")) open.emplace_back(name);
    }
    i = end;
  }
  if (!had_root) return "no root element";
  return open.empty() ? "" : "<" + open.back() + "> not closed";
}

int Count(absl::string_view haystack, absl::string_view needle) {
  int count = 0;
  for (size_t at = haystack.find(needle); at != absl::string_view::npos;
       at = haystack.find(needle, at + needle.size())) {
    ++count;
  }
  return count;
}

// The (x, y) pairs of the `points` attribute of the element with class `cls`.
std::vector<std::pair<double, double>> Points(absl::string_view svg,
                                              absl::string_view cls) {
  const std::string marker = absl::StrCat("class=\"", cls, "\" points=\"");
  const size_t start = svg.find(marker);
  if (start == absl::string_view::npos) return {};
  const size_t begin = start + marker.size();
  const absl::string_view list =
      svg.substr(begin, svg.find('"', begin) - begin);
  std::vector<std::pair<double, double>> points;
  for (const absl::string_view point : absl::StrSplit(list, ' ')) {
    const std::pair<absl::string_view, absl::string_view> xy =
        absl::StrSplit(point, ',');
    double x = 0;
    double y = 0;
    EXPECT_TRUE(absl::SimpleAtod(xy.first, &x) &&
                absl::SimpleAtod(xy.second, &y))
        << point;
    points.emplace_back(x, y);
  }
  return points;
}

// A run of `samples` (sorted here) with its nearest-rank percentiles, as the
// CLI computes them.
struct Fixture {
  RunResults results;
  std::vector<int64_t> samples;
};

Fixture RunOf(std::vector<int64_t> samples) {
  std::sort(samples.begin(), samples.end());
  Fixture f;
  RunOptions& o = f.results.options;
  o.timers = static_cast<int64_t>(samples.size());
  o.threads = 1;
  o.tick = absl::Milliseconds(1);
  o.wheel_size = 20;
  o.workers = 0;
  o.workers_resolved = 2;
  o.window = absl::Milliseconds(200);
  o.seed = 7;
  f.results.fired = o.timers;
  LatenessStats& l = f.results.lateness;
  l.count = o.timers;
  if (!samples.empty()) {
    const auto rank = [&samples](double p) {
      const auto r = static_cast<size_t>(std::ceil(p * samples.size()));
      return absl::Nanoseconds(
          samples[std::clamp<size_t>(r, 1, samples.size()) - 1]);
    };
    l.min = absl::Nanoseconds(samples.front());
    l.p50 = rank(0.5);
    l.p99 = rank(0.99);
    l.p999 = rank(0.999);
    l.max = absl::Nanoseconds(samples.back());
  }
  for (const int64_t s : samples) f.results.early += s < 0 ? 1 : 0;
  f.samples = std::move(samples);
  return f;
}

std::string Plot(const Fixture& f) {
  return LatenessPlotSvg(f.results, f.samples);
}

// 1000 timers 1 us to 1 ms late, and a tail of 10 at 20 ms.
std::vector<int64_t> TypicalSamples() {
  std::vector<int64_t> samples;
  for (int i = 1; i <= 1000; ++i) samples.push_back(i * 1000);
  for (int i = 0; i < 10; ++i) samples.push_back(20'000'000);
  return samples;
}

TEST(LatenessPlotTest, IsOneSelfContainedSvg11Document) {
  const std::string svg = Plot(RunOf(TypicalSamples()));
  EXPECT_THAT(svg, StartsWith("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                              "<svg xmlns=\"http://www.w3.org/2000/svg\" "
                              "version=\"1.1\""));
  EXPECT_TRUE(absl::EndsWith(svg, "</svg>\n"));
  EXPECT_EQ(NestingError(svg), "");
  EXPECT_THAT(svg, Not(HasSubstr("<script")));
  EXPECT_THAT(svg, Not(HasSubstr("<style")));
  EXPECT_THAT(svg, Not(HasSubstr("href")));
  EXPECT_THAT(svg, Not(HasSubstr("url(")));
}

TEST(LatenessPlotTest, TitleShowsOptionsAndKeyFigures) {
  const std::string svg = Plot(RunOf(TypicalSamples()));
  EXPECT_THAT(svg, HasSubstr("1010 timers, delays uniform in [0, 200ms)"));
  EXPECT_THAT(svg, HasSubstr("tick 1ms"));
  EXPECT_THAT(svg, HasSubstr("wheel_size 20"));
  EXPECT_THAT(svg, HasSubstr("workers 2 (hardware concurrency)"));
  EXPECT_THAT(svg, HasSubstr("seed 7"));
  // p50 = the 505th sample, p99 = the 1000th, p99.9 and max in the tail.
  EXPECT_THAT(svg, HasSubstr("p50 </tspan><tspan font-weight=\"bold\">"
                             "505.0 \u00b5s</tspan>"));
  EXPECT_THAT(svg, HasSubstr("p99 </tspan><tspan font-weight=\"bold\">"
                             "1.00 ms</tspan>"));
  EXPECT_THAT(svg, HasSubstr("p99.9 </tspan><tspan font-weight=\"bold\">"
                             "20.00 ms</tspan>"));
  EXPECT_THAT(svg, HasSubstr("max </tspan><tspan font-weight=\"bold\">"
                             "20.00 ms</tspan>"));
  EXPECT_THAT(svg, HasSubstr("early </tspan><tspan font-weight=\"bold\">"
                             "0</tspan>"));
}

TEST(LatenessPlotTest, AxesAreLabelledWithUnits) {
  const std::string svg = Plot(RunOf(TypicalSamples()));
  // Whole decades from the smallest sample (1 us) past the largest (20 ms),
  // under each of the two panels.
  for (const char* label :
       {">1 \u00b5s</text>", ">10 \u00b5s</text>", ">100 \u00b5s</text>",
        ">1 ms</text>", ">10 ms</text>", ">100 ms</text>"}) {
    EXPECT_EQ(Count(svg, label), 2) << label;
  }
  EXPECT_THAT(svg, Not(HasSubstr(">100 ns</text>")));
  EXPECT_THAT(svg, Not(HasSubstr(">1 s</text>")));
  EXPECT_THAT(svg, HasSubstr("lateness = callback start \u2212 deadline"));
  EXPECT_THAT(svg, HasSubstr(">timers per bin (log scale)</text>"));
  EXPECT_THAT(svg, HasSubstr(">timers with lateness \u2264 x</text>"));
  // Counts up to the decade above the fullest bin (the 900 of 100 us-1 ms
  // fall in 10 bins, at most 206 in one).
  EXPECT_THAT(svg, HasSubstr(">1k</text>"));
  EXPECT_THAT(svg, Not(HasSubstr(">10k</text>")));
}

TEST(LatenessPlotTest, CdfAxisGivesEachNineAStep) {
  // 1010 samples: four digits, so four nines, 0% to 99.99%, equally spaced.
  const std::string svg = Plot(RunOf(TypicalSamples()));
  std::vector<double> ys;
  for (const char* label : {">0%</text>", ">90%</text>", ">99%</text>",
                            ">99.9%</text>", ">99.99%</text>"}) {
    const size_t at = svg.find(label);
    ASSERT_NE(at, std::string::npos) << label;
    const absl::string_view tag =
        absl::string_view(svg).substr(svg.rfind("<text", at));
    const size_t y_at = tag.find(" y=\"") + 4;
    double y = 0;
    ASSERT_TRUE(
        absl::SimpleAtod(tag.substr(y_at, tag.find('"', y_at) - y_at), &y));
    ys.push_back(y);
  }
  for (size_t i = 2; i < ys.size(); ++i) {
    EXPECT_NEAR(ys[i - 1] - ys[i], ys[0] - ys[1], 0.2) << i;
  }
  EXPECT_GT(ys[0] - ys[1], 40);
  EXPECT_THAT(svg, Not(HasSubstr(">99.999%</text>")));
  EXPECT_THAT(svg, Not(HasSubstr(">100%</text>")));
}

// The cy of each marker's dot on the CDF, in document order (p50, p99,
// p99.9, max).
std::vector<double> MarkerDotYs(absl::string_view svg) {
  std::vector<double> ys;
  for (size_t at = svg.find("class=\"marker-dot\"");
       at != absl::string_view::npos;
       at = svg.find("class=\"marker-dot\"", at + 1)) {
    const size_t y_at = svg.find(" cy=\"", at) + 5;
    double y = 0;
    EXPECT_TRUE(
        absl::SimpleAtod(svg.substr(y_at, svg.find('"', y_at) - y_at), &y));
    ys.push_back(y);
  }
  return ys;
}

TEST(LatenessPlotTest, TailMarkersStandApartOnTheCdf) {
  // p99 (0.99), p99.9 (0.999) and max (1) were all within 2 px of the 100%
  // line on a linear axis; a nine apart here, 50 px each.
  const std::vector<double> ys = MarkerDotYs(Plot(RunOf(TypicalSamples())));
  ASSERT_EQ(ys.size(), 4u);
  EXPECT_NEAR(ys[1] - ys[2], 50, 0.2);  // p99 to p99.9
  EXPECT_NEAR(ys[2] - ys[3], 50, 0.2);  // p99.9 to the max, at the top
  EXPECT_GT(ys[0] - ys[1], 80);         // p50, log10(2) nines up, to p99
}

TEST(LatenessPlotTest, AMillionSamplesStopAtSevenNines) {
  std::vector<int64_t> samples(1'000'000, 1000);
  samples.back() = 2000;
  const std::string svg = Plot(RunOf(std::move(samples)));
  EXPECT_THAT(svg, HasSubstr(">99.99999%</text>"));
  EXPECT_THAT(svg, Not(HasSubstr(">99.999999%</text>")));
}

TEST(LatenessPlotTest, TitleOfAZeroWindowGivesTheOneDelay) {
  Fixture f = RunOf(TypicalSamples());
  f.results.options.window = absl::ZeroDuration();
  f.results.options.min_delay = absl::Milliseconds(250);
  const std::string svg = Plot(f);
  EXPECT_THAT(svg, HasSubstr("1010 timers, every delay 250ms</text>"));
  EXPECT_THAT(svg, Not(HasSubstr("[250ms, 250ms)")));
}

TEST(LatenessPlotTest, BarsAreTheNonEmptyBinsWithTheirCounts) {
  // 1 us is the first bin of the first decade, 2 us the fourth (10^3.3 ns =
  // 1995 ns), 50 us the 17th (10^4.6 = 39811 to 10^4.7 = 50119 ns).
  const std::string svg = Plot(RunOf({1000, 2000, 2000, 50000}));
  EXPECT_EQ(Count(svg, "class=\"bar\""), 3);
  EXPECT_THAT(svg, HasSubstr("<title>[1.0 \u00b5s, 1.3 \u00b5s): 1 timer<"));
  EXPECT_THAT(svg, HasSubstr("<title>[2.0 \u00b5s, 2.5 \u00b5s): 2 timers<"));
  EXPECT_THAT(svg, HasSubstr("<title>[39.8 \u00b5s, 50.1 \u00b5s): 1 timer<"));
}

TEST(LatenessPlotTest, MarksP50P99P999AndMax) {
  const std::string svg = Plot(RunOf(TypicalSamples()));
  EXPECT_EQ(Count(svg, "class=\"marker\""), 4);
  EXPECT_THAT(svg, HasSubstr("\">p50 505.0 \u00b5s</text>"));
  EXPECT_THAT(svg, HasSubstr("\">p99 1.00 ms</text>"));
  EXPECT_THAT(svg, HasSubstr("\">p99.9 20.00 ms</text>"));
  EXPECT_THAT(svg, HasSubstr("\">max 20.00 ms</text>"));
}

// The baselines of the marker labels, in document order.
std::vector<double> MarkerLabelYs(absl::string_view svg) {
  std::vector<double> ys;
  for (size_t at = svg.find("class=\"marker-label\"");
       at != absl::string_view::npos;
       at = svg.find("class=\"marker-label\"", at + 1)) {
    const absl::string_view tag = svg.substr(svg.rfind("<text", at));
    const size_t y_at = tag.find(" y=\"") + 4;
    double y = 0;
    EXPECT_TRUE(
        absl::SimpleAtod(tag.substr(y_at, tag.find('"', y_at) - y_at), &y));
    ys.push_back(y);
  }
  return ys;
}

TEST(LatenessPlotTest, CrowdedMarkerLabelsGetARowEach) {
  // p50 = p99 = p99.9 = max: four labels that all want the same place.
  const std::string svg = Plot(RunOf(std::vector<int64_t>(100, 5'000'000)));
  std::vector<double> ys = MarkerLabelYs(svg);
  ASSERT_EQ(ys.size(), 4u);
  std::sort(ys.begin(), ys.end());
  EXPECT_EQ(std::unique(ys.begin(), ys.end()), ys.end());
  // Far apart, p50 (1 us) and p99 (100 ms) share the lowest row.
  const std::vector<double> apart =
      MarkerLabelYs(Plot(RunOf({1000, 100'000'000})));
  ASSERT_EQ(apart.size(), 4u);
  EXPECT_EQ(apart[0], apart[1]);
}

// The fraction of the timers the CDF says at height `y`, on an axis of
// `nines` nines: the shaded area under it starts at the panel's bottom left
// corner, and it ends at the top (the max).
double CdfFraction(const std::string& svg, int nines, double y) {
  const double bottom = Points(svg, "cdf-area").front().second;
  const double top = Points(svg, "cdf").back().second;
  return 1 - std::pow(10.0, -nines * (bottom - y) / (bottom - top));
}

TEST(LatenessPlotTest, CdfRisesFromTheFirstSampleToAllOfThem) {
  const std::string svg = Plot(RunOf(TypicalSamples()));
  const std::vector<std::pair<double, double>> cdf = Points(svg, "cdf");
  ASSERT_GT(cdf.size(), 100u);
  // At 1 us, the first sample.
  EXPECT_NEAR(CdfFraction(svg, 4, cdf.front().second), 1.0 / 1010, 0.001);
  for (size_t i = 1; i < cdf.size(); ++i) {
    EXPECT_GT(cdf[i].first, cdf[i - 1].first);
    EXPECT_LE(cdf[i].second, cdf[i - 1].second);  // Up is smaller y.
  }
  // 1000 of the 1010 are at most 1 ms late: the point at 1 ms, three decades
  // along the five from 1 us to 100 ms, is at 99% (give or take the samples
  // within one pixel).
  const double x_1ms =
      cdf.front().first + (cdf.back().first - cdf.front().first) * 3.0 / 5.0;
  const auto at_1ms = std::min_element(
      cdf.begin(), cdf.end(), [x_1ms](const auto& a, const auto& b) {
        return std::abs(a.first - x_1ms) < std::abs(b.first - x_1ms);
      });
  EXPECT_NEAR(CdfFraction(svg, 4, at_1ms->second), 1000.0 / 1010, 0.015);
}

TEST(LatenessPlotTest, EarlyFiresAreFlaggedAndLeftOffTheLogAxis) {
  const Fixture f = RunOf({-5, 0, 1000, 2000});
  const std::string svg = Plot(f);
  EXPECT_EQ(NestingError(svg), "");
  EXPECT_THAT(svg, HasSubstr("early </tspan><tspan fill=\"#c0392b\" "
                             "font-weight=\"bold\">1</tspan>"));
  EXPECT_EQ(Count(svg, "class=\"bar\""), 2);
  EXPECT_THAT(svg, HasSubstr("2 with lateness \u2264 0 are off the log axis"));
  // The axis starts at 1 us, where the CDF (lateness <= x) already counts the
  // two not late and the one 1 us late.
  EXPECT_NEAR(CdfFraction(svg, 1, Points(svg, "cdf").front().second), 0.75,
              0.01);
  // p50 (0 ns) has no marker; p99, p99.9 and max (2 us) do.
  EXPECT_EQ(Count(svg, "class=\"marker\""), 3);
}

TEST(LatenessPlotTest, NoTimerFiredIsSaidInsteadOfPlotted) {
  const std::string svg = Plot(RunOf({}));
  EXPECT_EQ(NestingError(svg), "");
  EXPECT_THAT(svg, HasSubstr("No timer fired: nothing to plot."));
  EXPECT_THAT(svg, Not(HasSubstr("class=\"bar\"")));
  EXPECT_THAT(svg, Not(HasSubstr("class=\"cdf\"")));
  EXPECT_THAT(svg, Not(HasSubstr(">p50 ")));
}

TEST(LatenessPlotTest, NoTimerLateIsSaidInsteadOfPlotted) {
  const std::string svg = Plot(RunOf({-3, 0}));
  EXPECT_EQ(NestingError(svg), "");
  EXPECT_THAT(svg, HasSubstr("No timer fired late"));
  EXPECT_THAT(svg, Not(HasSubstr("class=\"bar\"")));
}

TEST(LatenessPlotTest, OneSampleGetsOneDecade) {
  const std::string svg = Plot(RunOf({1000}));
  EXPECT_EQ(NestingError(svg), "");
  EXPECT_EQ(Count(svg, "class=\"bar\""), 1);
  EXPECT_EQ(Count(svg, ">1 \u00b5s</text>"), 2);
  EXPECT_EQ(Count(svg, ">10 \u00b5s</text>"), 2);
  EXPECT_EQ(Count(svg, ">100 \u00b5s</text>"), 0);
}

TEST(LatenessPlotTest, ExtremeRangeLabelsEveryOtherDecade) {
  // 1 ns to 292 years: 19 decades, too many to label each.
  const std::string svg = Plot(RunOf({1, std::numeric_limits<int64_t>::max()}));
  EXPECT_EQ(NestingError(svg), "");
  EXPECT_EQ(Count(svg, "class=\"bar\""), 2);
  EXPECT_EQ(Count(svg, ">1 ns</text>"), 2);
  EXPECT_EQ(Count(svg, ">10 ns</text>"), 0);
  EXPECT_EQ(Count(svg, ">100 ns</text>"), 2);
}

TEST(LatenessPlotTest, NestingCheckCatchesBrokenDocuments) {
  EXPECT_EQ(NestingError("<svg><g></g></svg>"), "");
  EXPECT_NE(NestingError("<svg><g></svg>"), "");
  EXPECT_NE(NestingError("<svg></svg><svg></svg>"), "");
  EXPECT_NE(NestingError("<svg>a & b</svg>"), "");
  EXPECT_NE(NestingError("<svg><text>1 < 2</text></svg>"), "");
}

}  // namespace
}  // namespace timingwheel::cli
