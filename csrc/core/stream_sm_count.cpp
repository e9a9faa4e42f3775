#include "stream_sm_count.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "device.h"
#include "driver_api.h"

namespace tgc {

namespace {

class Registry {
 public:
  void add(abi::CUgreenCtx green_ctx, unsigned sm_count) {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    counts_[green_ctx] = sm_count;
  }
  void remove(abi::CUgreenCtx green_ctx) noexcept {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    counts_.erase(green_ctx);
  }
  bool find(abi::CUgreenCtx green_ctx, unsigned* sm_count) const {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    auto found = counts_.find(green_ctx);
    if (found == counts_.end()) return false;
    *sm_count = found->second;
    return true;
  }
  std::size_t size() const {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    return counts_.size();
  }

 private:
  mutable std::shared_mutex mutex_;
  std::unordered_map<abi::CUgreenCtx, unsigned> counts_;
};

// Never destroyed: contexts kept idle until the process exits are forgotten by nobody.
Registry& registry() {
  static Registry* instance = new Registry();
  return *instance;
}

// The whole-device SM count of the first devices, read once (0: not read yet).
constexpr int kCachedDevices = 64;
std::array<std::atomic<unsigned>, kCachedDevices> g_device_sm_counts{};

unsigned whole_device(int ordinal) {
  if (ordinal < 0 || ordinal >= kCachedDevices) return static_cast<unsigned>(device_sm_count(ordinal));
  std::atomic<unsigned>& cached = g_device_sm_counts[static_cast<std::size_t>(ordinal)];
  unsigned count = cached.load(std::memory_order_relaxed);
  if (count == 0) {
    count = static_cast<unsigned>(device_sm_count(ordinal));  // checks the ordinal
    cached.store(count, std::memory_order_relaxed);
  }
  return count;
}

unsigned green_context_sm_count(const DriverApi& api, abi::CUgreenCtx green_ctx) {
  unsigned count = 0;
  if (registry().find(green_ctx, &count)) return count;
  abi::CUdevResource resource = abi::zeroed_resource();
  api.call<entry::cuGreenCtxGetDevResource>(green_ctx, &resource, abi::CU_DEV_RESOURCE_TYPE_SM);
  return resource.sm.smCount;
}

bool is_default_stream(abi::CUstream stream) {
  const auto value = reinterpret_cast<std::uintptr_t>(stream);
  return value == 0 || value == abi::CU_STREAM_LEGACY_HANDLE ||
         value == abi::CU_STREAM_PER_THREAD_HANDLE;
}

}  // namespace

unsigned stream_sm_count(abi::CUstream stream, int ordinal) {
  const DriverApi& api = driver();
  // Before 12.4 there are no green contexts: every stream has the whole device.
  if (api.version() < feature_version::kGreenContexts) return whole_device(ordinal);
  api.require<entry::cuStreamGetGreenCtx>("the SM count of a stream", feature_version::kGreenContexts);
  if (is_default_stream(stream)) {
    // The driver answers for the current context; with none current there is nothing to ask.
    abi::CUcontext current = nullptr;
    api.call<entry::cuCtxGetCurrent>(&current);
    if (current == nullptr) return whole_device(ordinal);
  }
  abi::CUgreenCtx green_ctx = nullptr;
  api.call<entry::cuStreamGetGreenCtx>(stream, &green_ctx);
  if (green_ctx != nullptr) return green_context_sm_count(api, green_ctx);
  return whole_device(ordinal);
}

void remember_green_context(abi::CUgreenCtx green_ctx, unsigned sm_count) {
  registry().add(green_ctx, sm_count);
}

void forget_green_context(abi::CUgreenCtx green_ctx) noexcept { registry().remove(green_ctx); }

std::size_t remembered_green_contexts() { return registry().size(); }

}  // namespace tgc
