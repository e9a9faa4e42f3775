// A simulated CUDA driver for tests: the green-context family and what the core needs around
// it, following the documented rules (../../shared notes on the driver API), with every handle
// tracked and any call made to fail on demand. Device memory is host memory here: a
// CUdeviceptr is a host address.
#include "sim_driver.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/cuda_abi.h"

using namespace tgc::abi;

namespace {

constexpr CUresult kInvalidContext = 201;
constexpr CUresult kInvalidHandle = 400;
constexpr CUresult kStreamDetached = 917;
constexpr std::uint32_t kMagic = 0x53494d52;  // "SIMR"

struct Config {
  int version = 13040;
  int sm_count = 132;
  std::vector<int> gpc_sizes{18, 18, 18, 18, 18, 18, 16, 8};
  int cc_major = 9;
  int locality_domains = 2;
  int device_count = 1;
  unsigned wq_limit = 128;
};

enum class Origin : int { kDevice = 0, kContext = 1, kSplitOutput = 2 };

struct Record {  // what a CUdevResource written by this driver stands for
  CUdevResourceType type = CU_DEV_RESOURCE_TYPE_INVALID;
  std::vector<int> sms;
  Origin origin = Origin::kDevice;
  unsigned alignment = 0;
  unsigned flags = 0;
  unsigned locality = 0;
  int split_id = 0;
  int device = 0;
};

struct Descriptor {
  std::vector<int> sms;
  unsigned alignment = 0;
  unsigned flags = 0;
  unsigned locality = 0;
  bool has_wq = false;
  int wq_scope = 0;
  unsigned wq_limit = 0;
  int device = -1;  // of its SM resources; -1: none
};

struct GreenCtx {
  int device = 0;
  Descriptor desc;
  bool alive = true;
  int context_tag = 0;  // the CUcontext handed out for it
};

struct Stream {
  GreenCtx* green = nullptr;  // null: the primary context
  bool alive = true;
};

struct Event {
  GreenCtx* green = nullptr;      // the context it was made in; null: the primary context
  unsigned flags = 0;
  bool alive = true;
  Stream* recorded_on = nullptr;  // its last recording; null: never recorded
};

// A cuStreamWaitEvent: `waiting` waits for the event's last recording, on `recorded_on`.
struct WaitEdge {
  Stream* waiting;
  Stream* recorded_on;
};

struct State {
  std::mutex mutex;
  Config config;
  bool initialised = false;
  std::vector<int> gpc_of_sm;
  std::vector<Record> records;  // index + 1 is the id stored in a resource
  std::set<GreenCtx*> green_ctxs;
  std::set<Stream*> streams;
  std::set<Event*> events;
  std::vector<WaitEdge> wait_edges;
  std::set<void*> libraries;
  std::vector<std::unique_ptr<Descriptor>> descriptors;
  std::map<std::string, int> calls;
  struct Failure {
    std::string name;
    int code;
    int skip;
  };
  std::vector<Failure> failures;
  int misuse = 0;
  std::map<std::string, int> split_ids;  // by input and parameters
  std::vector<CU_DEV_SM_RESOURCE_GROUP_PARAMS> last_split_params;
};

State& state() {
  static State s;
  return s;
}

thread_local std::vector<CUcontext> t_context_stack;
int g_primary_tag = 0;  // its address is the primary context's handle

// Records the call; returns a failure code if one was asked for.
CUresult enter(const char* name) {
  State& s = state();
  s.calls[name]++;
  for (auto it = s.failures.begin(); it != s.failures.end(); ++it) {
    if (it->name != name) continue;
    if (it->skip > 0) {
      --it->skip;
      return CUDA_SUCCESS;
    }
    int code = it->code;
    s.failures.erase(it);
    return code;
  }
  return CUDA_SUCCESS;
}

#define ENTER(name)                                   \
  State& s = state();                                 \
  std::lock_guard<std::mutex> lock(s.mutex);          \
  if (!s.initialised && std::strcmp(name, "cuInit")) \
    return CUDA_ERROR_NOT_INITIALIZED;                \
  if (CUresult injected = enter(name)) return injected

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return (v && *v) ? std::atoi(v) : fallback;
}

unsigned device_alignment() { return state().config.cc_major >= 9 ? 8u : 2u; }
unsigned max_coscheduled() { return state().config.cc_major >= 9 ? 32u : 2u; }

int domain_of_sm(int sm) {
  const Config& c = state().config;
  return c.locality_domains > 0 ? state().gpc_of_sm[sm] % c.locality_domains : 0;
}

bool same_record(const Record& a, const Record& b) {
  return a.type == b.type && a.sms == b.sms && a.origin == b.origin && a.alignment == b.alignment &&
         a.flags == b.flags && a.locality == b.locality && a.split_id == b.split_id && a.device == b.device;
}

// Like a real driver's, the encoding is a function of what the resource stands for: the same
// split of the same input gives the same bytes.
void write_resource(CUdevResource* out, const Record& record) {
  State& s = state();
  std::memset(out, 0, sizeof(*out));
  out->type = record.type;
  if (record.type == CU_DEV_RESOURCE_TYPE_INVALID) return;
  std::uint32_t id = 0;
  for (std::size_t i = 0; i < s.records.size() && id == 0; ++i) {
    if (same_record(s.records[i], record)) id = static_cast<std::uint32_t>(i + 1);
  }
  if (id == 0) {
    s.records.push_back(record);
    id = static_cast<std::uint32_t>(s.records.size());
  }
  std::memcpy(out->_internal_padding, &kMagic, 4);
  std::memcpy(out->_internal_padding + 4, &id, 4);
  if (record.type == CU_DEV_RESOURCE_TYPE_SM) {
    out->sm.smCount = static_cast<unsigned>(record.sms.size());
    if (s.config.version >= 13000) {
      out->sm.minSmPartitionSize = device_alignment();
      out->sm.smCoscheduledAlignment = record.alignment;
    }
    if (s.config.version >= 13010) out->sm.flags = record.flags & 0x1;
    if (s.config.version >= 13040) {
      out->sm.flags = record.flags;
      out->sm.localityDomainId = record.locality;
    }
  }
}

