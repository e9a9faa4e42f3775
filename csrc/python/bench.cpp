// torch_green_contexts._bench: the raw driver calls behind the public calls, timed in C++, for
// benchmarks/ to compare against. Not part of the package's _C; built only on request
// (TORCH_GREEN_CONTEXTS_BENCHMARKS=1, see setup.py). The driver calls run with the GIL released.
#include <pybind11/pybind11.h>

#include <cstdint>
#include <tuple>

#include "bench/driver_baseline.h"

namespace py = pybind11;

PYBIND11_MODULE(_bench, m) {
  m.doc() = "torch_green_contexts benchmark baselines";
  // (create_ns, destroy_ns, split_ns)
  auto as_tuple = [](const tgc::bench::Timing& t) { return std::make_tuple(t.create_ns, t.destroy_ns, t.split_ns); };
  m.def(
      "raw_create",
      [as_tuple](int device, unsigned min_sms, bool bare) {
        return as_tuple(tgc::bench::raw_create(device, min_sms, bare));
      },
      py::arg("device"), py::arg("min_sms"), py::arg("bare") = false, py::call_guard<py::gil_scoped_release>());
  m.def(
      "raw_split_create",
      [as_tuple](int device, unsigned first_sms, bool concurrently) {
        return as_tuple(tgc::bench::raw_split_create(device, first_sms, concurrently));
      },
      py::arg("device"), py::arg("first_sms"), py::arg("concurrently") = false,
      py::call_guard<py::gil_scoped_release>());
  m.def(
      "raw_stream_create",
      [as_tuple](std::uintptr_t green_ctx, int priority) {
        return as_tuple(tgc::bench::raw_stream_create(green_ctx, priority));
      },
      py::arg("green_ctx"), py::arg("priority") = 0, py::call_guard<py::gil_scoped_release>());
}
