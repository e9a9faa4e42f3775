// The native split path (driver 13.1+): one cuDevSmResourceSplit call with the group
// parameters as given.
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "driver_api.h"
#include "errors.h"
#include "split_internal.h"

namespace tgc::split_detail {

namespace {

// One cuDevSmResourceSplit call over `requests`; its result, the outputs in `results` and
// `remainder` when given.
abi::CUresult call_split(const SmPartition& input, const std::vector<GroupRequest>& requests,
                         std::vector<abi::CUdevResource>* results, abi::CUdevResource* remainder) {
  const DriverApi& api = driver();
  std::vector<abi::CU_DEV_SM_RESOURCE_GROUP_PARAMS> params(requests.size());
  std::memset(params.data(), 0, params.size() * sizeof(params[0]));
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const GroupRequest& r = requests[i];
    params[i].smCount = r.sm_count;
    params[i].coscheduledSmCount = r.coscheduled_sm_count;
    params[i].preferredCoscheduledSmCount = r.preferred_coscheduled_sm_count;
    if (r.backfill) params[i].flags |= abi::CU_DEV_SM_RESOURCE_GROUP_BACKFILL;
    if (r.locality_domain_id) {
      api.require_version("locality domains", feature_version::kLocalityDomains);
      params[i].flags |= abi::CU_DEV_SM_RESOURCE_GROUP_LOCALITY_DOMAIN_ID;
      params[i].localityDomainId = *r.locality_domain_id;
    }
  }
  std::vector<abi::CUdevResource> scratch;
  if (results == nullptr) results = &scratch;
  results->assign(requests.size(), abi::zeroed_resource());
  abi::CUdevResource unused = abi::zeroed_resource();
  return api.result_of<entry::cuDevSmResourceSplit>(results->data(), static_cast<unsigned>(requests.size()),
                                                    &input.resource(), remainder ? remainder : &unused, 0u,
                                                    params.data());
}

// The driver's answers for a count it cannot give (it names neither the group nor the count).
bool refuses_count(abi::CUresult result) {
  return result == abi::CUDA_ERROR_INVALID_VALUE || result == abi::CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
}

bool splits(const SmPartition& input, const std::vector<GroupRequest>& requests) {
  return call_split(input, requests, nullptr, nullptr) == abi::CUDA_SUCCESS;
}

// After the driver refused `requests`: the SplitError naming the first group it refuses (found
// by splitting the groups up to each one alone), its count and the nearest counts it gives that
// group after the groups before it (for a discovery group, that none fits). Nothing when no count
// of that group splits and it does not split alone either (or is the first group): then what the
// driver refuses is not the count, and its own error stands.
std::optional<SplitError> refusal(const SmPartition& input, std::vector<GroupRequest> requests) {
  std::size_t culprit = requests.size() - 1;
  for (std::size_t k = 1; k < requests.size(); ++k) {
    std::vector<GroupRequest> first(requests.begin(), requests.begin() + static_cast<std::ptrdiff_t>(k));
    if (!splits(input, first)) {
      culprit = k - 1;
      break;
    }
  }
  requests.resize(culprit + 1);
  GroupRequest& group = requests.back();
  const unsigned asked = group.sm_count;
  // A group the driver refuses alone as well is refused for what it asks, not for its count.
  const auto splits_alone = [&] { return culprit > 0 && splits(input, {group}); };
  if (asked == 0) {
    if (!splits_alone()) return std::nullopt;
    return SplitError(group_label(culprit) + ": discovery (num_sms=0) found no group the driver could give in what the "
                          "groups before it left",
                      culprit, 0, {});
  }
  unsigned before = 0;
  for (std::size_t i = 0; i < culprit; ++i) before += requests[i].sm_count;
  const unsigned available = input.sm_count() > before ? input.sm_count() - before : 0;
  const bool own = group.coscheduled_sm_count != 0;
  const unsigned alignment = own ? group.coscheduled_sm_count : input.coscheduled_sm_count();
  const unsigned step = alignment > 1 ? alignment : 2;
  std::vector<unsigned> nearest;
  for (unsigned c = (asked - 1) / step * step; c >= step; c -= step) {
    group.sm_count = c;
    if (splits(input, requests)) {
      nearest.push_back(c);
      break;
    }
  }
  for (unsigned c = (asked / step + 1) * step; c <= available; c += step) {
    group.sm_count = c;
    if (splits(input, requests)) {
      nearest.push_back(c);
      break;
    }
  }
  if (nearest.empty()) {
    // It splits alone, but no count of it after the groups before it: they used up what the
    // GPU's layout gives.
    group.sm_count = asked;
    if (!splits_alone()) return std::nullopt;
    return split_error(culprit, asked,
                       "cannot be given from the " + std::to_string(available) +
                           " SMs the groups before it leave; the GPU's layout limits how many aligned groups it holds",
                       {});
  }
  return split_error(culprit, asked,
                     "cannot be given exactly: on driver " + format_driver_version(driver().version()) +
                         " SMs split in units of " + std::to_string(step) +
                         (own ? " (its coscheduled_sm_count)" : " (the device's co-scheduling alignment)"),
                     std::move(nearest));
}

}  // namespace

SplitResult split_native(const SmPartition& input, const std::vector<GroupRequest>& requests) {
  const DriverApi& api = driver();
  api.require<entry::cuDevSmResourceSplit>("SMPartition.split", feature_version::kNativeSplit);
  std::vector<abi::CUdevResource> results;
  abi::CUdevResource remainder = abi::zeroed_resource();
  const abi::CUresult result = call_split(input, requests, &results, &remainder);
  if (refuses_count(result)) {
    if (std::optional<SplitError> error = refusal(input, requests)) throw *error;
  }
  api.check<entry::cuDevSmResourceSplit>(result);

  SplitResult out;
  for (const abi::CUdevResource& group : results) {
    out.groups.emplace_back(input.device(), detached(group), SmPartition::Origin::kSplitGroup,
                            input.coscheduled_sm_count(), input.keep_alive());
  }
  if (has_sms(remainder)) {
    out.remainder.emplace(input.device(), detached(remainder), SmPartition::Origin::kSplitRemainder,
                          2u, input.keep_alive());
  }
  return out;
}

}  // namespace tgc::split_detail
