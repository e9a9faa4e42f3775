#include "sm_partition.h"

#include <algorithm>
#include <string>
#include <utility>

#include "device.h"
#include "driver_api.h"
#include "errors.h"

namespace tgc {

KeepAlive::KeepAlive(std::shared_ptr<const GreenContext> context) {
  if (context) contexts_.push_back(std::move(context));
}

KeepAlive KeepAlive::joined(const std::vector<KeepAlive>& parts) {
  KeepAlive out;
  for (const KeepAlive& part : parts) {
    out.contexts_.insert(out.contexts_.end(), part.contexts_.begin(), part.contexts_.end());
  }
  return out;
}

SmPartition::SmPartition(int device, const abi::CUdevResource& resource, Origin origin,
                         unsigned fallback_alignment, KeepAlive keep_alive)
    : device_(device),
      resources_{resource},
      origin_(origin),
      fallback_alignment_(fallback_alignment),
      keep_alive_(std::move(keep_alive)) {}

unsigned SmPartition::sm_count() const noexcept {
  unsigned total = 0;
  for (const abi::CUdevResource& resource : resources_) total += resource.sm.smCount;
  return total;
}

void SmPartition::mark_split(std::uint64_t serial, unsigned piece) {
  split_serial_ = serial;
  pieces_.assign(1, piece);
}

namespace {

void check_combinable(const std::vector<const SmPartition*>& parts) {
  const SmPartition& first = *parts.front();
  for (const SmPartition* part : parts) {
    if (part->device() != first.device()) {
      throw ValueError("SMPartition.union: the partitions must be of one device, got devices " +
                       std::to_string(first.device()) + " and " + std::to_string(part->device()));
    }
    if (part->split_serial() == 0) {
      throw ValueError(
          "SMPartition.union combines groups and remainders of one split(): a partition of a whole "
          "device or of a context may overlap any other; split it and combine the pieces");
    }
    if (part->split_serial() != first.split_serial()) {
      throw ValueError(
          "SMPartition.union: the partitions come from different split() calls, whose SMs may "
          "overlap (and the driver combines only SM resources of one split); combine groups and "
          "the remainder of one split");
    }
  }
}

}  // namespace

SmPartition SmPartition::combine(const std::vector<const SmPartition*>& parts) {
  if (parts.empty()) throw ValueError("SMPartition.union needs at least one partition");
  for (const SmPartition* part : parts) {
    if (part == nullptr) throw ValueError("SMPartition.union: a partition is None");
  }
  if (parts.size() == 1) return *parts.front();
  check_combinable(parts);
  // (piece, resource) of every part, in the order of the split's outputs.
  std::vector<std::pair<unsigned, abi::CUdevResource>> pieces;
  std::vector<KeepAlive> keep;
  for (const SmPartition* part : parts) {
    for (std::size_t i = 0; i < part->pieces_.size(); ++i) {
      pieces.emplace_back(part->pieces_[i], part->resources_[i]);
    }
    keep.push_back(part->keep_alive_);
  }
  std::sort(pieces.begin(), pieces.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (std::size_t i = 1; i < pieces.size(); ++i) {
    if (pieces[i].first == pieces[i - 1].first) {
      throw ValueError("SMPartition.union: the partitions overlap (output " +
                       std::to_string(pieces[i].first) +
                       " of the split, counting groups then the remainder, is in two of them); "
                       "give each group or remainder once");
    }
  }
  const SmPartition& first = *parts.front();
  SmPartition out(first.device_, pieces.front().second, Origin::kUnion, first.fallback_alignment_,
                  KeepAlive::joined(keep));
  out.resources_.clear();
  out.split_serial_ = first.split_serial_;
  for (const auto& piece : pieces) {
    out.pieces_.push_back(piece.first);
    out.resources_.push_back(piece.second);
  }
  // The driver's own rules (one split, one co-scheduling alignment) are checked now, where the
  // pieces are named, rather than when a context is made.
  const DriverApi& api = driver();
  api.require<entry::cuDevResourceGenerateDesc>("green contexts", feature_version::kGreenContexts);
  abi::CUdevResourceDesc desc = nullptr;
  const abi::CUresult result = api.result_of<entry::cuDevResourceGenerateDesc>(
      &desc, out.resources_.data(), static_cast<unsigned>(out.resources_.size()));
  if (result == abi::CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION || result == abi::CUDA_ERROR_INVALID_VALUE) {
    throw ValueError(
        "SMPartition.union: the driver cannot combine these pieces (cuDevResourceGenerateDesc: " +
        api.error_name(result) +
        "): it makes one context only from SM resources of one driver split with one co-scheduling "
        "alignment; below driver " + format_driver_version(feature_version::kNativeSplit) +
        " a split into groups of different sizes takes several driver splits: split into groups "
        "of one size (and the remainder) to combine them");
  }
  api.check<entry::cuDevResourceGenerateDesc>(result);
  return out;
}

SmPartition SmPartition::from_device(int ordinal) {
  const DriverApi& api = driver();
  api.require<entry::cuDeviceGetDevResource>("green contexts", feature_version::kGreenContexts);
  abi::CUdevice device = device_handle(ordinal);
  abi::CUdevResource resource = abi::zeroed_resource();
  api.call<entry::cuDeviceGetDevResource>(device, &resource, abi::CU_DEV_RESOURCE_TYPE_SM);
  return SmPartition(ordinal, resource, Origin::kDevice, default_coscheduling_alignment(ordinal), KeepAlive());
}

unsigned SmPartition::coscheduled_sm_count() const noexcept {
  unsigned reported = resources_.front().sm.smCoscheduledAlignment;
  return reported != 0 ? reported : fallback_alignment_;
}

unsigned SmPartition::split_granularity() const noexcept {
  const unsigned smallest = min_partition_size();
  return smallest != 0 ? smallest : split_step(coscheduled_sm_count());
}

std::optional<unsigned> SmPartition::locality_domain_id() const {
  std::optional<unsigned> domain = locality_domain_of(resources_.front());
  for (const abi::CUdevResource& resource : resources_) {
    if (locality_domain_of(resource) != domain) return std::nullopt;  // a union across domains
  }
  return domain;
}

void check_partition_device(const SmPartition& sm, long long device) {
  if (sm.device() == device) return;
  const std::string own = std::to_string(sm.device());
  throw ValueError("device_id=" + format_argument(device) + " disagrees with the sm_partition's device (" + own +
                   "); omit device_id or pass device_id=" + own);
}

std::optional<unsigned> locality_domain_of(const abi::CUdevResource& resource) {
  driver().require_version("locality domains", feature_version::kLocalityDomains);
  if ((resource.sm.flags & abi::CU_DEV_SM_RESOURCE_GROUP_LOCALITY_DOMAIN_ID) == 0) {
    return std::nullopt;
  }
  return resource.sm.localityDomainId;
}

}  // namespace tgc
