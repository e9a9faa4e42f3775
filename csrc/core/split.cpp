// The rules both split paths share, the choice of path, and the by-count helpers.
#include "split.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "driver_api.h"
#include "errors.h"
#include "split_internal.h"

namespace tgc {

namespace split_detail {

bool has_sms(const abi::CUdevResource& resource) {
  return resource.type == abi::CU_DEV_RESOURCE_TYPE_SM && resource.sm.smCount > 0;
}

abi::CUdevResource detached(abi::CUdevResource resource) {
  resource.nextResource = nullptr;
  return resource;
}

std::string group_label(std::size_t index) { return "group " + std::to_string(index); }

SplitError split_error(std::size_t index, unsigned sm_count, const std::string& why,
                       std::vector<unsigned> nearest) {
  std::string counts;
  for (unsigned count : nearest) counts += (counts.empty() ? "" : ", ") + std::to_string(count);
  return SplitError(group_label(index) + ": num_sms=" + std::to_string(sm_count) + " " + why +
                        "; nearest counts it can give: " + (counts.empty() ? std::string("none") : counts),
                    index, sm_count, std::move(nearest));
}

std::vector<unsigned> nearest_counts(unsigned count, unsigned step, unsigned most,
                                     const std::function<bool(unsigned)>& gives) {
  std::vector<unsigned> out;
  for (unsigned c = count > 0 ? (count - 1) / step * step : 0; c >= step; c -= step) {
    if (gives(c)) {
      out.push_back(c);
      break;
    }
  }
  for (unsigned c = (count / step + 1) * step; c <= most; c += step) {
    if (gives(c)) {
      out.push_back(c);
      break;
    }
  }
  return out;
}

namespace {

// One checked cuDevSmResourceSplitByCount call: the groups it made, or with no `results`
// array the groups it could make (documented); 0 when nothing of `min_count` SMs fits.
unsigned call_split_by_count(abi::CUdevResource* results, unsigned wanted,
                             const abi::CUdevResource& input, abi::CUdevResource* remainder,
                             unsigned flags, unsigned min_count) {
  const DriverApi& api = driver();
  api.require<entry::cuDevSmResourceSplitByCount>("green contexts", feature_version::kGreenContexts);
  unsigned groups = wanted;
  const abi::CUresult result =
      api.result_of<entry::cuDevSmResourceSplitByCount>(results, &groups, &input, remainder, flags, min_count);
  if (result == abi::CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION) return 0;
  api.check<entry::cuDevSmResourceSplitByCount>(result);
  return groups;
}

}  // namespace

ByCount split_by_count(const abi::CUdevResource& input, unsigned wanted, unsigned flags,
                       unsigned min_count) {
  ByCount out;
  out.results.assign(wanted, abi::zeroed_resource());
  out.groups = call_split_by_count(out.results.data(), wanted, input, &out.remainder, flags, min_count);
  out.results.resize(out.groups);
  return out;
}

}  // namespace split_detail

using namespace split_detail;

void check_group_list(const std::vector<GroupRequest>& requests) {
  if (requests.empty()) throw ValueError("split needs at least one group");
  for (std::size_t i = 0; i + 1 < requests.size(); ++i) {
    if (requests[i].sm_count == 0 && requests[i].backfill) {
      throw ValueError(group_label(i) +
                       ": num_sms=0 with backfill=True takes all remaining SMs, so it may only be "
                       "the last group (there are " + std::to_string(requests.size()) + " groups)");
    }
  }
}

void check_requests(const std::vector<GroupRequest>& requests, unsigned input_sm_count,
                    bool input_splittable) {
  check_group_list(requests);
  if (!input_splittable) {
    throw ValueError(
        "this SMPartition is a group or remainder returned by split(), which the driver cannot "
        "split again; make a GreenContext from it and split that context's sm_partition");
  }
  unsigned long long asked = 0;
  for (const GroupRequest& r : requests) asked += r.sm_count;
  if (asked > input_sm_count) {
    throw SplitError("the groups ask for " + std::to_string(asked) + " SMs in all, more than the " +
                         std::to_string(input_sm_count) + " SMs of the partition being split",
                     std::nullopt, static_cast<unsigned>(asked), {});
  }
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const GroupRequest& r = requests[i];
    if (r.sm_count > input_sm_count) {
      throw SplitError(group_label(i) + ": num_sms=" + std::to_string(r.sm_count) + " is more than the " +
                           std::to_string(input_sm_count) + " SMs of the partition being split",
                       i, r.sm_count, {});
    }
  }
}

