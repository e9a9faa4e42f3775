// The native split (cuDevSmResourceSplit, 13.1+): group parameters as given, discovery, the
// driver's rules as ValueErrors, and locality domains (13.4).
#include "sim_fixture.h"

TEST_F(NativeSplit, PassesGroupParametersExactly) {
  if (version() < 13010) GTEST_SKIP() << "native split needs 13.1";
  SmPartition whole = SmPartition::from_device(0);
  GroupRequest a = group(16, 4);
  a.preferred_coscheduled_sm_count = 8;
  GroupRequest b = group(24, 8, true);
  GroupRequest c = group(0, 2, true);
  SplitResult result = split(whole, {a, b, c});
  unsigned params[3 * 16];
  ASSERT_EQ(sim().last_params(params, 3), 3);
  EXPECT_EQ(params[0], 16u);
  EXPECT_EQ(params[1], 4u);
  EXPECT_EQ(params[2], 8u);
  EXPECT_EQ(params[3], 0u);
  EXPECT_EQ(params[16 + 0], 24u);
  EXPECT_EQ(params[16 + 3], cu::CU_DEV_SM_RESOURCE_GROUP_BACKFILL);
  EXPECT_EQ(params[32 + 1], 2u);
  EXPECT_EQ(params[32 + 3], cu::CU_DEV_SM_RESOURCE_GROUP_BACKFILL);
  for (int i = 4; i < 16; ++i) EXPECT_EQ(params[i], 0u) << "reserved word " << i;
  EXPECT_FALSE(result.remainder.has_value());
  auto contexts = contexts_of(result, {16, 24, 92});
  EXPECT_FALSE(result.groups[0].splittable());
  EXPECT_THROW(split(result.groups[0], {group(8)}), ValueError);
}

TEST_F(NativeSplit, DiscoveryRemainderAndDriverRules) {
  if (version() < 13010) GTEST_SKIP() << "native split needs 13.1";
  SmPartition whole = SmPartition::from_device(0);
  SplitResult result = split(whole, {group(16), group(0)});
  ASSERT_EQ(result.groups.size(), 2u);
  EXPECT_EQ(result.groups[0].sm_count(), 16u);
  EXPECT_GT(result.groups[1].sm_count(), 0u);
  ASSERT_TRUE(result.remainder.has_value());
  EXPECT_EQ(result.groups[0].sm_count() + result.groups[1].sm_count() + result.remainder->sm_count(), 132u);
  // Not a multiple of the default co-scheduled count: the driver says INVALID_VALUE, and the
  // error says which group, which count and the nearest counts, as on the emulated path.
  const int asked = sim().calls("cuDevSmResourceSplit");
  EXPECT_THROWS_THAT(split(whole, {group(16), group(12)}), SplitError, [&](const SplitError& e) {
    EXPECT_CONTAINS(e.what(), "group 1: num_sms=12 cannot be given exactly: on driver");
    EXPECT_CONTAINS(e.what(), "nearest counts it can give: 8, 16");
    EXPECT_EQ(e.group(), std::optional<std::size_t>(1));
    EXPECT_EQ(e.sm_count(), 12u);
    EXPECT_EQ(e.nearest_counts(), (std::vector<unsigned>{8, 16}));
  });
  // The native path asked the driver, then found the group and the nearest counts by asking it
  // again; the emulated path was not used.
  EXPECT_GT(sim().calls("cuDevSmResourceSplit"), asked + 1);
  const int by_count = sim().calls("cuDevSmResourceSplitByCount");
  EXPECT_THROWS_WITH(split(whole, {group(20)}), SplitError, "nearest counts it can give: 16, 24");
  EXPECT_EQ(sim().calls("cuDevSmResourceSplitByCount"), by_count);
  // A discovery group with nothing left for it, as on the emulated path.
  EXPECT_THROWS_THAT(split(whole, {group(120), group(0)}), SplitError, [](const SplitError& e) {
    EXPECT_CONTAINS(e.what(), "group 1: discovery (num_sms=0) found no group");
    EXPECT_EQ(e.group(), std::optional<std::size_t>(1));
    EXPECT_EQ(e.sm_count(), 0u);
  });
  EXPECT_THROWS_THAT(split(whole, {group(120), group(0)}, SplitPath::kEmulated), SplitError,
                     [](const SplitError& e) { EXPECT_EQ(e.group(), std::optional<std::size_t>(1)); });
  // Sixteen groups of 8: the layout holds fifteen, and no other count of the sixteenth fits after
  // them, yet it splits alone: the count is what is refused, on both paths.
  std::vector<GroupRequest> sixteen(16, group(8));
  for (SplitPath path : {SplitPath::kNative, SplitPath::kEmulated}) {
    EXPECT_THROWS_THAT(split(whole, sixteen, path), SplitError, [](const SplitError& e) {
      EXPECT_EQ(e.sm_count(), 8u);
      EXPECT_TRUE(e.nearest_counts().empty());
    });
  }
  EXPECT_THROWS_THAT(split(whole, sixteen), SplitError, [](const SplitError& e) {
    EXPECT_CONTAINS(e.what(), "group 15: num_sms=8 cannot be given from the 12 SMs the groups before it leave");
    EXPECT_CONTAINS(e.what(), "nearest counts it can give: none");
    EXPECT_EQ(e.group(), std::optional<std::size_t>(15));
  });
}

TEST_F(NativeSplit, LocalityDomains) {
  if (version() < 13040) GTEST_SKIP() << "locality domains need 13.4";
  SmPartition whole = SmPartition::from_device(0);
  GroupRequest in_one = group(16);
  in_one.locality_domain_id = 1;
  SplitResult result = split(whole, {in_one});
  unsigned params[16];
  ASSERT_EQ(sim().last_params(params, 1), 1);
  EXPECT_EQ(params[3], cu::CU_DEV_SM_RESOURCE_GROUP_LOCALITY_DOMAIN_ID);
  EXPECT_EQ(params[4], 1u);
  EXPECT_EQ(result.groups[0].locality_domain_id(), std::optional<unsigned>(1));
  auto ctx = GreenContext::create(0, &result.groups[0], std::nullopt);
  EXPECT_EQ(ctx->locality_domain_id(), std::optional<unsigned>(1));
  GroupRequest nowhere = group(16);
  nowhere.locality_domain_id = 7;
  EXPECT_THROW(split(whole, {nowhere}), DriverError);  // no count fits there: not a count the driver refuses
}
