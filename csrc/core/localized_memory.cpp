#include "localized_memory.h"

#include <limits>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "current_context.h"
#include "device.h"
#include "driver_api.h"
#include "errors.h"

namespace tgc {

// What the memory holds, released in its destructor without waiting for the device (a release
// waits first; a failed allocation has nothing to wait for).
struct LocalizedMemory::Mapping {
  int device = 0;
  abi::CUdevice handle = 0;
  abi::CUcontext primary = nullptr;  // retained; null until then
  abi::CUdeviceptr address = 0;      // 0 until reserved
  std::size_t stride = 0;
  int domains = 0;
  int mapped = 0;  // parts mapped, from the first

  Mapping() = default;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;

  ~Mapping() {
    if (primary == nullptr) return;
    try {
      const DriverApi& api = driver();
      const bool pushed = api.result_of<entry::cuCtxPushCurrent>(primary) == abi::CUDA_SUCCESS;
      for (int i = 0; i < mapped; ++i) api.call_in_cleanup<entry::cuMemUnmap>(address + i * stride, stride);
      if (address != 0) api.call_in_cleanup<entry::cuMemAddressFree>(address, stride * domains);
      abi::CUcontext popped = nullptr;
      if (pushed) api.call_in_cleanup<entry::cuCtxPopCurrent>(&popped);
      api.call_in_cleanup<entry::cuDevicePrimaryCtxRelease>(handle);
    } catch (...) {
      // No driver to call any more: nothing to release.
    }
  }
};

namespace {

// Releases that a stream capture kept waiting. Never destroyed: a release may come at exit.
std::mutex& deferred_mutex() {
  static auto* mutex = new std::mutex;
  return *mutex;
}
std::vector<std::unique_ptr<LocalizedMemory::Mapping>>& deferred() {
  static auto* mappings = new std::vector<std::unique_ptr<LocalizedMemory::Mapping>>;
  return *mappings;
}

// Pinned device memory of locality domain `domain` of device `ordinal`.
abi::CUmemAllocationProp in_domain(int ordinal, int domain) {
  abi::CUmemAllocationProp prop{};
  prop.type = abi::CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = abi::CU_MEM_LOCATION_TYPE_DEVICE_LOCALITY_DOMAIN;
  prop.location.localized.deviceId = static_cast<unsigned char>(ordinal);
  prop.location.localized.localityDomainId = static_cast<unsigned char>(domain);
  return prop;
}

// Waits for the work of the mapping's device. False while a stream capture forbids it (the
// driver then refuses cuCtxSynchronize); any other failure is warned of, and true.
bool wait_for_device(const LocalizedMemory::Mapping& mapping) noexcept {
  try {
    const DriverApi& api = driver();
    abi::CUresult result = api.result_of<entry::cuCtxPushCurrent>(mapping.primary);
    if (result != abi::CUDA_SUCCESS) {
      warn_if_cleanup_failed(result, "cuCtxPushCurrent");
      return true;
    }
    result = api.result_of<entry::cuCtxSynchronize>();
    abi::CUcontext popped = nullptr;
    api.call_in_cleanup<entry::cuCtxPopCurrent>(&popped);
    if (result == abi::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) return false;
    warn_if_cleanup_failed(result, "cuCtxSynchronize");
  } catch (...) {
    // No driver to call any more: nothing runs that could still use the memory.
  }
  return true;
}

// Frees the deferred releases whose device can be waited for now.
void release_deferred() noexcept {
  std::vector<std::unique_ptr<LocalizedMemory::Mapping>> waiting;
  {
    std::lock_guard<std::mutex> lock(deferred_mutex());
    waiting.swap(deferred());
  }
  std::vector<std::unique_ptr<LocalizedMemory::Mapping>> still;
  for (auto& mapping : waiting) {
    if (!wait_for_device(*mapping)) still.push_back(std::move(mapping));
  }
  waiting.clear();  // unmaps and frees what could be waited for
  if (still.empty()) return;
  std::lock_guard<std::mutex> lock(deferred_mutex());
  for (auto& mapping : still) deferred().push_back(std::move(mapping));
}

}  // namespace

std::unique_ptr<LocalizedMemory> LocalizedMemory::allocate(int ordinal, std::size_t part_bytes) {
  const DriverApi& api = driver();
  api.require_version("locality domains", feature_version::kLocalityDomains);
  release_deferred();
  auto mapping = std::make_unique<Mapping>();
  mapping->device = ordinal;
  mapping->handle = device_handle(ordinal);
  mapping->domains = device_locality_domain_count(ordinal);
  abi::CUcontext primary = nullptr;
  api.call<entry::cuDevicePrimaryCtxRetain>(&primary, mapping->handle);
  mapping->primary = primary;
  CurrentContext current(primary);

  abi::CUmemAllocationProp first = in_domain(ordinal, 0);
  std::size_t granularity = 0;
  api.call<entry::cuMemGetAllocationGranularity>(&granularity, &first, abi::CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  if (granularity == 0) granularity = 1;
  constexpr std::size_t kMost = std::numeric_limits<std::size_t>::max();
  const std::size_t domains = static_cast<std::size_t>(mapping->domains);
  if (part_bytes > kMost - granularity || domains == 0 ||
      (part_bytes / granularity + 1) * granularity > kMost / domains) {
    throw ValueError(std::to_string(part_bytes) + " bytes in each of " + std::to_string(domains) +
                     " locality domains do not fit in one address range");
  }
  const std::size_t parts = part_bytes == 0 ? 1 : (part_bytes + granularity - 1) / granularity;
  mapping->stride = parts * granularity;
  abi::CUdeviceptr address = 0;
  api.call<entry::cuMemAddressReserve>(&address, mapping->stride * domains, granularity, 0, 0ULL);
  mapping->address = address;
  for (int i = 0; i < mapping->domains; ++i) {
    abi::CUmemAllocationProp prop = in_domain(ordinal, i);
    abi::CUmemGenericAllocationHandle memory = 0;
    api.call<entry::cuMemCreate>(&memory, mapping->stride, &prop, 0ULL);
    const abi::CUresult mapped =
        api.result_of<entry::cuMemMap>(address + i * mapping->stride, mapping->stride, 0, memory, 0ULL);
    if (mapped == abi::CUDA_SUCCESS) ++mapping->mapped;
    // Mapped memory lives until it is unmapped: the handle is not needed any more.
    api.call_in_cleanup<entry::cuMemRelease>(memory);
    api.check<entry::cuMemMap>(mapped);
  }
  abi::CUmemAccessDesc access{};
  access.location.type = abi::CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = ordinal;
  access.flags = abi::CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  api.call<entry::cuMemSetAccess>(address, mapping->stride * domains, &access, std::size_t{1});
  current.pop();
  return std::unique_ptr<LocalizedMemory>(new LocalizedMemory(std::move(mapping)));
}

LocalizedMemory::LocalizedMemory(std::unique_ptr<Mapping> mapping) noexcept : mapping_(std::move(mapping)) {}

LocalizedMemory::~LocalizedMemory() {
  if (!wait_for_device(*mapping_)) {
    try {
      std::lock_guard<std::mutex> lock(deferred_mutex());
      deferred().push_back(std::move(mapping_));
    } catch (...) {
      // No memory to remember it: freed now, without the wait.
    }
    return;
  }
  mapping_.reset();
  release_deferred();
}

abi::CUdeviceptr LocalizedMemory::address() const noexcept { return mapping_->address; }
std::size_t LocalizedMemory::stride() const noexcept { return mapping_->stride; }
int LocalizedMemory::domains() const noexcept { return mapping_->domains; }
int LocalizedMemory::device() const noexcept { return mapping_->device; }

std::size_t deferred_localized_releases() {
  std::lock_guard<std::mutex> lock(deferred_mutex());
  return deferred().size();
}

}  // namespace tgc
