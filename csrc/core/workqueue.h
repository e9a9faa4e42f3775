// Workqueue options of green contexts (driver 13.1+): which workqueues a context shares and
// how many stream-ordered workloads run at once.
#pragma once

#include <optional>
#include <string>

#include "cuda_abi.h"
#include "errors.h"

namespace tgc {

struct WorkqueueConfig {
  abi::CUdevWorkqueueConfigScope scope = abi::CU_WORKQUEUE_SCOPE_DEVICE_CTX;
  std::optional<unsigned> concurrency_limit;  // nullopt: the device's default
};

// The scope called `name`: "device_ctx" (shared, the driver's default) or "balanced"
// (non-overlapping workqueues among balanced contexts). ValueError for any other name.
abi::CUdevWorkqueueConfigScope workqueue_scope_named(const std::string& name);

// The ValueError for a value that names no workqueue scope; `shown` is how the caller spells
// the value (workqueue_scope_named shows a name in single quotes).
ValueError unknown_workqueue_scope(const std::string& shown);

// The workqueue resource of device `device` configured as `config` (FeatureUnavailableError
// before driver 13.1).
abi::CUdevResource workqueue_resource(int device, const WorkqueueConfig& config);

}  // namespace tgc
