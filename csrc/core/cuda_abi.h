// Our own declarations of the slice of the CUDA driver ABI this package uses.
//
// The core never includes <cuda.h>: it must build against any toolkit (or none) and run on
// any driver from 12.4 on, including structures that only 13.1 and 13.4 headers define.
// Every layout here is checked field by field against real headers in
// tests/cpp/test_abi_layout.cpp (13.0 for the 12.4-13.0 view, 13.4+ for the rest).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace tgc::abi {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = std::uint64_t;
// Opaque handle types, declared in this namespace on purpose: a translation unit that also
// sees <cuda.h> must not have them silently resolve to cuda.h's global structs.
struct CUctx_st;
struct CUgreenCtx_st;
struct CUstream_st;
struct CUevent_st;
struct CUdevResourceDesc_st;
struct CUlib_st;
struct CUkern_st;
struct CUfunc_st;
using CUcontext = CUctx_st*;
using CUgreenCtx = CUgreenCtx_st*;
using CUstream = CUstream_st*;
using CUevent = CUevent_st*;
using CUdevResourceDesc = CUdevResourceDesc_st*;
using CUlibrary = CUlib_st*;
using CUkernel = CUkern_st*;
using CUfunction = CUfunc_st*;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_INVALID_VALUE = 1;
constexpr CUresult CUDA_ERROR_NOT_INITIALIZED = 3;
constexpr CUresult CUDA_ERROR_DEINITIALIZED = 4;
constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
constexpr CUresult CUDA_ERROR_INVALID_DEVICE = 101;
constexpr CUresult CUDA_ERROR_NOT_FOUND = 500;
constexpr CUresult CUDA_ERROR_NOT_SUPPORTED = 801;
constexpr CUresult CUDA_ERROR_INVALID_RESOURCE_TYPE = 914;
constexpr CUresult CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION = 915;

// CUdevice_attribute values.
constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr int CU_DEVICE_ATTRIBUTE_LOCALITY_DOMAIN_COUNT = 149;  // 13.4

// CUdriverProcAddressQueryResult.
constexpr int CU_GET_PROC_ADDRESS_SUCCESS = 0;
constexpr int CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1;
constexpr int CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2;

// The special stream handles besides NULL (the current context's default stream), as cuda.h
// defines them (CU_STREAM_LEGACY, CU_STREAM_PER_THREAD).
constexpr std::uintptr_t CU_STREAM_LEGACY_HANDLE = 0x1;
constexpr std::uintptr_t CU_STREAM_PER_THREAD_HANDLE = 0x2;

constexpr unsigned CU_GREEN_CTX_DEFAULT_STREAM = 0x1;
constexpr unsigned CU_STREAM_NON_BLOCKING = 0x1;
constexpr unsigned CU_EVENT_DISABLE_TIMING = 0x2;

// cuDevSmResourceSplitByCount flags (12.4).
constexpr unsigned CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING = 0x1;
constexpr unsigned CU_DEV_SM_RESOURCE_SPLIT_MAX_POTENTIAL_CLUSTER_SIZE = 0x2;

// CUdevSmResourceGroup_flags (13.1; LOCALITY_DOMAIN_ID 13.4).
constexpr unsigned CU_DEV_SM_RESOURCE_GROUP_BACKFILL = 0x1;
constexpr unsigned CU_DEV_SM_RESOURCE_GROUP_LOCALITY_DOMAIN_ID = 0x2;

// CUdevResourceType.
enum CUdevResourceType : int {
  CU_DEV_RESOURCE_TYPE_INVALID = 0,
  CU_DEV_RESOURCE_TYPE_SM = 1,
  CU_DEV_RESOURCE_TYPE_WORKQUEUE_CONFIG = 1000,  // 13.1
  CU_DEV_RESOURCE_TYPE_WORKQUEUE = 10000,        // 13.1
};

// CUdevWorkqueueConfigScope (13.1).
enum CUdevWorkqueueConfigScope : int {
  CU_WORKQUEUE_SCOPE_DEVICE_CTX = 0,
  CU_WORKQUEUE_SCOPE_GREEN_CTX_BALANCED = 1,
};

