#include "device.h"

#include <stdexcept>
#include <string>

#include "driver_api.h"
#include "errors.h"

namespace tgc {

int device_count() {
  const DriverApi& api = driver();
  int count = 0;
  api.call<entry::cuDeviceGetCount>(&count);
  return count;
}

int check_device(long long ordinal) {
  const int count = device_count();
  if (ordinal < 0 || ordinal >= count) {
    throw RangeError("device_id " + format_argument(ordinal) + " is out of range: this machine has " +
                             std::to_string(count) + " CUDA device" + (count == 1 ? "" : "s") +
                             (count > 0 ? " (valid device_id: 0.." + std::to_string(count - 1) + ")"
                                        : std::string()));
  }
  return static_cast<int>(ordinal);
}

int resolve_device(std::optional<long long> device, const std::function<int()>& current_device) {
  if (device) return check_device(*device);
  if (!current_device) throw ValueError("no device given, and no current device to fall back on");
  device_count();
  return check_device(current_device());
}

abi::CUdevice device_handle(int ordinal) {
  const DriverApi& api = driver();
  abi::CUdevice device = 0;
  api.call<entry::cuDeviceGet>(&device, check_device(ordinal));
  return device;
}

namespace {
int attribute(int ordinal, int which) {
  const DriverApi& api = driver();
  int value = 0;
  api.call<entry::cuDeviceGetAttribute>(&value, which, device_handle(ordinal));
  return value;
}
}  // namespace

int device_sm_count(int ordinal) {
  return attribute(ordinal, abi::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
}

ComputeCapability device_compute_capability(int ordinal) {
  return {attribute(ordinal, abi::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
          attribute(ordinal, abi::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)};
}

int device_locality_domain_count(int ordinal) {
  driver().require_version("locality domains", feature_version::kLocalityDomains);
  return attribute(ordinal, abi::CU_DEVICE_ATTRIBUTE_LOCALITY_DOMAIN_COUNT);
}

unsigned default_coscheduling_alignment(int ordinal) {
  return device_compute_capability(ordinal).major >= 9 ? 8u : 2u;
}

bool primary_context_active(int ordinal) {
  const DriverApi& api = driver();
  unsigned flags = 0;
  int active = 0;
  api.call<entry::cuDevicePrimaryCtxGetState>(device_handle(ordinal), &flags, &active);
  return active != 0;
}

abi::CUcontext current_context() {
  const DriverApi& api = driver();
  abi::CUcontext context = nullptr;
  api.call<entry::cuCtxGetCurrent>(&context);
  return context;
}

}  // namespace tgc
