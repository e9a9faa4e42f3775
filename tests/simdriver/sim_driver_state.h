// A simulated CUDA driver for tests: the green-context family and what the core needs around
// it, following the documented rules (../../shared notes on the driver API), with every handle
// tracked and any call made to fail on demand. Device memory is host memory here: a
// CUdeviceptr is a host address.
//
// This header holds the state and the functions the driver's files share. All of it is
// hidden: the library exports only the driver entry points and sim_driver.h's controls.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/cuda_abi.h"

#pragma GCC visibility push(hidden)

namespace simdriver {

using namespace tgc::abi;

constexpr CUresult kInvalidContext = 201;
constexpr CUresult kInvalidHandle = 400;
constexpr CUresult kStreamDetached = 917;

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

// A cuMemCreate: device memory of a device (domain -1) or of one of its locality domains. It
// lives until it is released and no longer mapped.
struct Memory {
  std::size_t size = 0;
  int device = 0;
  int domain = -1;
  bool released = false;
  int mappings = 0;
};

// A cuMemMap of a whole Memory at `address`, inside a reservation.
struct Mapping {
  std::size_t size = 0;
  Memory* memory = nullptr;
  bool accessible = false;  // by cuMemSetAccess
};

// A cuMemAddressReserve, backed by host memory (a CUdeviceptr is a host address here).
struct Reservation {
  std::size_t size = 0;
  void* host = nullptr;
};

// The granularity of cuMemCreate and cuMemAddressReserve here: 2 MiB.
constexpr std::size_t kMemoryGranularity = std::size_t{2} << 20;

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
  std::set<Memory*> memories;
  std::map<CUdeviceptr, Mapping> mappings;          // by address
  std::map<CUdeviceptr, Reservation> reservations;  // by address
  int primary_retains = 0;
};

State& state();

// The calling thread's stack of current contexts.
extern thread_local std::vector<CUcontext> t_context_stack;
extern int g_primary_tag;  // its address is the primary context's handle

// Records the call; returns a failure code if one was asked for.
CUresult enter(const char* name);

// The start of every entry point but cuInit: holds the state's lock (`s`), refuses calls
// before cuInit, and counts the call, returning a failure asked for with tgc_sim_fail_next.
#define ENTER(name)                                   \
  State& s = state();                                 \
  std::lock_guard<std::mutex> lock(s.mutex);          \
  if (!s.initialised && std::strcmp(name, "cuInit")) \
    return CUDA_ERROR_NOT_INITIALIZED;                \
  if (CUresult injected = enter(name)) return injected

int env_int(const char* name, int fallback);
// Whether TGC_SIM_HIDE (comma-separated) names `symbol`.
bool hidden(const char* symbol);
// The configuration from the TGC_SIM_* variables; false if the GPC sizes do not add up.
bool read_config(Config* config);

unsigned device_alignment();
unsigned max_coscheduled();
int domain_of_sm(int sm);

// Whether a handle is one this driver made and has not destroyed (counted as misuse if not).
bool valid_green(GreenCtx* g);
bool valid_stream(Stream* st);
bool valid_event(Event* ev);
GreenCtx* green_of_context(CUcontext ctx);
// For a stream whose green context was destroyed, the error its uses get: 13.1+ drivers say
// CUDA_ERROR_STREAM_DETACHED, older ones CUDA_ERROR_INVALID_HANDLE. CUDA_SUCCESS otherwise.
CUresult detached(const Stream* st);

// Writes the resource `record` stands for; reads back what such a resource stands for (null:
// not one of this driver's).
void write_resource(CUdevResource* out, const Record& record);
const Record* read_resource(const CUdevResource* in);
// The same id for the same split (input and parameters), a new one otherwise.
int split_id_of(const Record& input, const std::string& parameters);

// A new stream of `green` (null: the primary context); priorities are 0 (lowest) or negative.
CUresult new_stream(GreenCtx* green, unsigned flags, int priority, CUstream* out);

