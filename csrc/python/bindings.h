// The Python bindings of the core (module torch_green_contexts._C), one file per area; the
// public classes live in the Python shim, and these are the pieces it is built from.
//
// The GIL rule: every binding that can block in the driver (creating or destroying contexts,
// splitting, synchronising streams) releases the GIL around the core call, and the last
// reference to a context or partition is dropped with it released (release_gil_on_destruction).
// Calls that only ask the driver something, queue work or read a cached value keep it.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <utility>

#include "core/sm_partition.h"

namespace tgc::python {

namespace py = pybind11;

void bind_errors(py::module_& m);
void bind_partitions(py::module_& m);
void bind_contexts(py::module_& m);
void bind_streams(py::module_& m);
void bind_driver(py::module_& m);
void bind_memory(py::module_& m);

// GreenContext.Stream(): a pooled stream of the context `context` (a _GreenContext) as the
// shim's stream class, holding the context (streams.cpp).
py::object new_torch_stream(const py::object& context, int priority);

// `inner`, whose last reference is dropped with the GIL released: destroying a context
// synchronises its streams, which can take as long as the work queued on them.
template <typename T>
std::shared_ptr<T> release_gil_on_destruction(std::shared_ptr<T> inner) {
  T* raw = inner.get();
  return std::shared_ptr<T>(raw, [inner = std::move(inner)](T*) mutable {
    if (Py_IsInitialized() && PyGILState_Check()) {
      py::gil_scoped_release release;
      inner.reset();
    } else {
      inner.reset();
    }
  });
}

inline std::shared_ptr<SmPartition> wrap_partition(SmPartition partition) {
  return release_gil_on_destruction(std::make_shared<SmPartition>(std::move(partition)));
}

}  // namespace tgc::python
