// The emulated split (cuDevSmResourceSplitByCount, every version): exact sizes, chains through
// contexts, internal contexts, and errors that say what the layout can give.
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "sim_fixture.h"

TEST_F(EmulatedSplit, SizesAreExactAndGroupsDisjoint) {
  SmPartition whole = SmPartition::from_device(0);
  {
    SplitResult r = split(whole, {group(16), group(116)}, SplitPath::kEmulated);
    EXPECT_FALSE(r.remainder.has_value());
    auto c = contexts_of(r, {16, 116});
  }
  {
    SplitResult r = split(whole, {group(24), group(40)}, SplitPath::kEmulated);
    ASSERT_TRUE(r.remainder.has_value());
    EXPECT_EQ(r.remainder->sm_count(), 68u);
    auto c = contexts_of(r, {24, 40});
  }
  {
    std::vector<GroupRequest> eights(15, group(8));
    auto c = contexts_of(split(whole, eights, SplitPath::kEmulated), std::vector<unsigned>(15, 8));
  }
  {
    auto c = contexts_of(split(whole, {group(2, 2), group(6, 2), group(10, 2)}, SplitPath::kEmulated), {2, 6, 10});
  }
  {
    auto c = contexts_of(split(whole, {group(16), group(0, 0, true)}, SplitPath::kEmulated), {16, 116});
  }
  {
    SplitResult r = split(whole, {group(0)}, SplitPath::kEmulated);
    ASSERT_EQ(r.groups.size(), 1u);
    EXPECT_EQ(r.groups[0].sm_count() % 8, 0u);
    EXPECT_EQ(r.groups[0].sm_count() + (r.remainder ? r.remainder->sm_count() : 0u), 132u);
  }
  {
    SplitResult r = split(whole, {group(16), group(0)}, SplitPath::kEmulated);
    auto c = contexts_of(r, {16, r.groups[1].sm_count()});
  }
}

TEST_F(EmulatedSplit, ChainsThroughContexts) {
  SmPartition whole = SmPartition::from_device(0);
  SplitResult first = split(whole, {group(16)}, SplitPath::kEmulated);
  ASSERT_TRUE(first.remainder.has_value());
  EXPECT_THROW(split(*first.remainder, {group(8)}), ValueError);
  auto rest = GreenContext::create(0, &*first.remainder, std::nullopt);
  SplitResult second = split(GreenContext::sm_partition(rest), {group(8), group(24)}, SplitPath::kEmulated);
  auto a = GreenContext::create(0, &first.groups[0], std::nullopt);
  auto c = contexts_of(second, {8, 24});
  const std::set<int> a_sms = sm_set(*a);
  EXPECT_EQ(a_sms.size(), 16u);
  for (auto& ctx : c)
    for (int sm : sms_of(*ctx)) EXPECT_FALSE(a_sms.count(sm));
}

TEST_F(EmulatedSplit, AGroupTakingTheRestNeedsNoInternalContext) {
  SmPartition whole = SmPartition::from_device(0);
  const int before = sim().calls("cuGreenCtxCreate");
  SplitResult exact = split(whole, {group(16), group(whole.sm_count() - 16)}, SplitPath::kEmulated);
  SplitResult backfilled = split(whole, {group(16), group(0, 0, true)}, SplitPath::kEmulated);
  EXPECT_EQ(sim().calls("cuGreenCtxCreate"), before);
  for (const SplitResult* result : {&exact, &backfilled}) {
    ASSERT_EQ(result->groups.size(), 2u);
    EXPECT_EQ(result->groups[0].sm_count(), 16u);
    EXPECT_EQ(result->groups[1].sm_count(), whole.sm_count() - 16);
    EXPECT_FALSE(result->remainder.has_value());
    auto a = GreenContext::create(0, &result->groups[0], std::nullopt);
    auto b = GreenContext::create(0, &result->groups[1], std::nullopt);
    const std::set<int> a_sms = sm_set(*a);
    for (int sm : sms_of(*b)) EXPECT_FALSE(a_sms.count(sm)) << sm;
  }
  EXPECT_EQ(live_counts().internal_contexts, 0u);
}

