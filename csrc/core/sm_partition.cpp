#include "sm_partition.h"

#include <string>
#include <utility>

#include "device.h"
#include "driver_api.h"
#include "errors.h"

namespace tgc {

SmPartition::SmPartition(int device, const abi::CUdevResource& resource, Origin origin,
                         unsigned fallback_alignment, std::shared_ptr<const void> keep_alive)
    : device_(device),
      resource_(resource),
      origin_(origin),
      fallback_alignment_(fallback_alignment),
      keep_alive_(std::move(keep_alive)) {}

SmPartition SmPartition::from_device(int ordinal) {
  const DriverApi& api = driver();
  auto get_resource =
      api.require(api.cuDeviceGetDevResource, "green contexts", feature_version::kGreenContexts);
  abi::CUdevice device = device_handle(ordinal);
  abi::CUdevResource resource = abi::zeroed_resource();
  api.check(get_resource(device, &resource, abi::CU_DEV_RESOURCE_TYPE_SM),
            "cuDeviceGetDevResource");
  return SmPartition(ordinal, resource, Origin::kDevice, default_coscheduling_alignment(ordinal),
                     nullptr);
}

unsigned SmPartition::coscheduled_sm_count() const noexcept {
  unsigned reported = resource_.sm.smCoscheduledAlignment;
  return reported != 0 ? reported : fallback_alignment_;
}

std::optional<unsigned> SmPartition::locality_domain_id() const {
  return locality_domain_of(resource_);
}

void check_partition_device(const SmPartition& sm, long long device) {
  if (sm.device() == device) return;
  const std::string own = std::to_string(sm.device());
  throw ValueError("device_id=" + std::to_string(device) + " disagrees with the sm_partition's device (" + own +
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
