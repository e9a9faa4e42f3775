#include <gtest/gtest.h>

#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/warnings.h"
#include "core/workqueue.h"

using namespace tgc;

TEST(Errors, FormatsDriverVersions) {
  EXPECT_EQ(format_driver_version(13000), "13.0");
  EXPECT_EQ(format_driver_version(13010), "13.1");
  EXPECT_EQ(format_driver_version(12040), "12.4");
  EXPECT_EQ(format_driver_version(0), "unknown");
}

TEST(Errors, FormatsArgumentsWithTheEndsStandingForWiderValues) {
  EXPECT_EQ(format_argument(16), "16");
  EXPECT_EQ(format_argument(-1), "-1");
  EXPECT_EQ(format_argument(std::numeric_limits<long long>::max()), "9223372036854775807 or more");
  EXPECT_EQ(format_argument(std::numeric_limits<long long>::min()), "-9223372036854775808 or less");
}

TEST(Errors, DriverErrorNamesCallCodeAndText) {
  DriverError error("cuGreenCtxCreate", 915, "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION",
                    "invalid resource configuration");
  std::string message = error.what();
  EXPECT_NE(message.find("cuGreenCtxCreate"), std::string::npos);
  EXPECT_NE(message.find("CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION"), std::string::npos);
  EXPECT_NE(message.find("915"), std::string::npos);
  EXPECT_NE(message.find("invalid resource configuration"), std::string::npos);
  EXPECT_EQ(error.code(), 915);
  EXPECT_EQ(error.call(), "cuGreenCtxCreate");
  EXPECT_EQ(error.name(), "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION");
}

TEST(Errors, FeatureUnavailableNamesFeatureAndVersions) {
  FeatureUnavailableError error("workqueue configuration", 13010, 13000);
  std::string message = error.what();
  EXPECT_NE(message.find("workqueue configuration"), std::string::npos);
  EXPECT_NE(message.find("13.1"), std::string::npos);
  EXPECT_NE(message.find("13.0"), std::string::npos);
  const std::runtime_error& as_runtime = error;  // surfaces as Python RuntimeError
  (void)as_runtime;
}

TEST(Errors, ValueAndTypeErrorsAreInvalidArgument) {
  try {
    throw ValueError("bad");
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "bad");
  }
  try {
    throw TypeError("wrong type");
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "wrong type");
  }
}

TEST(Warnings, GoToTheHandlerOrElseToStandardError) {
  std::vector<std::string> seen;
  WarningHandler previous = set_warning_handler([&](const std::string& m) { seen.push_back(m); });
  ::testing::internal::CaptureStderr();
  warn("first");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(seen, std::vector<std::string>{"first"});
  // A handler that throws: the warning is not lost and nothing escapes warn().
  set_warning_handler([](const std::string&) { throw std::runtime_error("handler failed"); });
  ::testing::internal::CaptureStderr();
  EXPECT_NO_THROW(warn("second"));
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "torch_green_contexts warning: second\n");
  // An empty handler restores the default.
  set_warning_handler(nullptr);
  ::testing::internal::CaptureStderr();
  warn("third");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "torch_green_contexts warning: third\n");
  set_warning_handler(previous);
}

TEST(Errors, WorkqueueScopesByNameAndTheErrorForOthers) {
  EXPECT_EQ(workqueue_scope_named("device_ctx"), tgc::abi::CU_WORKQUEUE_SCOPE_DEVICE_CTX);
  EXPECT_EQ(workqueue_scope_named("balanced"), tgc::abi::CU_WORKQUEUE_SCOPE_GREEN_CTX_BALANCED);
  for (const char* bad : {"", "shared", "BALANCED"}) {
    try {
      workqueue_scope_named(bad);
      FAIL() << bad;
    } catch (const ValueError& e) {
      EXPECT_EQ(std::string(e.what()),
                std::string("workqueue_scope must be one of 'device_ctx', 'balanced' or None, got '") + bad + "'");
    }
  }
  EXPECT_EQ(std::string(unknown_workqueue_scope("0").what()),
            "workqueue_scope must be one of 'device_ctx', 'balanced' or None, got 0");
}
