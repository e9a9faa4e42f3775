#include "green_context.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "context_recycler.h"
#include "device.h"
#include "driver_api.h"
#include "internal_contexts.h"
#include "errors.h"
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

}  // namespace

static_assert(GreenContext::kStreamsPerPriority == StreamPools::kPerPriority);

GreenContext::GreenContext(int device, ContextInUse context, unsigned fallback_alignment, KeepAlive keep_alive)
    : device_(device),
      context_(std::make_unique<ContextInUse>(std::move(context))),
      fallback_alignment_(fallback_alignment),
      keep_alive_(std::move(keep_alive)) {
  handles().idle = false;
  handles().streams.rewind();  // existing streams first
}

ContextHandles& GreenContext::handles() const noexcept { return **context_; }
abi::CUgreenCtx GreenContext::handle() const noexcept { return handles().green_ctx; }
abi::CUcontext GreenContext::context() const noexcept { return handles().context; }
unsigned GreenContext::sm_count() const noexcept { return handles().resource.sm.smCount; }

GreenContext::~GreenContext() {
  // A context whose streams report an error is not handed to anyone else. The source
  // partition's keep-alive goes with this object, not with the idle context: a context made by
  // cuGreenCtxCreate holds its own SMs, and the driver documents no dependency on the context
  // whose resource described them (the keep-alive keeps that resource valid until creation).
  handles().idle = handles().synchronize();  // when destroyed, its streams need no second wait
  context_->retire(handles().idle);
}

// What making one context needs, checked: the partition (the whole device when none was
// given; a given one is on `device`) and the key of the contexts it can reuse.
struct GreenContext::Prepared {
  int device = 0;
  ContextKind kind = ContextKind::kUser;
  const SmPartition* given = nullptr;
  std::optional<SmPartition> whole_device;
  std::optional<WorkqueueConfig> workqueue;
  RecycleKey key;
  const SmPartition& partition() const { return given != nullptr ? *given : *whole_device; }
  // A new driver context made from all this, counted as in use.
  ContextInUse make() const {
    return ContextRecycler::instance().adopt(key, kind, ContextHandles::make(device, partition(), workqueue));
  }
};

