// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// failure_report_test.cc: FailureReporter hands failures to the user's hook
// (and survives a hook that throws), or writes them to stderr at most once a
// second, saying how many it left out.

#include "base/failure_report.h"

#include <stdexcept>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace timingwheel::internal {
namespace {

using ::testing::HasSubstr;

TEST(FailureReportTest, TheHookGetsEachFailureWithItsKindAndText) {
  std::vector<Failure> seen;
  FailureReporter reporter(
      [&seen](const Failure& failure) { seen.push_back(failure); });
  reporter.Report(Failure::Kind::kCallbackThrew, "boom");
  reporter.Report(Failure::Kind::kTaskDropped, "gone");
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].kind, Failure::Kind::kCallbackThrew);
  EXPECT_EQ(seen[0].what, "boom");
  EXPECT_EQ(seen[1].kind, Failure::Kind::kTaskDropped);
}

TEST(FailureReportTest, AHookThatThrowsIsSwallowed) {
  FailureReporter reporter(
      [](const Failure&) { throw std::runtime_error("hook"); });
  reporter.Report(Failure::Kind::kExecutorThrew, "x");  // does not throw
}

TEST(FailureReportTest, WithoutAHookOneLineASecondGoesToStderr) {
  FailureReporter reporter(nullptr);
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 100; ++i) {
    reporter.Report(Failure::Kind::kCallbackThrew, "boom " + std::to_string(i));
  }
  const std::string out = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(out, "timingwheel: a timer's callback threw: boom 0\n");
}

TEST(FailureReportTest, CurrentExceptionTextSaysWhatOrThatItIsNoException) {
  try {
    throw std::out_of_range("index 7");
  } catch (...) {
    EXPECT_EQ(FailureReporter::CurrentExceptionText(), "index 7");
  }
  try {
    throw 42;
  } catch (...) {
    EXPECT_THAT(FailureReporter::CurrentExceptionText(),
                HasSubstr("not derived from std::exception"));
  }
}

}  // namespace
}  // namespace timingwheel::internal
