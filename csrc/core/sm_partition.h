// SmPartition: an SM resource of one device, as the driver describes it, plus whatever must
// stay alive for it to remain meaningful (the context it was queried from, the internal
// contexts an emulated split made). A partition describes SMs; it reserves nothing.
#pragma once

#include <memory>
#include <optional>

#include "cuda_abi.h"

namespace tgc {

class SmPartition {
 public:
  // Where a partition came from decides whether the driver accepts it as split input.
  enum class Origin {
    kDevice,        // cuDeviceGetDevResource: splittable
    kContext,       // cuGreenCtxGetDevResource: splittable
    kSplitGroup,    // a group of a split: the driver refuses to split it again
    kSplitRemainder // the remainder of a split: likewise
  };

  SmPartition(int device, const abi::CUdevResource& resource, Origin origin,
              unsigned fallback_alignment, std::shared_ptr<const void> keep_alive);

  // The whole SM resource of device `ordinal`.
  static SmPartition from_device(int ordinal);

  int device() const noexcept { return device_; }
  unsigned sm_count() const noexcept { return resource_.sm.smCount; }
  // The co-scheduling alignment the driver reports (drivers before 13.0 do not report it:
  // then the alignment the split asked for, or the architecture's default).
  unsigned coscheduled_sm_count() const noexcept;
  // minSmPartitionSize (13.0+; 0 when the driver does not report it).
  unsigned min_partition_size() const noexcept { return resource_.sm.minSmPartitionSize; }
  // The locality domain (13.4+): nullopt when unspecified. RuntimeError on older drivers.
  std::optional<unsigned> locality_domain_id() const;
  Origin origin() const noexcept { return origin_; }
  bool splittable() const noexcept {
    return origin_ == Origin::kDevice || origin_ == Origin::kContext;
  }
  const abi::CUdevResource& resource() const noexcept { return resource_; }
  const std::shared_ptr<const void>& keep_alive() const noexcept { return keep_alive_; }

 private:
  int device_;
  abi::CUdevResource resource_;
  Origin origin_;
  unsigned fallback_alignment_;
  std::shared_ptr<const void> keep_alive_;
};

// Checks that `sm` may be used on device `device`: ValueError naming both otherwise.
void check_partition_device(const SmPartition& sm, long long device);

// Reads the locality domain of an SM resource (RuntimeError below driver 13.4).
std::optional<unsigned> locality_domain_of(const abi::CUdevResource& resource);

}  // namespace tgc