TEST_F(EmulatedSplit, InternalContextsLiveAsLongAsTheirPartitions) {
  SmPartition whole = SmPartition::from_device(0);
  auto result = std::make_unique<SplitResult>(split(whole, {group(16), group(24), group(32)}, SplitPath::kEmulated));
  EXPECT_EQ(live_counts().internal_contexts, 2u);
  SmPartition keep = result->groups[2];
  result.reset();
  EXPECT_EQ(live_counts().internal_contexts, 2u);  // the last group derives from both
  keep = whole;
  EXPECT_EQ(live_counts().internal_contexts, 0u);
}

TEST_F(EmulatedSplit, CountsTheHardwareCannotGiveAreValueErrors) {
  SmPartition whole = SmPartition::from_device(0);
  EXPECT_THROWS_WITH(split(whole, {group(10)}, SplitPath::kEmulated), ValueError, "nearest counts it can give: 8, 16");
  EXPECT_THROW(split(whole, {group(11, 2)}, SplitPath::kEmulated), ValueError);
  EXPECT_THROW(split(whole, {group(8, 4)}, SplitPath::kEmulated), ValueError);
  std::vector<GroupRequest> sixteen(16, group(8));
  EXPECT_THROWS_WITH(split(whole, sixteen, SplitPath::kEmulated), ValueError, "only 15 groups");
  EXPECT_THROW(split(whole, {group(128), group(8)}, SplitPath::kEmulated), ValueError);
  EXPECT_THROW(split(whole, {group(0, 0, true), group(8)}, SplitPath::kEmulated), ValueError);
  EXPECT_THROW(split(whole, {}, SplitPath::kEmulated), ValueError);
  EXPECT_EQ(live_counts().internal_contexts, 0u);
}

TEST_F(EmulatedSplit, ErrorsSayWhatIsLeftAndWhatTheLayoutCanGive) {
  SmPartition whole = SmPartition::from_device(0);
  // 128 SMs in 8-SM groups do not fit the GPCs (15 such groups, 120 SMs); the whole device does.
  EXPECT_THROWS_WITH(split(whole, {group(128)}, SplitPath::kEmulated), ValueError,
                     "num_sms=128 cannot be given from the 132 SMs left; nearest counts it can give: 120, 132");
  // The first group takes every SM (in units of 2): none for the second.
  EXPECT_THROWS_WITH(split(whole, {group(132, 2), group(0)}, SplitPath::kEmulated), ValueError,
                     "no SMs are left for group 1 (132 SMs were split)");
  // Discovery leaves room for the groups after it...
  EXPECT_THROWS_WITH(split(whole, {group(0), group(128)}, SplitPath::kEmulated), ValueError,
                     "group 0: discovery (num_sms=0) found no group of at least 8 SMs in the 132 SMs left "
                     "after reserving 128 for the groups after it");
  {
    SplitResult found = split(whole, {group(0), group(8, 2)}, SplitPath::kEmulated);
    auto contexts = contexts_of(found, {120, 8});
    ASSERT_TRUE(found.remainder.has_value());
    EXPECT_EQ(found.remainder->sm_count(), 4u);
  }
  // It reserves counts, not places: after 112 SMs in 8-SM groups, the 20 left hold no
  // 16-SM group.
  EXPECT_THROWS_WITH(split(whole, {group(0), group(16)}, SplitPath::kEmulated), ValueError,
                     "group 1: num_sms=16 cannot be given from the 20 SMs left; nearest counts it can give: 8, 20");
  // ...and finds nothing where the SMs left are scattered: after 120 SMs in 8-SM groups, the 12
  // left are 2 in each of six GPCs.
  EXPECT_THROWS_THAT(split(whole, {group(0), group(0)}, SplitPath::kEmulated), ValueError, [](const ValueError& e) {
    EXPECT_CONTAINS(e.what(), "group 1: discovery (num_sms=0) found no group of at least 8 SMs in the 12 SMs left");
    EXPECT_EQ(std::string(e.what()).find("reserving"), std::string::npos) << e.what();
  });
  EXPECT_EQ(live_counts().internal_contexts, 0u);
}

