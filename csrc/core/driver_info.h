// What the rest of the package may know about the driver without seeing the entry-point
// table: feature versions and a report of what was found. (Translation units that include
// CUDA's own headers must not include driver_api.h: cuda.h defines macros named like the
// table's members.)
#pragma once

#include <string>
#include <vector>

namespace tgc {

// Driver versions that features need (the contract's table).
namespace feature_version {
constexpr int kGreenContexts = 12040;
constexpr int kGreenContextStreams = 12050;
constexpr int kNativeSplit = 13010;
constexpr int kWorkqueues = 13010;
constexpr int kLocalityDomains = 13040;
}  // namespace feature_version

// The environment variable that makes the core load another library in place of
// libcuda.so.1 (a testing hook: tests point it at a simulated driver).
const char* driver_library_env() noexcept;

// The loaded driver's version and library path; RuntimeError if no usable driver.
int loaded_driver_version();
std::string loaded_driver_library();

// The installed driver's version without cuInit (0 if no driver library can be loaded).
// Works on machines without a GPU.
int installed_driver_version() noexcept;

// Whether the driver has been initialised in this process (cuInit, by this package or anyone
// else, e.g. PyTorch), asked without initialising it; false when no driver can be loaded.
bool driver_initialized() noexcept;

struct EntryPointStatus {
  std::string name;
  int since;     // first driver version that has it
  bool present;  // resolved from the loaded driver
};
std::vector<EntryPointStatus> entry_point_status();

}  // namespace tgc
