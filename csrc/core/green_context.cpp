#include "green_context.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "device.h"
#include "driver_api.h"
#include "errors.h"
#include "warnings.h"

namespace tgc {

namespace {

std::atomic<std::size_t> g_live_contexts{0};
std::atomic<std::size_t> g_live_internal_contexts{0};
std::atomic<std::size_t> g_live_streams{0};

// At interpreter or process exit the driver may already be shut down; its teardown then
// releases everything, so that case is not worth a warning.
void warn_unless_shut_down(abi::CUresult result, const char* call) noexcept {
  if (result == abi::CUDA_SUCCESS || result == abi::CUDA_ERROR_DEINITIALIZED) return;
  try {
    const DriverApi& api = driver();
    warn(std::string(call) + " failed during cleanup: " + api.error_name(result) + " (" +
         std::to_string(result) + "): " + api.error_text(result));
  } catch (...) {
    warn(std::string(call) + " failed during cleanup with CUresult " + std::to_string(result));
  }
}

// Destroys a green context unless released; used while a creation is half done.
class GreenCtxGuard {
 public:
  explicit GreenCtxGuard(abi::CUgreenCtx ctx) noexcept : ctx_(ctx) {}
  GreenCtxGuard(const GreenCtxGuard&) = delete;
  GreenCtxGuard& operator=(const GreenCtxGuard&) = delete;
  ~GreenCtxGuard() {
    if (ctx_ != nullptr) warn_unless_shut_down(driver().cuGreenCtxDestroy(ctx_), "cuGreenCtxDestroy");
  }
  abi::CUgreenCtx release() noexcept { return std::exchange(ctx_, nullptr); }

