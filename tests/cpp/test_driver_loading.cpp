// Loading the driver where there is none: clear errors, never a crash.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "core/device.h"
#include "core/driver_api.h"
#include "core/sm_partition.h"

using namespace tgc;

TEST(DriverLoading, MissingLibraryGivesAClearErrorEveryTime) {
  ::setenv(driver_library_env(), "/nonexistent/libcuda-test.so.1", 1);
  EXPECT_EQ(installed_driver_version(), 0);
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      device_count();
      FAIL() << "no driver library should be loadable";
    } catch (const std::runtime_error& e) {
      std::string message = e.what();
      EXPECT_NE(message.find("/nonexistent/libcuda-test.so.1"), std::string::npos) << message;
      EXPECT_NE(message.find("could not be loaded"), std::string::npos) << message;
    }
  }
  EXPECT_THROW(SmPartition::from_device(0), std::runtime_error);
}
