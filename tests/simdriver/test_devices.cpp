// Two devices (run with TGC_SIM_DEVICE_COUNT=2, ctest's sim_driver_two_devices; skipped with
// one): contexts, idle contexts and fences keep to their device, and errors name the range.
#include <string>
#include <vector>

#include "fence_records.h"
#include "sim_fixture.h"

TEST_F(Devices, ContextsOnEveryDeviceAndClearErrorsAcrossThem) {
  if (device_count() < 2) GTEST_SKIP() << "needs TGC_SIM_DEVICE_COUNT=2";
  ContextRecycler::instance().set_limit(4);
  SmPartition on_zero = partition_with_at_least(0, 16);
  SmPartition on_one = partition_with_at_least(1, 16);
  EXPECT_EQ(on_one.device(), 1);
  auto a = GreenContext::create(0, &on_zero, std::nullopt);
  auto b = GreenContext::create(1, &on_one, std::nullopt);
  EXPECT_EQ(b->device(), 1);
  EXPECT_NE(b->stream(0), a->stream(0));
  EXPECT_THROWS_WITH(GreenContext::create(1, &on_zero, std::nullopt), ValueError,
                     "device_id=1 disagrees with the sm_partition's device (0); omit device_id or pass device_id=0");
  EXPECT_THROWS_WITH(GreenContext::create(2, nullptr, std::nullopt), std::runtime_error, "valid device_id: 0..1");
  EXPECT_EQ(check_device(1), 1);
  for (long long bad : {-1LL, 2LL, 1LL << 40}) {
    EXPECT_THROWS_THAT(check_device(bad), std::runtime_error, [&](const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()), "device_id " + std::to_string(bad) +
                                           " is out of range: this machine has 2 CUDA devices (valid device_id: 0..1)");
    });
  }
  EXPECT_NO_THROW(check_partition_device(on_one, 1));
  EXPECT_THROW(check_partition_device(on_one, 0), ValueError);
  // Idle contexts are only ever reused on their own device.
  a.reset();
  auto again = GreenContext::create(1, &on_one, std::nullopt);
  EXPECT_EQ(again->device(), 1);
  SplitResult split_one = split(SmPartition::from_device(1), {group(8), group(8)});
  std::vector<const SmPartition*> parts{&split_one.groups[0], &split_one.groups[1]};
  auto made = GreenContext::create_all(1, parts, std::nullopt);
  EXPECT_EQ(made[0]->device(), 1);
  EXPECT_THROW(GreenContext::create_all(0, parts, std::nullopt), ValueError);
}

TEST_F(Devices, AFenceKeepsToOneDevice) {
  if (device_count() < 2) GTEST_SKIP() << "needs TGC_SIM_DEVICE_COUNT=2";
  auto zero = GreenContext::create(0, nullptr, std::nullopt);
  auto one = GreenContext::create(1, nullptr, std::nullopt);
  cu::CUstream zero0 = zero->stream(0), one0 = one->stream(0), one1 = one->stream(-1);
  EXPECT_THROWS_WITH(StreamFence mixed({{zero, zero0}, {one, one0}}), ValueError,
                     "on one device, not on devices 0 and 1");
  StreamFence on_one({{one, one0}});
  StreamFence on_zero({{zero, zero0}});
  EXPECT_EQ(on_one.device(), 1);
  const int records = sim().calls("cuEventRecord");
  EXPECT_THROW(on_one.order_after(on_zero), ValueError);
  EXPECT_EQ(sim().calls("cuEventRecord"), records);
  StreamFence also_on_one({{one, one1}});
  sim().clear_wait_edges();
  on_one.order_after(also_on_one);
  EXPECT_EQ(wait_edges(), all_pairs({one0}, {one1}));
}