// The same id for the same split (input and parameters), a new one otherwise.
int split_id_of(const Record& input, const std::string& parameters) {
  State& s = state();
  std::string key = parameters + " of";
  for (int sm : input.sms) key += " " + std::to_string(sm);
  auto found = s.split_ids.find(key);
  if (found != s.split_ids.end()) return found->second;
  int id = static_cast<int>(s.split_ids.size()) + 1;
  s.split_ids.emplace(key, id);
  return id;
}

const Record* read_resource(const CUdevResource* in) {
  State& s = state();
  if (in == nullptr) return nullptr;
  std::uint32_t magic = 0, id = 0;
  std::memcpy(&magic, in->_internal_padding, 4);
  std::memcpy(&id, in->_internal_padding + 4, 4);
  if (magic != kMagic || id == 0 || id > s.records.size()) return nullptr;
  return &s.records[id - 1];
}

bool valid_green(GreenCtx* g) {
  State& s = state();
  if (g == nullptr || !s.green_ctxs.count(g) || !g->alive) {
    ++s.misuse;
    return false;
  }
  return true;
}

bool valid_stream(Stream* st) {
  State& s = state();
  if (st == nullptr || !s.streams.count(st) || !st->alive) {
    ++s.misuse;
    return false;
  }
  return true;
}

bool valid_event(Event* ev) {
  State& s = state();
  if (ev == nullptr || !s.events.count(ev) || !ev->alive) {
    ++s.misuse;
    return false;
  }
  return true;
}

// Chunks of `size` co-scheduled SMs (each within one GPC) from `pool`, in pool order.
std::vector<std::vector<int>> chunks(const std::vector<int>& pool, unsigned size) {
  std::map<int, std::vector<int>> by_gpc;
  for (int sm : pool) by_gpc[state().gpc_of_sm[sm]].push_back(sm);
  std::vector<std::vector<int>> out;
  for (auto& [gpc, sms] : by_gpc) {
    for (std::size_t i = 0; i + size <= sms.size(); i += size) {
      out.emplace_back(sms.begin() + static_cast<long>(i), sms.begin() + static_cast<long>(i + size));
    }
  }
  return out;
}

std::vector<int> minus(const std::vector<int>& a, const std::vector<int>& b) {
  std::set<int> drop(b.begin(), b.end());
  std::vector<int> out;
  for (int x : a)
    if (!drop.count(x)) out.push_back(x);
  return out;
}

// ---- entry points ------------------------------------------------------------------------

CUresult sim_cuGetErrorName(CUresult code, const char** name) {
  static const std::map<int, const char*> names = {
      {0, "CUDA_SUCCESS"}, {1, "CUDA_ERROR_INVALID_VALUE"}, {2, "CUDA_ERROR_OUT_OF_MEMORY"},
      {3, "CUDA_ERROR_NOT_INITIALIZED"}, {4, "CUDA_ERROR_DEINITIALIZED"},
      {100, "CUDA_ERROR_NO_DEVICE"}, {101, "CUDA_ERROR_INVALID_DEVICE"}, {201, "CUDA_ERROR_INVALID_CONTEXT"},
      {400, "CUDA_ERROR_INVALID_HANDLE"}, {500, "CUDA_ERROR_NOT_FOUND"},
      {801, "CUDA_ERROR_NOT_SUPPORTED"}, {914, "CUDA_ERROR_INVALID_RESOURCE_TYPE"},
      {915, "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION"}, {917, "CUDA_ERROR_STREAM_DETACHED"},
      {999, "CUDA_ERROR_UNKNOWN"}};
  auto it = names.find(code);
  if (it == names.end()) return CUDA_ERROR_INVALID_VALUE;
  *name = it->second;
  return CUDA_SUCCESS;
}