TEST_F(EmulatedSplit, GroupsThatDoNotFitNameTheFirstOfThemAndTheCountsItCanHave) {
  SmPartition whole = SmPartition::from_device(0);
  const auto print = [](const std::vector<unsigned>& counts) {
    std::string out;
    for (unsigned c : counts) out += (out.empty() ? "" : ",") + std::to_string(c);
    return out;
  };
  struct Case {
    std::vector<GroupRequest> groups;
    std::size_t culprit;
    unsigned sm_count;
    std::string nearest, text;
  };
  const std::vector<Case> cases = {
      // 15 groups of 8 fit (120 SMs); the 12 left, 2 in each of six GPCs, hold no 8-SM group.
      {std::vector<GroupRequest>(16, group(8)), 15, 8, "",
       "group 15: num_sms=8 cannot be given from the 12 SMs the groups before it leave: only 15 groups of 8 SMs "
       "fit in the 132 SMs left (groups 0..15 ask for 16); the GPU's layout limits how many aligned groups it "
       "holds; nearest counts it can give: none"},
      // 7 groups of 16 fit (112 SMs); the eighth could have 8 of the 20 left.
      {std::vector<GroupRequest>(8, group(16)), 7, 16, "8", "only 7 groups of 16 SMs fit"},
      // Equal groups after a first one: counted from the group that asked.
      {{group(64), group(32), group(32)}, 2, 32, "24",
       "group 2: num_sms=32 cannot be given from the 36 SMs the groups before it leave: only 1 group of 32 SMs "
       "fits in the 68 SMs left (groups 1..2 ask for 2)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_THROWS_THAT(split(whole, c.groups, SplitPath::kEmulated), SplitError, [&](const SplitError& e) {
      EXPECT_CONTAINS(e.what(), c.text);
      EXPECT_EQ(e.group(), std::optional<std::size_t>(c.culprit));
      EXPECT_EQ(e.sm_count(), c.sm_count);
      EXPECT_EQ(print(e.nearest_counts()), c.nearest);
    });
    if (version() < 13010) continue;
    // The native split names the same group and counts.
    EXPECT_THROWS_THAT(split(whole, c.groups, SplitPath::kNative), SplitError, [&](const SplitError& e) {
      EXPECT_EQ(e.group(), std::optional<std::size_t>(c.culprit));
      EXPECT_EQ(e.sm_count(), c.sm_count);
      EXPECT_EQ(print(e.nearest_counts()), c.nearest);
    });
  }
  EXPECT_EQ(live_counts().internal_contexts, 0u);
}

TEST_F(EmulatedSplit, GroupsThatFitAndSplitsShareOneCheckedCall) {
  SmPartition whole = SmPartition::from_device(0);
  // 8-SM groups of the GPCs (18 x 6, 16, 8): 2 x 6 + 2 + 1; 16-SM groups pair them up.
  EXPECT_EQ(groups_that_fit(whole, 8), 15u);
  EXPECT_EQ(groups_that_fit(whole, 16), 7u);
  EXPECT_EQ(groups_that_fit(whole, 200), 0u);
  // A split output, which the driver refuses (CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION):
  // nothing fits, for the count and for the split alike.
  SplitResult first = split(whole, {group(16)}, SplitPath::kEmulated);
  ASSERT_TRUE(first.remainder.has_value());
  EXPECT_EQ(groups_that_fit(*first.remainder, 8), 0u);
  EXPECT_EQ(groups_that_fit(first.groups[0], 8), 0u);
  // Any other refusal is a DriverError naming the call, from either caller.
  const auto names_the_split = [](const DriverError& e) {
    EXPECT_EQ(e.call(), "cuDevSmResourceSplitByCount");
    EXPECT_CONTAINS(e.what(), "CUDA_ERROR_UNKNOWN");
  };
  sim().fail_next("cuDevSmResourceSplitByCount", 999, 0);
  EXPECT_THROWS_THAT(groups_that_fit(whole, 8), DriverError, names_the_split);
  sim().fail_next("cuDevSmResourceSplitByCount", 999, 0);
  EXPECT_THROWS_THAT(partition_with_at_least(0, 8), DriverError, names_the_split);
  sim().fail_next("cuDevSmResourceSplitByCount", 999, 0);
  EXPECT_THROWS_THAT(split(whole, {group(16)}, SplitPath::kEmulated), DriverError, names_the_split);
  EXPECT_EQ(groups_that_fit(whole, 8), 15u) << "usable again afterwards";
}
