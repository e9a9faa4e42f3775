#include "driver_baseline.h"

#include <chrono>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <thread>

#include "core/driver_api.h"

namespace tgc::bench {

namespace {

using Clock = std::chrono::steady_clock;

std::int64_t since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
}

abi::CUdevResource zeroed() {
  abi::CUdevResource resource;
  std::memset(&resource, 0, sizeof(resource));
  return resource;
}

struct Made {
  abi::CUgreenCtx green_ctx = nullptr;
  unsigned sm_count = 0;
};

// What GreenContext::create does with a partition in hand.
Made make_context(const DriverApi& api, abi::CUdevice device, abi::CUdevResource sm,
                  bool bare = false) {
  abi::CUdevResourceDesc desc = nullptr;
  api.check(api.cuDevResourceGenerateDesc(&desc, &sm, 1), "cuDevResourceGenerateDesc");
  auto create = api.require(api.cuGreenCtxCreate, "green contexts", feature_version::kGreenContexts);
  Made made;
  api.check(create(&made.green_ctx, desc, device, abi::CU_GREEN_CTX_DEFAULT_STREAM),
            "cuGreenCtxCreate");
  if (bare) return made;
  abi::CUcontext context = nullptr;
  api.check(api.cuCtxFromGreenCtx(&context, made.green_ctx), "cuCtxFromGreenCtx");
  abi::CUdevResource actual = zeroed();
  api.check(api.cuGreenCtxGetDevResource(made.green_ctx, &actual, abi::CU_DEV_RESOURCE_TYPE_SM),
            "cuGreenCtxGetDevResource");
  made.sm_count = actual.sm.smCount;
  return made;
}

struct Split {
  abi::CUdevice device = 0;
  abi::CUdevResource group = zeroed();
  abi::CUdevResource remainder = zeroed();
};

Split split_device(const DriverApi& api, int ordinal, unsigned min_sms) {
  api.require_version("green contexts", feature_version::kGreenContexts);
  Split out;
  api.check(api.cuDeviceGet(&out.device, ordinal), "cuDeviceGet");
  abi::CUdevResource whole = zeroed();
  api.check(api.cuDeviceGetDevResource(out.device, &whole, abi::CU_DEV_RESOURCE_TYPE_SM),
            "cuDeviceGetDevResource");
  unsigned groups = 1;
  api.check(api.cuDevSmResourceSplitByCount(&out.group, &groups, &whole, &out.remainder, 0, min_sms),
            "cuDevSmResourceSplitByCount");
  return out;
}

std::int64_t destroy(const DriverApi& api, std::initializer_list<abi::CUgreenCtx> contexts) {
  Clock::time_point start = Clock::now();
  for (abi::CUgreenCtx ctx : contexts) api.check(api.cuGreenCtxDestroy(ctx), "cuGreenCtxDestroy");
  return since(start);
}

}  // namespace

Timing raw_create(int device, unsigned min_sms, bool bare) {
  const DriverApi& api = driver();
  Timing timing;
  Clock::time_point start = Clock::now();
  Split split = split_device(api, device, min_sms);
  timing.split_ns = since(start);
  Made made = make_context(api, split.device, split.group, bare);
  timing.create_ns = since(start);
  timing.destroy_ns = destroy(api, {made.green_ctx});
  return timing;
}

Timing raw_split_create(int device, unsigned first_sms, bool concurrently) {
  const DriverApi& api = driver();
  Timing timing;
  Clock::time_point start = Clock::now();
  Split split = split_device(api, device, first_sms);
  timing.split_ns = since(start);
  Made first, second;
  if (concurrently) {
    std::exception_ptr error;
    std::thread other([&] {
      try {
        second = make_context(api, split.device, split.remainder);
      } catch (...) {
        error = std::current_exception();
      }
    });
    try {
      first = make_context(api, split.device, split.group);
    } catch (...) {
      other.join();
      if (second.green_ctx != nullptr) api.cuGreenCtxDestroy(second.green_ctx);
      throw;
    }
    other.join();
    if (error) {
      api.cuGreenCtxDestroy(first.green_ctx);
      std::rethrow_exception(error);
    }
  } else {
    first = make_context(api, split.device, split.group);
    second = make_context(api, split.device, split.remainder);
  }
  timing.create_ns = since(start);
  timing.destroy_ns = destroy(api, {first.green_ctx, second.green_ctx});
  return timing;
}

Timing raw_stream_create(std::uintptr_t green_ctx, int priority) {
  const DriverApi& api = driver();
  Timing timing;
  auto create = api.require(api.cuGreenCtxStreamCreate, "green-context streams",
                            feature_version::kGreenContextStreams);
  abi::CUstream stream = nullptr;
  Clock::time_point start = Clock::now();
  api.check(create(&stream, reinterpret_cast<abi::CUgreenCtx>(green_ctx),
                                       abi::CU_STREAM_NON_BLOCKING, priority),
            "cuGreenCtxStreamCreate");
  timing.create_ns = since(start);
  start = Clock::now();
  api.check(api.cuStreamDestroy(stream), "cuStreamDestroy");
  timing.destroy_ns = since(start);
  return timing;
}

}  // namespace tgc::bench
