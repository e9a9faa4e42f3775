// The exceptions the core throws. The Python bindings map them onto the exception types the
// contract names: ValueError, TypeError and RuntimeError (DriverError and
// FeatureUnavailableError are RuntimeErrors).
#pragma once

#include <stdexcept>
#include <string>

#include "cuda_abi.h"

namespace tgc {

// A bad argument value (Python ValueError).
class ValueError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// An argument of the wrong type (Python TypeError).
class TypeError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// A driver call returned an error. The message names the call, the CUresult name and text;
// the three are also kept apart, so that callers (and the Python exception) need not parse it.
class DriverError : public std::runtime_error {
 public:
  DriverError(const std::string& call, abi::CUresult code, const std::string& name,
              const std::string& text);
  abi::CUresult code() const noexcept { return code_; }
  const std::string& call() const noexcept { return call_; }
  // The CUresult's name as the driver spells it, e.g. "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION".
  const std::string& name() const noexcept { return name_; }

 private:
  std::string call_;
  abi::CUresult code_;
  std::string name_;
};

// The installed driver is too old for a feature (Python RuntimeError).
class FeatureUnavailableError : public std::runtime_error {
 public:
  FeatureUnavailableError(const std::string& feature, int needed_version, int found_version);
};

// "13.1" for 13010.
std::string format_driver_version(int version);

}  // namespace tgc
