#include <gtest/gtest.h>

#include <string>

#include "core/errors.h"

using namespace tgc;

TEST(Errors, FormatsDriverVersions) {
  EXPECT_EQ(format_driver_version(13000), "13.0");
  EXPECT_EQ(format_driver_version(13010), "13.1");
  EXPECT_EQ(format_driver_version(12040), "12.4");
  EXPECT_EQ(format_driver_version(0), "unknown");
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
