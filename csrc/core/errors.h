// The exceptions the core throws, one type per condition. The Python bindings map them onto the
// exception types the contract names: ValueError (SplitError is one), TypeError and
// RuntimeError (DriverError, FeatureUnavailableError, RangeError and DriverUnavailableError
// are RuntimeErrors).
#pragma once

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda_abi.h"

namespace tgc {

// A bad argument value (Python ValueError).
class ValueError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// The SMs being split cannot give what a group asks for (Python ValueError), whichever split
// path found it: the group (none when the groups together ask for too much), the SM count it
// asked for and the nearest counts that can be given there (empty when none were found).
class SplitError : public ValueError {
 public:
  SplitError(const std::string& message, std::optional<std::size_t> group, unsigned sm_count,
             std::vector<unsigned> nearest_counts);
  std::optional<std::size_t> group() const noexcept { return group_; }
  unsigned sm_count() const noexcept { return sm_count_; }
  const std::vector<unsigned>& nearest_counts() const noexcept { return nearest_; }

 private:
  std::optional<std::size_t> group_;
  unsigned sm_count_;
  std::vector<unsigned> nearest_;
};

// An argument of the wrong type (Python TypeError).
class TypeError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// A device index or an SM count outside what the machine has (Python RuntimeError, as PyTorch
// raises for a bad device).
class RangeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// No usable CUDA driver: the library cannot be loaded, is not a CUDA driver, or CUDA cannot be
// used in this process (a child forked after initialisation). Python RuntimeError.
class DriverUnavailableError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
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

// The installed driver is too old for a feature (Python RuntimeError): the feature, the driver
// version it needs and the version found.
class FeatureUnavailableError : public std::runtime_error {
 public:
  FeatureUnavailableError(const std::string& feature, int needed_version, int found_version);
  const std::string& feature() const noexcept { return feature_; }
  int needed_version() const noexcept { return needed_; }
  int found_version() const noexcept { return found_; }

 private:
  std::string feature_;
  int needed_;
  int found_;
};

// "13.1" for 13010.
std::string format_driver_version(int version);

// An argument's value as messages show it. The ends of the range stand for any value beyond
// them ("9223372036854775807 or more"): the Python layer hands wider integers over as these.
std::string format_argument(long long value);

}  // namespace tgc
