// The one table of CUDA driver entry points the package uses.
//
// libcuda is opened at run time (dlopen), never linked. cuInit, cuDriverGetVersion and
// cuGetProcAddress_v2 come from dlsym; every other entry point is resolved once through
// cuGetProcAddress at a pinned ABI version, so a newer driver never hands back a newer ABI.
// Entry points the installed driver lacks stay null; code that needs one calls require(),
// which names the feature, the driver version it needs and the version found. Every call goes
// through call<entry::name>(...), which checks the result and names the call once.
#pragma once

#include <cstddef>
#include <string>

#include "cuda_abi.h"
#include "driver_info.h"

namespace tgc {

// X(name, since, pin, return type, parameter list)
//   since: first driver version that has the entry point;
//   pin:   the ABI version our declaration in cuda_abi.h describes (asked of
//          cuGetProcAddress, capped at the installed driver's version).
// cuGetProcAddress resolves a name to the newest ABI at the version asked for: "cuEventDestroy"
// at 12000 is cuEventDestroy_v2, whose signature is the one declared here.
#define TGC_DRIVER_ENTRY_POINTS(X)                                                               \
  X(cuGetErrorName, 12000, 12000, abi::CUresult, (abi::CUresult, const char**))                  \
  X(cuGetErrorString, 12000, 12000, abi::CUresult, (abi::CUresult, const char**))                \
  X(cuDeviceGet, 12000, 12000, abi::CUresult, (abi::CUdevice*, int))                             \
  X(cuDeviceGetCount, 12000, 12000, abi::CUresult, (int*))                                       \
  X(cuDeviceGetAttribute, 12000, 12000, abi::CUresult, (int*, int, abi::CUdevice))               \
  X(cuDevicePrimaryCtxGetState, 12000, 12000, abi::CUresult, (abi::CUdevice, unsigned*, int*))   \
  X(cuDevicePrimaryCtxRetain, 12000, 12000, abi::CUresult, (abi::CUcontext*, abi::CUdevice))      \
  X(cuDevicePrimaryCtxRelease, 12000, 12000, abi::CUresult, (abi::CUdevice))                      \
  X(cuCtxSynchronize, 12000, 12000, abi::CUresult, ())                                            \
  X(cuCtxGetCurrent, 12000, 12000, abi::CUresult, (abi::CUcontext*))                             \
  X(cuCtxPushCurrent, 12000, 12000, abi::CUresult, (abi::CUcontext))                             \
  X(cuCtxPopCurrent, 12000, 12000, abi::CUresult, (abi::CUcontext*))                             \
  X(cuStreamCreateWithPriority, 12000, 12000, abi::CUresult, (abi::CUstream*, unsigned, int))    \
  X(cuStreamSynchronize, 12000, 12000, abi::CUresult, (abi::CUstream))                           \
  X(cuStreamDestroy, 12000, 12000, abi::CUresult, (abi::CUstream))                               \
  X(cuStreamGetCtx, 12000, 12000, abi::CUresult, (abi::CUstream, abi::CUcontext*))               \
  X(cuEventCreate, 12000, 12000, abi::CUresult, (abi::CUevent*, unsigned))                       \
  X(cuEventRecord, 12000, 12000, abi::CUresult, (abi::CUevent, abi::CUstream))                   \
  X(cuEventDestroy, 12000, 12000, abi::CUresult, (abi::CUevent))                                 \
  X(cuStreamWaitEvent, 12000, 12000, abi::CUresult, (abi::CUstream, abi::CUevent, unsigned))     \
  X(cuLibraryLoadData, 12000, 12000, abi::CUresult,                                              \
    (abi::CUlibrary*, const void*, int*, void**, unsigned, int*, void**, unsigned))              \
  X(cuLibraryUnload, 12000, 12000, abi::CUresult, (abi::CUlibrary))                              \
  X(cuLibraryGetKernel, 12000, 12000, abi::CUresult,                                             \
    (abi::CUkernel*, abi::CUlibrary, const char*))                                               \
  X(cuKernelGetFunction, 12000, 12000, abi::CUresult, (abi::CUfunction*, abi::CUkernel))         \
  X(cuLaunchKernel, 12000, 12000, abi::CUresult,                                                 \
    (abi::CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,      \
     abi::CUstream, void**, void**))                                                             \
  X(cuMemGetAllocationGranularity, 12000, 12000, abi::CUresult,                                  \
    (std::size_t*, const abi::CUmemAllocationProp*, int))                                        \
  X(cuMemAddressReserve, 12000, 12000, abi::CUresult,                                            \
    (abi::CUdeviceptr*, std::size_t, std::size_t, abi::CUdeviceptr, unsigned long long))         \
  X(cuMemAddressFree, 12000, 12000, abi::CUresult, (abi::CUdeviceptr, std::size_t))              \
  X(cuMemCreate, 12000, 12000, abi::CUresult,                                                    \
    (abi::CUmemGenericAllocationHandle*, std::size_t, const abi::CUmemAllocationProp*,           \
     unsigned long long))                                                                        \
  X(cuMemRelease, 12000, 12000, abi::CUresult, (abi::CUmemGenericAllocationHandle))              \
  X(cuMemMap, 12000, 12000, abi::CUresult,                                                       \
    (abi::CUdeviceptr, std::size_t, std::size_t, abi::CUmemGenericAllocationHandle,              \
     unsigned long long))                                                                        \
  X(cuMemUnmap, 12000, 12000, abi::CUresult, (abi::CUdeviceptr, std::size_t))                    \
  X(cuMemSetAccess, 12000, 12000, abi::CUresult,                                                 \
    (abi::CUdeviceptr, std::size_t, const abi::CUmemAccessDesc*, std::size_t))                   \
  X(cuDeviceGetDevResource, 12040, 13040, abi::CUresult,                                         \
    (abi::CUdevice, abi::CUdevResource*, abi::CUdevResourceType))                                \
  X(cuGreenCtxGetDevResource, 12040, 13040, abi::CUresult,                                       \
    (abi::CUgreenCtx, abi::CUdevResource*, abi::CUdevResourceType))                              \
  X(cuDevSmResourceSplitByCount, 12040, 13040, abi::CUresult,                                    \
    (abi::CUdevResource*, unsigned*, const abi::CUdevResource*, abi::CUdevResource*, unsigned,   \
     unsigned))                                                                                  \
  X(cuDevResourceGenerateDesc, 12040, 13040, abi::CUresult,                                      \
    (abi::CUdevResourceDesc*, abi::CUdevResource*, unsigned))                                    \
  X(cuGreenCtxCreate, 12040, 12040, abi::CUresult,                                               \
    (abi::CUgreenCtx*, abi::CUdevResourceDesc, abi::CUdevice, unsigned))                         \
  X(cuGreenCtxDestroy, 12040, 12040, abi::CUresult, (abi::CUgreenCtx))                           \
  X(cuCtxFromGreenCtx, 12040, 12040, abi::CUresult, (abi::CUcontext*, abi::CUgreenCtx))          \
  X(cuStreamGetGreenCtx, 12040, 12040, abi::CUresult, (abi::CUstream, abi::CUgreenCtx*))       \
  X(cuGreenCtxStreamCreate, 12050, 12050, abi::CUresult,                                         \
    (abi::CUstream*, abi::CUgreenCtx, unsigned, int))                                            \
  X(cuDevSmResourceSplit, 13010, 13040, abi::CUresult,                                           \
    (abi::CUdevResource*, unsigned, const abi::CUdevResource*, abi::CUdevResource*, unsigned,    \
     abi::CU_DEV_SM_RESOURCE_GROUP_PARAMS*))

// For cleanup (destructors): warns that `call` failed, unless `result` is success or says the
// driver is already shut down (at process exit its teardown releases everything). Never throws.
void warn_if_cleanup_failed(abi::CUresult result, const char* call) noexcept;

class DriverApi {
 public:
#define TGC_DECLARE_MEMBER(name, since, pin, ret, params) ret(*name) params = nullptr;
  TGC_DRIVER_ENTRY_POINTS(TGC_DECLARE_MEMBER)
#undef TGC_DECLARE_MEMBER

