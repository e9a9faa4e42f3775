// The driver's version and entry points as the core sees them, the device queries, and the
// features each version gates.
#include <cstdlib>
#include <limits>
#include <string>

#include "sim_fixture.h"

TEST_F(DriverTable, VersionAndEntryPointsFollowTheDriver) {
  EXPECT_EQ(driver().version(), version());
  EXPECT_EQ(driver().cuGreenCtxStreamCreate != nullptr, version() >= 12050);
  EXPECT_EQ(driver().cuDevSmResourceSplit != nullptr, version() >= 13010);
  EXPECT_NE(driver().cuGreenCtxCreate, nullptr);
  EXPECT_EQ(installed_driver_version(), version());
  EXPECT_EQ(native_split_available_path() == SplitPath::kNative, version() >= 13010);
}

TEST_F(DriverTable, DeviceQueries) {
  EXPECT_EQ(device_count(), 1);
  EXPECT_EQ(device_sm_count(0), 132);
  EXPECT_EQ(device_compute_capability(0).major, 9);
  EXPECT_TRUE(primary_context_active(0));
  EXPECT_THROWS_WITH(device_handle(3), std::runtime_error, "valid device_id: 0..0");
  EXPECT_THROWS_WITH(partition_with_at_least(0, std::numeric_limits<long long>::max()), RangeError,
                     "num_sms must be between 1 and 132 (the SM count of device 0), got 9223372036854775807 or more");
  EXPECT_THROWS_WITH(check_device(std::numeric_limits<long long>::max()), RangeError,
                     "device_id 9223372036854775807 or more is out of range");
  for (long long bad : {0LL, -5LL, 133LL, 1LL << 40}) {
    EXPECT_THROWS_THAT(partition_with_at_least(0, bad), std::runtime_error, [&](const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()),
                "num_sms must be between 1 and 132 (the SM count of device 0), got " + std::to_string(bad));
    });
  }
  SmPartition whole = SmPartition::from_device(0);
  EXPECT_EQ(whole.sm_count(), 132u);
  EXPECT_EQ(whole.coscheduled_sm_count(), 8u);
  EXPECT_EQ(whole.min_partition_size(), version() >= 13000 ? 8u : 0u);
  EXPECT_EQ(whole.split_granularity(), 8u);  // reported from 13.0, the alignment before
  EXPECT_TRUE(whole.splittable());
  EXPECT_TRUE(driver_initialized());
  if (version() >= 13040) {
    EXPECT_EQ(device_locality_domain_count(0), 2);
  } else {
    EXPECT_THROWS_WITH(device_locality_domain_count(0), FeatureUnavailableError,
                       "locality domains needs CUDA driver 13.4");
  }
}

TEST_F(DriverTable, ReportsEntryPointsAndUnknownCodes) {
  EXPECT_EQ(loaded_driver_version(), version());
  EXPECT_EQ(loaded_driver_library(), std::getenv(driver_library_env()));
  int found = 0;
  for (const EntryPointStatus& entry : entry_point_status()) {
    EXPECT_EQ(entry.present, entry.since <= version()) << entry.name;
    found += entry.name == "cuDevSmResourceSplit";
  }
  EXPECT_EQ(found, 1);
  EXPECT_EQ(driver().error_name(12345), "CUDA_ERROR_UNKNOWN_CODE_12345");
  EXPECT_EQ(driver().error_text(12345), "no description from the driver");
  EXPECT_EQ(driver().error_name(915), "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION");
  EXPECT_NO_THROW(driver().check<entry::cuCtxGetCurrent>(cu::CUDA_SUCCESS));
  EXPECT_DRIVER_ERROR(driver().check<entry::cuCtxGetCurrent>(915), "cuCtxGetCurrent");
  EXPECT_THROWS_THAT(driver().require_version("a future feature", 99000), FeatureUnavailableError,
                     [](const FeatureUnavailableError& e) {
                       EXPECT_EQ(e.feature(), "a future feature");
                       EXPECT_EQ(e.needed_version(), 99000);
                       EXPECT_EQ(e.found_version(), version());
                       EXPECT_CONTAINS(e.what(), "a future feature needs CUDA driver 99.0 or newer");
                     });
  // The checked call names the entry point once: its failures carry that name.
  cu::CUcontext current = nullptr;
  EXPECT_NO_THROW(driver().call<entry::cuCtxGetCurrent>(&current));
  sim().fail_next("cuCtxGetCurrent", 201, 0);
  EXPECT_DRIVER_ERROR(driver().call<entry::cuCtxGetCurrent>(&current), "cuCtxGetCurrent");
  sim().fail_next("cuCtxGetCurrent", 201, 0);
  EXPECT_EQ(driver().result_of<entry::cuCtxGetCurrent>(&current), 201);
}

TEST_F(Gates, FeaturesBelowTheirVersionSayWhatTheyNeed) {
  WorkqueueConfig wq;
  wq.scope = cu::CU_WORKQUEUE_SCOPE_GREEN_CTX_BALANCED;
  SmPartition whole = SmPartition::from_device(0);
  GroupRequest local = group(16);
  local.locality_domain_id = 0;
  if (version() < 13010) {
    EXPECT_THROW(GreenContext::create(0, nullptr, wq), FeatureUnavailableError);
    EXPECT_THROW(split(whole, {group(16)}, SplitPath::kNative), FeatureUnavailableError);
    EXPECT_THROWS_THAT(GreenContext::max_workqueue_concurrency(0), FeatureUnavailableError,
                       [](const FeatureUnavailableError& e) {
                         EXPECT_CONTAINS(e.what(), "13.1");
                         EXPECT_CONTAINS(e.what(), format_driver_version(version()));
                       });
  }
  if (version() < 13040) {
    EXPECT_THROW(whole.locality_domain_id(), FeatureUnavailableError);
    EXPECT_THROW(split(whole, {local}), FeatureUnavailableError);
    EXPECT_THROW(split(whole, {local}, SplitPath::kEmulated), FeatureUnavailableError);
  } else {
    EXPECT_FALSE(whole.locality_domain_id().has_value());
  }
}

TEST_F(Gates, WorkqueueOptionsReachTheDescriptor) {
  if (version() < 13010) GTEST_SKIP() << "workqueues need 13.1";
  EXPECT_EQ(GreenContext::max_workqueue_concurrency(0), 128u);
  WorkqueueConfig wq;
  wq.scope = cu::CU_WORKQUEUE_SCOPE_GREEN_CTX_BALANCED;
  wq.concurrency_limit = 4;
  SmPartition part = partition_with_at_least(0, 16);
  auto ctx = GreenContext::create(0, &part, wq);
  int scope = -2, limit = -2;
  sim().ctx_workqueue(ctx->handle(), &scope, &limit);
  EXPECT_EQ(scope, 1);
  EXPECT_EQ(limit, 4);
  WorkqueueConfig shared;
  auto whole = GreenContext::create(0, nullptr, shared);
  sim().ctx_workqueue(whole->handle(), &scope, &limit);
  EXPECT_EQ(scope, 0);
  EXPECT_EQ(limit, 128);
  EXPECT_EQ(whole->sm_count(), 132u);
  WorkqueueConfig too_many;
  too_many.concurrency_limit = 100000;
  EXPECT_THROW(GreenContext::create(0, nullptr, too_many), DriverError);
}
