// Device memory per locality domain, and PyTorch tensors over it (compat.flashinfer's
// empty_per_locality_domain shapes them).
#include <pybind11/stl.h>
#include <torch/csrc/Dtype.h>
#include <torch/python.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "bindings.h"
#include "core/errors.h"
#include "core/localized_memory.h"
#include "torch/torch_bridge.h"

namespace tgc::python {

namespace {

// A tensor of `dtype` over `memory`, of `sizes` and `strides` (elements), that keeps it alive.
at::Tensor tensor_over(const std::shared_ptr<LocalizedMemory>& memory, const std::vector<std::int64_t>& sizes,
                       const std::vector<std::int64_t>& strides, const py::object& dtype) {
  if (!THPDtype_Check(dtype.ptr())) throw TypeError("dtype must be a torch.dtype");
  const std::size_t bytes = memory->stride() * static_cast<std::size_t>(memory->domains());
  return torch_bridge::tensor_over(memory->address(), bytes, sizes, strides,
                                   reinterpret_cast<THPDtype*>(dtype.ptr())->scalar_type, memory->device(), memory);
}

}  // namespace

void bind_memory(py::module_& m) {
  py::class_<LocalizedMemory, std::shared_ptr<LocalizedMemory>>(m, "_LocalizedMemory")
      .def(py::init([](int device, std::size_t part_bytes) {
             torch_bridge::ensure_primary_context(device);
             py::gil_scoped_release release;
             return release_gil_on_destruction(std::shared_ptr<LocalizedMemory>(LocalizedMemory::allocate(device, part_bytes)));
           }),
           py::arg("device"), py::arg("part_bytes"))
      .def_property_readonly("address", &LocalizedMemory::address)
      .def_property_readonly("stride", &LocalizedMemory::stride)
      .def_property_readonly("domains", &LocalizedMemory::domains)
      .def_property_readonly("device", &LocalizedMemory::device);
  m.def("tensor_over", &tensor_over, py::arg("memory"), py::arg("sizes"), py::arg("strides"), py::arg("dtype"));
  m.def("deferred_localized_releases", &deferred_localized_releases,
        "Releases of memory per locality domain that a stream capture kept waiting.");
}

}  // namespace tgc::python
