// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// parse_flags.cc: checks a tool's command line before Abseil parses it, and
// the flags' values against their ranges after (see parse_flags.h).

#include "parse_flags.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "timingwheel/options.h"

namespace timingwheel::tools {
namespace {

constexpr size_t kHelpWidth = 80;

// Abseil's help flags, which are not registered flags, and -h: recognised by
// name.
bool IsHelpFlag(absl::string_view name) {
  return name == "h" || name == "help" || name == "helpshort" ||
         name == "helpfull" || name == "helppackage" || name == "helpmatch" ||
         name == "helpon";
}

// Left to absl::ParseCommandLine: --version and --only_check_args exit 0
// there; the others read flags from elsewhere, which only it can check.
bool IsLeftToAbseil(absl::string_view name) {
  return name == "version" || name == "only_check_args" || name == "flagfile" ||
         name == "fromenv" || name == "tryfromenv" || name == "undefok";
}

// What to add to Abseil's "Illegal value" of a duration flag: that a number
// needs a unit (Abseil takes a bare 0 only).
std::string DurationHint(absl::string_view name, absl::string_view value) {
  double number = 0;
  if (absl::SimpleAtod(value, &number)) {
    return absl::StrCat(
        ": a duration needs a unit (ns, us, ms, s, m or h), "
        "e.g. --",
        name, "=", value, "ms");
  }
  return ": a duration is a number and a unit, e.g. 1ms, 100us, 1.5s, 2m";
}

struct CommandLine {
  std::vector<std::string> problems;
  bool help = false;
  bool help_full = false;  // --helpfull: Abseil's own flags too.
};

// Checks every argument as absl::ParseCommandLine would read it, setting the
// flags whose values parse (it sets them again, to the same values).
CommandLine Check(int argc, char** argv) {
  CommandLine c;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "--") {  // The end of the flags: the rest is positional.
      if (i + 1 < argc) {
        c.problems.push_back(
            absl::StrCat("unexpected argument '", argv[i + 1], "'"));
      }
      break;
    }
    if ((!absl::ConsumePrefix(&arg, "--") && !absl::ConsumePrefix(&arg, "-")) ||
        arg.empty()) {
      c.problems.push_back(absl::StrCat("unexpected argument '", argv[i], "'"));
      continue;
    }
    const size_t equals = arg.find('=');
    const bool has_value = equals != absl::string_view::npos;
    const absl::string_view name = arg.substr(0, equals);
    absl::string_view value = has_value ? arg.substr(equals + 1) : "";
    if (IsHelpFlag(name)) {
      c.help = true;
      c.help_full = c.help_full || name == "helpfull";
      continue;
    }
    if (IsLeftToAbseil(name)) continue;

    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr) {
      absl::string_view positive = name;
      const absl::CommandLineFlag* negated =
          absl::ConsumePrefix(&positive, "no")
              ? absl::FindCommandLineFlag(positive)
              : nullptr;
      if (negated != nullptr && negated->IsOfType<bool>()) {
        if (has_value) {
          c.problems.push_back(absl::StrCat("--", name, " takes no value"));
        }
      } else {
        c.problems.push_back(absl::StrCat("unknown flag --", name));
      }
      continue;
    }
    if (!has_value) {
      if (flag->IsOfType<bool>()) continue;
      if (i + 1 == argc) {
        c.problems.push_back(absl::StrCat("--", name, " needs a value"));
        continue;
      }
      value = argv[++i];  // --name value
    }
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      if (flag->IsOfType<absl::Duration>()) {
        absl::StrAppend(&error, DurationHint(name, value));
      }
      c.problems.push_back(error);
    }
  }
  return c;
}

// `text` in lines of at most kHelpWidth columns, each starting with `indent`.
std::string Wrap(absl::string_view text, absl::string_view indent) {
  std::string out;
  std::string line;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (!line.empty() &&
        indent.size() + line.size() + 1 + word.size() > kHelpWidth) {
      absl::StrAppend(&out, indent, line, "\n");
      line.clear();
    }
    absl::StrAppend(&line, line.empty() ? "" : " ", word);
  }
  if (!line.empty()) absl::StrAppend(&out, indent, line, "\n");
  return out;
}

