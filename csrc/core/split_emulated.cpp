// The emulated split path (driver 12.4 to 13.0): cuDevSmResourceSplitByCount, group by group
// (equal consecutive groups in one call), re-splitting each remainder through an internal
// green context because the driver refuses to split raw split outputs.
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "driver_api.h"
#include "errors.h"
#include "internal_contexts.h"
#include "split_internal.h"

namespace tgc::split_detail {

namespace {

bool gives_exactly(const abi::CUdevResource& input, unsigned flags, unsigned count) {
  ByCount attempt = split_by_count(input, 1, flags, count);
  return attempt.groups == 1 && attempt.results[0].sm.smCount == count;
}

std::string coscheduling_phrase(unsigned flags, unsigned alignment) {
  return (flags & abi::CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING)
             ? std::string("in units of 2 (SM co-scheduling ignored)")
             : "in units of " + std::to_string(alignment) + " (the device's co-scheduling alignment)";
}

// The counts nearest to `count` (one below, one above) that the driver gives exactly from
// `input` under `flags`; with no count above, all of `input` when `rest_counts`; empty when
// there are none. The search stops below all of `input`: a group of every SM left is not split
// off here but handed over as the rest, which only a last group takes (`rest_counts`).
std::vector<unsigned> emulated_nearest_counts(const abi::CUdevResource& input, unsigned flags, unsigned granularity,
                                              unsigned count, bool rest_counts = true) {
  const unsigned available = input.sm.smCount;
  std::vector<unsigned> out = nearest_counts(count, granularity, available > 0 ? available - 1 : 0,
                                             [&](unsigned c) { return gives_exactly(input, flags, c); });
  const bool upper = !out.empty() && out.back() > count;
  if (!upper && rest_counts && available > count) out.push_back(available);
  return out;
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
        throw SplitError("no SMs are left for " + group_label(i) + " (" + std::to_string(input_.sm_count()) +
                             " SMs were split)",
                         i, requests_[i].sm_count, {});
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
  SplitError count_refused(std::size_t i, const std::string& why, std::vector<unsigned> nearest) const {
    return split_error(i, requests_[i].sm_count, why, std::move(nearest));
  }

  // Equal groups i..end-1 of which the driver made only `made.groups`: the error names the first
  // group that does not fit and the counts it could have after the ones that do, as the native
  // split names them (only counts a split gives exactly).
  SplitError too_few_fit(std::size_t i, std::size_t end, const ByCount& made, unsigned flags,
                         unsigned granularity) {
    const unsigned asked = requests_[i].sm_count, available = current_.sm.smCount;
    const std::size_t culprit = i + made.groups;
    if (made.groups > 0) set_current(made.remainder);
    std::vector<unsigned> nearest;
    if (current_has_sms_) {
      if (made.groups > 0) make_remainder_splittable();
      nearest = emulated_nearest_counts(current_, flags, granularity, asked, false);
    }
    const std::string fit = made.groups == 1 ? " group of " + std::to_string(asked) + " SMs fits"
                                             : " groups of " + std::to_string(asked) + " SMs fit";
    return split_error(culprit, asked,
                       "cannot be given from the " + std::to_string(current_has_sms_ ? current_.sm.smCount : 0) +
                           " SMs the groups before it leave: only " + std::to_string(made.groups) + fit +
                           " in the " + std::to_string(available) + " SMs left (groups " + std::to_string(i) +
                           ".." + std::to_string(end - 1) + " ask for " + std::to_string(end - i) +
                           "); the GPU's layout limits how many aligned groups it holds",
                       std::move(nearest));
  }

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
      throw count_refused(i, "is more than the " + std::to_string(available) + " SMs left",
                          emulated_nearest_counts(current_, flags, granularity, r.sm_count));
    }
    if (r.sm_count % granularity != 0) {
      throw count_refused(i, "cannot be given exactly: on driver " + format_driver_version(version_) +
                                 " SMs split " + coscheduling_phrase(flags, alignment_),
                          emulated_nearest_counts(current_, flags, granularity, r.sm_count));
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
      if (wanted > 1) throw too_few_fit(i, end, made, flags, granularity);
      throw count_refused(i, "cannot be given from the " + std::to_string(available) + " SMs left",
                          emulated_nearest_counts(current_, flags, granularity, r.sm_count));
    }
    for (const abi::CUdevResource& group : made.results) {
      if (group.sm.smCount != r.sm_count) {
        throw count_refused(i, "cannot be given exactly here (the driver rounds it to " +
                                   std::to_string(group.sm.smCount) + ")",
                            emulated_nearest_counts(current_, flags, granularity, r.sm_count));
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
    throw SplitError(group_label(i) + ": discovery (num_sms=0) found no group of at least " +
                         std::to_string(granularity) + " SMs in the " + std::to_string(available) + " SMs left" +
                         (reserved ? " after reserving " + std::to_string(reserved) + " for the groups after it"
                                   : std::string()),
                     i, 0, {});
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
    current_ = abi::zeroed_resource();
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
    std::shared_ptr<GreenContext> internal = InternalContexts::create(remainder);
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
  KeepAlive keep_;  // keeps the internal context behind current_ alive
  SplitResult out_;
};

}  // namespace

SplitResult split_emulated(const SmPartition& input, const std::vector<GroupRequest>& requests) {
  return EmulatedSplit(input, requests).run();
}

}  // namespace tgc::split_detail