CUresult sim_cuGetErrorString(CUresult code, const char** text) {
  const char* name = nullptr;
  if (sim_cuGetErrorName(code, &name) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_VALUE;
  static thread_local std::string buffer;
  buffer = std::string("simulated driver: ") + name;
  *text = buffer.c_str();
  return CUDA_SUCCESS;
}

CUresult sim_cuDeviceGetCount(int* count) {
  ENTER("cuDeviceGetCount");
  *count = s.config.device_count;
  return CUDA_SUCCESS;
}

CUresult sim_cuDeviceGet(CUdevice* device, int ordinal) {
  ENTER("cuDeviceGet");
  if (ordinal < 0 || ordinal >= s.config.device_count) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult sim_cuDeviceGetAttribute(int* value, int attribute, CUdevice device) {
  ENTER("cuDeviceGetAttribute");
  if (device < 0 || device >= s.config.device_count) return CUDA_ERROR_INVALID_DEVICE;
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = s.config.sm_count; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = s.config.cc_major; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = 0; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_LOCALITY_DOMAIN_COUNT:  // an attribute of 13.4 drivers
      if (s.config.version < 13040) return CUDA_ERROR_INVALID_VALUE;
      *value = s.config.locality_domains > 0 ? s.config.locality_domains : 1;
      return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult sim_cuDevicePrimaryCtxGetState(CUdevice device, unsigned* flags, int* active) {
  ENTER("cuDevicePrimaryCtxGetState");
  if (device < 0 || device >= s.config.device_count) return CUDA_ERROR_INVALID_DEVICE;
  *flags = 0;
  *active = 1;
  return CUDA_SUCCESS;
}

CUresult sim_cuCtxGetCurrent(CUcontext* ctx) {
  ENTER("cuCtxGetCurrent");
  *ctx = t_context_stack.empty() ? nullptr : t_context_stack.back();
  return CUDA_SUCCESS;
}

CUresult sim_cuCtxPushCurrent(CUcontext ctx) {
  ENTER("cuCtxPushCurrent");
  if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  t_context_stack.push_back(ctx);
  return CUDA_SUCCESS;
}

CUresult sim_cuCtxPopCurrent(CUcontext* ctx) {
  ENTER("cuCtxPopCurrent");
  if (t_context_stack.empty()) return CUDA_ERROR_INVALID_VALUE;
  if (ctx) *ctx = t_context_stack.back();
  t_context_stack.pop_back();
  return CUDA_SUCCESS;
}

GreenCtx* green_of_context(CUcontext ctx) {
  for (GreenCtx* g : state().green_ctxs)
    if (reinterpret_cast<CUcontext>(&g->context_tag) == ctx) return g;
  return nullptr;
}

// A new stream of `green` (null: the primary context); priorities are 0 (lowest) or negative.
CUresult new_stream(GreenCtx* green, unsigned flags, int priority, CUstream* out) {
  if (!(flags & CU_STREAM_NON_BLOCKING) || priority > 0) return CUDA_ERROR_INVALID_VALUE;
  auto* st = new Stream;
  st->green = green;
  state().streams.insert(st);
  *out = reinterpret_cast<CUstream>(st);
  return CUDA_SUCCESS;
}

CUresult sim_cuStreamCreateWithPriority(CUstream* out, unsigned flags, int priority) {
  ENTER("cuStreamCreateWithPriority");
  if (t_context_stack.empty()) return CUDA_ERROR_INVALID_VALUE;
  return new_stream(green_of_context(t_context_stack.back()), flags, priority, out);
}

CUresult sim_cuStreamSynchronize(CUstream stream) {
  ENTER("cuStreamSynchronize");
  auto* st = reinterpret_cast<Stream*>(stream);
  if (!valid_stream(st)) return kInvalidHandle;
  if (st->green && !st->green->alive) return s.config.version >= 13010 ? kStreamDetached : kInvalidHandle;
  return CUDA_SUCCESS;
}

CUresult sim_cuStreamDestroy(CUstream stream) {
  ENTER("cuStreamDestroy");
  auto* st = reinterpret_cast<Stream*>(stream);
  if (!valid_stream(st)) return kInvalidHandle;
  st->alive = false;
  return CUDA_SUCCESS;
}

CUresult sim_cuStreamGetCtx(CUstream stream, CUcontext* ctx) {
  ENTER("cuStreamGetCtx");
  auto* st = reinterpret_cast<Stream*>(stream);
  if (!valid_stream(st)) return kInvalidHandle;
  *ctx = st->green ? reinterpret_cast<CUcontext>(&st->green->context_tag)
                   : reinterpret_cast<CUcontext>(&g_primary_tag);
  return CUDA_SUCCESS;
}

// Events follow the documented rules: an event belongs to the context current at its creation
// (a green context's when that one was pushed); cuEventRecord needs the event and the stream in
// the same context (CUDA_ERROR_INVALID_HANDLE otherwise); cuStreamWaitEvent takes an event of
// any context; an event may be destroyed while pending.
CUresult sim_cuEventCreate(CUevent* out, unsigned flags) {
  ENTER("cuEventCreate");
  // CU_EVENT_BLOCKING_SYNC 0x1, DISABLE_TIMING 0x2, INTERPROCESS 0x4 (needs DISABLE_TIMING).
  if (out == nullptr || (flags & ~0x7u) || ((flags & 0x4u) && !(flags & CU_EVENT_DISABLE_TIMING))) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (t_context_stack.empty()) return kInvalidContext;
  GreenCtx* green = green_of_context(t_context_stack.back());
  if (green && !green->alive) {  // a destroyed green context left current
    ++s.misuse;
    return kInvalidContext;
  }
  auto* ev = new Event;
  ev->green = green;
  ev->flags = flags;
  s.events.insert(ev);
  *out = reinterpret_cast<CUevent>(ev);
  return CUDA_SUCCESS;
}

CUresult sim_cuEventRecord(CUevent event, CUstream stream) {
  ENTER("cuEventRecord");
  auto* ev = reinterpret_cast<Event*>(event);
  auto* st = reinterpret_cast<Stream*>(stream);
  if (!valid_event(ev) || !valid_stream(st)) return kInvalidHandle;
  if (st->green && !st->green->alive) return s.config.version >= 13010 ? kStreamDetached : kInvalidHandle;
  if (ev->green != st->green) {  // not the stream's context
    ++s.misuse;
    return kInvalidHandle;
  }
  ev->recorded_on = st;
  return CUDA_SUCCESS;
}

CUresult sim_cuStreamWaitEvent(CUstream stream, CUevent event, unsigned flags) {
  ENTER("cuStreamWaitEvent");
  auto* ev = reinterpret_cast<Event*>(event);
  auto* st = reinterpret_cast<Stream*>(stream);
  if (!valid_stream(st) || !valid_event(ev)) return kInvalidHandle;
  if (flags & ~0x1u) return CUDA_ERROR_INVALID_VALUE;  // CU_EVENT_WAIT_DEFAULT 0, _EXTERNAL 0x1
  if (st->green && !st->green->alive) return s.config.version >= 13010 ? kStreamDetached : kInvalidHandle;
  s.wait_edges.push_back({st, ev->recorded_on});
  return CUDA_SUCCESS;
}

CUresult sim_cuEventDestroy(CUevent event) {
  ENTER("cuEventDestroy");
  auto* ev = reinterpret_cast<Event*>(event);
  if (!valid_event(ev)) return kInvalidHandle;
  if (ev->green && !ev->green->alive) ++s.misuse;  // the event outlived its context
  ev->alive = false;
  return CUDA_SUCCESS;
}

CUresult sim_cuLibraryLoadData(CUlibrary* lib, const void* code, int*, void**, unsigned, int*, void**, unsigned) {
  ENTER("cuLibraryLoadData");
  if (code == nullptr || std::strstr(static_cast<const char*>(code), ".entry") == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  void* handle = new int(0);
  s.libraries.insert(handle);
  *lib = reinterpret_cast<CUlibrary>(handle);
  return CUDA_SUCCESS;
}

CUresult sim_cuLibraryUnload(CUlibrary lib) {
  ENTER("cuLibraryUnload");
  if (!s.libraries.erase(lib)) return kInvalidHandle;
  delete reinterpret_cast<int*>(lib);
  return CUDA_SUCCESS;
}

int g_kernel_tag = 0;
int g_function_tag = 0;

CUresult sim_cuLibraryGetKernel(CUkernel* kernel, CUlibrary lib, const char* name) {
  ENTER("cuLibraryGetKernel");
  if (!s.libraries.count(lib)) return kInvalidHandle;
  if (std::strcmp(name, "tgc_sm_probe") != 0) return CUDA_ERROR_NOT_FOUND;
  *kernel = reinterpret_cast<CUkernel>(&g_kernel_tag);
  return CUDA_SUCCESS;
}

CUresult sim_cuKernelGetFunction(CUfunction* function, CUkernel kernel) {
  ENTER("cuKernelGetFunction");
  if (kernel != reinterpret_cast<CUkernel>(&g_kernel_tag) || t_context_stack.empty()) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *function = reinterpret_cast<CUfunction>(&g_function_tag);
  return CUDA_SUCCESS;
}

// The probe: block b "runs" on the stream's SMs in turn and writes that SM's id.
CUresult sim_cuLaunchKernel(CUfunction f, unsigned gx, unsigned, unsigned, unsigned, unsigned,
                            unsigned, unsigned, CUstream stream, void** params, void**) {
  ENTER("cuLaunchKernel");
  if (f != reinterpret_cast<CUfunction>(&g_function_tag) || params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto* st = reinterpret_cast<Stream*>(stream);
  if (!valid_stream(st)) return kInvalidHandle;
  std::vector<int> sms;
  if (st->green) {
    sms = st->green->desc.sms;
  } else {
    for (int i = 0; i < s.config.sm_count; ++i) sms.push_back(i);
  }
  auto* out = reinterpret_cast<unsigned*>(*static_cast<CUdeviceptr*>(params[0]));
  for (unsigned b = 0; b < gx; ++b) out[b] = static_cast<unsigned>(sms[b % sms.size()]);
  return CUDA_SUCCESS;
}

CUresult sim_cuDeviceGetDevResource(CUdevice device, CUdevResource* out, CUdevResourceType type) {
  ENTER("cuDeviceGetDevResource");
  if (device < 0 || device >= s.config.device_count) return CUDA_ERROR_INVALID_DEVICE;
  Record r;
  if (type == CU_DEV_RESOURCE_TYPE_SM) {
    r.type = CU_DEV_RESOURCE_TYPE_SM;
    for (int i = 0; i < s.config.sm_count; ++i) r.sms.push_back(i);
    r.origin = Origin::kDevice;
    r.device = device;
    r.alignment = device_alignment();
  } else if (type == CU_DEV_RESOURCE_TYPE_WORKQUEUE_CONFIG && s.config.version >= 13010) {
    r.type = CU_DEV_RESOURCE_TYPE_WORKQUEUE_CONFIG;
    write_resource(out, r);
    out->wqConfig.device = device;
    out->wqConfig.wqConcurrencyLimit = s.config.wq_limit;
    out->wqConfig.sharingScope = CU_WORKQUEUE_SCOPE_DEVICE_CTX;
    return CUDA_SUCCESS;
  } else {
    return CUDA_ERROR_INVALID_RESOURCE_TYPE;
  }
  write_resource(out, r);
  return CUDA_SUCCESS;
}

CUresult sim_cuGreenCtxGetDevResource(CUgreenCtx green, CUdevResource* out, CUdevResourceType type) {
  ENTER("cuGreenCtxGetDevResource");
  auto* g = reinterpret_cast<GreenCtx*>(green);
  if (!valid_green(g)) return kInvalidHandle;
  if (type != CU_DEV_RESOURCE_TYPE_SM) return CUDA_ERROR_INVALID_RESOURCE_TYPE;
  Record r;
  r.type = CU_DEV_RESOURCE_TYPE_SM;
  r.sms = g->desc.sms;
  r.origin = Origin::kContext;
  r.device = g->device;
  r.alignment = g->desc.alignment;
  r.flags = g->desc.flags;
  r.locality = g->desc.locality;
  write_resource(out, r);
  return CUDA_SUCCESS;
}

CUresult sim_cuDevSmResourceSplitByCount(CUdevResource* result, unsigned* nb, const CUdevResource* input,
                                         CUdevResource* remaining, unsigned flags, unsigned min_count) {
  ENTER("cuDevSmResourceSplitByCount");
  const Record* in = read_resource(input);
  if (in == nullptr || nb == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (in->type != CU_DEV_RESOURCE_TYPE_SM) return CUDA_ERROR_INVALID_RESOURCE_TYPE;
  if (in->origin == Origin::kSplitOutput) return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
  if (flags & ~3u) return CUDA_ERROR_INVALID_VALUE;
  if ((flags & CU_DEV_SM_RESOURCE_SPLIT_MAX_POTENTIAL_CLUSTER_SIZE) && s.config.cc_major < 9) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const Record input_copy = *in;  // write_resource may grow the record table
  const unsigned gran = (flags & CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING) ? 2u : device_alignment();
  const unsigned total = static_cast<unsigned>(input_copy.sms.size());
  unsigned size = std::max((std::max(min_count, 1u) + gran - 1) / gran * gran, gran);
  std::vector<std::vector<int>> groups;
  if (size > total && min_count <= total && min_count > 0) {
    groups.push_back(input_copy.sms);  // only the whole input has that many SMs
  } else {
    std::vector<std::vector<int>> pieces = chunks(input_copy.sms, gran);
    std::size_t per_group = size / gran;
    for (std::size_t i = 0; i + per_group <= pieces.size(); i += per_group) {
      std::vector<int> g;
      for (std::size_t k = 0; k < per_group; ++k) g.insert(g.end(), pieces[i + k].begin(), pieces[i + k].end());
      std::sort(g.begin(), g.end());
      groups.push_back(g);
    }
  }
  if (result == nullptr) {
    *nb = static_cast<unsigned>(groups.size());
    return CUDA_SUCCESS;
  }
  if (groups.empty()) return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
  unsigned made = std::min<unsigned>(*nb, static_cast<unsigned>(groups.size()));
  std::vector<int> used;
  int split_id = split_id_of(input_copy, "by-count " + std::to_string(flags) + " " +
                                             std::to_string(min_count) + " " + std::to_string(made));
  for (unsigned i = 0; i < made; ++i) {
    Record r;
    r.type = CU_DEV_RESOURCE_TYPE_SM;
    r.sms = groups[i];
    r.origin = Origin::kSplitOutput;
    r.device = input_copy.device;
    r.alignment = gran;
    r.split_id = split_id;
    write_resource(&result[i], r);
    used.insert(used.end(), groups[i].begin(), groups[i].end());
  }
  *nb = made;
  if (remaining) {
    Record r;
    r.sms = minus(input_copy.sms, used);
    r.type = r.sms.empty() ? CU_DEV_RESOURCE_TYPE_INVALID : CU_DEV_RESOURCE_TYPE_SM;
    r.origin = Origin::kSplitOutput;
    r.device = input_copy.device;
    r.alignment = 2;
    r.split_id = split_id;
    write_resource(remaining, r);
  }
  return CUDA_SUCCESS;
}

CUresult sim_cuDevSmResourceSplit(CUdevResource* result, unsigned nb, const CUdevResource* input,
                                  CUdevResource* remainder, unsigned flags,
                                  CU_DEV_SM_RESOURCE_GROUP_PARAMS* params) {
  ENTER("cuDevSmResourceSplit");
  const Record* in = read_resource(input);
  if (in == nullptr || params == nullptr || nb == 0 || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (in->type != CU_DEV_RESOURCE_TYPE_SM) return CUDA_ERROR_INVALID_RESOURCE_TYPE;
  if (in->origin == Origin::kSplitOutput) return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
  const Record input_copy = *in;
  s.last_split_params.assign(params, params + nb);
  const unsigned known_flags = CU_DEV_SM_RESOURCE_GROUP_BACKFILL |
                               (s.config.version >= 13040 ? CU_DEV_SM_RESOURCE_GROUP_LOCALITY_DOMAIN_ID : 0u);
  const unsigned input_count = static_cast<unsigned>(input_copy.sms.size());
  for (unsigned i = 0; i < nb; ++i) {
    const auto& p = params[i];
    for (unsigned word : p.reserved)
      if (word != 0) return CUDA_ERROR_INVALID_VALUE;
    if (s.config.version < 13040 && p.localityDomainId != 0) return CUDA_ERROR_INVALID_VALUE;
    if (p.flags & ~known_flags) return CUDA_ERROR_INVALID_VALUE;
    unsigned cs = p.coscheduledSmCount ? p.coscheduledSmCount : device_alignment();
    if (cs % 2 || cs > max_coscheduled()) return CUDA_ERROR_INVALID_VALUE;
    if (p.smCount != 0) {
      if (p.smCount < 2 || p.smCount > input_count || p.smCount % 2) return CUDA_ERROR_INVALID_VALUE;
      if (!(p.flags & CU_DEV_SM_RESOURCE_GROUP_BACKFILL) && p.smCount % cs) return CUDA_ERROR_INVALID_VALUE;
    }
  }
  std::vector<int> pool = input_copy.sms;
  std::vector<std::vector<int>> assigned(nb);
  for (unsigned i = 0; i < nb; ++i) {
    auto& p = params[i];
    unsigned cs = p.coscheduledSmCount ? p.coscheduledSmCount : device_alignment();
    bool backfill = p.flags & CU_DEV_SM_RESOURCE_GROUP_BACKFILL;
    bool local = p.flags & CU_DEV_SM_RESOURCE_GROUP_LOCALITY_DOMAIN_ID;
    std::vector<int> preferred = pool;
    if (local) {
      preferred.clear();
      for (int sm : pool)
        if (domain_of_sm(sm) == static_cast<int>(p.localityDomainId)) preferred.push_back(sm);
      if (preferred.empty()) return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
    }
    std::vector<std::vector<int>> pieces = chunks(preferred, cs);
    unsigned wanted_chunks = p.smCount ? p.smCount / cs : static_cast<unsigned>(pieces.size());
    if (!backfill && p.smCount && pieces.size() < wanted_chunks) {
      return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
    }
    std::vector<int> group;
    for (unsigned k = 0; k < wanted_chunks && k < pieces.size(); ++k)
      group.insert(group.end(), pieces[k].begin(), pieces[k].end());
    if (backfill) {  // fill up: the domain first, then the rest of the pool
      unsigned target = p.smCount ? p.smCount : static_cast<unsigned>(pool.size());
      for (const std::vector<int>* source : {&preferred, &pool}) {
        for (int sm : minus(*source, group)) {
          if (group.size() >= target) break;
          group.push_back(sm);
        }
      }
    }
    std::sort(group.begin(), group.end());
    if (result != nullptr && (group.empty() || group.size() < cs)) {
      return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
    }
    if (p.smCount == 0) p.smCount = static_cast<unsigned>(group.size());  // discovery
    pool = minus(pool, group);
    assigned[i] = group;
  }
  if (result == nullptr) return CUDA_SUCCESS;  // a dry run
  std::string signature = "split";
  for (unsigned i = 0; i < nb; ++i) {
    signature += " " + std::to_string(params[i].smCount) + "/" + std::to_string(params[i].coscheduledSmCount) +
                 "/" + std::to_string(params[i].preferredCoscheduledSmCount) + "/" +
                 std::to_string(params[i].flags) + "/" + std::to_string(params[i].localityDomainId);
  }
  int split_id = split_id_of(input_copy, signature);
  for (unsigned i = 0; i < nb; ++i) {
    Record r;
    r.type = CU_DEV_RESOURCE_TYPE_SM;
    r.sms = assigned[i];
    r.origin = Origin::kSplitOutput;
    r.device = input_copy.device;
    r.alignment = params[i].coscheduledSmCount ? params[i].coscheduledSmCount : device_alignment();
    r.flags = params[i].flags;
    r.locality = params[i].localityDomainId;
    r.split_id = split_id;
    write_resource(&result[i], r);
  }
  if (remainder) {
    Record r;
    r.sms = pool;
    r.type = pool.empty() ? CU_DEV_RESOURCE_TYPE_INVALID : CU_DEV_RESOURCE_TYPE_SM;
    r.origin = Origin::kSplitOutput;
    r.device = input_copy.device;
    r.alignment = 2;
    r.split_id = split_id;
    write_resource(remainder, r);
  }
  return CUDA_SUCCESS;
}

CUresult sim_cuDevResourceGenerateDesc(CUdevResourceDesc* out, CUdevResource* resources, unsigned n) {
  ENTER("cuDevResourceGenerateDesc");
  if (out == nullptr || resources == nullptr || n == 0) return CUDA_ERROR_INVALID_VALUE;
  auto desc = std::make_unique<Descriptor>();
  int sm_split = -1, sm_resources = 0;
  for (unsigned i = 0; i < n; ++i) {
    const Record* r = read_resource(&resources[i]);
    if (r == nullptr) return CUDA_ERROR_INVALID_RESOURCE_TYPE;
    if (r->type == CU_DEV_RESOURCE_TYPE_SM) {
      if (sm_resources++ > 0) {  // several SM resources: one split, one alignment
        if (r->split_id == 0 || r->split_id != sm_split || r->alignment != desc->alignment) {
          return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
        }
      }
      if (desc->device >= 0 && desc->device != r->device) return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
      desc->device = r->device;
      sm_split = r->split_id;
      desc->sms.insert(desc->sms.end(), r->sms.begin(), r->sms.end());
      desc->alignment = r->alignment;
      desc->flags = r->flags;
      desc->locality = r->locality;
    } else if (r->type == CU_DEV_RESOURCE_TYPE_WORKQUEUE_CONFIG) {
      if (desc->has_wq) return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
      const auto& wq = resources[i].wqConfig;
      if (wq.sharingScope != CU_WORKQUEUE_SCOPE_DEVICE_CTX && wq.sharingScope != CU_WORKQUEUE_SCOPE_GREEN_CTX_BALANCED) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      if (wq.wqConcurrencyLimit == 0 || wq.wqConcurrencyLimit > s.config.wq_limit) return CUDA_ERROR_INVALID_VALUE;
      desc->has_wq = true;
      desc->wq_scope = wq.sharingScope;
      desc->wq_limit = wq.wqConcurrencyLimit;
    } else {
      return CUDA_ERROR_INVALID_RESOURCE_TYPE;
    }
  }
  std::sort(desc->sms.begin(), desc->sms.end());
  *out = reinterpret_cast<CUdevResourceDesc>(desc.get());
  s.descriptors.push_back(std::move(desc));
  return CUDA_SUCCESS;
}

CUresult sim_cuGreenCtxCreate(CUgreenCtx* out, CUdevResourceDesc desc, CUdevice device, unsigned flags) {
  ENTER("cuGreenCtxCreate");
  if (device < 0 || device >= s.config.device_count) return CUDA_ERROR_INVALID_DEVICE;
  if (!(flags & CU_GREEN_CTX_DEFAULT_STREAM)) return CUDA_ERROR_INVALID_VALUE;
  auto it = std::find_if(s.descriptors.begin(), s.descriptors.end(),
                         [desc](const auto& d) { return reinterpret_cast<CUdevResourceDesc>(d.get()) == desc; });
  if (it == s.descriptors.end()) return kInvalidHandle;
  if ((*it)->device >= 0 && (*it)->device != device) return CUDA_ERROR_INVALID_DEVICE;
  auto* g = new GreenCtx;
  g->device = device;
  g->desc = **it;
  if (g->desc.sms.empty()) {  // a workqueue-only descriptor: all SMs
    for (int i = 0; i < s.config.sm_count; ++i) g->desc.sms.push_back(i);
    g->desc.alignment = device_alignment();
  }
  s.green_ctxs.insert(g);
  *out = reinterpret_cast<CUgreenCtx>(g);
  return CUDA_SUCCESS;
}

CUresult sim_cuGreenCtxDestroy(CUgreenCtx green) {
  ENTER("cuGreenCtxDestroy");
  auto* g = reinterpret_cast<GreenCtx*>(green);
  if (!valid_green(g)) return kInvalidHandle;
  g->alive = false;
  return CUDA_SUCCESS;
}

CUresult sim_cuCtxFromGreenCtx(CUcontext* out, CUgreenCtx green) {
  ENTER("cuCtxFromGreenCtx");
  auto* g = reinterpret_cast<GreenCtx*>(green);
  if (!valid_green(g)) return kInvalidHandle;
  *out = reinterpret_cast<CUcontext>(&g->context_tag);
  return CUDA_SUCCESS;
}

// The green context a stream belongs to (null: a regular context's). NULL and the special
// handles stand for the default stream of the current context, as documented.
CUresult sim_cuStreamGetGreenCtx(CUstream stream, CUgreenCtx* out) {
  ENTER("cuStreamGetGreenCtx");
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const auto value = reinterpret_cast<std::uintptr_t>(stream);
  if (value <= 2) {  // NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD
    if (t_context_stack.empty()) return kInvalidContext;
    *out = reinterpret_cast<CUgreenCtx>(green_of_context(t_context_stack.back()));
    return CUDA_SUCCESS;
  }
  auto* st = reinterpret_cast<Stream*>(stream);
  if (!valid_stream(st)) return kInvalidHandle;
  *out = reinterpret_cast<CUgreenCtx>(st->green);
  return CUDA_SUCCESS;
}

CUresult sim_cuGreenCtxStreamCreate(CUstream* out, CUgreenCtx green, unsigned flags, int priority) {
  ENTER("cuGreenCtxStreamCreate");
  auto* g = reinterpret_cast<GreenCtx*>(green);
  if (!valid_green(g)) return kInvalidHandle;
  return new_stream(g, flags, priority, out);
}

// Whether TGC_SIM_HIDE (comma-separated) names `symbol`.
bool hidden(const char* symbol) {
  const char* list = std::getenv("TGC_SIM_HIDE");
  if (list == nullptr) return false;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item == symbol) return true;
  }
  return false;
}

struct Entry {
  const char* name;
  int since;
  void* fn;
};

const std::vector<Entry>& entries() {
  static const std::vector<Entry> table = {
      {"cuGetErrorName", 12000, reinterpret_cast<void*>(&sim_cuGetErrorName)},
      {"cuGetErrorString", 12000, reinterpret_cast<void*>(&sim_cuGetErrorString)},
      {"cuDeviceGet", 12000, reinterpret_cast<void*>(&sim_cuDeviceGet)},
      {"cuDeviceGetCount", 12000, reinterpret_cast<void*>(&sim_cuDeviceGetCount)},
      {"cuDeviceGetAttribute", 12000, reinterpret_cast<void*>(&sim_cuDeviceGetAttribute)},
      {"cuDevicePrimaryCtxGetState", 12000, reinterpret_cast<void*>(&sim_cuDevicePrimaryCtxGetState)},
      {"cuCtxGetCurrent", 12000, reinterpret_cast<void*>(&sim_cuCtxGetCurrent)},
      {"cuCtxPushCurrent", 12000, reinterpret_cast<void*>(&sim_cuCtxPushCurrent)},
      {"cuCtxPopCurrent", 12000, reinterpret_cast<void*>(&sim_cuCtxPopCurrent)},
      {"cuStreamCreateWithPriority", 12000, reinterpret_cast<void*>(&sim_cuStreamCreateWithPriority)},
      {"cuStreamSynchronize", 12000, reinterpret_cast<void*>(&sim_cuStreamSynchronize)},
      {"cuStreamDestroy", 12000, reinterpret_cast<void*>(&sim_cuStreamDestroy)},
      {"cuStreamGetCtx", 12000, reinterpret_cast<void*>(&sim_cuStreamGetCtx)},
      {"cuEventCreate", 12000, reinterpret_cast<void*>(&sim_cuEventCreate)},
      {"cuEventRecord", 12000, reinterpret_cast<void*>(&sim_cuEventRecord)},
      {"cuEventDestroy", 12000, reinterpret_cast<void*>(&sim_cuEventDestroy)},
      {"cuStreamWaitEvent", 12000, reinterpret_cast<void*>(&sim_cuStreamWaitEvent)},
      {"cuLibraryLoadData", 12000, reinterpret_cast<void*>(&sim_cuLibraryLoadData)},
      {"cuLibraryUnload", 12000, reinterpret_cast<void*>(&sim_cuLibraryUnload)},
      {"cuLibraryGetKernel", 12000, reinterpret_cast<void*>(&sim_cuLibraryGetKernel)},
      {"cuKernelGetFunction", 12000, reinterpret_cast<void*>(&sim_cuKernelGetFunction)},
      {"cuLaunchKernel", 12000, reinterpret_cast<void*>(&sim_cuLaunchKernel)},
      {"cuDeviceGetDevResource", 12040, reinterpret_cast<void*>(&sim_cuDeviceGetDevResource)},
      {"cuGreenCtxGetDevResource", 12040, reinterpret_cast<void*>(&sim_cuGreenCtxGetDevResource)},
      {"cuDevSmResourceSplitByCount", 12040, reinterpret_cast<void*>(&sim_cuDevSmResourceSplitByCount)},
      {"cuDevResourceGenerateDesc", 12040, reinterpret_cast<void*>(&sim_cuDevResourceGenerateDesc)},
      {"cuGreenCtxCreate", 12040, reinterpret_cast<void*>(&sim_cuGreenCtxCreate)},
      {"cuGreenCtxDestroy", 12040, reinterpret_cast<void*>(&sim_cuGreenCtxDestroy)},
      {"cuCtxFromGreenCtx", 12040, reinterpret_cast<void*>(&sim_cuCtxFromGreenCtx)},
      {"cuStreamGetGreenCtx", 12040, reinterpret_cast<void*>(&sim_cuStreamGetGreenCtx)},
      {"cuGreenCtxStreamCreate", 12050, reinterpret_cast<void*>(&sim_cuGreenCtxStreamCreate)},
      {"cuDevSmResourceSplit", 13010, reinterpret_cast<void*>(&sim_cuDevSmResourceSplit)},
  };
  return table;
}

}  // namespace

extern "C" {

CUresult cuInit(unsigned flags) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (CUresult injected = enter("cuInit")) return injected;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (int code = env_int("TGC_SIM_FAIL_INIT", 0)) return code;  // e.g. 100: no device
  if (s.initialised) return CUDA_SUCCESS;
  Config c;
  c.version = env_int("TGC_SIM_DRIVER_VERSION", c.version);
  c.sm_count = env_int("TGC_SIM_SM_COUNT", c.sm_count);
  c.cc_major = env_int("TGC_SIM_CC_MAJOR", c.cc_major);
  c.locality_domains = env_int("TGC_SIM_LOCALITY_DOMAINS", c.locality_domains);
  c.device_count = env_int("TGC_SIM_DEVICE_COUNT", c.device_count);
  c.wq_limit = static_cast<unsigned>(env_int("TGC_SIM_WQ_LIMIT", static_cast<int>(c.wq_limit)));
  if (const char* gpcs = std::getenv("TGC_SIM_GPC_SIZES")) {
    c.gpc_sizes.clear();
    std::stringstream in(gpcs);
    std::string item;
    while (std::getline(in, item, ',')) c.gpc_sizes.push_back(std::atoi(item.c_str()));
  } else if (c.sm_count != 132) {
    c.gpc_sizes.assign(static_cast<std::size_t>(c.sm_count / 16), 16);
    if (c.sm_count % 16) c.gpc_sizes.push_back(c.sm_count % 16);
  }
  int sum = 0;
  for (int g : c.gpc_sizes) sum += g;
  if (sum != c.sm_count) return CUDA_ERROR_INVALID_VALUE;
  s.config = c;
  s.gpc_of_sm.clear();
  for (std::size_t g = 0; g < c.gpc_sizes.size(); ++g)
    for (int k = 0; k < c.gpc_sizes[g]; ++k) s.gpc_of_sm.push_back(static_cast<int>(g));
  s.initialised = true;
  return CUDA_SUCCESS;
}

// A real driver exports its entry points by name too; the core asks cuDeviceGet this way
// whether the driver is initialised, without initialising it.
CUresult cuDeviceGet(CUdevice* device, int ordinal) { return sim_cuDeviceGet(device, ordinal); }

CUresult cuDriverGetVersion(int* version) {
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *version = env_int("TGC_SIM_DRIVER_VERSION", 13040);
  return CUDA_SUCCESS;
}

CUresult cuGetProcAddress_v2(const char* symbol, void** fn, int version, std::uint64_t, int* status) {
  const int driver = env_int("TGC_SIM_DRIVER_VERSION", 13040);
  *fn = nullptr;
  for (const Entry& e : entries()) {
    if (std::strcmp(e.name, symbol) != 0) continue;
    if (driver < e.since || hidden(symbol)) break;
    if (version < e.since) {
      if (status) *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
      return CUDA_ERROR_NOT_FOUND;
    }
    *fn = e.fn;
    if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
  }
  if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_ERROR_NOT_FOUND;
}

int tgc_sim_live(const char* kind) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  int n = 0;
  if (std::strcmp(kind, "green_ctx") == 0) {
    for (GreenCtx* g : s.green_ctxs) n += g->alive;
  } else if (std::strcmp(kind, "stream") == 0) {
    for (Stream* st : s.streams) n += st->alive;
  } else if (std::strcmp(kind, "event") == 0) {
    for (Event* ev : s.events) n += ev->alive;
  } else if (std::strcmp(kind, "library") == 0) {
    n = static_cast<int>(s.libraries.size());
  }
  return n;
}

int tgc_sim_misuse_count(void) { return state().misuse; }

void tgc_sim_fail_next(const char* name, int code, int skip) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.failures.push_back({name, code, skip});
}

void tgc_sim_clear_failures(void) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.failures.clear();
}

int tgc_sim_calls(const char* name) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.calls.find(name);
  return it == s.calls.end() ? 0 : it->second;
}

