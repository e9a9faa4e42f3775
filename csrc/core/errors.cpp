#include "errors.h"

#include <limits>
#include <utility>

namespace tgc {

namespace {
std::string driver_error_message(const std::string& call, abi::CUresult code,
                                 const std::string& name, const std::string& text) {
  return call + " failed: " + name + " (" + std::to_string(code) + "): " + text;
}

std::string feature_message(const std::string& feature, int needed, int found) {
  return feature + " needs CUDA driver " + format_driver_version(needed) +
         " or newer; the installed driver is " + format_driver_version(found);
}
}  // namespace

SplitError::SplitError(const std::string& message, std::optional<std::size_t> group,
                       unsigned sm_count, std::vector<unsigned> nearest_counts)
    : ValueError(message), group_(group), sm_count_(sm_count), nearest_(std::move(nearest_counts)) {}

DriverError::DriverError(const std::string& call, abi::CUresult code, const std::string& name,
                         const std::string& text)
    : std::runtime_error(driver_error_message(call, code, name, text)),
      call_(call),
      code_(code),
      name_(name) {}

FeatureUnavailableError::FeatureUnavailableError(const std::string& feature, int needed_version,
                                                 int found_version)
    : std::runtime_error(feature_message(feature, needed_version, found_version)),
      feature_(feature),
      needed_(needed_version),
      found_(found_version) {}

std::string format_argument(long long value) {
  if (value == std::numeric_limits<long long>::max()) return std::to_string(value) + " or more";
  if (value == std::numeric_limits<long long>::min()) return std::to_string(value) + " or less";
  return std::to_string(value);
}

std::string format_driver_version(int version) {
  if (version <= 0) return "unknown";
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

}  // namespace tgc
