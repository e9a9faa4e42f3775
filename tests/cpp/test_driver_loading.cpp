// Loading the driver where there is none: clear errors, never a crash.
#include <dlfcn.h>
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
  EXPECT_FALSE(driver_initialized());
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

TEST(DriverLoading, WithoutAnOverrideTheSystemDriverIsAsked) {
  const char* set = std::getenv(driver_library_env());
  const std::string saved = set ? set : "";
  ::unsetenv(driver_library_env());
  void* system_driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  // The version of libcuda.so.1 where there is one, 0 where there is none.
  EXPECT_EQ(installed_driver_version() != 0, system_driver != nullptr);
  if (system_driver != nullptr) dlclose(system_driver);
  ::setenv(driver_library_env(), "", 1);  // an empty override is no override
  EXPECT_EQ(installed_driver_version() != 0, system_driver != nullptr);
  if (set) {
    ::setenv(driver_library_env(), saved.c_str(), 1);
  } else {
    ::unsetenv(driver_library_env());
  }
}
