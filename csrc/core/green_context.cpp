#include "green_context.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "device.h"
#include "driver_api.h"
#include "errors.h"
#include "stream_sm_count.h"
#include "warnings.h"

namespace tgc {

namespace {

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

RecycleKey recycle_key(int device, const SmPartition& sm, const std::optional<WorkqueueConfig>& workqueue) {
  RecycleKey key;
  key.device = device;
  key.sm = sm.resource();
  key.sm.nextResource = nullptr;
  if (workqueue) {
    key.has_workqueue = true;
    key.workqueue_scope = static_cast<int>(workqueue->scope);
    key.concurrency_limit = workqueue->concurrency_limit;
  }
  return key;
}

std::unique_ptr<ContextHandles> make_handles(int device, const SmPartition& sm,
                                             const std::optional<WorkqueueConfig>& workqueue) {
  const DriverApi& api = driver();
  abi::CUdevice handle = device_handle(device);
  abi::CUdevResource resources[2];
  unsigned count = 0;
  resources[count++] = sm.resource();
  if (workqueue) resources[count++] = workqueue_resource(device, *workqueue);

  abi::CUdevResourceDesc desc = nullptr;
  api.check(api.cuDevResourceGenerateDesc(&desc, resources, count), "cuDevResourceGenerateDesc");

  auto handles = std::make_unique<ContextHandles>();
  api.check(api.cuGreenCtxCreate(&handles->green_ctx, desc, handle, abi::CU_GREEN_CTX_DEFAULT_STREAM),
            "cuGreenCtxCreate");
  // From here on `handles` destroys the context if a later call fails.
  api.check(api.cuCtxFromGreenCtx(&handles->context, handles->green_ctx), "cuCtxFromGreenCtx");
  std::memset(&handles->resource, 0, sizeof(handles->resource));
  api.check(api.cuGreenCtxGetDevResource(handles->green_ctx, &handles->resource,
                                         abi::CU_DEV_RESOURCE_TYPE_SM),
            "cuGreenCtxGetDevResource");
  remember_green_context(handles->green_ctx, handles->resource.sm.smCount);
  return handles;
}

}  // namespace

LiveCounts live_counts() { return ContextRecycler::instance().counts(); }

GreenContext::GreenContext(int device, std::unique_ptr<ContextHandles> handles, const RecycleKey& key,
                           unsigned fallback_alignment, Kind kind,
                           std::shared_ptr<const void> keep_alive, bool counted) noexcept
    : device_(device),
      handles_(std::move(handles)),
      key_(key),
      fallback_alignment_(fallback_alignment),
      kind_(kind),
      keep_alive_(std::move(keep_alive)) {
  if (!counted) ContextRecycler::instance().count_created(kind_);
  handles_->idle = false;
  for (auto& entry : handles_->stream_pools) entry.second.next = 0;  // existing streams first
}

GreenContext::~GreenContext() {
  // A context whose streams report an error is not handed to anyone else. The source
  // partition's keep-alive goes with this object, not with the idle context: a context made by
  // cuGreenCtxCreate holds its own SMs, and the driver documents no dependency on the context
  // whose resource described them (the keep-alive keeps that resource valid until creation).
  handles_->idle = handles_->synchronize();  // when destroyed, its streams need no second wait
  const bool reusable = handles_->idle;
  handles_ = ContextRecycler::instance().release(key_, kind_, std::move(handles_), reusable);
  handles_.reset();
}

// What making one context needs, checked: the partition (the whole device when none was
// given) and the key of the contexts it can reuse.
struct GreenContext::Prepared {
  int device = 0;
  Kind kind = Kind::kUser;
  const SmPartition* given = nullptr;
  std::optional<SmPartition> whole_device;
  RecycleKey key;
  const SmPartition& partition() const { return given != nullptr ? *given : *whole_device; }
};

GreenContext::Prepared GreenContext::prepare(int device, const SmPartition* sm,
                                             const std::optional<WorkqueueConfig>& workqueue,
                                             Kind kind) {
  const DriverApi& api = driver();
  api.require(api.cuGreenCtxCreate, "green contexts", feature_version::kGreenContexts);
  if (workqueue) api.require_version("workqueue configuration", feature_version::kWorkqueues);
  Prepared out;
  out.device = device;
  out.kind = kind;
  if (sm == nullptr) {
    out.whole_device.emplace(SmPartition::from_device(device));
  } else if (sm->device() != device) {
    throw ValueError("the SM partition belongs to device " + std::to_string(sm->device()) +
                     ", not device " + std::to_string(device));
  } else {
    out.given = sm;
  }
  out.key = recycle_key(device, out.partition(), workqueue);
  return out;
}

// Wraps `handles` (taken from the recycler, which counted them, when `taken`).
std::shared_ptr<GreenContext> GreenContext::adopt(const Prepared& prepared,
                                                  std::unique_ptr<ContextHandles> handles,
                                                  bool taken) {
  const SmPartition& sm = prepared.partition();
  // The allocation comes before the arguments are evaluated: if it fails, `handles` is still
  // here and destroyed on the way out, uncounted if the recycler had counted it.
  GreenContext* made = nullptr;
  try {
    made = new GreenContext(prepared.device, std::move(handles), prepared.key,
                            sm.coscheduled_sm_count(), prepared.kind, sm.keep_alive(), taken);
  } catch (...) {
    if (taken) {
      handles = ContextRecycler::instance().release(prepared.key, prepared.kind, std::move(handles), false);
    }
    throw;
  }
  return std::shared_ptr<GreenContext>(made);  // on failure, deletes `made`, which uncounts it
}

std::shared_ptr<GreenContext> GreenContext::create(int device, const SmPartition* sm,
                                                   const std::optional<WorkqueueConfig>& workqueue,
                                                   Kind kind) {
  const Prepared prepared = prepare(device, sm, workqueue, kind);
  std::unique_ptr<ContextHandles> handles = ContextRecycler::instance().take(prepared.key, kind);
  if (handles) return adopt(prepared, std::move(handles), true);
  return adopt(prepared, make_handles(device, prepared.partition(), workqueue), false);
}

std::vector<std::shared_ptr<GreenContext>> GreenContext::create_all(
    int device, const std::vector<const SmPartition*>& partitions,
    const std::optional<WorkqueueConfig>& workqueue) {
  constexpr std::size_t kMaxThreads = 8;
  const std::size_t count = partitions.size();
  std::vector<std::shared_ptr<GreenContext>> made(count);
  // On this thread: every check, and the idle contexts that fit (no driver call).
  std::vector<Prepared> prepared;
  prepared.reserve(count);
  std::vector<std::size_t> to_create;  // indices of the contexts still to be made
  for (std::size_t i = 0; i < count; ++i) {
    prepared.push_back(prepare(device, partitions[i], workqueue, Kind::kUser));
    std::unique_ptr<ContextHandles> handles = ContextRecycler::instance().take(prepared[i].key, Kind::kUser);
    if (handles) {
      made[i] = adopt(prepared[i], std::move(handles), true);
    } else {
      to_create.push_back(i);
    }
  }
  // The creations, spread over this thread and up to kMaxThreads - 1 helpers.
  std::vector<std::exception_ptr> errors(count);
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t k = next.fetch_add(1); k < to_create.size(); k = next.fetch_add(1)) {
      const std::size_t i = to_create[k];
      try {
        made[i] = adopt(prepared[i], make_handles(device, prepared[i].partition(), workqueue), false);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> helpers;
  const std::size_t extra = to_create.size() > 1 ? std::min(to_create.size(), kMaxThreads) - 1 : 0;
  try {
    helpers.reserve(extra);
    for (std::size_t t = 0; t < extra; ++t) helpers.emplace_back(work);
  } catch (...) {
    // No more threads (or memory) to be had: the threads already started and this one do the rest.
  }
  work();
  for (std::thread& helper : helpers) helper.join();
  for (const std::exception_ptr& error : errors) {
    if (error) std::rethrow_exception(error);  // `made` releases the contexts that were made
  }
  return made;
}

SmPartition GreenContext::sm_partition(const std::shared_ptr<GreenContext>& self) {
  return SmPartition(self->device_, self->handles_->resource, SmPartition::Origin::kContext,
                     self->fallback_alignment_, self);
}

std::optional<unsigned> GreenContext::locality_domain_id() const {
  return locality_domain_of(handles_->resource);
}

abi::CUstream GreenContext::stream(int priority) {
  std::lock_guard<std::mutex> lock(streams_mutex_);
  StreamPool& pool = handles_->stream_pools[priority];
  if (pool.next == pool.streams.size()) {  // only while the pool is not yet full
    OwnedStream created(create_stream(priority));
    pool.streams.push_back(std::move(created));
    ContextRecycler::instance().count_stream_created();
  }
  abi::CUstream handed_out = pool.streams[pool.next].get();
  pool.next = (pool.next + 1) % kStreamsPerPriority;
  return handed_out;
}

abi::CUstream GreenContext::create_stream(int priority) {
  const DriverApi& api = driver();
  abi::CUstream stream = nullptr;
  if (api.cuGreenCtxStreamCreate != nullptr) {
    api.check(api.cuGreenCtxStreamCreate(&stream, handles_->green_ctx, abi::CU_STREAM_NON_BLOCKING, priority),
              "cuGreenCtxStreamCreate");
    return stream;
  }
  // Driver 12.4 has no cuGreenCtxStreamCreate: a stream created while the green context's
  // CUcontext is current belongs to the green context (documented for 12.4).
  make_while_current(
      "cuStreamCreateWithPriority",
      [&] { return api.cuStreamCreateWithPriority(&stream, abi::CU_STREAM_NON_BLOCKING, priority); },
      [&] { warn_if_cleanup_failed(api.cuStreamDestroy(stream), "cuStreamDestroy"); });
  return stream;
}

void GreenContext::make_while_current(const char* call, const std::function<abi::CUresult()>& make,
                                      const std::function<void()>& release) const {
  const DriverApi& api = driver();
  api.check(api.cuCtxPushCurrent(handles_->context), "cuCtxPushCurrent");
  abi::CUresult made = make();
  abi::CUcontext popped = nullptr;
  abi::CUresult pop_result = api.cuCtxPopCurrent(&popped);
  api.check(made, call);
  if (pop_result != abi::CUDA_SUCCESS) {
    release();
    api.check(pop_result, "cuCtxPopCurrent");
  }
}

std::size_t GreenContext::stream_count() const {
  std::lock_guard<std::mutex> lock(streams_mutex_);
  return handles_->stream_count();
}

void GreenContext::push_current() const {
  const DriverApi& api = driver();
  api.check(api.cuCtxPushCurrent(handles_->context), "cuCtxPushCurrent");
}

void GreenContext::pop_current() const {
  const DriverApi& api = driver();
  abi::CUcontext top = nullptr;
  api.check(api.cuCtxGetCurrent(&top), "cuCtxGetCurrent");
  if (top != handles_->context) {
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
