#include "green_context.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "current_context.h"
#include "device.h"
#include "driver_api.h"
#include "errors.h"
#include "stream_sm_count.h"
#include "warnings.h"

namespace tgc {

namespace {

RecycleKey recycle_key(int device, const SmPartition& sm, const std::optional<WorkqueueConfig>& workqueue) {
  RecycleKey key;
  key.device = device;
  key.sm = sm.resources();
  for (abi::CUdevResource& resource : key.sm) resource.nextResource = nullptr;
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
  std::vector<abi::CUdevResource> resources = sm.resources();
  if (workqueue) resources.push_back(workqueue_resource(device, *workqueue));

  abi::CUdevResourceDesc desc = nullptr;
  api.check(api.cuDevResourceGenerateDesc(&desc, resources.data(), static_cast<unsigned>(resources.size())),
            "cuDevResourceGenerateDesc");

  auto handles = std::make_unique<ContextHandles>();
  api.check(api.cuGreenCtxCreate(&handles->green_ctx, desc, handle, abi::CU_GREEN_CTX_DEFAULT_STREAM),
            "cuGreenCtxCreate");
  // From here on `handles` destroys the context if a later call fails.
  api.check(api.cuCtxFromGreenCtx(&handles->context, handles->green_ctx), "cuCtxFromGreenCtx");
  handles->resource = abi::zeroed_resource();
  api.check(api.cuGreenCtxGetDevResource(handles->green_ctx, &handles->resource,
                                         abi::CU_DEV_RESOURCE_TYPE_SM),
            "cuGreenCtxGetDevResource");
  remember_green_context(handles->green_ctx, handles->resource.sm.smCount);
  return handles;
}

}  // namespace

LiveCounts live_counts() { return ContextRecycler::instance().counts(); }

GreenContext::GreenContext(int device, ContextInUse context, unsigned fallback_alignment,
                           std::shared_ptr<const void> keep_alive) noexcept
    : device_(device),
      context_(std::move(context)),
      fallback_alignment_(fallback_alignment),
      keep_alive_(std::move(keep_alive)) {
  context_->idle = false;
  for (auto& entry : context_->stream_pools) entry.second.next = 0;  // existing streams first
}

GreenContext::~GreenContext() {
  // A context whose streams report an error is not handed to anyone else. The source
  // partition's keep-alive goes with this object, not with the idle context: a context made by
  // cuGreenCtxCreate holds its own SMs, and the driver documents no dependency on the context
  // whose resource described them (the keep-alive keeps that resource valid until creation).
  context_->idle = context_->synchronize();  // when destroyed, its streams need no second wait
  context_.retire(context_->idle);
}

// What making one context needs, checked: the partition (the whole device when none was
// given) and the key of the contexts it can reuse.
struct GreenContext::Prepared {
  int device = 0;
  Kind kind = Kind::kUser;
  const SmPartition* given = nullptr;
  std::optional<SmPartition> whole_device;
  std::optional<WorkqueueConfig> workqueue;
  RecycleKey key;
  const SmPartition& partition() const { return given != nullptr ? *given : *whole_device; }
  // A new driver context made from all this, counted as in use.
  ContextInUse make() const {
    return ContextRecycler::instance().adopt(key, kind, make_handles(device, partition(), workqueue));
  }
};

GreenContext::Prepared GreenContext::prepare(int device, const SmPartition* sm,
                                             const std::optional<WorkqueueConfig>& workqueue,
                                             Kind kind) {
  const DriverApi& api = driver();
  api.require(api.cuGreenCtxCreate, "green contexts", feature_version::kGreenContexts);
  check_idle_limit_env();
  if (workqueue) api.require_version("workqueue configuration", feature_version::kWorkqueues);
  Prepared out;
  out.device = device;
  out.kind = kind;
  if (sm == nullptr) {
    out.whole_device.emplace(SmPartition::from_device(device));
  } else {
    check_partition_device(*sm, device);
    out.given = sm;
  }
  out.workqueue = workqueue;
  out.key = recycle_key(device, out.partition(), workqueue);
  return out;
}

// Wraps `context`. The allocation comes before the constructor's arguments are evaluated: if
// it fails, `context` is still here and goes (uncounted, destroyed) on the way out; if the
// shared_ptr's own allocation fails, it deletes `made`, whose destructor does the same.
std::shared_ptr<GreenContext> GreenContext::adopt(const Prepared& prepared, ContextInUse context) {
  const SmPartition& sm = prepared.partition();
  auto* made = new GreenContext(prepared.device, std::move(context), sm.coscheduled_sm_count(),
                                sm.keep_alive());
  return std::shared_ptr<GreenContext>(made);
}

std::shared_ptr<GreenContext> GreenContext::create(int device, const SmPartition* sm,
                                                   const std::optional<WorkqueueConfig>& workqueue,
                                                   Kind kind) {
  const Prepared prepared = prepare(device, sm, workqueue, kind);
  ContextInUse idle = ContextRecycler::instance().take(prepared.key, kind);
  return adopt(prepared, idle ? std::move(idle) : prepared.make());
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
    ContextInUse idle = ContextRecycler::instance().take(prepared[i].key, Kind::kUser);
    if (idle) {
      made[i] = adopt(prepared[i], std::move(idle));
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
        made[i] = adopt(prepared[i], prepared[i].make());
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
  return SmPartition(self->device_, self->context_->resource, SmPartition::Origin::kContext,
                     self->fallback_alignment_, self);
}

std::optional<unsigned> GreenContext::locality_domain_id() const {
  return locality_domain_of(context_->resource);
}

abi::CUstream GreenContext::stream(int priority) {
  std::lock_guard<std::mutex> lock(streams_mutex_);
  StreamPool& pool = context_->stream_pools[priority];
  if (pool.next == pool.streams.size()) {  // only while the pool is not yet full
    OwnedStream created = create_stream(priority);
    pool.streams.push_back(std::move(created));
    ContextRecycler::instance().count_stream_created();
  }
  abi::CUstream handed_out = pool.streams[pool.next].get();
  pool.next = (pool.next + 1) % kStreamsPerPriority;
  return handed_out;
}

OwnedStream GreenContext::create_stream(int priority) {
  const DriverApi& api = driver();
  abi::CUstream stream = nullptr;
  if (api.cuGreenCtxStreamCreate != nullptr) {
    api.check(api.cuGreenCtxStreamCreate(&stream, context_->green_ctx, abi::CU_STREAM_NON_BLOCKING, priority),
              "cuGreenCtxStreamCreate");
    return OwnedStream(stream);
  }
  // Driver 12.4 has no cuGreenCtxStreamCreate: a stream created while the green context's
  // CUcontext is current belongs to the green context (documented for 12.4).
  CurrentContext current(context_->context);
  api.check(api.cuStreamCreateWithPriority(&stream, abi::CU_STREAM_NON_BLOCKING, priority),
            "cuStreamCreateWithPriority");
  OwnedStream created(stream);  // destroyed again if the pop fails
  current.pop();
  return created;
}

std::size_t GreenContext::stream_count() const {
  std::lock_guard<std::mutex> lock(streams_mutex_);
  return context_->stream_count();
}

void GreenContext::push_current() const {
  const DriverApi& api = driver();
  api.check(api.cuCtxPushCurrent(context_->context), "cuCtxPushCurrent");
}

void GreenContext::pop_current() const {
  const DriverApi& api = driver();
  abi::CUcontext top = nullptr;
  api.check(api.cuCtxGetCurrent(&top), "cuCtxGetCurrent");
  if (top != context_->context) {
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
