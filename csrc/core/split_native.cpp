// The native split path (driver 13.1+): one cuDevSmResourceSplit call with the group
// parameters as given, after the co-scheduled counts are checked.
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
  const unsigned step = split_step(own ? group.coscheduled_sm_count : input.coscheduled_sm_count());
  // Every count up to all the SMs left is the driver's to judge.
  std::vector<unsigned> nearest = nearest_counts(asked, step, available, [&](unsigned c) {
    group.sm_count = c;
    return splits(input, requests);
  });
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

// ValueError for a co-scheduled count cuDevSmResourceSplit refuses (it takes 0 for the default,
// or an even count up to kMaxCoscheduled), before the driver is asked: the same error the
// emulated path gives for a count its driver cannot honour.
void check_coscheduling(const std::vector<GroupRequest>& requests, unsigned alignment) {
  constexpr unsigned kMaxCoscheduled = 32;
  for (const GroupRequest& r : requests) {
    const unsigned cs = r.coscheduled_sm_count;
    if (cs <= 2 || (cs % 2 == 0 && cs <= kMaxCoscheduled)) continue;
    throw ValueError("coscheduled_sm_count=" + std::to_string(cs) + " cannot be honoured on driver " +
                     format_driver_version(driver().version()) +
                     ", whose split call co-schedules SMs in even counts up to " + std::to_string(kMaxCoscheduled) +
                     "; allowed there: 0 (the default, " + std::to_string(alignment) +
                     "), 1 (as 2) or an even number from 2 to " + std::to_string(kMaxCoscheduled));
  }
}

// `requests` as the driver takes them: a co-scheduled count of 1 (no co-scheduling, which the
// emulated path grants) is the driver's smallest, 2.
std::vector<GroupRequest> as_driver_takes(std::vector<GroupRequest> requests) {
  for (GroupRequest& r : requests) {
    if (r.coscheduled_sm_count == 1) r.coscheduled_sm_count = 2;
  }
  return requests;
}

// A last group asking for exactly the SMs the groups before it leave (all of them asking for
// counts) as the backfilled rest: the emulated path hands such a group the rest without a
// split, whereas cuDevSmResourceSplit gives a group without BACKFILL only whole co-scheduled
// units, which the rest need not be. Nothing for other requests.
std::optional<std::vector<GroupRequest>> as_the_rest(const SmPartition& input, std::vector<GroupRequest> requests) {
  GroupRequest& last = requests.back();
  unsigned long long before = 0;
  for (std::size_t i = 0; i + 1 < requests.size(); ++i) {
    if (requests[i].sm_count == 0) return std::nullopt;  // what they leave is not known yet
    before += requests[i].sm_count;
  }
  if (last.sm_count == 0 || before + last.sm_count != input.sm_count()) return std::nullopt;
  const unsigned coscheduled = last.coscheduled_sm_count != 0 ? last.coscheduled_sm_count : input.coscheduled_sm_count();
  if (last.sm_count < coscheduled) {  // a group smaller than its co-scheduled count is refused
    last.coscheduled_sm_count = 2;
    last.preferred_coscheduled_sm_count = 0;
  }
  last.sm_count = 0;
  last.backfill = true;
  return requests;
}

}  // namespace

SplitResult split_native(const SmPartition& input, const std::vector<GroupRequest>& given) {
  const DriverApi& api = driver();
  api.require<entry::cuDevSmResourceSplit>("SMPartition.split", feature_version::kNativeSplit);
  check_coscheduling(given, input.coscheduled_sm_count());
  const std::vector<GroupRequest> requests = as_driver_takes(given);
  std::vector<abi::CUdevResource> results;
  abi::CUdevResource remainder = abi::zeroed_resource();
  abi::CUresult result = call_split(input, requests, &results, &remainder);
  if (refuses_count(result)) {
    if (std::optional<std::vector<GroupRequest>> rest = as_the_rest(input, requests)) {
      result = call_split(input, *rest, &results, &remainder);
    }
  }
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
