#include "split.h"

#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "device.h"
#include "driver_api.h"
#include "errors.h"
#include "green_context.h"

namespace tgc {

namespace {

abi::CUdevResource zeroed_resource() {
  abi::CUdevResource resource;
  std::memset(&resource, 0, sizeof(resource));
  return resource;
}

bool has_sms(const abi::CUdevResource& resource) {
  return resource.type == abi::CU_DEV_RESOURCE_TYPE_SM && resource.sm.smCount > 0;
}

// A split output stored on its own: the driver's `nextResource` link (13.1+) may point into
// the array it came from, which does not outlive the call.
abi::CUdevResource detached(abi::CUdevResource resource) {
  resource.nextResource = nullptr;
  return resource;
}

std::string group_label(std::size_t index) { return "group " + std::to_string(index); }

// ---------------------------------------------------------------------------------------------
// Native path: one cuDevSmResourceSplit call.

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
  std::vector<abi::CUdevResource> results(requests.size(), zeroed_resource());
  abi::CUdevResource remainder = zeroed_resource();
  api.check(split_fn(results.data(), static_cast<unsigned>(requests.size()), &input.resource(),
                     &remainder, 0, params.data()),
            "cuDevSmResourceSplit");

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

// ---------------------------------------------------------------------------------------------
// Emulated path: cuDevSmResourceSplitByCount.

struct ByCount {
  unsigned groups = 0;  // how many groups the driver made
  std::vector<abi::CUdevResource> results;
  abi::CUdevResource remainder = zeroed_resource();
};

ByCount split_by_count(const abi::CUdevResource& input, unsigned wanted, unsigned flags,
                       unsigned min_count) {
  const DriverApi& api = driver();
  auto split_fn = api.require(api.cuDevSmResourceSplitByCount, "green contexts",
                              feature_version::kGreenContexts);
  ByCount out;
  out.results.assign(wanted, zeroed_resource());
  out.groups = wanted;
  abi::CUresult result =
      split_fn(out.results.data(), &out.groups, &input, &out.remainder, flags, min_count);
  if (result == abi::CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION) {
    out.groups = 0;  // nothing of that size fits
    return out;
  }
  api.check(result, "cuDevSmResourceSplitByCount");
  out.results.resize(out.groups);
  return out;
}

bool gives_exactly(const abi::CUdevResource& input, unsigned flags, unsigned count) {
  ByCount attempt = split_by_count(input, 1, flags, count);
  return attempt.groups == 1 && attempt.results[0].sm.smCount == count;
}

std::string coscheduling_phrase(unsigned flags, unsigned alignment) {
  return (flags & abi::CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING)
             ? std::string("in units of 2 (SM co-scheduling ignored)")
             : "in units of " + std::to_string(alignment) + " (the device's co-scheduling alignment)";
}

// "nearest counts it can give: 112, 120" for a count the driver cannot give exactly.
std::string nearest_counts(const abi::CUdevResource& input, unsigned flags, unsigned granularity,
                           unsigned count) {
  if (granularity == 0) granularity = 2;
  unsigned available = input.sm.smCount;
  std::optional<unsigned> lower, upper;
  for (unsigned c = (count - 1) / granularity * granularity; c >= granularity; c -= granularity) {
    if (gives_exactly(input, flags, c)) {
      lower = c;
      break;
    }
  }
  for (unsigned c = (count / granularity + 1) * granularity; c < available; c += granularity) {
    if (gives_exactly(input, flags, c)) {
      upper = c;
      break;
    }
  }
  if (!upper && available > count) upper = available;  // the whole rest, as the last group
  std::string text;
  if (lower) text += std::to_string(*lower);
  if (upper) text += (text.empty() ? "" : ", ") + std::to_string(*upper);
  return text.empty() ? std::string("none") : text;
}

class EmulatedSplit {
 public:
  EmulatedSplit(const SmPartition& input, const std::vector<GroupRequest>& requests)
      : input_(input), requests_(requests), alignment_(input.coscheduled_sm_count()),
        version_(driver().version()), current_(input.resource()), keep_(input.keep_alive()) {}

  SplitResult run() {
    for (const GroupRequest& r : requests_) {
      if (r.locality_domain_id) {
        driver().require_version("locality domains", feature_version::kLocalityDomains);
      }
    }
    std::size_t i = 0;
    while (i < requests_.size()) {
      if (!current_has_sms_) {
        throw ValueError("no SMs are left for " + group_label(i) + " (" +
                         std::to_string(input_.sm_count()) + " SMs were split)");
      }
      i = take(i);
      if (i < requests_.size() && current_has_sms_ && !takes_the_rest(i)) make_remainder_splittable();
    }
    if (current_has_sms_) {
      out_.remainder.emplace(input_.device(), current_, SmPartition::Origin::kSplitRemainder, 2u,
                             keep_);
    }
    return std::move(out_);
  }

