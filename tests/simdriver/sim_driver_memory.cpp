// Virtual memory management (cuMemCreate, cuMemAddressReserve, cuMemMap and the calls around
// them, with locality-domain placement from 13.4), the primary context's retain count and
// cuCtxSynchronize. Reservations are host memory; the rules checked are the documented ones.
#include <cstdlib>

#include "sim_driver_state.h"

namespace simdriver {

namespace {

bool valid_device(int device) { return device >= 0 && device < state().config.device_count; }

// CUDA_SUCCESS for a property cuMemCreate takes on this driver, the error it gives otherwise.
CUresult check_prop(const CUmemAllocationProp* prop, int* device, int* domain) {
  const Config& c = state().config;
  if (prop == nullptr || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED) return CUDA_ERROR_INVALID_VALUE;
  if (prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE) {
    *device = prop->location.id;
    *domain = -1;
  } else if (prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE_LOCALITY_DOMAIN && c.version >= 13040) {
    *device = prop->location.localized.deviceId;
    *domain = prop->location.localized.localityDomainId;
    const int domains = c.locality_domains > 0 ? c.locality_domains : 1;
    if (*domain >= domains) return CUDA_ERROR_INVALID_VALUE;
  } else {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return valid_device(*device) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

bool granular(std::size_t value) { return value % kMemoryGranularity == 0; }

// The reservation holding [ptr, ptr + size), or null.
const Reservation* reservation_of(CUdeviceptr ptr, std::size_t size) {
  for (const auto& [address, reservation] : state().reservations) {
    if (ptr >= address && ptr + size <= address + reservation.size) return &reservation;
  }
  return nullptr;
}

void forget_if_done(Memory* memory) {
  if (memory->released && memory->mappings == 0) {
    state().memories.erase(memory);
    delete memory;
  }
}

}  // namespace

CUresult sim_cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice device) {
  ENTER("cuDevicePrimaryCtxRetain");
  if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
  *ctx = reinterpret_cast<CUcontext>(&g_primary_tag);
  ++s.primary_retains;
  return CUDA_SUCCESS;
}

CUresult sim_cuDevicePrimaryCtxRelease(CUdevice device) {
  ENTER("cuDevicePrimaryCtxRelease");
  if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
  if (s.primary_retains == 0) {
    ++s.misuse;
    return kInvalidContext;
  }
  --s.primary_retains;
  return CUDA_SUCCESS;
}

CUresult sim_cuCtxSynchronize() {
  ENTER("cuCtxSynchronize");
  return t_context_stack.empty() ? kInvalidContext : CUDA_SUCCESS;
}

CUresult sim_cuMemGetAllocationGranularity(std::size_t* granularity, const CUmemAllocationProp* prop, int option) {
  ENTER("cuMemGetAllocationGranularity");
  int device = 0, domain = 0;
  if (granularity == nullptr || (option != 0 && option != 1)) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult error = check_prop(prop, &device, &domain)) return error;
  *granularity = kMemoryGranularity;
  return CUDA_SUCCESS;
}

CUresult sim_cuMemAddressReserve(CUdeviceptr* ptr, std::size_t size, std::size_t alignment, CUdeviceptr,
                                 unsigned long long flags) {
  ENTER("cuMemAddressReserve");
  if (ptr == nullptr || size == 0 || !granular(size) || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (alignment & (alignment - 1)) return CUDA_ERROR_INVALID_VALUE;
  void* host = std::aligned_alloc(kMemoryGranularity, size);
  if (host == nullptr) return 2;  // CUDA_ERROR_OUT_OF_MEMORY
  *ptr = reinterpret_cast<CUdeviceptr>(host);
  s.reservations[*ptr] = Reservation{size, host};
  return CUDA_SUCCESS;
}

CUresult sim_cuMemAddressFree(CUdeviceptr ptr, std::size_t size) {
  ENTER("cuMemAddressFree");
  auto it = s.reservations.find(ptr);
  if (it == s.reservations.end() || it->second.size != size) return CUDA_ERROR_INVALID_VALUE;
  for (const auto& [address, mapping] : s.mappings) {
    if (address >= ptr && address < ptr + size) return CUDA_ERROR_INVALID_VALUE;  // unmap first
  }
  std::free(it->second.host);
  s.reservations.erase(it);
  return CUDA_SUCCESS;
}

CUresult sim_cuMemCreate(CUmemGenericAllocationHandle* handle, std::size_t size, const CUmemAllocationProp* prop,
                         unsigned long long flags) {
  ENTER("cuMemCreate");
  int device = 0, domain = 0;
  if (handle == nullptr || size == 0 || !granular(size) || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult error = check_prop(prop, &device, &domain)) return error;
  auto* memory = new Memory{size, device, domain};
  s.memories.insert(memory);
  *handle = reinterpret_cast<CUmemGenericAllocationHandle>(memory);
  return CUDA_SUCCESS;
}

CUresult sim_cuMemRelease(CUmemGenericAllocationHandle handle) {
  ENTER("cuMemRelease");
  auto* memory = reinterpret_cast<Memory*>(handle);
  if (!s.memories.count(memory) || memory->released) {
    ++s.misuse;
    return kInvalidHandle;
  }
  memory->released = true;
  forget_if_done(memory);
  return CUDA_SUCCESS;
}

CUresult sim_cuMemMap(CUdeviceptr ptr, std::size_t size, std::size_t offset, CUmemGenericAllocationHandle handle,
                      unsigned long long flags) {
  ENTER("cuMemMap");
  auto* memory = reinterpret_cast<Memory*>(handle);
  if (!s.memories.count(memory) || memory->released) {
    ++s.misuse;
    return kInvalidHandle;
  }
  if (offset != 0 || flags != 0 || size != memory->size || !granular(ptr)) return CUDA_ERROR_INVALID_VALUE;
  if (reservation_of(ptr, size) == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (const auto& [address, mapping] : s.mappings) {
    if (address < ptr + size && ptr < address + mapping.size) return CUDA_ERROR_INVALID_VALUE;  // mapped already
  }
  s.mappings[ptr] = Mapping{size, memory, false};
  ++memory->mappings;
  return CUDA_SUCCESS;
}

CUresult sim_cuMemUnmap(CUdeviceptr ptr, std::size_t size) {
  ENTER("cuMemUnmap");
  auto it = s.mappings.find(ptr);
  if (it == s.mappings.end() || it->second.size != size) return CUDA_ERROR_INVALID_VALUE;  // a whole mapping
  Memory* memory = it->second.memory;
  s.mappings.erase(it);
  --memory->mappings;
  forget_if_done(memory);
  return CUDA_SUCCESS;
}

CUresult sim_cuMemSetAccess(CUdeviceptr ptr, std::size_t size, const CUmemAccessDesc* desc, std::size_t count) {
  ENTER("cuMemSetAccess");
  if (desc == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
  for (std::size_t i = 0; i < count; ++i) {
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
      return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(desc[i].location.id)) return CUDA_ERROR_INVALID_DEVICE;
  }
  // The range must be mapped from end to end.
  CUdeviceptr at = ptr;
  while (at < ptr + size) {
    auto it = s.mappings.find(at);
    if (it == s.mappings.end()) return CUDA_ERROR_INVALID_VALUE;
    at += it->second.size;
  }
  if (at != ptr + size) return CUDA_ERROR_INVALID_VALUE;
  for (at = ptr; at < ptr + size; at += s.mappings[at].size) s.mappings[at].accessible = true;
  return CUDA_SUCCESS;
}

}  // namespace simdriver
