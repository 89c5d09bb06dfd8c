// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// lateness_plot.h: draws the lateness distribution of one `timingwheel_cli`
// run as a self-contained SVG image, for `timingwheel_cli --plot=FILE.svg`.
//
// The image has a title with the run's options and key figures (p50, p99,
// p99.9 and max lateness; early, lost and doubled counts) and two panels that
// share a log-scaled lateness axis: a histogram (10 bins per decade, counts on
// a log scale) and the CDF (percent of the timers whose lateness is <= x,
// exact, from the samples). The CDF's percent axis is stretched for the tail,
// as HdrHistogram's plots are: 0%, 90%, 99%, 99.9%... each a step of the
// same height (a log scale of 1 / (1 - p)), so that p99, p99.9 and the max
// stand apart instead of all on the 100% line. Dashed lines mark p50, p99,
// p99.9 and max across both panels, a dot each on the CDF.
//
// Lateness spans microseconds to tens of milliseconds, hence the log axis,
// which covers the whole decades from the smallest positive sample to the
// largest. Lateness <= 0 (an early fire) has no place on it: such timers are
// counted in the CDF, which then starts above 0%, and in a note under the
// plot.
//
// The output is plain SVG 1.1: no script, no style sheet, no external font or
// image; every bar carries a <title> tooltip with its range and count. A pure
// function, so that it is unit-tested apart from the load generator.

#ifndef TIMINGWHEEL_TOOLS_LATENESS_PLOT_H_
#define TIMINGWHEEL_TOOLS_LATENESS_PLOT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "cli_report.h"

namespace timingwheel::cli {

// Returns the SVG document (UTF-8) for the run `results`, whose lateness
// samples (callback start - deadline, first fires, in nanoseconds) are
// `sorted_lateness_ns`. The markers and the title take their figures from
// `results.lateness`, which summarizes the same samples.
//
// Preconditions: `sorted_lateness_ns` is sorted ascending.
std::string LatenessPlotSvg(const RunResults& results,
                            const std::vector<int64_t>& sorted_lateness_ns);

}  // namespace timingwheel::cli

#endif  // TIMINGWHEEL_TOOLS_LATENESS_PLOT_H_
