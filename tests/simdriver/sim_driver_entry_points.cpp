// The simulated driver's exported entry points: cuInit, cuDriverGetVersion, cuDeviceGet and
// cuGetProcAddress_v2, which hands out the rest by name and version, as a real driver does.
#include <cstdint>
#include <cstring>
#include <vector>

#include "sim_driver.h"
#include "sim_driver_state.h"

using namespace simdriver;

namespace {

struct Entry {
  const char* name;
  int since;
  void* fn;
};

const std::vector<Entry>& entries() {
  static const std::vector<Entry> table = {
      {"cuGetErrorName", 12000, reinterpret_cast<void*>(&sim_cuGetErrorName)},
      {"cuGetErrorString", 12000, reinterpret_cast<void*>(&sim_cuGetErrorString)},
      {"cuDeviceGet", 12000, reinterpret_cast<void*>(&sim_cuDeviceGet)},
      {"cuDeviceGetCount", 12000, reinterpret_cast<void*>(&sim_cuDeviceGetCount)},
      {"cuDeviceGetAttribute", 12000, reinterpret_cast<void*>(&sim_cuDeviceGetAttribute)},
      {"cuDevicePrimaryCtxGetState", 12000, reinterpret_cast<void*>(&sim_cuDevicePrimaryCtxGetState)},
      {"cuDevicePrimaryCtxRetain", 12000, reinterpret_cast<void*>(&sim_cuDevicePrimaryCtxRetain)},
      {"cuDevicePrimaryCtxRelease", 12000, reinterpret_cast<void*>(&sim_cuDevicePrimaryCtxRelease)},
      {"cuCtxSynchronize", 12000, reinterpret_cast<void*>(&sim_cuCtxSynchronize)},
      {"cuCtxGetCurrent", 12000, reinterpret_cast<void*>(&sim_cuCtxGetCurrent)},
      {"cuCtxPushCurrent", 12000, reinterpret_cast<void*>(&sim_cuCtxPushCurrent)},
      {"cuCtxPopCurrent", 12000, reinterpret_cast<void*>(&sim_cuCtxPopCurrent)},
      {"cuStreamCreateWithPriority", 12000, reinterpret_cast<void*>(&sim_cuStreamCreateWithPriority)},
      {"cuStreamSynchronize", 12000, reinterpret_cast<void*>(&sim_cuStreamSynchronize)},
      {"cuStreamDestroy", 12000, reinterpret_cast<void*>(&sim_cuStreamDestroy)},
      {"cuStreamGetCtx", 12000, reinterpret_cast<void*>(&sim_cuStreamGetCtx)},
      {"cuEventCreate", 12000, reinterpret_cast<void*>(&sim_cuEventCreate)},
      {"cuEventRecord", 12000, reinterpret_cast<void*>(&sim_cuEventRecord)},
      {"cuEventDestroy", 12000, reinterpret_cast<void*>(&sim_cuEventDestroy)},
      {"cuStreamWaitEvent", 12000, reinterpret_cast<void*>(&sim_cuStreamWaitEvent)},
      {"cuLibraryLoadData", 12000, reinterpret_cast<void*>(&sim_cuLibraryLoadData)},
      {"cuLibraryUnload", 12000, reinterpret_cast<void*>(&sim_cuLibraryUnload)},
      {"cuLibraryGetKernel", 12000, reinterpret_cast<void*>(&sim_cuLibraryGetKernel)},
      {"cuKernelGetFunction", 12000, reinterpret_cast<void*>(&sim_cuKernelGetFunction)},
      {"cuLaunchKernel", 12000, reinterpret_cast<void*>(&sim_cuLaunchKernel)},
      {"cuMemGetAllocationGranularity", 12000, reinterpret_cast<void*>(&sim_cuMemGetAllocationGranularity)},
      {"cuMemAddressReserve", 12000, reinterpret_cast<void*>(&sim_cuMemAddressReserve)},
      {"cuMemAddressFree", 12000, reinterpret_cast<void*>(&sim_cuMemAddressFree)},
      {"cuMemCreate", 12000, reinterpret_cast<void*>(&sim_cuMemCreate)},
      {"cuMemRelease", 12000, reinterpret_cast<void*>(&sim_cuMemRelease)},
      {"cuMemMap", 12000, reinterpret_cast<void*>(&sim_cuMemMap)},
      {"cuMemUnmap", 12000, reinterpret_cast<void*>(&sim_cuMemUnmap)},
      {"cuMemSetAccess", 12000, reinterpret_cast<void*>(&sim_cuMemSetAccess)},
      {"cuDeviceGetDevResource", 12040, reinterpret_cast<void*>(&sim_cuDeviceGetDevResource)},
      {"cuGreenCtxGetDevResource", 12040, reinterpret_cast<void*>(&sim_cuGreenCtxGetDevResource)},
      {"cuDevSmResourceSplitByCount", 12040, reinterpret_cast<void*>(&sim_cuDevSmResourceSplitByCount)},
      {"cuDevResourceGenerateDesc", 12040, reinterpret_cast<void*>(&sim_cuDevResourceGenerateDesc)},
      {"cuGreenCtxCreate", 12040, reinterpret_cast<void*>(&sim_cuGreenCtxCreate)},
      {"cuGreenCtxDestroy", 12040, reinterpret_cast<void*>(&sim_cuGreenCtxDestroy)},
      {"cuCtxFromGreenCtx", 12040, reinterpret_cast<void*>(&sim_cuCtxFromGreenCtx)},
      {"cuStreamGetGreenCtx", 12040, reinterpret_cast<void*>(&sim_cuStreamGetGreenCtx)},
      {"cuGreenCtxStreamCreate", 12050, reinterpret_cast<void*>(&sim_cuGreenCtxStreamCreate)},
      {"cuDevSmResourceSplit", 13010, reinterpret_cast<void*>(&sim_cuDevSmResourceSplit)},
  };
  return table;
}

}  // namespace