  // The installed driver's version (cuDriverGetVersion), e.g. 13000.
  int version() const noexcept { return version_; }
  // The path of the library that was loaded.
  const std::string& library() const noexcept { return library_; }

  // The checked call: entry point `Entry` (a tag of namespace tgc::entry, named after it) with
  // `args`. DriverError naming it unless it returns CUDA_SUCCESS; FeatureUnavailableError when
  // the driver lacks it.
  template <typename Entry, typename... Args>
  void call(Args... args) const {
    check<Entry>(result_of<Entry>(args...));
  }
  // The same call's CUresult, for callers that act on particular results before check<Entry>().
  template <typename Entry, typename... Args>
  abi::CUresult result_of(Args... args) const {
    auto entry_point = this->*Entry::kMember;
    if (entry_point == nullptr) throw_unavailable(Entry::kName, Entry::kSince, Entry::kName);
    return entry_point(args...);
  }
  // The same call for cleanup (destructors): a warning naming it when it fails, nothing when the
  // driver is already shut down or lacks it. Never throws.
  template <typename Entry, typename... Args>
  void call_in_cleanup(Args... args) const noexcept {
    auto entry_point = this->*Entry::kMember;
    if (entry_point != nullptr) warn_if_cleanup_failed(entry_point(args...), Entry::kName);
  }
  // Throws DriverError naming `Entry` unless `result` is CUDA_SUCCESS.
  template <typename Entry>
  void check(abi::CUresult result) const {
    if (result != abi::CUDA_SUCCESS) throw_driver_error(result, Entry::kName);
  }

