#include "driver_baseline.h"

#include <chrono>
#include <exception>
#include <initializer_list>
#include <thread>
#include <utility>

#include "core/driver_api.h"

namespace tgc::bench {

namespace {

using Clock = std::chrono::steady_clock;

std::int64_t since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
}

// Owns one driver handle made here: destroys it (best effort, unchecked) if it is still owned
// when the guard goes, that is when a later call failed. destroy() is the checked destruction.
template <typename Handle, typename DestroyEntry>
class Owned {
 public:
  Owned() = default;
  explicit Owned(Handle handle) : handle_(handle) {}
  Owned(Owned&& other) noexcept { *this = std::move(other); }
  Owned& operator=(Owned&& other) noexcept {
    if (this != &other) {
      release_unchecked();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  ~Owned() { release_unchecked(); }

  Handle get() const noexcept { return handle_; }
  // Destroys it now; the handle is given up even if the driver refuses (it cannot be retried).
  void destroy(const DriverApi& api) {
    if (handle_ == nullptr) return;
    api.call<DestroyEntry>(std::exchange(handle_, nullptr));
  }

 private:
  void release_unchecked() noexcept {
    if (handle_ == nullptr) return;
    try {
      (void)driver().result_of<DestroyEntry>(std::exchange(handle_, nullptr));
    } catch (...) {
    }
  }
  Handle handle_ = nullptr;
};

using OwnedGreenCtx = Owned<abi::CUgreenCtx, entry::cuGreenCtxDestroy>;
using OwnedStream = Owned<abi::CUstream, entry::cuStreamDestroy>;

struct Made {
  OwnedGreenCtx green_ctx;
  unsigned sm_count = 0;
};

// What GreenContext::create does with a partition in hand.
Made make_context(const DriverApi& api, abi::CUdevice device, abi::CUdevResource sm,
                  bool bare = false) {
  abi::CUdevResourceDesc desc = nullptr;
  api.call<entry::cuDevResourceGenerateDesc>(&desc, &sm, 1);
  api.require<entry::cuGreenCtxCreate>("green contexts", feature_version::kGreenContexts);
  abi::CUgreenCtx green_ctx = nullptr;
  api.call<entry::cuGreenCtxCreate>(&green_ctx, desc, device, abi::CU_GREEN_CTX_DEFAULT_STREAM);
  Made made;
  made.green_ctx = OwnedGreenCtx(green_ctx);
  if (bare) return made;
  abi::CUcontext context = nullptr;
  api.call<entry::cuCtxFromGreenCtx>(&context, made.green_ctx.get());
  abi::CUdevResource actual = abi::zeroed_resource();
  api.call<entry::cuGreenCtxGetDevResource>(made.green_ctx.get(), &actual, abi::CU_DEV_RESOURCE_TYPE_SM);
  made.sm_count = actual.sm.smCount;
  return made;
}

struct Split {
  abi::CUdevice device = 0;
  abi::CUdevResource group = abi::zeroed_resource();
  abi::CUdevResource remainder = abi::zeroed_resource();
};

Split split_device(const DriverApi& api, int ordinal, unsigned min_sms) {
  api.require_version("green contexts", feature_version::kGreenContexts);
  Split out;
  api.call<entry::cuDeviceGet>(&out.device, ordinal);
  abi::CUdevResource whole = abi::zeroed_resource();
  api.call<entry::cuDeviceGetDevResource>(out.device, &whole, abi::CU_DEV_RESOURCE_TYPE_SM);
  unsigned groups = 1;
  api.call<entry::cuDevSmResourceSplitByCount>(&out.group, &groups, &whole, &out.remainder, 0, min_sms);
  return out;
}

// Destroys the contexts in order; if one is refused, the guards of the others still destroy them.
std::int64_t destroy(const DriverApi& api, std::initializer_list<Made*> made) {
  Clock::time_point start = Clock::now();
  for (Made* m : made) m->green_ctx.destroy(api);
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
  timing.destroy_ns = destroy(api, {&made});
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
      other.join();  // `second`, if made, is destroyed by its guard
      throw;
    }
    other.join();
    if (error) std::rethrow_exception(error);  // `first` is destroyed by its guard
  } else {
    first = make_context(api, split.device, split.group);
    second = make_context(api, split.device, split.remainder);
  }
  timing.create_ns = since(start);
  timing.destroy_ns = destroy(api, {&first, &second});
  return timing;
}

Timing raw_stream_create(std::uintptr_t green_ctx, int priority) {
  const DriverApi& api = driver();
  Timing timing;
  api.require<entry::cuGreenCtxStreamCreate>("green-context streams", feature_version::kGreenContextStreams);
  abi::CUstream handle = nullptr;
  Clock::time_point start = Clock::now();
  api.call<entry::cuGreenCtxStreamCreate>(&handle, reinterpret_cast<abi::CUgreenCtx>(green_ctx),
                                          abi::CU_STREAM_NON_BLOCKING, priority);
  timing.create_ns = since(start);
  OwnedStream stream(handle);
  start = Clock::now();
  stream.destroy(api);
  timing.destroy_ns = since(start);
  return timing;
}

}  // namespace tgc::bench