int tgc_sim_green_ctx_sms(void* green, int* out, int capacity) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto* g = static_cast<GreenCtx*>(green);
  if (!s.green_ctxs.count(g)) return -1;
  int n = static_cast<int>(g->desc.sms.size());
  for (int i = 0; i < n && i < capacity; ++i) out[i] = g->desc.sms[static_cast<std::size_t>(i)];
  return n;
}

int tgc_sim_last_split_params(unsigned* out, int max_groups) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  int n = static_cast<int>(s.last_split_params.size());
  for (int i = 0; i < n && i < max_groups; ++i) {
    std::memcpy(out + 16 * i, &s.last_split_params[static_cast<std::size_t>(i)], 64);
  }
  return n;
}

int tgc_sim_green_ctx_workqueue(void* green, int* scope, int* limit) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto* g = static_cast<GreenCtx*>(green);
  if (!s.green_ctxs.count(g)) return -1;
  *scope = g->desc.has_wq ? g->desc.wq_scope : -1;
  *limit = g->desc.has_wq ? static_cast<int>(g->desc.wq_limit) : -1;
  return 0;
}

int tgc_sim_live_events(void** contexts, unsigned* flags, int capacity) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  int n = 0;
  for (Event* ev : s.events) {
    if (!ev->alive) continue;
    if (n < capacity) {
      contexts[n] = ev->green ? static_cast<void*>(&ev->green->context_tag) : static_cast<void*>(&g_primary_tag);
      flags[n] = ev->flags;
    }
    ++n;
  }
  return n;
}

int tgc_sim_wait_edges(void** waiting, void** recorded_on, int capacity) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  int n = static_cast<int>(s.wait_edges.size());
  for (int i = 0; i < n && i < capacity; ++i) {
    waiting[i] = s.wait_edges[static_cast<std::size_t>(i)].waiting;
    recorded_on[i] = s.wait_edges[static_cast<std::size_t>(i)].recorded_on;
  }
  return n;
}

void tgc_sim_clear_wait_edges(void) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.wait_edges.clear();
}

}  // extern "C"
