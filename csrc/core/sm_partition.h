// SmPartition: an SM resource of one device, as the driver describes it, plus whatever must
// stay alive for it to remain meaningful (the context it was queried from, the internal
// contexts an emulated split made). A partition describes SMs; it reserves nothing.
//
// A partition is one SM resource, or the union of several pieces of one split (combine()):
// the driver makes one context from several SM resources when they come from one split.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "cuda_abi.h"

namespace tgc {

class GreenContext;

// What a partition depends on: the green contexts its SM resources were read from (the one of
// GreenContext::sm_partition, the internal contexts of an emulated split; for a union, every
// piece's). Copies share them: the contexts live while any copy does.
class KeepAlive {
 public:
  KeepAlive() = default;
  explicit KeepAlive(std::shared_ptr<const GreenContext> context);
  // Everything each of `parts` keeps alive.
  static KeepAlive joined(const std::vector<KeepAlive>& parts);
  std::size_t size() const noexcept { return contexts_.size(); }

 private:
  std::vector<std::shared_ptr<const GreenContext>> contexts_;
};

class SmPartition {
 public:
  // Where a partition came from decides whether the driver accepts it as split input.
  enum class Origin {
    kDevice,        // cuDeviceGetDevResource: splittable
    kContext,       // cuGreenCtxGetDevResource: splittable
    kSplitGroup,    // a group of a split: the driver refuses to split it again
    kSplitRemainder, // the remainder of a split: likewise
    kUnion           // pieces of one split combined (combine()): likewise
  };

  SmPartition(int device, const abi::CUdevResource& resource, Origin origin,
              unsigned fallback_alignment, KeepAlive keep_alive);

  // The whole SM resource of device `ordinal`.
  static SmPartition from_device(int ordinal);

  // The SMs of `parts`, disjoint pieces of one split() of one device, as one partition that
  // a context can be made from. ValueError naming the rule for no parts, parts of different
  // devices, parts that may overlap (the same piece twice, pieces of different splits, a
  // whole device or context) and pieces the driver refuses to combine.
  static SmPartition combine(const std::vector<const SmPartition*>& parts);

  int device() const noexcept { return device_; }
  unsigned sm_count() const noexcept;
  // The co-scheduling alignment the driver reports (drivers before 13.0 do not report it:
  // then the alignment the split asked for, or the architecture's default).
  unsigned coscheduled_sm_count() const noexcept;
  // minSmPartitionSize (13.0+; 0 when the driver does not report it).
  unsigned min_partition_size() const noexcept { return resources_.front().sm.minSmPartitionSize; }
  // The device's split granularity, as the package's tools step through counts: the smallest
  // partition the driver reports (13.0+), else split_step() of the co-scheduling alignment.
  unsigned split_granularity() const noexcept;
  // The locality domain (13.4+): nullopt when unspecified. RuntimeError on older drivers.
  std::optional<unsigned> locality_domain_id() const;
  Origin origin() const noexcept { return origin_; }
  bool splittable() const noexcept {
    return origin_ == Origin::kDevice || origin_ == Origin::kContext;
  }
  // The first (for a partition that is not a union, the only) SM resource.
  const abi::CUdevResource& resource() const noexcept { return resources_.front(); }
  // Every SM resource, as cuDevResourceGenerateDesc takes them.
  const std::vector<abi::CUdevResource>& resources() const noexcept { return resources_; }
  const KeepAlive& keep_alive() const noexcept { return keep_alive_; }

  // Which split() made this partition (0: none) and which of its outputs it holds (groups in
  // order, then the remainder); split() sets them.
  void mark_split(std::uint64_t serial, unsigned piece);
  std::uint64_t split_serial() const noexcept { return split_serial_; }
  const std::vector<unsigned>& pieces() const noexcept { return pieces_; }

 private:
  int device_;
  std::vector<abi::CUdevResource> resources_;  // never empty
  Origin origin_;
  unsigned fallback_alignment_;
  KeepAlive keep_alive_;
  std::uint64_t split_serial_ = 0;
  std::vector<unsigned> pieces_;  // ascending
};

// The step of the SM counts a split gives a group whose SMs are co-scheduled `coscheduled` at a
// time (0 or 1: none): the driver's counts are even, so at least 2.
constexpr unsigned split_step(unsigned coscheduled) noexcept { return coscheduled > 2 ? coscheduled : 2u; }

// Checks that `sm` may be used on device `device`: ValueError naming both otherwise.
void check_partition_device(const SmPartition& sm, long long device);

// Reads the locality domain of an SM resource (RuntimeError below driver 13.4).
std::optional<unsigned> locality_domain_of(const abi::CUdevResource& resource);

}  // namespace tgc
