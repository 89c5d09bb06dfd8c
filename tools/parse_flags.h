// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// parse_flags.h: the command-line tools' flag parsing, with the exit statuses
// their help promises: 0 after --help, 2 for a bad option.
//
// absl::ParseCommandLine (Abseil 20220623, Debian 12's) calls exit(1) both
// after printing --help and on a bad flag, and that Abseil has no hook to
// change either. So ParseFlags first checks the command line itself, with
// Abseil's public flag reflection: an unknown flag, a flag without its value,
// a value the flag's type rejects (--timers=abc) and a positional argument
// are each reported on stderr and give 2; --help (and --helpshort,
// --helpfull, --helppackage, --helpmatch, --helpon) prints the tool's usage
// message and flags on stdout and gives 0. Only a command line that passed
// is then handed to absl::ParseCommandLine, which sets the flags and handles
// what is left: --version and --only_check_args (exit 0), and --flagfile,
// --fromenv, --tryfromenv and --undefok, whose errors it still reports with
// its own exit(1).
//
// Example:
//   int main(int argc, char** argv) {
//     absl::SetProgramUsageMessage(kUsage);
//     if (std::optional<int> exit_status = ParseFlags(argc, argv, __FILE__)) {
//       return *exit_status;
//     }
//     ...
//   }

#ifndef TIMINGWHEEL_TOOLS_PARSE_FLAGS_H_
#define TIMINGWHEEL_TOOLS_PARSE_FLAGS_H_

#include <optional>

#include "absl/strings/string_view.h"

namespace timingwheel::tools {

// Parses argv into the flags, as above. Returns std::nullopt when the tool
// should go on with its flags set, or the status it should exit with now.
// `main_file` is the path of the source file that defines the tool's flags
// (__FILE__ in it): --help lists those, --helpfull also Abseil's own. Call
// once, from main.
std::optional<int> ParseFlags(int argc, char** argv,
                              absl::string_view main_file);

}  // namespace timingwheel::tools

#endif  // TIMINGWHEEL_TOOLS_PARSE_FLAGS_H_
