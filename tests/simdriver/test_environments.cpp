// Tests that need an environment of their own, each run alone by ctest: a driver that finds no
// device, one lacking entry points its version claims, and the idle limit from the environment.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "bench/driver_baseline.h"
#include "sim_fixture.h"

// Run alone, with TGC_SIM_FAIL_INIT=100 (ctest's sim_driver_no_device).
TEST(NoDevice, InitFailureIsAClearErrorEveryTime) {
  if (std::getenv("TGC_SIM_FAIL_INIT") == nullptr) GTEST_SKIP() << "needs TGC_SIM_FAIL_INIT";
  for (int attempt = 0; attempt < 2; ++attempt) {
    EXPECT_THROWS_THAT(device_count(), DriverError, [&](const DriverError& e) {
      EXPECT_EQ(e.call(), "cuInit");
      EXPECT_CONTAINS(e.what(), "CUDA_ERROR_NO_DEVICE");
    });
  }
  EXPECT_EQ(installed_driver_version(), version());  // the version needs no cuInit
  EXPECT_FALSE(driver_initialized());
}

// Run alone, with TGC_SIM_HIDE naming entry points (ctest's sim_driver_missing_entry_points).
TEST(MissingEntryPoints, ADriverLackingWhatItsVersionClaimsIsNamedAndWorkedAround) {
  if (std::getenv("TGC_SIM_HIDE") == nullptr) GTEST_SKIP() << "needs TGC_SIM_HIDE";
  ASSERT_GE(version(), 13010);
  ContextRecycler::instance().set_limit(0);
  EXPECT_EQ(driver().cuDevSmResourceSplit, nullptr);
  EXPECT_EQ(native_split_available_path(), SplitPath::kEmulated) << "auto takes the path that works";
  SmPartition whole = SmPartition::from_device(0);
  EXPECT_THROWS_THAT(split(whole, {group(16)}, SplitPath::kNative), std::runtime_error, [](const std::runtime_error& e) {
    EXPECT_EQ(dynamic_cast<const FeatureUnavailableError*>(&e), nullptr)
        << "the version is high enough: " << e.what();
    EXPECT_CONTAINS(e.what(), "SMPartition.split needs cuDevSmResourceSplit, a driver entry point that");
    EXPECT_CONTAINS(e.what(), "does not provide, although it reports version 13.1 or newer");
  });
  EXPECT_EQ(split(whole, {group(16)}).groups.at(0).sm_count(), 16u);
  // No cuGreenCtxStreamCreate: streams are made with the context current, as on driver 12.4.
  auto ctx = GreenContext::create(0, nullptr, std::nullopt);
  const int created = sim().calls("cuStreamCreateWithPriority");
  EXPECT_NE(ctx->stream(0), nullptr);
  EXPECT_EQ(sim().calls("cuStreamCreateWithPriority"), created + 1);
  EXPECT_THROW(bench::raw_stream_create(reinterpret_cast<std::uintptr_t>(ctx->handle()), 0), std::runtime_error);
  // No cuStreamGetGreenCtx: the SM count of a stream cannot be known, and says so.
  EXPECT_THROWS_WITH(stream_sm_count(ctx->stream(0), 0), std::runtime_error,
                     "the SM count of a stream needs cuStreamGetGreenCtx, a driver entry point");
  ctx.reset();
  EXPECT_EQ(sim().live("stream"), 0);
  EXPECT_EQ(sim().live("green_ctx"), 0);
}

// Run alone, with TGC_TEST_EXPECTED_IDLE_LIMIT and TORCH_GREEN_CONTEXTS_IDLE_LIMIT set
// (ctest's idle_limit_*).
TEST(IdleLimit, ReadFromTheEnvironmentWhenTheRecyclerIsMade) {
  const char* expected = std::getenv("TGC_TEST_EXPECTED_IDLE_LIMIT");
  if (expected == nullptr) GTEST_SKIP() << "needs TGC_TEST_EXPECTED_IDLE_LIMIT";
  const std::size_t limit = std::strtoull(expected, nullptr, 10);
  EXPECT_EQ(ContextRecycler::instance().limit(), limit);
  // A value that is not a whole number a size_t holds keeps the default and is refused where
  // contexts are made.
  const std::string given = std::getenv(idle_limit_env());
  if (given == expected) {
    EXPECT_NO_THROW(check_idle_limit_env());
  } else {
    EXPECT_THROWS_WITH(check_idle_limit_env(), ValueError,
                       "TORCH_GREEN_CONTEXTS_IDLE_LIMIT='" + given + "'");
  }
  ::setenv(idle_limit_env(), "3", 1);
  EXPECT_EQ(ContextRecycler::instance().limit(), limit) << "read once";
  const std::size_t other = limit == 0 ? 1 : limit - 1;
  ContextRecycler::instance().set_limit(other);
  EXPECT_EQ(ContextRecycler::instance().limit(), other);
}