// CUdevSmResource as of 13.4. A 12.4-13.0 driver writes only the first three fields; the
// remaining ones stay as we zeroed them.
struct CUdevSmResource {
  unsigned int smCount;                 // 12.4
  unsigned int minSmPartitionSize;      // 13.0
  unsigned int smCoscheduledAlignment;  // 13.0
  unsigned int flags;                   // 13.1
  unsigned int localityDomainId;        // 13.4, valid when flags & LOCALITY_DOMAIN_ID
};

struct CUdevWorkqueueConfigResource {  // 13.1
  CUdevice device;
  unsigned int wqConcurrencyLimit;
  CUdevWorkqueueConfigScope sharingScope;
};

struct CUdevWorkqueueResource {  // 13.1
  unsigned char reserved[40];
};

// CUdevResource: 144 bytes in every driver version. 12.4-13.0 have a 48-byte union at offset
// 96; 13.1 shrank the union to 40 bytes and put a `nextResource` pointer at offset 136. The
// total size never changed, so one declaration serves all versions as long as it is zeroed.
struct CUdevResource {
  CUdevResourceType type;
  unsigned char _internal_padding[92];
  union {
    CUdevSmResource sm;
    CUdevWorkqueueConfigResource wqConfig;
    CUdevWorkqueueResource wq;
    unsigned char _oversize[40];
  };
  CUdevResource* nextResource;  // 13.1; part of the 12.4-13.0 union's tail before that
};

struct CU_DEV_SM_RESOURCE_GROUP_PARAMS {  // 13.1; localityDomainId 13.4
  unsigned int smCount;
  unsigned int coscheduledSmCount;
  unsigned int preferredCoscheduledSmCount;
  unsigned int flags;
  unsigned int localityDomainId;
  unsigned int reserved[11];
};

static_assert(sizeof(CUdevSmResource) == 20, "CUdevSmResource layout");
static_assert(sizeof(CUdevResource) == 144, "CUdevResource must stay 144 bytes");
static_assert(offsetof(CUdevResource, sm) == 96, "CUdevResource union offset");
static_assert(offsetof(CUdevResource, nextResource) == 136, "CUdevResource nextResource offset");
static_assert(sizeof(CU_DEV_SM_RESOURCE_GROUP_PARAMS) == 64, "group params are 64 bytes");

// Virtual memory management (cuMemCreate and the calls around it; every 12.x driver has them).
// Placing memory in a locality domain is 13.4's: a location type and the `localized` member.
using CUmemGenericAllocationHandle = std::uint64_t;
constexpr int CU_MEM_ALLOCATION_TYPE_PINNED = 0x1;
constexpr int CU_MEM_LOCATION_TYPE_DEVICE = 0x1;
constexpr int CU_MEM_LOCATION_TYPE_DEVICE_LOCALITY_DOMAIN = 0x6;  // 13.4
constexpr int CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 0x3;
constexpr int CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0x0;
constexpr CUresult CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900;

struct CUmemLocation {
  int type;  // CUmemLocationType
  union {
    int id;  // a device ordinal, for CU_MEM_LOCATION_TYPE_DEVICE
    struct {
      unsigned char deviceId;
      unsigned char localityDomainId;
    } localized;  // 13.4, for CU_MEM_LOCATION_TYPE_DEVICE_LOCALITY_DOMAIN
  };
};

struct CUmemAllocationProp {
  int type;                  // CUmemAllocationType
  int requestedHandleTypes;  // CUmemAllocationHandleType
  CUmemLocation location;
  void* win32HandleMetaData;
  struct {
    unsigned char compressionType;
    unsigned char gpuDirectRDMACapable;
    unsigned short usage;
    unsigned char reserved[4];
  } allocFlags;
};

struct CUmemAccessDesc {
  CUmemLocation location;
  int flags;  // CUmemAccess_flags
};

static_assert(sizeof(CUmemLocation) == 8, "CUmemLocation layout");
static_assert(sizeof(CUmemAllocationProp) == 32, "CUmemAllocationProp layout");
static_assert(sizeof(CUmemAccessDesc) == 12, "CUmemAccessDesc layout");

// A CUdevResource as every driver version expects to be handed one: all bytes zero (fields
// an older driver does not write keep that value; see CUdevResource above).
inline CUdevResource zeroed_resource() noexcept {
  CUdevResource resource;
  std::memset(&resource, 0, sizeof(resource));
  return resource;
}

}  // namespace tgc::abi