 private:
  // Serves requests_[i] (and the equal requests right after it); returns the next index.
  std::size_t take(std::size_t i) {
    const GroupRequest& r = requests_[i];
    const unsigned flags = emulated_split_flags(r, alignment_, version_);
    const unsigned granularity = emulated_granularity(flags, alignment_);
    const unsigned available = current_.sm.smCount;

    if (takes_the_rest(i)) {
      whole_current_as_group(granularity);
      return i + 1;
    }
    if (r.sm_count == 0) return discover(i, flags, granularity);

    if (r.sm_count > available) {
      throw ValueError(group_label(i) + " asks for num_sms=" + std::to_string(r.sm_count) +
                       " but only " + std::to_string(available) + " SMs are left");
    }
    if (r.sm_count % granularity != 0) {
      throw ValueError(group_label(i) + ": num_sms=" + std::to_string(r.sm_count) +
                       " cannot be given exactly: on driver " + format_driver_version(version_) +
                       " SMs split " + coscheduling_phrase(flags, alignment_) +
                       "; nearest counts it can give: " +
                       nearest_counts(current_, flags, granularity, r.sm_count));
    }
    std::size_t end = i + 1;
    while (end < requests_.size() && requests_[end].sm_count == r.sm_count &&
           !requests_[end].backfill &&
           emulated_split_flags(requests_[end], alignment_, version_) == flags) {
      ++end;
    }
    const unsigned wanted = static_cast<unsigned>(end - i);
    ByCount made = split_by_count(current_, wanted, flags, r.sm_count);
    if (made.groups < wanted) {
      if (wanted > 1) {
        throw ValueError("only " + std::to_string(made.groups) + " groups of " +
                         std::to_string(r.sm_count) + " SMs fit in the " +
                         std::to_string(available) + " SMs left (groups " + std::to_string(i) +
                         ".." + std::to_string(end - 1) + " ask for " + std::to_string(wanted) +
                         "); the GPU's layout limits how many aligned groups it holds");
      }
      throw ValueError(group_label(i) + ": num_sms=" + std::to_string(r.sm_count) +
                       " cannot be given from the " + std::to_string(available) +
                       " SMs left; nearest counts it can give: " +
                       nearest_counts(current_, flags, granularity, r.sm_count));
    }
    for (const abi::CUdevResource& group : made.results) {
      if (group.sm.smCount != r.sm_count) {
        throw ValueError(group_label(i) + ": num_sms=" + std::to_string(r.sm_count) +
                         " cannot be given exactly here (the driver rounds it to " +
                         std::to_string(group.sm.smCount) + "); nearest counts it can give: " +
                         nearest_counts(current_, flags, granularity, r.sm_count));
      }
    }
    for (const abi::CUdevResource& group : made.results) add_group(group, granularity);
    set_current(made.remainder);
    return end;
  }

  // Discovery: the largest count at this group's granularity that still leaves room for the
  // groups after it, tried from the top down until the driver gives it exactly.
  std::size_t discover(std::size_t i, unsigned flags, unsigned granularity) {
    const unsigned available = current_.sm.smCount;
    unsigned reserved = 0;
    for (std::size_t j = i + 1; j < requests_.size(); ++j) {
      const GroupRequest& later = requests_[j];
      unsigned later_granularity =
          emulated_granularity(emulated_split_flags(later, alignment_, version_), alignment_);
      reserved += later.sm_count != 0 ? later.sm_count : later_granularity;
    }
    for (unsigned count = available > reserved ? (available - reserved) / granularity * granularity : 0;
         count >= granularity; count -= granularity) {
      ByCount made = split_by_count(current_, 1, flags, count);
      if (made.groups == 1 && made.results[0].sm.smCount == count) {
        add_group(made.results[0], granularity);
        set_current(made.remainder);
        return i + 1;
      }
    }
    throw ValueError(group_label(i) + ": discovery (num_sms=0) found no group of at least " +
                     std::to_string(granularity) + " SMs in the " + std::to_string(available) +
                     " SMs left" + (reserved ? " after reserving " + std::to_string(reserved) +
                                                   " for the groups after it"
                                             : std::string()));
  }

  // Whether requests_[i] is served by handing over everything left, which needs no split and
  // so no internal context: the last group asking for exactly what is left, or a discovery
  // group with backfill (only ever last).
  bool takes_the_rest(std::size_t i) const {
    const GroupRequest& r = requests_[i];
    const bool last = i + 1 == requests_.size();
    return (r.sm_count == 0 && r.backfill) || (last && r.sm_count == current_.sm.smCount);
  }

  void whole_current_as_group(unsigned granularity) {
    add_group(current_, granularity);
    current_ = zeroed_resource();
    current_has_sms_ = false;
  }

  void add_group(const abi::CUdevResource& group, unsigned granularity) {
    out_.groups.emplace_back(input_.device(), detached(group), SmPartition::Origin::kSplitGroup,
                             granularity, keep_);
  }

  void set_current(const abi::CUdevResource& remainder) {
    current_ = detached(remainder);
    current_has_sms_ = has_sms(remainder);
  }