GreenContext::Prepared GreenContext::prepare(int device, const SmPartition* sm,
                                             const std::optional<WorkqueueConfig>& workqueue,
                                             ContextKind kind) {
  const DriverApi& api = driver();
  api.require<entry::cuGreenCtxCreate>("green contexts", feature_version::kGreenContexts);
  check_idle_limit_env();
  if (workqueue) api.require_version("workqueue configuration", feature_version::kWorkqueues);
  Prepared out;
  out.device = device;
  out.kind = kind;
  if (sm == nullptr) {
    out.whole_device.emplace(SmPartition::from_device(device));
  } else {
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

std::shared_ptr<GreenContext> GreenContext::create_as(ContextKind kind, int device, const SmPartition* sm,
                                                      const std::optional<WorkqueueConfig>& workqueue) {
  const Prepared prepared = prepare(device, sm, workqueue, kind);
  ContextInUse idle = ContextRecycler::instance().take(prepared.key, kind);
  return adopt(prepared, idle ? std::move(idle) : prepared.make());
}

std::shared_ptr<GreenContext> InternalContexts::create(const SmPartition& sm) {
  return GreenContext::create_as(ContextKind::kInternal, sm.device(), &sm, std::nullopt);
}

namespace {

const SmPartition* partition_of(const GreenContext::Sms& sms) {
  const SmPartition* const* partition = std::get_if<const SmPartition*>(&sms);
  return partition != nullptr ? *partition : nullptr;
}

// Whether the SM count of the device `request` is about can be read (no driver, no such device:
// not), asked only on the way to an error about a count no device allows.
bool device_readable(const GreenContext::Request& request, const GreenContext::Host& host) {
  try {
    device_sm_count(resolve_device(request.device, host.current_device));
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

int GreenContext::device_of(const Request& request, const Host& host) {
  if (const SmPartition* sm = partition_of(request.sms)) {
    if (request.device) check_partition_device(*sm, *request.device);
    return sm->device();
  }
  return resolve_device(request.device, host.current_device);
}

std::shared_ptr<GreenContext> GreenContext::create(const Request& request, const Host& host) {
  const AtLeast* at_least = std::get_if<AtLeast>(&request.sms);
  // Below 1 on any device: named with the device's figures when it can be read, else without
  // them, rather than the driver's or the device's absence hiding it.
  if (at_least != nullptr && at_least->count < 1 && !device_readable(request, host)) {
    throw num_sms_out_of_range(at_least->count, nullptr);
  }
  const int device = device_of(request, host);
  if (host.prepare_device) host.prepare_device(device);
  if (at_least == nullptr) return create_as(ContextKind::kUser, device, partition_of(request.sms), request.workqueue);
  const SmPartition partition = partition_with_at_least(device, at_least->count);
  return create_as(ContextKind::kUser, device, &partition, request.workqueue);
}

std::shared_ptr<GreenContext> GreenContext::create(int device, const SmPartition* sm,
                                                   const std::optional<WorkqueueConfig>& workqueue) {
  Request request;
  request.device = device;
  if (sm != nullptr) request.sms = sm;
  request.workqueue = workqueue;
  return create(request);
}

std::vector<std::shared_ptr<GreenContext>> GreenContext::create_all(
    int device, const std::vector<const SmPartition*>& partitions,
    const std::optional<WorkqueueConfig>& workqueue, const Host& host) {
  constexpr std::size_t kMaxThreads = 8;
  if (host.prepare_device) host.prepare_device(device);
  for (const SmPartition* partition : partitions) {
    if (partition != nullptr) check_partition_device(*partition, device);
  }
  const std::size_t count = partitions.size();
  std::vector<std::shared_ptr<GreenContext>> made(count);
  // On this thread: every check, and the idle contexts that fit (no driver call).
  std::vector<Prepared> prepared;
  prepared.reserve(count);
  std::vector<std::size_t> to_create;  // indices of the contexts still to be made
  for (std::size_t i = 0; i < count; ++i) {
    prepared.push_back(prepare(device, partitions[i], workqueue, ContextKind::kUser));
    ContextInUse idle = ContextRecycler::instance().take(prepared[i].key, ContextKind::kUser);
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
  return SmPartition(self->device_, self->handles().resource, SmPartition::Origin::kContext,
                     self->fallback_alignment_, KeepAlive(self));
}

std::optional<unsigned> GreenContext::locality_domain_id() const {
  return locality_domain_of(handles().resource);
}

abi::CUstream GreenContext::stream(int priority) {
  ContextHandles& held = handles();
  bool created = false;
  abi::CUstream stream = held.streams.next(priority, [&held](int p) { return held.create_stream(p); }, &created);
  if (created) ContextRecycler::instance().count_stream_created();
  return stream;
}

std::size_t GreenContext::stream_count() const { return handles().stream_count(); }

void GreenContext::push_current() const {
  const DriverApi& api = driver();
  api.call<entry::cuCtxPushCurrent>(handles().context);
}

void GreenContext::pop_current() const {
  const DriverApi& api = driver();
  abi::CUcontext top = nullptr;
  api.call<entry::cuCtxGetCurrent>(&top);
  if (top != handles().context) {
    throw std::runtime_error(
        "pop_context: this green context is not the current context of the calling thread");
  }
  abi::CUcontext popped = nullptr;
  api.call<entry::cuCtxPopCurrent>(&popped);
}

unsigned GreenContext::max_workqueue_concurrency(int device) {
  return workqueue_resource(device, WorkqueueConfig{}).wqConfig.wqConcurrencyLimit;
}

}  // namespace tgc
