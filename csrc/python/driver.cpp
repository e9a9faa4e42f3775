// The driver and the devices as the package sees them, and what the core holds.
#include <pybind11/stl.h>

#include <cstdint>

#include "bindings.h"
#include "core/device.h"
#include "core/driver_info.h"
#include "core/idle_contexts.h"
#include "torch/torch_bridge.h"

namespace tgc::python {

void bind_driver(py::module_& m) {
  m.def("driver_version", &loaded_driver_version,
        "The CUDA driver's version (e.g. 13000). RuntimeError if no driver can be used.");
  m.def("installed_driver_version", &installed_driver_version,
        "The installed driver's version without initialising CUDA; 0 if none is installed.");
  m.def("driver_library", &loaded_driver_library);
  m.def("driver_initialized", &driver_initialized,
        "Whether the driver is initialised in this process (by anyone), asked without initialising it.");
  m.def("entry_points", [] {
    py::dict result;
    for (const EntryPointStatus& entry : entry_point_status()) {
      result[py::str(entry.name)] = py::make_tuple(entry.present, entry.since);
    }
    return result;
  });
  py::module_ versions = m.def_submodule("feature_version");
  versions.attr("green_contexts") = feature_version::kGreenContexts;
  versions.attr("green_context_streams") = feature_version::kGreenContextStreams;
  versions.attr("native_split") = feature_version::kNativeSplit;
  versions.attr("workqueues") = feature_version::kWorkqueues;
  versions.attr("locality_domains") = feature_version::kLocalityDomains;
  m.attr("DRIVER_LIBRARY_ENV") = driver_library_env();

  m.def("device_count", &device_count);
  m.def("device_sm_count", &device_sm_count, py::arg("device"));
  m.def("compute_capability", [](int device) {
    ComputeCapability cc = device_compute_capability(device);
    return py::make_tuple(cc.major, cc.minor);
  });
  m.def("locality_domain_count", &device_locality_domain_count, py::arg("device"),
        "The device's locality-domain count (driver 13.4+); makes no context.");
  m.def("current_context", [] { return reinterpret_cast<std::uintptr_t>(current_context()); },
        "The calling thread's current CUDA context (0: none), as an integer handle.");
  m.def("current_device", &torch_bridge::current_device);
  m.def(
      "resolve_device",
      [](std::optional<long long> device) { return resolve_device(device, torch_bridge::host().current_device); },
      py::arg("device").none(true),
        "`device`, or PyTorch's current device when None; RuntimeError when the driver sees no such device.");

  m.def("live_counts", [] {
    LiveCounts counts = live_counts();
    py::dict result;
    result["contexts"] = counts.contexts;
    result["internal_contexts"] = counts.internal_contexts;
    result["streams"] = counts.streams;
    result["idle_contexts"] = counts.idle_contexts;
    result["idle_streams"] = counts.idle_streams;
    return result;
  });
  m.def("release_idle_contexts", &release_idle_contexts, py::call_guard<py::gil_scoped_release>());
  m.def("idle_context_limit", &idle_context_limit);
  m.def("set_idle_context_limit", &set_idle_context_limit, py::arg("limit"), py::call_guard<py::gil_scoped_release>());
  m.attr("IDLE_LIMIT_ENV") = idle_limit_env();
  m.def("check_idle_limit_env", &check_idle_limit_env,
        "ValueError when IDLE_LIMIT_ENV is set to anything but a whole number a size_t holds.");
}

}  // namespace tgc::python