  // The driver refuses to split a split's output again; a green context made from it can be
  // queried for a resource that it does split (documented for cuDevSmResourceSplitByCount).
  void make_remainder_splittable() {
    SmPartition remainder(input_.device(), current_, SmPartition::Origin::kSplitRemainder, 2u, keep_);
    std::shared_ptr<GreenContext> internal = GreenContext::create(
        input_.device(), &remainder, std::nullopt, GreenContext::Kind::kInternal);
    SmPartition splittable = GreenContext::sm_partition(internal);
    current_ = splittable.resource();
    current_has_sms_ = has_sms(current_);
    keep_ = splittable.keep_alive();
  }

  const SmPartition& input_;
  const std::vector<GroupRequest>& requests_;
  const unsigned alignment_;
  const int version_;
  abi::CUdevResource current_;  // what is left to split, always in a splittable form
  bool current_has_sms_ = true;
  std::shared_ptr<const void> keep_;  // keeps the internal context behind current_ alive
  SplitResult out_;
};

}  // namespace

void check_requests(const std::vector<GroupRequest>& requests, unsigned input_sm_count,
                    bool input_splittable) {
  if (!input_splittable) {
    throw ValueError(
        "this SMPartition is a group or remainder returned by split(), which the driver cannot "
        "split again; make a GreenContext from it and split that context's sm_partition");
  }
  if (requests.empty()) throw ValueError("split needs at least one group");
  unsigned long long asked = 0;
  for (const GroupRequest& r : requests) asked += r.sm_count;
  if (asked > input_sm_count) {
    throw ValueError("the groups ask for " + std::to_string(asked) + " SMs in all, more than the " +
                     std::to_string(input_sm_count) + " SMs of the partition being split");
  }
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const GroupRequest& r = requests[i];
    if (r.sm_count == 0 && r.backfill && i + 1 != requests.size()) {
      throw ValueError(group_label(i) +
                       ": num_sms=0 with backfill=True takes all remaining SMs, so it may only be "
                       "the last group");
    }
    if (r.sm_count > input_sm_count) {
      throw ValueError(group_label(i) + ": num_sms=" + std::to_string(r.sm_count) +
                       " is more than the " + std::to_string(input_sm_count) +
                       " SMs of the partition being split");
    }
  }
}

unsigned emulated_granularity(unsigned flags, unsigned alignment) {
  return (flags & abi::CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING) ? 2u : alignment;
}

unsigned emulated_split_flags(const GroupRequest& request, unsigned alignment, int driver_version) {
  const unsigned cs = request.coscheduled_sm_count;
  if (request.backfill || (cs != 0 && cs <= 2)) {
    return abi::CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING;
  }
  if (cs == 0 || cs == alignment) return 0;
  throw ValueError("coscheduled_sm_count=" + std::to_string(cs) + " cannot be honoured on driver " +
                   format_driver_version(driver_version) +
                   ", whose split call knows only the device's alignment and no co-scheduling; "
                   "allowed there: 0 (the default, " + std::to_string(alignment) + "), 1, 2 or " +
                   std::to_string(alignment) + "; other values need driver " +
                   format_driver_version(feature_version::kNativeSplit));
}

SplitPath native_split_available_path() {
  const DriverApi& api = driver();
  return (api.version() >= feature_version::kNativeSplit && api.cuDevSmResourceSplit != nullptr)
             ? SplitPath::kNative
             : SplitPath::kEmulated;
}

SplitResult split(const SmPartition& input, const std::vector<GroupRequest>& requests,
                  SplitPath path) {
  check_requests(requests, input.sm_count(), input.splittable());
  if (path == SplitPath::kAuto) path = native_split_available_path();
  if (path == SplitPath::kNative) return split_native(input, requests);
  return EmulatedSplit(input, requests).run();
}

unsigned groups_that_fit(const SmPartition& input, unsigned min_sms) {
  const DriverApi& api = driver();
  auto split_fn = api.require(api.cuDevSmResourceSplitByCount, "green contexts",
                              feature_version::kGreenContexts);
  unsigned groups = 0;
  // With no result array the call only counts the groups it could make (documented).
  abi::CUresult result = split_fn(nullptr, &groups, &input.resource(), nullptr, 0, min_sms);
  if (result == abi::CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION) return 0;
  api.check(result, "cuDevSmResourceSplitByCount");
  return groups;
}

SmPartition partition_with_at_least(int ordinal, unsigned min_sms) {
  SmPartition device = SmPartition::from_device(ordinal);
  if (min_sms == 0 || min_sms > device.sm_count()) {
    throw std::runtime_error("num_sms must be between 1 and " + std::to_string(device.sm_count()) +
                             " (the SM count of device " + std::to_string(ordinal) + "), got " +
                             std::to_string(min_sms));
  }
  ByCount made = split_by_count(device.resource(), 1, 0, min_sms);
  if (made.groups == 1 && made.results[0].sm.smCount >= min_sms) {
    return SmPartition(ordinal, detached(made.results[0]), SmPartition::Origin::kSplitGroup,
                       device.coscheduled_sm_count(), nullptr);
  }
  return device;  // no aligned group that large: only the whole device has that many SMs
}

}  // namespace tgc