// The entry points cuGetProcAddress hands out.
CUresult sim_cuGetErrorName(CUresult code, const char** name);
CUresult sim_cuGetErrorString(CUresult code, const char** text);
CUresult sim_cuDeviceGetCount(int* count);
CUresult sim_cuDeviceGet(CUdevice* device, int ordinal);
CUresult sim_cuDeviceGetAttribute(int* value, int attribute, CUdevice device);
CUresult sim_cuDevicePrimaryCtxGetState(CUdevice device, unsigned* flags, int* active);
CUresult sim_cuCtxGetCurrent(CUcontext* ctx);
CUresult sim_cuCtxPushCurrent(CUcontext ctx);
CUresult sim_cuCtxPopCurrent(CUcontext* ctx);
CUresult sim_cuStreamCreateWithPriority(CUstream* out, unsigned flags, int priority);
CUresult sim_cuStreamSynchronize(CUstream stream);
CUresult sim_cuStreamDestroy(CUstream stream);
CUresult sim_cuStreamGetCtx(CUstream stream, CUcontext* ctx);
CUresult sim_cuEventCreate(CUevent* out, unsigned flags);
CUresult sim_cuEventRecord(CUevent event, CUstream stream);
CUresult sim_cuStreamWaitEvent(CUstream stream, CUevent event, unsigned flags);
CUresult sim_cuEventDestroy(CUevent event);
CUresult sim_cuLibraryLoadData(CUlibrary* lib, const void* code, int*, void**, unsigned, int*, void**, unsigned);
CUresult sim_cuLibraryUnload(CUlibrary lib);
CUresult sim_cuLibraryGetKernel(CUkernel* kernel, CUlibrary lib, const char* name);
CUresult sim_cuKernelGetFunction(CUfunction* function, CUkernel kernel);
CUresult sim_cuLaunchKernel(CUfunction f, unsigned gx, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                            CUstream stream, void** params, void**);
CUresult sim_cuDeviceGetDevResource(CUdevice device, CUdevResource* out, CUdevResourceType type);
CUresult sim_cuGreenCtxGetDevResource(CUgreenCtx green, CUdevResource* out, CUdevResourceType type);
CUresult sim_cuDevSmResourceSplitByCount(CUdevResource* result, unsigned* nb, const CUdevResource* input,
                                         CUdevResource* remaining, unsigned flags, unsigned min_count);
CUresult sim_cuDevSmResourceSplit(CUdevResource* result, unsigned nb, const CUdevResource* input,
                                  CUdevResource* remainder, unsigned flags, CU_DEV_SM_RESOURCE_GROUP_PARAMS* params);
CUresult sim_cuDevResourceGenerateDesc(CUdevResourceDesc* out, CUdevResource* resources, unsigned n);
CUresult sim_cuGreenCtxCreate(CUgreenCtx* out, CUdevResourceDesc desc, CUdevice device, unsigned flags);
CUresult sim_cuGreenCtxDestroy(CUgreenCtx green);
CUresult sim_cuCtxFromGreenCtx(CUcontext* out, CUgreenCtx green);
CUresult sim_cuStreamGetGreenCtx(CUstream stream, CUgreenCtx* out);
CUresult sim_cuGreenCtxStreamCreate(CUstream* out, CUgreenCtx green, unsigned flags, int priority);
CUresult sim_cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice device);
CUresult sim_cuDevicePrimaryCtxRelease(CUdevice device);
CUresult sim_cuCtxSynchronize();
CUresult sim_cuMemGetAllocationGranularity(std::size_t* granularity, const CUmemAllocationProp* prop, int option);
CUresult sim_cuMemAddressReserve(CUdeviceptr* ptr, std::size_t size, std::size_t alignment, CUdeviceptr addr,
                                 unsigned long long flags);
CUresult sim_cuMemAddressFree(CUdeviceptr ptr, std::size_t size);
CUresult sim_cuMemCreate(CUmemGenericAllocationHandle* handle, std::size_t size, const CUmemAllocationProp* prop,
                         unsigned long long flags);
CUresult sim_cuMemRelease(CUmemGenericAllocationHandle handle);
CUresult sim_cuMemMap(CUdeviceptr ptr, std::size_t size, std::size_t offset, CUmemGenericAllocationHandle handle,
                      unsigned long long flags);
CUresult sim_cuMemUnmap(CUdeviceptr ptr, std::size_t size);
CUresult sim_cuMemSetAccess(CUdeviceptr ptr, std::size_t size, const CUmemAccessDesc* desc, std::size_t count);

}  // namespace simdriver

#pragma GCC visibility pop
