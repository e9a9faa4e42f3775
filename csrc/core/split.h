// Splitting SM resources. Splitting is separate from creating: a split returns partitions
// (descriptions of SMs); making a GreenContext from one is a separate step.
//
// Two paths with one contract:
//  - native (driver 13.1+): one cuDevSmResourceSplit call with the group parameters as given
//    (a last group asking for exactly the SMs left, refused as given, asked again as the
//    backfilled rest);
//  - emulated (driver 12.4 to 13.0): cuDevSmResourceSplitByCount, group by group (equal
//    consecutive groups in one call), re-splitting each remainder through an internal green
//    context because the driver refuses to split raw split outputs.
#pragma once

#include <optional>
#include <vector>

#include "errors.h"
#include "sm_partition.h"

namespace tgc {

struct GroupRequest {
  unsigned sm_count = 0;  // 0: discovery
  unsigned coscheduled_sm_count = 0;
  unsigned preferred_coscheduled_sm_count = 0;
  bool backfill = false;
  std::optional<unsigned> locality_domain_id;
};

struct SplitResult {
  std::vector<SmPartition> groups;
  std::optional<SmPartition> remainder;  // nullopt when no SMs are left
};

enum class SplitPath { kAuto, kNative, kEmulated };

// Splits `input` into groups as `requests` ask, in order; a last group asking for exactly the
// SMs the groups before it leave gets them on both paths. ValueError for requests that break
// the documented rules or that the hardware cannot give exactly (a SplitError naming the
// nearest counts it can give and, for the last group, the request that gives it the rest on
// every driver); DriverError when the driver refuses for another reason.
SplitResult split(const SmPartition& input, const std::vector<GroupRequest>& requests,
                  SplitPath path = SplitPath::kAuto);

// The path `kAuto` takes with the installed driver.
SplitPath native_split_available_path();

// The rules of a request list alone (no driver, no input): at least one group, and a
// discovery group with backfill (it takes all remaining SMs) only last. ValueError otherwise.
void check_group_list(const std::vector<GroupRequest>& requests);

// Checks that need no driver: those of check_group_list, an input the driver accepts for
// splitting, counts within the input.
void check_requests(const std::vector<GroupRequest>& requests, unsigned input_sm_count,
                    bool input_splittable);

// cuDevSmResourceSplitByCount flags that emulate `request` on a device whose co-scheduling
// alignment is `alignment`; ValueError for co-scheduled counts the old call cannot express.
unsigned emulated_split_flags(const GroupRequest& request, unsigned alignment, int driver_version);

// Granularity of counts under `flags`.
unsigned emulated_granularity(unsigned flags, unsigned alignment);

// How many groups of at least `min_sms` SMs at the default co-scheduling alignment fit in
// `input` at once (the GPU's layout can fit fewer than sm_count / min_sms).
unsigned groups_that_fit(const SmPartition& input, unsigned min_sms);

// The smallest partition of device `ordinal` with at least `min_sms` SMs at the default
// co-scheduling alignment (the whole device if no aligned group that large exists).
// num_sms_out_of_range() naming the device's SM count unless `min_sms` is 1 to that count.
SmPartition partition_with_at_least(int ordinal, long long min_sms);

// The RangeError for a num_sms outside 1 to the SM count of `device` (the whole device's
// partition), or, where no device could be read (null), outside 1 to the device's SM count.
RangeError num_sms_out_of_range(long long num_sms, const SmPartition* device);

}  // namespace tgc