 private:
  abi::CUgreenCtx ctx_;
};

abi::CUdevResource workqueue_resource(int device, const WorkqueueConfig& config) {
  const DriverApi& api = driver();
  api.require_version("workqueue configuration", feature_version::kWorkqueues);
  abi::CUdevResource resource;
  std::memset(&resource, 0, sizeof(resource));
  api.check(api.cuDeviceGetDevResource(device_handle(device), &resource,
                                       abi::CU_DEV_RESOURCE_TYPE_WORKQUEUE_CONFIG),
            "cuDeviceGetDevResource");
  resource.wqConfig.sharingScope = config.scope;
  if (config.concurrency_limit) resource.wqConfig.wqConcurrencyLimit = *config.concurrency_limit;
  return resource;
}

}  // namespace

LiveCounts live_counts() {
  return {g_live_contexts.load(), g_live_internal_contexts.load(), g_live_streams.load()};
}

OwnedStream::OwnedStream(OwnedStream&& other) noexcept
    : stream_(std::exchange(other.stream_, nullptr)) {}

OwnedStream& OwnedStream::operator=(OwnedStream&& other) noexcept {
  if (this != &other) {
    reset();
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

OwnedStream::~OwnedStream() { reset(); }

void OwnedStream::reset() noexcept {
  if (stream_ == nullptr) return;
  const DriverApi& api = driver();
  // Work still queued must finish before the stream and its context go away: the driver
  // does not document what happens to pending work when a green context is destroyed.
  warn_unless_shut_down(api.cuStreamSynchronize(stream_), "cuStreamSynchronize");
  warn_unless_shut_down(api.cuStreamDestroy(stream_), "cuStreamDestroy");
  stream_ = nullptr;
  g_live_streams.fetch_sub(1);
}

GreenContext::GreenContext(int device, abi::CUgreenCtx green_ctx, abi::CUcontext context,
                           const abi::CUdevResource& resource, unsigned fallback_alignment, Kind kind,
                           std::shared_ptr<const void> keep_alive) noexcept
    : device_(device),
      green_ctx_(green_ctx),
      context_(context),
      resource_(resource),
      fallback_alignment_(fallback_alignment),
      kind_(kind),
      keep_alive_(std::move(keep_alive)) {
  (kind_ == Kind::kUser ? g_live_contexts : g_live_internal_contexts).fetch_add(1);
}

GreenContext::~GreenContext() {
  // Streams first: cuGreenCtxDestroy leaves its streams behind, detached.
  {
    std::lock_guard<std::mutex> lock(streams_mutex_);
    stream_pools_.clear();
  }
  warn_unless_shut_down(driver().cuGreenCtxDestroy(green_ctx_), "cuGreenCtxDestroy");
  (kind_ == Kind::kUser ? g_live_contexts : g_live_internal_contexts).fetch_sub(1);
}

std::shared_ptr<GreenContext> GreenContext::create(int device, const SmPartition* sm,
                                                   const std::optional<WorkqueueConfig>& workqueue,
                                                   Kind kind) {
  const DriverApi& api = driver();
  auto create_fn = api.require(api.cuGreenCtxCreate, "green contexts", feature_version::kGreenContexts);
  abi::CUdevice handle = device_handle(device);

  std::optional<SmPartition> whole_device;
  if (sm == nullptr) {
    whole_device.emplace(SmPartition::from_device(device));
    sm = &*whole_device;
  } else if (sm->device() != device) {
    throw ValueError("the SM partition belongs to device " + std::to_string(sm->device()) +
                     ", not device " + std::to_string(device));
  }

  abi::CUdevResource resources[2];
  unsigned count = 0;
  resources[count++] = sm->resource();
  if (workqueue) resources[count++] = workqueue_resource(device, *workqueue);

  abi::CUdevResourceDesc desc = nullptr;
  api.check(api.cuDevResourceGenerateDesc(&desc, resources, count), "cuDevResourceGenerateDesc");

  abi::CUgreenCtx green_ctx = nullptr;
  api.check(create_fn(&green_ctx, desc, handle, abi::CU_GREEN_CTX_DEFAULT_STREAM),
            "cuGreenCtxCreate");
  GreenCtxGuard guard(green_ctx);

  abi::CUcontext context = nullptr;
  api.check(api.cuCtxFromGreenCtx(&context, green_ctx), "cuCtxFromGreenCtx");

  abi::CUdevResource actual;
  std::memset(&actual, 0, sizeof(actual));
  api.check(api.cuGreenCtxGetDevResource(green_ctx, &actual, abi::CU_DEV_RESOURCE_TYPE_SM),
            "cuGreenCtxGetDevResource");

  std::shared_ptr<GreenContext> result(
      new GreenContext(device, guard.release(), context, actual, sm->coscheduled_sm_count(), kind,
                       sm->keep_alive()));
  return result;
}

std::vector<std::shared_ptr<GreenContext>> GreenContext::create_all(
    int device, const std::vector<const SmPartition*>& partitions,
    const std::optional<WorkqueueConfig>& workqueue) {
  constexpr std::size_t kMaxThreads = 8;
  const std::size_t count = partitions.size();
  std::vector<std::shared_ptr<GreenContext>> made(count);
  std::vector<std::exception_ptr> errors(count);
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i = next.fetch_add(1); i < count; i = next.fetch_add(1)) {
      try {
        made[i] = create(device, partitions[i], workqueue);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> helpers;
  const std::size_t extra = std::min(count, kMaxThreads) - (count > 0 ? 1 : 0);
  try {
    for (std::size_t t = 0; t < extra; ++t) helpers.emplace_back(work);
  } catch (const std::system_error&) {
    // No more threads to be had: the threads already started and this one do the rest.
  }
  work();
  for (std::thread& helper : helpers) helper.join();
  for (const std::exception_ptr& error : errors) {
    if (error) std::rethrow_exception(error);  // `made` releases the contexts that were made
  }
  return made;
}

SmPartition GreenContext::sm_partition(const std::shared_ptr<GreenContext>& self) {
  return SmPartition(self->device_, self->resource_, SmPartition::Origin::kContext,
                     self->fallback_alignment_, self);
}

std::optional<unsigned> GreenContext::locality_domain_id() const {
  return locality_domain_of(resource_);
}

abi::CUstream GreenContext::stream(int priority) {
  std::lock_guard<std::mutex> lock(streams_mutex_);
  StreamPool& pool = stream_pools_[priority];
  if (pool.streams.size() < kStreamsPerPriority) {
    OwnedStream created(create_stream(priority));
    g_live_streams.fetch_add(1);  // from here on `created` owns it, and its reset() counts it off
    pool.streams.push_back(std::move(created));
    return pool.streams.back().get();
  }
  abi::CUstream handed_out = pool.streams[pool.next].get();
  pool.next = (pool.next + 1) % pool.streams.size();
  return handed_out;
}

abi::CUstream GreenContext::create_stream(int priority) {
  const DriverApi& api = driver();
  abi::CUstream stream = nullptr;
  if (api.cuGreenCtxStreamCreate != nullptr) {
    api.check(api.cuGreenCtxStreamCreate(&stream, green_ctx_, abi::CU_STREAM_NON_BLOCKING, priority),
              "cuGreenCtxStreamCreate");
    return stream;
  }
  // Driver 12.4 has no cuGreenCtxStreamCreate: a stream created while the green context's
  // CUcontext is current belongs to the green context (documented for 12.4).
  api.check(api.cuCtxPushCurrent(context_), "cuCtxPushCurrent");
  abi::CUresult created = api.cuStreamCreateWithPriority(&stream, abi::CU_STREAM_NON_BLOCKING, priority);
  abi::CUcontext popped = nullptr;
  abi::CUresult pop_result = api.cuCtxPopCurrent(&popped);
  api.check(created, "cuStreamCreateWithPriority");
  if (pop_result != abi::CUDA_SUCCESS) {
    warn_unless_shut_down(api.cuStreamDestroy(stream), "cuStreamDestroy");
    api.check(pop_result, "cuCtxPopCurrent");
  }
  return stream;
}

std::size_t GreenContext::stream_count() const {
  std::lock_guard<std::mutex> lock(streams_mutex_);
  std::size_t count = 0;
  for (const auto& entry : stream_pools_) count += entry.second.streams.size();
  return count;
}

void GreenContext::push_current() const {
  const DriverApi& api = driver();
  api.check(api.cuCtxPushCurrent(context_), "cuCtxPushCurrent");
}

void GreenContext::pop_current() const {
  const DriverApi& api = driver();
  abi::CUcontext top = nullptr;
  api.check(api.cuCtxGetCurrent(&top), "cuCtxGetCurrent");
  if (top != context_) {
    throw std::runtime_error(
        "pop_context: this green context is not the current context of the calling thread");
  }
  abi::CUcontext popped = nullptr;
  api.check(api.cuCtxPopCurrent(&popped), "cuCtxPopCurrent");
}

unsigned GreenContext::max_workqueue_concurrency(int device) {
  return workqueue_resource(device, WorkqueueConfig{}).wqConfig.wqConcurrencyLimit;
}

}  // namespace tgc