unsigned emulated_granularity(unsigned flags, unsigned alignment) {
  return split_step((flags & abi::CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING) ? 2u : alignment);
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

namespace {

// `error`, which concerns the last of `requests` (or all of them together), and, when that
// group asks for a count after groups that ask for counts and leave it some SMs, the request
// that gives it every SM they leave on every driver: "num_sms=(16, 0), backfill=(False, True)".
SplitError with_the_rest_form(const SplitError& error, const std::vector<GroupRequest>& requests,
                              unsigned input_sm_count) {
  const std::size_t last = requests.size() - 1;
  if (error.group().value_or(last) != last || requests[last].sm_count == 0 || requests[last].backfill) return error;
  unsigned long long before = 0;
  std::string counts, backfills;
  for (std::size_t i = 0; i < last; ++i) {
    if (requests[i].sm_count == 0) return error;
    before += requests[i].sm_count;
    counts += std::to_string(requests[i].sm_count) + ", ";
    backfills += requests[i].backfill ? "True, " : "False, ";
  }
  if (before >= input_sm_count) return error;
  const std::string form = last == 0 ? "num_sms=0, backfill=True"
                                     : "num_sms=(" + counts + "0), backfill=(" + backfills + "True)";
  return SplitError(std::string(error.what()) + "; to give the last group every SM the groups before it leave, on " +
                        "every driver, ask for " + form,
                    error.group(), error.sm_count(), error.nearest_counts());
}

}  // namespace

SplitResult split(const SmPartition& input, const std::vector<GroupRequest>& requests,
                  SplitPath path) {
  SplitResult out;
  try {
    check_requests(requests, input.sm_count(), input.splittable());
    if (path == SplitPath::kAuto) path = native_split_available_path();
    out = path == SplitPath::kNative ? split_native(input, requests) : split_emulated(input, requests);
  } catch (const SplitError& error) {
    throw with_the_rest_form(error, requests, input.sm_count());
  }
  // The outputs of one split are disjoint: SmPartition::combine() relies on these marks.
  static std::atomic<std::uint64_t> serials{0};
  const std::uint64_t serial = serials.fetch_add(1) + 1;
  unsigned piece = 0;
  for (SmPartition& group : out.groups) group.mark_split(serial, piece++);
  if (out.remainder) out.remainder->mark_split(serial, piece);
  return out;
}

unsigned groups_that_fit(const SmPartition& input, unsigned min_sms) {
  return call_split_by_count(nullptr, 0, input.resource(), nullptr, 0, min_sms);
}

RangeError num_sms_out_of_range(long long num_sms, const SmPartition* device) {
  const std::string most = device != nullptr ? std::to_string(device->sm_count()) + " (the SM count of device " +
                                                   std::to_string(device->device()) + ")"
                                             : std::string("the SM count of the device");
  return RangeError("num_sms must be between 1 and " + most + ", got " + format_argument(num_sms));
}

SmPartition partition_with_at_least(int ordinal, long long min_sms) {
  SmPartition device = SmPartition::from_device(ordinal);
  if (min_sms < 1 || min_sms > device.sm_count()) throw num_sms_out_of_range(min_sms, &device);
  const auto count = static_cast<unsigned>(min_sms);
  ByCount made = split_by_count(device.resource(), 1, 0, count);
  if (made.groups == 1 && made.results[0].sm.smCount >= count) {
    return SmPartition(ordinal, detached(made.results[0]), SmPartition::Origin::kSplitGroup,
                       device.coscheduled_sm_count(), KeepAlive());
  }
  return device;  // no aligned group that large: only the whole device has that many SMs
}

}  // namespace tgc
