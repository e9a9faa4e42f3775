// What the split paths share (split.cpp, split_native.cpp, split_emulated.cpp); not installed
// with the public headers.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "cuda_abi.h"
#include "errors.h"
#include "split.h"

namespace tgc::split_detail {

bool has_sms(const abi::CUdevResource& resource);
// A split output stored on its own: the driver's `nextResource` link (13.1+) may point into
// the array it came from, which does not outlive the call.
abi::CUdevResource detached(abi::CUdevResource resource);
std::string group_label(std::size_t index);
// The SplitError for group `index`, which asked for `sm_count` SMs: "group 1: num_sms=20 <why>;
// nearest counts it can give: 16, 24" (or "none").
SplitError split_error(std::size_t index, unsigned sm_count, const std::string& why,
                       std::vector<unsigned> nearest);

// The counts nearest to `count` that `gives` accepts, one below and one above, ascending
// (either may be missing): multiples of `step` from `step` up to `most`. The search of both
// split paths.
std::vector<unsigned> nearest_counts(unsigned count, unsigned step, unsigned most,
                                     const std::function<bool(unsigned)>& gives);

// What one cuDevSmResourceSplitByCount call made.
struct ByCount {
  unsigned groups = 0;  // how many groups the driver made (0: nothing of that size fits)
  std::vector<abi::CUdevResource> results;
  abi::CUdevResource remainder = abi::zeroed_resource();
};
// Up to `wanted` groups of at least `min_count` SMs from `input` under `flags`.
ByCount split_by_count(const abi::CUdevResource& input, unsigned wanted, unsigned flags,
                       unsigned min_count);

// The two paths; `requests` have passed check_requests.
SplitResult split_native(const SmPartition& input, const std::vector<GroupRequest>& requests);
SplitResult split_emulated(const SmPartition& input, const std::vector<GroupRequest>& requests);

}  // namespace tgc::split_detail
