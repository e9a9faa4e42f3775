// Device queries: ordinals, SM counts, compute capability, the whole-device SM resource.
#pragma once

#include <functional>
#include <optional>

#include "cuda_abi.h"

namespace tgc {

// Number of CUDA devices the driver sees.
int device_count();

// `ordinal` if the driver sees a device of that index; RuntimeError naming the valid range
// otherwise.
int check_device(long long ordinal);

// `device` checked as check_device does, or, when none is given, `current_device()`'s answer
// checked likewise (after the driver is asked for its devices, so that without a driver its
// error comes first). ValueError when neither a device nor `current_device` is given.
int resolve_device(std::optional<long long> device, const std::function<int()>& current_device);

// The driver handle of device `ordinal` (checked as check_device does).
abi::CUdevice device_handle(int ordinal);

// Multiprocessor count of device `ordinal`.
int device_sm_count(int ordinal);

struct ComputeCapability {
  int major = 0;
  int minor = 0;
};
ComputeCapability device_compute_capability(int ordinal);

// The device's locality-domain count as the driver reports it (driver 13.4+;
// FeatureUnavailableError before). Makes no context.
int device_locality_domain_count(int ordinal);

// The co-scheduling alignment the driver applies by default on this architecture
// (8 on compute capability 9.0+, 2 before), for drivers older than 13.0, which do not
// report it in the resource.
unsigned default_coscheduling_alignment(int ordinal);

// Whether the device's primary context is active (initialised by someone, e.g. PyTorch).
bool primary_context_active(int ordinal);

// The calling thread's current context (null when none), to check that libraries such as NCCL
// left no other context current.
abi::CUcontext current_context();

}  // namespace tgc