// The file name of `path`, without its directories.
absl::string_view Basename(absl::string_view path) {
  return path.substr(path.rfind('/') + 1);  // npos + 1 == 0
}

// The usage message, then each flag with its default and help; the flags of
// `main_file` only, unless `full`. Files are told apart by their names only:
// Abseil keeps a flag's __FILE__, but not always as the compiler spelled it.
void PrintHelp(absl::string_view main_file, bool full) {
  std::vector<const absl::CommandLineFlag*> flags;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (full || Basename(flag->Filename()) == Basename(main_file)) {
      flags.push_back(flag);
    }
  }
  std::sort(flags.begin(), flags.end(),
            [](const absl::CommandLineFlag* a, const absl::CommandLineFlag* b) {
              return std::make_tuple(a->Filename(), a->Name()) <
                     std::make_tuple(b->Filename(), b->Name());
            });
  std::string out = absl::StrCat(absl::ProgramUsageMessage(), "\n");
  std::string file;
  for (const absl::CommandLineFlag* flag : flags) {
    if (flags.front() == flag || (full && flag->Filename() != file)) {
      file = flag->Filename();
      absl::StrAppend(&out, "\nFlags",
                      full ? absl::StrCat(" from ", file) : std::string(),
                      ":\n");
    }
    const std::string default_value =
        flag->IsOfType<std::string>()
            ? absl::StrCat("\"", flag->DefaultValue(), "\"")
            : flag->DefaultValue();
    absl::StrAppend(&out, "  --", flag->Name(), " (default ", default_value,
                    ")\n", Wrap(flag->Help(), "      "));
  }
  std::fputs(out.c_str(), stdout);
}

}  // namespace

std::optional<int> ParseFlags(int argc, char** argv,
                              absl::string_view main_file) {
  const absl::string_view tool = Basename(argv[0]);
  const CommandLine command_line = Check(argc, argv);
  if (!command_line.problems.empty()) {
    for (const std::string& problem : command_line.problems) {
      std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(tool.size()),
                   tool.data(), problem.c_str());
    }
    std::fprintf(stderr, "%.*s: see --help\n", static_cast<int>(tool.size()),
                 tool.data());
    return 2;
  }
  if (command_line.help) {
    PrintHelp(main_file, command_line.help_full);
    return 0;
  }
  absl::ParseCommandLine(argc, argv);
  return std::nullopt;
}

absl::Status CheckFlagRange(absl::string_view name, int64_t value, int64_t min,
                            int64_t max, absl::string_view note) {
  if (value >= min && value <= max) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("--", name, "=", value, " is out of range: it must be ",
                   max == std::numeric_limits<int64_t>::max()
                       ? absl::StrCat("at least ", min)
                       : absl::StrCat("from ", min, " to ", max),
                   note.empty() ? "" : absl::StrCat(" (", note, ")")));
}

absl::Status CheckFlagRange(absl::string_view name, absl::Duration value,
                            absl::Duration min, absl::Duration max) {
  if (value >= min && value <= max) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("--", name, "=", absl::FormatDuration(value),
                   " is out of range: it must be from ",
                   absl::FormatDuration(min), " to ", absl::FormatDuration(max),
                   max == kMaxFlagDuration ? " (100 years)" : ""));
}

absl::Status CheckWheelFlags(absl::Duration tick, int wheel_size, int workers) {
  for (const absl::Status& status :
       {CheckFlagRange("tick", tick, kMinTick, kMaxTick),
        CheckFlagRange("wheel_size", wheel_size, kMinWheelSize, kMaxWheelSize),
        CheckFlagRange("workers", workers, 0, kMaxWorkers,
                       "0 = hardware concurrency")}) {
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

}  // namespace timingwheel::tools
