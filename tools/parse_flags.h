// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// parse_flags.h: the command-line tools' flag parsing, with the exit statuses
// their help promises: 0 after --help, 2 for a bad option; and the checks of
// the flags' values against their ranges, which the tools make before they
// size or compute anything from a flag.
//
// absl::ParseCommandLine (Abseil 20220623, Debian 12's) calls exit(1) both
// after printing --help and on a bad flag, and that Abseil has no hook to
// change either. So ParseFlags first checks the command line itself, with
// Abseil's public flag reflection: an unknown flag, a flag without its value,
// a value the flag's type rejects (--timers=abc; a duration without its unit,
// --tick=1, is told it needs one) and a positional argument are each reported
// on stderr and give 2; --help (and -h, --helpshort, --helpfull,
// --helppackage, --helpmatch, --helpon) prints the tool's usage message and
// flags on stdout and gives 0. Only a command line that passed
// is then handed to absl::ParseCommandLine, which sets the flags and handles
// what is left: --version and --only_check_args (exit 0), and --flagfile,
// --fromenv, --tryfromenv and --undefok, whose errors it still reports with
// its own exit(1).
//
// A value of the right type can still be out of range (--workers=-5,
// --min_delay=3000000h): CheckFlagRange and CheckWheelFlags say so in an
// InvalidArgument that names the flag, the value given and the range, which
// the tool prints on stderr before it exits 2.
//
// Example:
//   int main(int argc, char** argv) {
//     absl::SetProgramUsageMessage(kUsage);
//     if (std::optional<int> exit_status = ParseFlags(argc, argv, __FILE__)) {
//       return *exit_status;
//     }
//     const int threads = absl::GetFlag(FLAGS_threads);
//     if (absl::Status s = CheckFlagRange("threads", threads, 1, 64);
//         !s.ok()) {
//       ...  // Print s on stderr, exit 2.
//     }
//     ...
//   }

#ifndef TIMINGWHEEL_TOOLS_PARSE_FLAGS_H_
#define TIMINGWHEEL_TOOLS_PARSE_FLAGS_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace timingwheel::tools {

// Parses argv into the flags, as above. Returns std::nullopt when the tool
// should go on with its flags set, or the status it should exit with now.
// `main_file` is the path of the source file that defines the tool's flags
// (__FILE__ in it): --help lists those, --helpfull also Abseil's own. Call
// once, from main.
std::optional<int> ParseFlags(int argc, char** argv,
                              absl::string_view main_file);

// The longest value any duration flag of the tools takes: 100 years
// (876000h), as long as the delays the library promises to take. Int64
// nanoseconds reach 292 years, so a steady clock reading plus two such
// durations cannot overflow.
inline constexpr absl::Duration kMaxFlagDuration = absl::Hours(100 * 365 * 24);

// OK if `min <= value <= max`, else InvalidArgument "--name=value is out of
// range: it must be from min to max (note)"; "at least min" when `max` is the
// type's largest value, and " (note)" only with a `note`.
absl::Status CheckFlagRange(absl::string_view name, int64_t value, int64_t min,
                            int64_t max, absl::string_view note = "");
absl::Status CheckFlagRange(absl::string_view name, absl::Duration value,
                            absl::Duration min, absl::Duration max);

// --tick, --wheel_size and --workers, which both tools hand to
// timingwheel::Options as they are, against the ranges options.h gives them
// (and --tick at most kMaxFlagDuration), so that they are checked before
// anything is sized from them and not by TimingWheel::Create, whose message
// names the Options field and not the flag.
absl::Status CheckWheelFlags(absl::Duration tick, int wheel_size, int workers);

}  // namespace timingwheel::tools

#endif  // TIMINGWHEEL_TOOLS_PARSE_FLAGS_H_
