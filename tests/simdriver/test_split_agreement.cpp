// One request, one result on both split paths: a last group asking for exactly the SMs the
// groups before it leave, the errors that name the request giving it the rest on every driver,
// and co-scheduled counts checked before the driver is asked.
#include <string>
#include <vector>

#include "sim_fixture.h"

TEST_F(SplitPaths, ALastGroupAskingForWhatIsLeftGetsItExactly) {
  SmPartition whole = SmPartition::from_device(0);
  const std::vector<std::vector<unsigned>> cases = {{16, 116}, {120, 12}, {132}, {24, 40, 68}, {8, 8, 116}};
  for (SplitPath path : paths_here()) {
    SCOPED_TRACE(path == SplitPath::kNative ? "native" : "emulated");
    for (const std::vector<unsigned>& counts : cases) {
      std::vector<GroupRequest> requests;
      for (unsigned count : counts) requests.push_back(group(count));
      SplitResult result = split(whole, requests, path);
      EXPECT_FALSE(result.remainder.has_value());
      auto contexts = contexts_of(result, counts);
    }
    // Fewer SMs left than the device's co-scheduled count (8): the rest all the same.
    SplitResult small = split(whole, {group(64, 2), group(64, 2), group(4)}, path);
    EXPECT_FALSE(small.remainder.has_value());
    auto contexts = contexts_of(small, {64, 64, 4});
  }
}

TEST_F(SplitPaths, TheNativePathAsksForTheRestOnlyWhenTheDriverRefusesItAsGiven) {
  if (version() < 13010) GTEST_SKIP() << "native split needs 13.1";
  SmPartition whole = SmPartition::from_device(0);
  const int before = sim().calls("cuDevSmResourceSplit");
  auto pairs = contexts_of(split(whole, {group(16), group(116, 2)}), {16, 116});
  EXPECT_EQ(sim().calls("cuDevSmResourceSplit") - before, 1);  // granted as given
  unsigned params[2 * 16];
  ASSERT_EQ(sim().last_params(params, 2), 2);
  EXPECT_EQ(params[16 + 3], 0u);  // no backfill asked for
  auto rest = contexts_of(split(whole, {group(16), group(116)}), {16, 116});
  EXPECT_EQ(sim().calls("cuDevSmResourceSplit") - before, 3);  // refused as given, then the rest
  ASSERT_EQ(sim().last_params(params, 2), 2);
  EXPECT_EQ(params[16 + 3], cu::CU_DEV_SM_RESOURCE_GROUP_BACKFILL);
  // After a discovery group what is left is not known before the split: not asked as the rest.
  EXPECT_ANY_THROW(split(whole, {group(0), group(116)}));
}

TEST_F(SplitPaths, ErrorsAboutTheLastGroupNameTheRequestThatGivesItTheRest) {
  SmPartition whole = SmPartition::from_device(0);
  for (SplitPath path : paths_here()) {
    SCOPED_TRACE(path == SplitPath::kNative ? "native" : "emulated");
    EXPECT_THROWS_THAT(split(whole, {group(16), group(100)}, path), SplitError, [](const SplitError& e) {
      EXPECT_CONTAINS(e.what(), "group 1: num_sms=100 cannot be given");
      EXPECT_CONTAINS(e.what(), "nearest counts it can give: 96, 104; to give the last group every SM the groups "
                                "before it leave, on every driver, ask for num_sms=(16, 0), backfill=(False, True)");
      EXPECT_EQ(e.nearest_counts(), (std::vector<unsigned>{96, 104}));
    });
    EXPECT_THROWS_WITH(split(whole, {group(24, 0, true), group(8), group(98)}, path), SplitError,
                       "ask for num_sms=(24, 8, 0), backfill=(True, False, True)");
    EXPECT_THROWS_WITH(split(whole, {group(100), group(100)}, path), SplitError,
                       "the groups ask for 200 SMs in all, more than the 132 SMs of the partition being split; to "
                       "give the last group every SM the groups before it leave, on every driver, ask for "
                       "num_sms=(100, 0), backfill=(False, True)");
    EXPECT_THROWS_WITH(split(whole, {group(140)}, path), SplitError, "ask for num_sms=0, backfill=True");
    // Not about the last group, or nothing left for it: no such request to name.
    for (const std::vector<GroupRequest>& requests :
         {std::vector<GroupRequest>{group(12), group(16)}, {group(132, 2), group(8)}, {group(0), group(200)}}) {
      EXPECT_THROWS_THAT(split(whole, requests, path), SplitError, [](const SplitError& e) {
        EXPECT_EQ(std::string(e.what()).find("every driver"), std::string::npos) << e.what();
      });
    }
  }
}

TEST_F(SplitPaths, CoscheduledCountsTheDriverCannotTakeAreValueErrorsBeforeItIsAsked) {
  SmPartition whole = SmPartition::from_device(0);
  for (SplitPath path : paths_here()) {
    SCOPED_TRACE(path == SplitPath::kNative ? "native" : "emulated");
    const int native = sim().calls("cuDevSmResourceSplit"), by_count = sim().calls("cuDevSmResourceSplitByCount");
    for (unsigned coscheduled : {3u, 7u, 34u, 64u}) {
      EXPECT_THROWS_THAT(split(whole, {group(16), group(24, coscheduled)}, path), ValueError, [&](const ValueError& e) {
        EXPECT_CONTAINS(e.what(), "coscheduled_sm_count=" + std::to_string(coscheduled) +
                                      " cannot be honoured on driver " + format_driver_version(version()));
        EXPECT_CONTAINS(e.what(), "allowed there: 0 (the default, 8), 1");
      });
    }
    EXPECT_EQ(sim().calls("cuDevSmResourceSplit"), native);
    if (path == SplitPath::kNative) {
      EXPECT_EQ(sim().calls("cuDevSmResourceSplitByCount"), by_count);
    }
    // 1 (no co-scheduling) gives counts in units of 2 on both paths.
    auto contexts = contexts_of(split(whole, {group(6, 1), group(10, 1)}, path), {6, 10});
  }
}
