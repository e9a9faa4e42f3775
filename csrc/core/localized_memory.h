// LocalizedMemory: device memory placed per locality domain (driver 13.4+). One virtual address
// range of a device over one physical allocation in each of its locality domains, in domain
// order: part i lives in domain i's memory, so that work on domain i's SMs reads and writes it
// without crossing to another domain.
#pragma once

#include <cstddef>
#include <memory>

#include "cuda_abi.h"

namespace tgc {

class LocalizedMemory {
 public:
  // `part_bytes` in each locality domain of device `ordinal`, mapped in domain order at a stride
  // of `part_bytes` rounded up to the allocation granularity (one granule at least), readable
  // and writable by the device. FeatureUnavailableError below driver 13.4; ValueError when the
  // range does not fit in an address; DriverError when a driver call fails, with nothing left
  // allocated. The device's primary context is retained until the memory is freed.
  static std::unique_ptr<LocalizedMemory> allocate(int ordinal, std::size_t part_bytes);

  LocalizedMemory(const LocalizedMemory&) = delete;
  LocalizedMemory& operator=(const LocalizedMemory&) = delete;
  // Waits for the work of the device (cuCtxSynchronize on its primary context, which covers its
  // green contexts), then unmaps and frees. While a stream capture forbids that wait, the
  // memory is kept and freed by the next allocation or release that can wait. Never throws: a
  // driver call that fails is reported as a warning.
  ~LocalizedMemory();

  abi::CUdeviceptr address() const noexcept;
  // Bytes from one domain's part to the next.
  std::size_t stride() const noexcept;
  int domains() const noexcept;
  int device() const noexcept;

  struct Mapping;  // the reservation, the mapped parts and the retained primary context

 private:
  explicit LocalizedMemory(std::unique_ptr<Mapping> mapping) noexcept;
  std::unique_ptr<Mapping> mapping_;
};

// Releases a stream capture kept waiting, not made yet.
std::size_t deferred_localized_releases();

}  // namespace tgc