extern "C" {

CUresult cuInit(unsigned flags) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (CUresult injected = enter("cuInit")) return injected;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (int code = env_int("TGC_SIM_FAIL_INIT", 0)) return code;  // e.g. 100: no device
  if (s.initialised) return CUDA_SUCCESS;
  Config c;
  if (!read_config(&c)) return CUDA_ERROR_INVALID_VALUE;
  s.config = c;
  s.gpc_of_sm.clear();
  for (std::size_t g = 0; g < c.gpc_sizes.size(); ++g)
    for (int k = 0; k < c.gpc_sizes[g]; ++k) s.gpc_of_sm.push_back(static_cast<int>(g));
  s.initialised = true;
  return CUDA_SUCCESS;
}

// A real driver exports its entry points by name too; the core asks cuDeviceGet this way
// whether the driver is initialised, without initialising it.
CUresult cuDeviceGet(CUdevice* device, int ordinal) { return sim_cuDeviceGet(device, ordinal); }

CUresult cuDriverGetVersion(int* version) {
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *version = env_int("TGC_SIM_DRIVER_VERSION", 13040);
  return CUDA_SUCCESS;
}

CUresult cuGetProcAddress_v2(const char* symbol, void** fn, int version, std::uint64_t, int* status) {
  const int driver = env_int("TGC_SIM_DRIVER_VERSION", 13040);
  *fn = nullptr;
  for (const Entry& e : entries()) {
    if (std::strcmp(e.name, symbol) != 0) continue;
    if (driver < e.since || hidden(symbol)) break;
    if (version < e.since) {
      if (status) *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
      return CUDA_ERROR_NOT_FOUND;
    }
    *fn = e.fn;
    if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
  }
  if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_ERROR_NOT_FOUND;
}

}  // extern "C"
