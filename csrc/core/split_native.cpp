// The native split path (driver 13.1+): one cuDevSmResourceSplit call with the group
// parameters as given.
#include <cstring>
#include <vector>

#include "driver_api.h"
#include "errors.h"
#include "split_internal.h"

namespace tgc::split_detail {

SplitResult split_native(const SmPartition& input, const std::vector<GroupRequest>& requests) {
  const DriverApi& api = driver();
  auto split_fn = api.require(api.cuDevSmResourceSplit, "SMPartition.split (cuDevSmResourceSplit)",
                              feature_version::kNativeSplit);
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
  std::vector<abi::CUdevResource> results(requests.size(), abi::zeroed_resource());
  abi::CUdevResource remainder = abi::zeroed_resource();
  const abi::CUresult result = split_fn(results.data(), static_cast<unsigned>(requests.size()),
                                        &input.resource(), &remainder, 0, params.data());
  // The driver says only INVALID_VALUE (or INVALID_RESOURCE_CONFIGURATION) for a count it cannot
  // give; the emulated path, tried on the same request, names the group, the count and the
  // nearest counts. Where it finds nothing wrong, the driver's error stands.
  if (result == abi::CUDA_ERROR_INVALID_VALUE || result == abi::CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION) {
    try {
      split_emulated(input, requests);
    } catch (const ValueError&) {
      throw;
    } catch (const std::exception&) {
    }
  }
  api.check(result, "cuDevSmResourceSplit");

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
