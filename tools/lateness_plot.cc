// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// lateness_plot.cc: the SVG of a run's lateness distribution (see
// lateness_plot.h). The document is written by hand, element by element; the
// layout is fixed (960 x 700 px) and only the axes' ranges follow the data.

#include "lateness_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace timingwheel::cli {
namespace {

// ---------------------------------------------------------------------------
// Layout, in pixels; y grows downwards.

constexpr int kWidth = 960;
constexpr int kHeight = 700;
// Room on the left for the CDF's longest percent label, "99.99999%".
constexpr double kPlotLeft = 104;
constexpr double kPlotRight = 916;
// Baselines of the three title lines.
constexpr double kTitleY = 28;
constexpr double kOptionsY = 50;
constexpr double kFiguresY = 70;
// Baselines of the rows of marker labels, the lowest (nearest the plot)
// first; a label moves up a row when it would overlap its left neighbour.
// One row per marker, so that even four labels squeezed against the right
// edge stay apart.
constexpr double kMarkerRowY[] = {134, 120, 106, 92};
// Rough advance of one character of 12 px sans-serif, to keep labels apart.
constexpr double kCharWidth = 7;

struct Panel {
  double top;
  double bottom;
  double height() const { return bottom - top; }
};
constexpr Panel kHistogram{146, 366};
constexpr Panel kCdf{410, 610};
constexpr double kAxisTitleY = 652;
constexpr double kNoteY = 682;

constexpr int kBinsPerDecade = 10;
// The count axis starts a little below 1 so that a bin of one shows.
constexpr double kCountFloor = 0.5;

constexpr char kBarColor[] = "#4e79a7";
constexpr char kCdfColor[] = "#1f3f66";
constexpr char kGridColor[] = "#e3e3e3";
constexpr char kAxisColor[] = "#555555";
constexpr char kTextColor[] = "#222222";
constexpr char kNoteColor[] = "#666666";
constexpr char kAlarmColor[] = "#c0392b";

// ---------------------------------------------------------------------------
// Text.

std::string Escape(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// A coordinate, to a tenth of a pixel.
std::string Px(double v) { return absl::StrFormat("%.1f", v); }

// The precision of the text report: "850 ns", "612.3 µs", "1.02 ms",
// "1.234 s".
std::string DurationLabel(double ns) {
  const double abs_ns = std::fabs(ns);
  if (abs_ns < 1e3) return absl::StrFormat("%.0f ns", ns);
  if (abs_ns < 1e6) return absl::StrFormat("%.1f \u00b5s", ns / 1e3);
  if (abs_ns < 1e9) return absl::StrFormat("%.2f ms", ns / 1e6);
  return absl::StrFormat("%.3f s", ns / 1e9);
}

// 10^exp nanoseconds: "1 µs", "10 µs", "100 µs", "1 ms", ... "100 s".
std::string DecadeLabel(int exp) {
  static constexpr const char* kUnits[] = {"ns", "\u00b5s", "ms"};
  if (exp >= 9) return absl::StrFormat("%.0f s", std::pow(10.0, exp - 9));
  return absl::StrFormat("%.0f %s", std::pow(10.0, exp % 3), kUnits[exp / 3]);
}

// 10^exp as a count: "1", "10", "100", "1k", ... "100M".
std::string CountLabel(int exp) {
  static constexpr const char* kSuffixes[] = {"", "k", "M", "G", "T", "P", "E"};
  return absl::StrFormat("%.0f%s", std::pow(10.0, exp % 3), kSuffixes[exp / 3]);
}

void AppendText(std::string& out, double x, double y, absl::string_view anchor,
                absl::string_view attributes, absl::string_view text) {
  absl::StrAppend(&out, "<text x=\"", Px(x), "\" y=\"", Px(y),
                  "\" text-anchor=\"", anchor, "\"",
                  attributes.empty() ? "" : " ", attributes, ">", Escape(text),
                  "</text>\n");
}

void AppendLine(std::string& out, double x1, double y1, double x2, double y2,
                absl::string_view attributes) {
  absl::StrAppend(&out, "<line x1=\"", Px(x1), "\" y1=\"", Px(y1), "\" x2=\"",
                  Px(x2), "\" y2=\"", Px(y2), "\" ", attributes, "/>\n");
}

// ---------------------------------------------------------------------------
// Axes.

// floor(log10(v)) for v >= 1.
int FloorLog10(int64_t v) {
  int exp = 0;
  for (; v >= 10; v /= 10) ++exp;
  return exp;
}

// Lateness in nanoseconds to x, logarithmic over the whole decades
// [10^lo_exp, 10^hi_exp].
class LatenessAxis {
 public:
  LatenessAxis(int lo_exp, int hi_exp) : lo_exp_(lo_exp), hi_exp_(hi_exp) {}

  int lo_exp() const { return lo_exp_; }
  int hi_exp() const { return hi_exp_; }
  int bins() const { return (hi_exp_ - lo_exp_) * kBinsPerDecade; }

  double X(double ns) const {
    return kPlotLeft + (std::log10(ns) - lo_exp_) / (hi_exp_ - lo_exp_) *
                           (kPlotRight - kPlotLeft);
  }
  // The inverse of X.
  double Nanos(double x) const {
    return std::pow(10.0, lo_exp_ + (x - kPlotLeft) / (kPlotRight - kPlotLeft) *
                                        (hi_exp_ - lo_exp_));
  }
  // The lower edge of bin `i`; bin i is [Edge(i), Edge(i + 1)).
  double Edge(int i) const {
    return std::pow(10.0, lo_exp_ + static_cast<double>(i) / kBinsPerDecade);
  }
  int Bin(int64_t ns) const {
    const double exact =
        (std::log10(static_cast<double>(ns)) - lo_exp_) * kBinsPerDecade;
    return std::clamp(static_cast<int>(std::floor(exact)), 0, bins() - 1);
  }

 private:
  int lo_exp_;
  int hi_exp_;
};

// Vertical grid lines at the decades, minor ticks at 2..9 of each decade, and
// the decade labels under `panel`: all of them up to 12 decades, every other
// one up to 24, and so on.
void AppendLatenessAxis(std::string& out, const LatenessAxis& axis,
                        const Panel& panel) {
  const int label_every = 1 + (axis.hi_exp() - axis.lo_exp() - 1) / 12;
  for (int exp = axis.lo_exp(); exp <= axis.hi_exp(); ++exp) {
    const double x = axis.X(std::pow(10.0, exp));
    AppendLine(out, x, panel.top, x, panel.bottom,
               absl::StrCat("stroke=\"", kGridColor, "\""));
    AppendLine(out, x, panel.bottom, x, panel.bottom + 6,
               absl::StrCat("stroke=\"", kAxisColor, "\""));
    if ((exp - axis.lo_exp()) % label_every == 0) {
      AppendText(out, x, panel.bottom + 19, "middle", "", DecadeLabel(exp));
    }
    if (exp == axis.hi_exp()) break;
    for (int m = 2; m <= 9; ++m) {
      const double minor_x = axis.X(m * std::pow(10.0, exp));
      AppendLine(out, minor_x, panel.bottom, minor_x, panel.bottom + 3,
                 absl::StrCat("stroke=\"", kAxisColor, "\""));
    }
  }
}

void AppendFrame(std::string& out, const Panel& panel) {
  absl::StrAppend(&out, "<rect x=\"", Px(kPlotLeft), "\" y=\"", Px(panel.top),
                  "\" width=\"", Px(kPlotRight - kPlotLeft), "\" height=\"",
                  Px(panel.height()), "\" fill=\"none\" stroke=\"", kAxisColor,
                  "\"/>\n");
}

void AppendYAxisTitle(std::string& out, const Panel& panel,
                      absl::string_view title) {
  const double y = (panel.top + panel.bottom) / 2;
  absl::StrAppend(&out, "<text x=\"22\" y=\"", Px(y),
                  "\" text-anchor=\"middle\" transform=\"rotate(-90 22 ", Px(y),
                  ")\">", Escape(title), "</text>\n");
}

// ---------------------------------------------------------------------------
// The panels.

void AppendHistogram(std::string& out, const LatenessAxis& axis,
                     absl::Span<const int64_t> positive_ns) {
  std::vector<int64_t> counts(axis.bins(), 0);
  for (const int64_t ns : positive_ns) ++counts[axis.Bin(ns)];
  const int64_t max_count = *std::max_element(counts.begin(), counts.end());
  const int top_exp = FloorLog10(max_count) + 1;
  const double floor_log = std::log10(kCountFloor);
  const auto y = [&](double count) {
    return kHistogram.bottom - (std::log10(count) - floor_log) /
                                   (top_exp - floor_log) * kHistogram.height();
  };

  out += "<g id=\"histogram\">\n";
  for (int exp = 0; exp <= top_exp; ++exp) {
    const double count_y = y(std::pow(10.0, exp));
    AppendLine(out, kPlotLeft, count_y, kPlotRight, count_y,
               absl::StrCat("stroke=\"", kGridColor, "\""));
    AppendLine(out, kPlotLeft - 5, count_y, kPlotLeft, count_y,
               absl::StrCat("stroke=\"", kAxisColor, "\""));
    AppendText(out, kPlotLeft - 8, count_y + 4, "end", "", CountLabel(exp));
  }
  AppendLatenessAxis(out, axis, kHistogram);
  for (int i = 0; i < axis.bins(); ++i) {
    if (counts[i] == 0) continue;
    const double x0 = axis.X(axis.Edge(i));
    const double x1 = axis.X(axis.Edge(i + 1));
    const double bar_y = y(static_cast<double>(counts[i]));
    const std::string tooltip = absl::StrCat(
        "[", DurationLabel(axis.Edge(i)), ", ", DurationLabel(axis.Edge(i + 1)),
        "): ", counts[i], counts[i] == 1 ? " timer" : " timers");
    absl::StrAppend(&out, "<rect class=\"bar\" x=\"", Px(x0 + 0.5), "\" y=\"",
                    Px(bar_y), "\" width=\"", Px(std::max(x1 - x0 - 1, 1.0)),
                    "\" height=\"", Px(kHistogram.bottom - bar_y), "\" fill=\"",
                    kBarColor, "\"><title>", Escape(tooltip),
                    "</title></rect>\n");
  }
  AppendFrame(out, kHistogram);
  AppendText(out, kPlotLeft + 8, kHistogram.top + 16, "start",
             "font-weight=\"bold\"",
             absl::StrCat("Histogram (", kBinsPerDecade, " bins per decade)"));
  AppendYAxisTitle(out, kHistogram, "timers per bin (log scale)");
  out += "</g>\n";
}

// The CDF's vertical axis, stretched for the tail: a fraction f of the
// timers is drawn at log10(1 / (1 - f)), so that each nine gets the same
// height: 0% at the bottom, then 90%, 99%, 99.9% and so on up to
// 1 - 10^-nines at the top, where nines is the number of digits of the
// sample count n (at most kMaxNines). The largest fraction short of all,
// 1 - 1/n, is then below the top, and all of them (f = 1, the max) is drawn
// at the top; beyond kMaxNines, fractions above 1 - 10^-kMaxNines are at the
// top too.
constexpr int kMaxNines = 7;

class TailScale {
 public:
  explicit TailScale(size_t samples)
      : nines_(std::min(FloorLog10(static_cast<int64_t>(samples)) + 1,
                        kMaxNines)) {}

  int nines() const { return nines_; }
  double Y(double fraction) const {
    const double top = nines_;
    const double height =
        fraction >= 1 ? top : std::min(-std::log10(1 - fraction), top);
    return kCdf.bottom - height / top * kCdf.height();
  }

 private:
  int nines_;
};

// "0%", "90%", "99%", "99.9%", ...: 1 - 10^-nines as a percentage.
std::string NinesLabel(int nines) {
  if (nines == 0) return "0%";
  if (nines == 1) return "90%";
  return absl::StrCat("99", nines > 2 ? "." : "", std::string(nines - 2, '9'),
                      "%");
}

// The fraction of `sorted_ns` that is <= `ns`.
double FractionAtOrBelow(const std::vector<int64_t>& sorted_ns, double ns) {
  const auto end = std::upper_bound(
      sorted_ns.begin(), sorted_ns.end(), ns,
      [](double t, int64_t v) { return t < static_cast<double>(v); });
  return static_cast<double>(std::distance(sorted_ns.begin(), end)) /
         static_cast<double>(sorted_ns.size());
}

void AppendCdf(std::string& out, const LatenessAxis& axis,
               const TailScale& scale, const std::vector<int64_t>& sorted_ns) {
  out += "<g id=\"cdf\">\n";
  for (int nines = 0; nines <= scale.nines(); ++nines) {
    const double y = scale.Y(1 - std::pow(10.0, -nines));
    AppendLine(out, kPlotLeft, y, kPlotRight, y,
               absl::StrCat("stroke=\"", kGridColor, "\""));
    AppendLine(out, kPlotLeft - 5, y, kPlotLeft, y,
               absl::StrCat("stroke=\"", kAxisColor, "\""));
    AppendText(out, kPlotLeft - 8, y + 4, "end", "", NinesLabel(nines));
  }
  AppendLatenessAxis(out, axis, kCdf);
  // One point per pixel column: the step function, exact at each column.
  std::string points;
  for (double x = kPlotLeft; x <= kPlotRight; x += 1) {
    absl::StrAppend(&points, points.empty() ? "" : " ", Px(x), ",",
                    Px(scale.Y(FractionAtOrBelow(sorted_ns, axis.Nanos(x)))));
  }
  absl::StrAppend(&out, "<polygon class=\"cdf-area\" points=\"", Px(kPlotLeft),
                  ",", Px(kCdf.bottom), " ", points, " ", Px(kPlotRight), ",",
                  Px(kCdf.bottom), "\" fill=\"", kBarColor,
                  "\" fill-opacity=\"0.15\" stroke=\"none\"/>\n");
  absl::StrAppend(&out, "<polyline class=\"cdf\" points=\"", points,
                  "\" fill=\"none\" stroke=\"", kCdfColor,
                  "\" stroke-width=\"2\" stroke-linejoin=\"round\"/>\n");
  AppendFrame(out, kCdf);
  AppendText(out, kPlotLeft + 8, kCdf.top + 16, "start", "font-weight=\"bold\"",
             "CDF, tail stretched: one step per nine, the max at the top");
  AppendYAxisTitle(out, kCdf, "timers with lateness \u2264 x");
  out += "</g>\n";
}

// ---------------------------------------------------------------------------
// Markers: p50, p99, p99.9 and max.

struct Marker {
  absl::string_view name;
  double ns;
  double fraction;  // Of the timers at or below it.
  absl::string_view color;
};

// Where a marker's label goes: centred on `x`, on the baseline `y`.
struct LabelPlace {
  double x;
  double y;
  double width;
};

// Places the labels of `markers` (ascending) in the rows above the histogram:
// each centred on its line where it fits, moved up a row when it would
// overlap its left neighbour.
std::vector<LabelPlace> PlaceLabels(const LatenessAxis& axis,
                                    const std::vector<Marker>& markers) {
  double row_end[std::size(kMarkerRowY)];  // Where each row's labels end.
  std::fill(std::begin(row_end), std::end(row_end), 0.0);
  std::vector<LabelPlace> places;
  for (const Marker& m : markers) {
    // "µ" is two bytes but one character; close enough for spacing.
    const double width =
        kCharWidth *
        static_cast<double>(m.name.size() + 1 + DurationLabel(m.ns).size());
    const double x =
        std::clamp(axis.X(m.ns), kPlotLeft + width / 2, kWidth - 4 - width / 2);
    size_t row = 0;
    while (row + 1 < std::size(kMarkerRowY) &&
           row_end[row] + 6 > x - width / 2) {
      ++row;
    }
    row_end[row] = x + width / 2;
    places.push_back({x, kMarkerRowY[row], width});
  }
  return places;
}

// Lines and dots first, then the labels on white, over any line that
// crosses them.
void AppendMarkers(std::string& out, const LatenessAxis& axis,
                   const TailScale& scale, const LatenessStats& l) {
  std::vector<Marker> markers;
  for (const Marker& m : {
           Marker{"p50", static_cast<double>(absl::ToInt64Nanoseconds(l.p50)),
                  0.5, "#2e8b57"},
           Marker{"p99", static_cast<double>(absl::ToInt64Nanoseconds(l.p99)),
                  0.99, "#e07b00"},
           Marker{"p99.9",
                  static_cast<double>(absl::ToInt64Nanoseconds(l.p999)), 0.999,
                  "#c0392b"},
           Marker{"max", static_cast<double>(absl::ToInt64Nanoseconds(l.max)),
                  1.0, "#7b3294"},
       }) {
    if (m.ns > 0) markers.push_back(m);  // Else it is not on the log axis.
  }
  const std::vector<LabelPlace> places = PlaceLabels(axis, markers);
  out += "<g id=\"markers\">\n";
  for (size_t i = 0; i < markers.size(); ++i) {
    const double x = axis.X(markers[i].ns);
    AppendLine(
        out, x, places[i].y + 4, x, kCdf.bottom,
        absl::StrCat("class=\"marker\" stroke=\"", markers[i].color,
                     "\" stroke-width=\"1.5\" stroke-dasharray=\"5 3\""));
    absl::StrAppend(&out, "<circle class=\"marker-dot\" cx=\"", Px(x),
                    "\" cy=\"", Px(scale.Y(markers[i].fraction)),
                    "\" r=\"4\" fill=\"", markers[i].color, "\"/>\n");
  }
  for (size_t i = 0; i < markers.size(); ++i) {
    const LabelPlace& p = places[i];
    absl::StrAppend(&out, "<rect x=\"", Px(p.x - p.width / 2 - 2), "\" y=\"",
                    Px(p.y - 11), "\" width=\"", Px(p.width + 4),
                    "\" height=\"14\" fill=\"white\"/>\n");
    AppendText(
        out, p.x, p.y, "middle",
        absl::StrCat("class=\"marker-label\" fill=\"", markers[i].color,
                     "\" font-weight=\"bold\""),
        absl::StrCat(markers[i].name, " ", DurationLabel(markers[i].ns)));
  }
  out += "</g>\n";
}

// ---------------------------------------------------------------------------
// Title.

void AppendFigure(std::string& out, absl::string_view name,
                  absl::string_view value, bool alarm) {
  absl::StrAppend(&out, "<tspan>", Escape(name), " </tspan><tspan",
                  alarm ? absl::StrCat(" fill=\"", kAlarmColor, "\"") : "",
                  " font-weight=\"bold\">", Escape(value),
                  "</tspan><tspan>    </tspan>");
}

void AppendTitle(std::string& out, const RunResults& r) {
  const RunOptions& o = r.options;
  AppendText(
      out, kPlotLeft, kTitleY, "start", "font-size=\"17\" font-weight=\"bold\"",
      absl::StrCat(
          "timingwheel_cli lateness: ", o.timers, " timers, ",
          o.window == absl::ZeroDuration()
              ? absl::StrCat("every delay ", absl::FormatDuration(o.min_delay))
              : absl::StrCat(
                    "delays uniform in [", absl::FormatDuration(o.min_delay),
                    ", ", absl::FormatDuration(o.min_delay + o.window), ")")));
  AppendText(
      out, kPlotLeft, kOptionsY, "start", "xml:space=\"preserve\"",
      absl::StrCat("tick ", absl::FormatDuration(o.tick), "    wheel_size ",
                   o.wheel_size, "    workers ", o.workers_resolved,
                   o.workers == 0 ? " (hardware concurrency)" : "",
                   "    scheduling threads ", o.threads, "    seed ", o.seed));
  absl::StrAppend(&out, "<text x=\"", Px(kPlotLeft), "\" y=\"", Px(kFiguresY),
                  "\" text-anchor=\"start\" xml:space=\"preserve\">");
  const LatenessStats& l = r.lateness;
  if (l.count > 0) {
    const auto label = [](absl::Duration d) {
      return DurationLabel(static_cast<double>(absl::ToInt64Nanoseconds(d)));
    };
    AppendFigure(out, "p50", label(l.p50), false);
    AppendFigure(out, "p99", label(l.p99), false);
    AppendFigure(out, "p99.9", label(l.p999), false);
    AppendFigure(out, "max", label(l.max), false);
  }
  AppendFigure(out, "early", absl::StrCat(r.early), r.early != 0);
  AppendFigure(out, "lost", absl::StrCat(r.lost), r.lost != 0);
  AppendFigure(out, "doubled", absl::StrCat(r.doubled), r.doubled != 0);
  out += "</text>\n";
}

}  // namespace

std::string LatenessPlotSvg(const RunResults& results,
                            const std::vector<int64_t>& sorted_lateness_ns) {
  std::string out = absl::StrCat(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"",
      kWidth, "\" height=\"", kHeight, "\" viewBox=\"0 0 ", kWidth, " ",
      kHeight, "\" font-family=\"sans-serif\" font-size=\"12\" fill=\"",
      kTextColor,
      "\">\n<title>timingwheel_cli lateness: ", results.options.timers,
      " timers</title>\n",
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
  AppendTitle(out, results);

  const size_t not_late = std::upper_bound(sorted_lateness_ns.begin(),
                                           sorted_lateness_ns.end(), 0) -
                          sorted_lateness_ns.begin();
  const absl::Span<const int64_t> positive_ns =
      absl::MakeConstSpan(sorted_lateness_ns).subspan(not_late);
  if (positive_ns.empty()) {
    AppendText(out, kWidth / 2.0, (kHistogram.top + kCdf.bottom) / 2, "middle",
               "font-size=\"16\"",
               sorted_lateness_ns.empty()
                   ? "No timer fired: nothing to plot."
                   : "No timer fired late: nothing to plot on a log axis.");
    return out + "</svg>\n";
  }

  const LatenessAxis axis(FloorLog10(positive_ns.front()),
                          FloorLog10(positive_ns.back()) + 1);
  const TailScale scale(sorted_lateness_ns.size());
  AppendHistogram(out, axis, positive_ns);
  AppendCdf(out, axis, scale, sorted_lateness_ns);
  AppendMarkers(out, axis, scale, results.lateness);
  AppendText(out, (kPlotLeft + kPlotRight) / 2, kAxisTitleY, "middle",
             "font-size=\"13\"",
             "lateness = callback start \u2212 deadline (log scale)");

  std::string note = absl::StrCat(sorted_lateness_ns.size(),
                                  " timers fired (first fires only).");
  if (not_late > 0) {
    absl::StrAppend(&note, " ", not_late,
                    " with lateness \u2264 0 are off the log axis: counted "
                    "in the CDF, not in the histogram.");
  }
  AppendText(out, kPlotLeft, kNoteY, "start",
             absl::StrCat("fill=\"", kNoteColor, "\" font-size=\"11\""), note);
  return out + "</svg>\n";
}

}  // namespace timingwheel::cli
