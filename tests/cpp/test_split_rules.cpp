// Split rules that need no driver: request checks, the emulated path's flag mapping, the steps
// of counts and the nearest-counts search.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/cuda_abi.h"
#include "core/errors.h"
#include "core/split.h"
#include "core/split_internal.h"
#include "group_request.h"

using namespace tgc;
using tgc::testing::group;

namespace {

std::string message_of(const std::vector<GroupRequest>& requests, unsigned input, bool splittable) {
  try {
    check_requests(requests, input, splittable);
  } catch (const ValueError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(CheckRequests, AcceptsValidPlans) {
  EXPECT_NO_THROW(check_requests({group(16), group(116)}, 132, true));
  EXPECT_NO_THROW(check_requests({group(16), group(0, 0, true)}, 132, true));
  EXPECT_NO_THROW(check_requests({group(0)}, 132, true));
  EXPECT_NO_THROW(check_requests({group(0), group(0)}, 132, true));
}

TEST(CheckRequests, RejectsEmpty) {
  EXPECT_NE(message_of({}, 132, true).find("at least one group"), std::string::npos);
}

TEST(CheckRequests, BackfillDiscoveryMustBeLast) {
  std::string m = message_of({group(0, 0, true), group(16)}, 132, true);
  EXPECT_EQ(m, "group 0: num_sms=0 with backfill=True takes all remaining SMs, so it may only be the last "
               "group (there are 2 groups)");
  // a rule of the list alone: checked before the input is looked at
  EXPECT_EQ(message_of({group(0, 0, true), group(16)}, 8, false), m);
  EXPECT_THROW(check_group_list({group(0, 0, true), group(0, 0, true), group(8)}), ValueError);
  EXPECT_THROW(check_group_list({}), ValueError);
  EXPECT_NO_THROW(check_group_list({group(16), group(0, 0, true)}));
  // backfill with an explicit count may stand anywhere
  EXPECT_NO_THROW(check_requests({group(16, 0, true), group(16)}, 132, true));
}

TEST(CheckRequests, RejectsMoreThanTheInput) {
  EXPECT_NE(message_of({group(140)}, 132, true).find("more than"), std::string::npos);
  std::string m = message_of({group(96), group(96)}, 132, true);
  EXPECT_NE(m.find("192"), std::string::npos);
  EXPECT_NE(m.find("132"), std::string::npos);
}

TEST(CheckRequests, RejectsRawSplitOutputs) {
  std::string m = message_of({group(8)}, 132, false);
  EXPECT_NE(m.find("GreenContext"), std::string::npos);
}

TEST(EmulatedFlags, DefaultAndAlignmentKeepCoscheduling) {
  EXPECT_EQ(emulated_split_flags(group(16, 0), 8, 13000), 0u);
  EXPECT_EQ(emulated_split_flags(group(16, 8), 8, 13000), 0u);
  EXPECT_EQ(emulated_granularity(0, 8), 8u);
}

TEST(EmulatedFlags, TwoOrLessOrBackfillIgnoreCoscheduling) {
  const unsigned ignore = tgc::abi::CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING;
  EXPECT_EQ(emulated_split_flags(group(6, 2), 8, 13000), ignore);
  EXPECT_EQ(emulated_split_flags(group(6, 1), 8, 13000), ignore);
  EXPECT_EQ(emulated_split_flags(group(20, 8, true), 8, 13000), ignore);
  EXPECT_EQ(emulated_granularity(ignore, 8), 2u);
}

TEST(EmulatedFlags, OtherCoscheduledCountsAreRefusedWithTheAllowedOnes) {
  try {
    emulated_split_flags(group(16, 4), 8, 13000);
    FAIL() << "coscheduled_sm_count=4 cannot be emulated";
  } catch (const ValueError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("coscheduled_sm_count=4"), std::string::npos);
    EXPECT_NE(m.find("13.0"), std::string::npos);
    EXPECT_NE(m.find("13.1"), std::string::npos);
  }
  EXPECT_THROW(emulated_split_flags(group(32, 16), 8, 12080), ValueError);
  // on a pre-Hopper device the alignment itself is 2
  EXPECT_EQ(emulated_split_flags(group(4, 2), 2, 12040),
            tgc::abi::CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING);
}

TEST(SplitSteps, CountsAreEvenAndStepByTheCoscheduledCount) {
  EXPECT_EQ(split_step(0), 2u);
  EXPECT_EQ(split_step(1), 2u);
  EXPECT_EQ(split_step(2), 2u);
  EXPECT_EQ(split_step(8), 8u);
  EXPECT_EQ(emulated_granularity(0, 0), 2u);  // no alignment known: the driver's even counts
}

TEST(NearestCounts, OneBelowAndOneAboveAtTheStepUpToTheLimit) {
  using Counts = std::vector<unsigned>;
  const auto every = [](unsigned) { return true; };
  EXPECT_EQ(split_detail::nearest_counts(20, 8, 132, every), (Counts{16, 24}));
  EXPECT_EQ(split_detail::nearest_counts(20, 8, 24, every), (Counts{16, 24}));  // the limit included
  EXPECT_EQ(split_detail::nearest_counts(20, 8, 23, every), (Counts{16}));
  EXPECT_EQ(split_detail::nearest_counts(24, 8, 132, [](unsigned c) { return c != 16 && c != 32; }),
            (Counts{8, 40}));
  EXPECT_EQ(split_detail::nearest_counts(6, 8, 132, every), (Counts{8}));  // nothing below the step
  EXPECT_EQ(split_detail::nearest_counts(20, 2, 132, [](unsigned) { return false; }), Counts{});
}
