// Our declarations in csrc/core/cuda_abi.h against a real cuda.h, field by field.
// Compiled against a 13.0 header (the 12.4-13.0 view) and a 13.4+ header (everything).
#include <cuda.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>

#include "core/cuda_abi.h"

namespace ours = tgc::abi;

#define SAME_FIELD(OURS, THEIRS, FIELD)                                                   \
  static_assert(offsetof(OURS, FIELD) == offsetof(THEIRS, FIELD), #FIELD " offset");     \
  static_assert(sizeof(OURS::FIELD) == sizeof(THEIRS::FIELD), #FIELD " size")

static_assert(sizeof(ours::CUdevResource) == sizeof(CUdevResource), "CUdevResource size");
SAME_FIELD(ours::CUdevResource, CUdevResource, type);
SAME_FIELD(ours::CUdevResource, CUdevResource, _internal_padding);
// 13.0's CUdevSmResource has 3 fields (12 bytes); ours has the 13.4 fields too and sits in
// the same union, which is large enough in every version.
static_assert(offsetof(ours::CUdevResource, sm) == offsetof(CUdevResource, sm), "sm offset");
static_assert(sizeof(ours::CUdevSmResource) <= sizeof(CUdevResource) - offsetof(CUdevResource, sm),
              "sm fits in the union");
SAME_FIELD(ours::CUdevSmResource, CUdevSmResource, smCount);
#if CUDA_VERSION >= 13000
SAME_FIELD(ours::CUdevSmResource, CUdevSmResource, minSmPartitionSize);
SAME_FIELD(ours::CUdevSmResource, CUdevSmResource, smCoscheduledAlignment);
#endif
static_assert(int(ours::CU_DEV_RESOURCE_TYPE_SM) == int(CU_DEV_RESOURCE_TYPE_SM), "type SM");
static_assert(ours::CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING ==
                  CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING, "split flag");
static_assert(ours::CU_DEV_SM_RESOURCE_SPLIT_MAX_POTENTIAL_CLUSTER_SIZE ==
                  CU_DEV_SM_RESOURCE_SPLIT_MAX_POTENTIAL_CLUSTER_SIZE, "split flag");
static_assert(ours::CU_GREEN_CTX_DEFAULT_STREAM == CU_GREEN_CTX_DEFAULT_STREAM, "ctx flag");
static_assert(ours::CU_STREAM_NON_BLOCKING == CU_STREAM_NON_BLOCKING, "stream flag");
static_assert(ours::CU_EVENT_DISABLE_TIMING == CU_EVENT_DISABLE_TIMING, "event flag");
static_assert(sizeof(ours::CUevent) == sizeof(CUevent), "CUevent is a handle");
static_assert(sizeof(ours::CUstream) == sizeof(CUstream), "CUstream is a handle");
static_assert(ours::CUDA_ERROR_INVALID_RESOURCE_TYPE == CUDA_ERROR_INVALID_RESOURCE_TYPE, "914");
static_assert(ours::CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION ==
                  CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION, "915");
static_assert(ours::CUDA_ERROR_DEINITIALIZED == CUDA_ERROR_DEINITIALIZED, "deinitialized");
static_assert(ours::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "attr");
static_assert(ours::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ==
                  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "attr");
static_assert(ours::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR ==
                  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "attr");
static_assert(ours::CUDA_ERROR_NOT_INITIALIZED == CUDA_ERROR_NOT_INITIALIZED, "not initialized");
static_assert(ours::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "900");
// Virtual memory management.
static_assert(sizeof(ours::CUmemGenericAllocationHandle) == sizeof(CUmemGenericAllocationHandle), "handle");
static_assert(sizeof(ours::CUdeviceptr) == sizeof(CUdeviceptr), "CUdeviceptr");
static_assert(sizeof(ours::CUmemLocation) == sizeof(CUmemLocation), "CUmemLocation size");
SAME_FIELD(ours::CUmemLocation, CUmemLocation, type);
SAME_FIELD(ours::CUmemLocation, CUmemLocation, id);
static_assert(sizeof(ours::CUmemAllocationProp) == sizeof(CUmemAllocationProp), "CUmemAllocationProp size");
SAME_FIELD(ours::CUmemAllocationProp, CUmemAllocationProp, type);
SAME_FIELD(ours::CUmemAllocationProp, CUmemAllocationProp, requestedHandleTypes);
SAME_FIELD(ours::CUmemAllocationProp, CUmemAllocationProp, location);
SAME_FIELD(ours::CUmemAllocationProp, CUmemAllocationProp, win32HandleMetaData);
SAME_FIELD(ours::CUmemAllocationProp, CUmemAllocationProp, allocFlags);
static_assert(sizeof(ours::CUmemAccessDesc) == sizeof(CUmemAccessDesc), "CUmemAccessDesc size");
SAME_FIELD(ours::CUmemAccessDesc, CUmemAccessDesc, location);
SAME_FIELD(ours::CUmemAccessDesc, CUmemAccessDesc, flags);
static_assert(ours::CU_MEM_ALLOCATION_TYPE_PINNED == CU_MEM_ALLOCATION_TYPE_PINNED, "pinned");
static_assert(ours::CU_MEM_LOCATION_TYPE_DEVICE == CU_MEM_LOCATION_TYPE_DEVICE, "device location");
static_assert(ours::CU_MEM_ACCESS_FLAGS_PROT_READWRITE == CU_MEM_ACCESS_FLAGS_PROT_READWRITE, "read-write");
static_assert(ours::CU_MEM_ALLOC_GRANULARITY_MINIMUM == CU_MEM_ALLOC_GRANULARITY_MINIMUM, "granularity");

#if CUDA_VERSION >= 13010
SAME_FIELD(ours::CUdevResource, CUdevResource, wqConfig);
SAME_FIELD(ours::CUdevResource, CUdevResource, wq);
SAME_FIELD(ours::CUdevResource, CUdevResource, nextResource);
SAME_FIELD(ours::CUdevSmResource, CUdevSmResource, flags);
SAME_FIELD(ours::CUdevWorkqueueConfigResource, CUdevWorkqueueConfigResource, device);
SAME_FIELD(ours::CUdevWorkqueueConfigResource, CUdevWorkqueueConfigResource, wqConcurrencyLimit);
SAME_FIELD(ours::CUdevWorkqueueConfigResource, CUdevWorkqueueConfigResource, sharingScope);
static_assert(sizeof(ours::CUdevWorkqueueConfigResource) == sizeof(CUdevWorkqueueConfigResource), "wq");
static_assert(sizeof(ours::CUdevWorkqueueResource) == sizeof(CUdevWorkqueueResource), "wq");
static_assert(sizeof(ours::CU_DEV_SM_RESOURCE_GROUP_PARAMS) == sizeof(CU_DEV_SM_RESOURCE_GROUP_PARAMS), "params");
SAME_FIELD(ours::CU_DEV_SM_RESOURCE_GROUP_PARAMS, CU_DEV_SM_RESOURCE_GROUP_PARAMS, smCount);
SAME_FIELD(ours::CU_DEV_SM_RESOURCE_GROUP_PARAMS, CU_DEV_SM_RESOURCE_GROUP_PARAMS, coscheduledSmCount);
SAME_FIELD(ours::CU_DEV_SM_RESOURCE_GROUP_PARAMS, CU_DEV_SM_RESOURCE_GROUP_PARAMS, preferredCoscheduledSmCount);
SAME_FIELD(ours::CU_DEV_SM_RESOURCE_GROUP_PARAMS, CU_DEV_SM_RESOURCE_GROUP_PARAMS, flags);
static_assert(int(ours::CU_DEV_RESOURCE_TYPE_WORKQUEUE_CONFIG) == int(CU_DEV_RESOURCE_TYPE_WORKQUEUE_CONFIG), "wq type");
static_assert(int(ours::CU_DEV_RESOURCE_TYPE_WORKQUEUE) == int(CU_DEV_RESOURCE_TYPE_WORKQUEUE), "wq type");
static_assert(int(ours::CU_WORKQUEUE_SCOPE_DEVICE_CTX) == int(CU_WORKQUEUE_SCOPE_DEVICE_CTX), "scope");
static_assert(int(ours::CU_WORKQUEUE_SCOPE_GREEN_CTX_BALANCED) == int(CU_WORKQUEUE_SCOPE_GREEN_CTX_BALANCED), "scope");
SAME_FIELD(ours::CUdevResource, CUdevResource, sm);
static_assert(ours::CU_DEV_SM_RESOURCE_GROUP_BACKFILL == CU_DEV_SM_RESOURCE_GROUP_BACKFILL, "backfill");
#endif
#if CUDA_VERSION >= 13040
SAME_FIELD(ours::CUdevSmResource, CUdevSmResource, localityDomainId);
SAME_FIELD(ours::CU_DEV_SM_RESOURCE_GROUP_PARAMS, CU_DEV_SM_RESOURCE_GROUP_PARAMS, localityDomainId);
static_assert(sizeof(ours::CUdevSmResource) == sizeof(CUdevSmResource), "sm resource size");
static_assert(ours::CU_DEV_SM_RESOURCE_GROUP_LOCALITY_DOMAIN_ID == CU_DEV_SM_RESOURCE_GROUP_LOCALITY_DOMAIN_ID,
              "locality flag");
static_assert(ours::CU_DEVICE_ATTRIBUTE_LOCALITY_DOMAIN_COUNT == CU_DEVICE_ATTRIBUTE_LOCALITY_DOMAIN_COUNT,
              "locality domain count attribute");
static_assert(ours::CU_MEM_LOCATION_TYPE_DEVICE_LOCALITY_DOMAIN == CU_MEM_LOCATION_TYPE_DEVICE_LOCALITY_DOMAIN,
              "locality-domain location");
SAME_FIELD(ours::CUmemLocation, CUmemLocation, localized);
static_assert(offsetof(ours::CUmemLocation, localized.deviceId) == offsetof(CUmemLocation, localized.deviceId),
              "localized.deviceId");
static_assert(offsetof(ours::CUmemLocation, localized.localityDomainId) ==
                  offsetof(CUmemLocation, localized.localityDomainId),
              "localized.localityDomainId");
#endif

TEST(AbiLayout, MatchesHeader) {
  // Everything above is checked at compile time; this records which header was used.
  RecordProperty("CUDA_VERSION", CUDA_VERSION);
  EXPECT_EQ(sizeof(ours::CUdevResource), sizeof(CUdevResource));
#if CUDA_VERSION >= 13040
  EXPECT_EQ(sizeof(ours::CUdevSmResource), sizeof(CUdevSmResource));
#endif
}

TEST(AbiLayout, SpecialStreamHandles) {
  // cuda.h defines them as casts, which no constant expression may contain.
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(CU_STREAM_LEGACY), ours::CU_STREAM_LEGACY_HANDLE);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(CU_STREAM_PER_THREAD), ours::CU_STREAM_PER_THREAD_HANDLE);
}
