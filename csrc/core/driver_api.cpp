#include "driver_api.h"

#include <dlfcn.h>
#include <pthread.h>

#include <cstdlib>
#include <atomic>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>

#include "errors.h"
#include "warnings.h"

namespace tgc {

namespace {

using cuInit_t = abi::CUresult (*)(unsigned);
using cuDriverGetVersion_t = abi::CUresult (*)(int*);
using cuGetProcAddress_v2_t = abi::CUresult (*)(const char*, void**, int, std::uint64_t, int*);

std::string library_name() {
  const char* override_path = std::getenv(driver_library_env());
  if (override_path != nullptr && override_path[0] != '\0') return override_path;
  return "libcuda.so.1";
}

// The driver library stays loaded for the life of the process: entry points handed out from
// it are used until exit, from destructors too.
void* open_library(const std::string& name, std::string* error) {
  void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* reason = dlerror();
    *error = "the CUDA driver library " + name + " could not be loaded (" +
             (reason ? reason : "unknown reason") +
             "); is an NVIDIA driver installed on this machine?";
  }
  return handle;
}

// Set in the child of a fork() made after the driver was initialised: CUDA cannot be used
// there (the driver's state belongs to the parent), and calls may fail or hang.
std::atomic<bool> g_forked_after_init{false};

}  // namespace