  // The CUresult's name and text, as the driver spells them.
  std::string error_name(abi::CUresult result) const;
  std::string error_text(abi::CUresult result) const;

  // Throws FeatureUnavailableError unless the driver is at least `needed_version`.
  void require_version(const char* feature, int needed_version) const;
  // Throws FeatureUnavailableError naming `feature` unless the driver is at least
  // `needed_version`, and a RuntimeError naming `feature` and `Entry` if it lacks that entry point.
  template <typename Entry>
  void require(const char* feature, int needed_version) const {
    if (this->*Entry::kMember == nullptr || version_ < needed_version) {
      throw_unavailable(feature, needed_version, Entry::kName);
    }
  }

  // The table of the process, loaded on first use. Throws DriverUnavailableError if no usable
  // driver can be loaded, DriverError if cuInit fails (no GPU); the same error on every later call.
  static const DriverApi& get();

 private:
  DriverApi() = default;
  void load();
  [[noreturn]] void throw_driver_error(abi::CUresult result, const char* call) const;
  [[noreturn]] void throw_unavailable(const char* feature, int needed_version, const char* entry_point) const;

  int version_ = 0;
  std::string library_;
};

// One tag per entry point, for DriverApi::call<>() and friends.
namespace entry {
#define TGC_DECLARE_TAG(name, since, pin, ret, params)            \
  struct name {                                                   \
    static constexpr const char* kName = #name;                   \
    static constexpr int kSince = since;                          \
    static constexpr auto kMember = &DriverApi::name;             \
  };
TGC_DRIVER_ENTRY_POINTS(TGC_DECLARE_TAG)
#undef TGC_DECLARE_TAG
}  // namespace entry

// Shorthand for DriverApi::get().
inline const DriverApi& driver() { return DriverApi::get(); }


}  // namespace tgc