void DriverApi::load() {
  library_ = library_name();
  std::string error;
  void* handle = open_library(library_, &error);
  if (handle == nullptr) throw DriverUnavailableError(error);

  auto get_version = reinterpret_cast<cuDriverGetVersion_t>(dlsym(handle, "cuDriverGetVersion"));
  auto init = reinterpret_cast<cuInit_t>(dlsym(handle, "cuInit"));
  if (get_version == nullptr || init == nullptr) {
    throw DriverUnavailableError(library_ + " is not a CUDA driver library (cuInit missing)");
  }
  abi::CUresult result = get_version(&version_);
  if (result != abi::CUDA_SUCCESS) {
    // Nothing resolved yet: the error is named by its code only.
    throw DriverError("cuDriverGetVersion", result, error_name(result), error_text(result));
  }
  // cuGetProcAddress_v2 exists from driver 12.0 on. An older driver keeps an empty table:
  // every feature then reports the version it needs.
  auto get_proc = reinterpret_cast<cuGetProcAddress_v2_t>(dlsym(handle, "cuGetProcAddress_v2"));
  if (get_proc != nullptr) {
#define TGC_RESOLVE(name, since, pin, ret, params)                                            \
  if (version_ >= (since)) {                                                                  \
    void* fn = nullptr;                                                                       \
    int status = abi::CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;                                   \
    int asked = (pin) < version_ ? (pin) : version_;                                          \
    if (get_proc(#name, &fn, asked, 0, &status) == abi::CUDA_SUCCESS &&                       \
        status == abi::CU_GET_PROC_ADDRESS_SUCCESS) {                                         \
      name = reinterpret_cast<ret(*) params>(fn);                                             \
    }                                                                                         \
  }
    TGC_DRIVER_ENTRY_POINTS(TGC_RESOLVE)
#undef TGC_RESOLVE
  }

  result = init(0);
  if (result != abi::CUDA_SUCCESS) {
    throw DriverError("cuInit", result, error_name(result), error_text(result));
  }
  pthread_atfork(nullptr, nullptr, [] { g_forked_after_init.store(true); });
}

const DriverApi& DriverApi::get() {
  static DriverApi table;
  static std::once_flag once;
  static std::exception_ptr load_error;
  std::call_once(once, [] {
    try {
      table.load();
    } catch (...) {
      load_error = std::current_exception();
    }
  });
  if (load_error) std::rethrow_exception(load_error);
  if (g_forked_after_init.load()) {
    throw DriverUnavailableError(
        "CUDA was initialised in the parent of this process before fork(), so it cannot be used "
        "in this child; start worker processes with the 'spawn' or 'forkserver' method "
        "(multiprocessing.set_start_method('spawn'))");
  }
  return table;
}

std::string DriverApi::error_name(abi::CUresult result) const {
  const char* name = nullptr;
  if (cuGetErrorName == nullptr || cuGetErrorName(result, &name) != abi::CUDA_SUCCESS ||
      name == nullptr) {
    return "CUDA_ERROR_UNKNOWN_CODE_" + std::to_string(result);
  }
  return name;
}

std::string DriverApi::error_text(abi::CUresult result) const {
  const char* text = nullptr;
  if (cuGetErrorString == nullptr || cuGetErrorString(result, &text) != abi::CUDA_SUCCESS ||
      text == nullptr) {
    return "no description from the driver";
  }
  return text;
}

void DriverApi::throw_driver_error(abi::CUresult result, const char* call) const {
  throw DriverError(call, result, error_name(result), error_text(result));
}

void DriverApi::require_version(const char* feature, int needed_version) const {
  if (version_ < needed_version) throw FeatureUnavailableError(feature, needed_version, version_);
}

void DriverApi::throw_unavailable(const char* feature, int needed_version, const char* entry_point) const {
  require_version(feature, needed_version);
  // Not FeatureUnavailableError: the version is high enough, the library is what falls short.
  const std::string what = std::string(feature) == entry_point
                               ? std::string(entry_point) + " is"
                               : std::string(feature) + " needs " + entry_point + ",";
  throw std::runtime_error(what + " a driver entry point that " + library_ + " (version " +
                           format_driver_version(version_) + ") does not provide, although it reports version " +
                           format_driver_version(needed_version) + " or newer");
}

const char* driver_library_env() noexcept { return "TORCH_GREEN_CONTEXTS_DRIVER_LIBRARY"; }

int loaded_driver_version() { return driver().version(); }

std::string loaded_driver_library() { return driver().library(); }

std::vector<EntryPointStatus> entry_point_status() {
  const DriverApi& api = driver();
  std::vector<EntryPointStatus> result;
#define TGC_REPORT(name, since, pin, ret, params) result.push_back({#name, since, api.name != nullptr});
  TGC_DRIVER_ENTRY_POINTS(TGC_REPORT)
#undef TGC_REPORT
  return result;
}

int installed_driver_version() noexcept {
  std::string error;
  void* handle = open_library(library_name(), &error);
  if (handle == nullptr) return 0;
  auto get_version = reinterpret_cast<cuDriverGetVersion_t>(dlsym(handle, "cuDriverGetVersion"));
  int version = 0;
  if (get_version == nullptr || get_version(&version) != abi::CUDA_SUCCESS) version = 0;
  dlclose(handle);
  return version;
}

bool driver_initialized() noexcept {
  std::string error;
  void* handle = open_library(library_name(), &error);
  if (handle == nullptr) return false;
  // The driver library exports cuDeviceGet under its plain name; before cuInit it answers
  // CUDA_ERROR_NOT_INITIALIZED and does nothing else.
  using cuDeviceGet_t = abi::CUresult (*)(abi::CUdevice*, int);
  auto device_get = reinterpret_cast<cuDeviceGet_t>(dlsym(handle, "cuDeviceGet"));
  abi::CUdevice device = 0;
  const bool initialized =
      device_get != nullptr && device_get(&device, 0) != abi::CUDA_ERROR_NOT_INITIALIZED;
  dlclose(handle);
  return initialized;
}

void warn_if_cleanup_failed(abi::CUresult result, const char* call) noexcept {
  if (result == abi::CUDA_SUCCESS || result == abi::CUDA_ERROR_DEINITIALIZED) return;
  try {
    const DriverApi& api = driver();
    warn(std::string(call) + " failed during cleanup: " + api.error_name(result) + " (" +
         std::to_string(result) + "): " + api.error_text(result));
  } catch (...) {
    warn(std::string(call) + " failed during cleanup with CUresult " + std::to_string(result));
  }
}

}  // namespace tgc
