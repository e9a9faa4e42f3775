// Device memory per locality domain, and its bytes as a DLPack capsule (compat.flashinfer's
// empty_per_locality_domain makes the tensor of them in Python, with torch.from_dlpack, so that
// the module links nothing of torch but c10).
#include <Python.h>
#include <pybind11/stl.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "bindings.h"
#include "core/localized_memory.h"
#include "torch/torch_bridge.h"

namespace tgc::python {

namespace {

// The DLPack C ABI (dlpack.h) of the unversioned "dltensor" capsule, which torch.from_dlpack
// takes in every torch release the package supports.
struct DLDevice {
  std::int32_t device_type;
  std::int32_t device_id;
};
struct DLDataType {
  std::uint8_t code;
  std::uint8_t bits;
  std::uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  std::int32_t ndim;
  DLDataType dtype;
  std::int64_t* shape;
  std::int64_t* strides;
  std::uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor*);
};
constexpr std::int32_t kDLCUDA = 2;
constexpr std::uint8_t kDLUInt = 1;
constexpr const char* kCapsuleName = "dltensor";

// The bytes of `memory` as a [domains, stride] uint8 tensor; holds the memory until the
// consumer calls the deleter.
struct BytesOfMemory {
  DLManagedTensor managed{};
  std::int64_t shape[2];
  std::int64_t strides[2];
  std::shared_ptr<LocalizedMemory> owner;
};

void release_bytes(DLManagedTensor* managed) { delete static_cast<BytesOfMemory*>(managed->manager_ctx); }

void release_unused_capsule(PyObject* capsule) {
  // A consumer that takes the tensor renames the capsule ("used_dltensor") and calls the deleter.
  if (!PyCapsule_IsValid(capsule, kCapsuleName)) return;
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kCapsuleName));
  managed->deleter(managed);
}

py::object bytes_capsule(const std::shared_ptr<LocalizedMemory>& memory) {
  auto bytes = std::make_unique<BytesOfMemory>();
  bytes->shape[0] = static_cast<std::int64_t>(memory->domains());
  bytes->shape[1] = static_cast<std::int64_t>(memory->stride());
  bytes->strides[0] = static_cast<std::int64_t>(memory->stride());
  bytes->strides[1] = 1;
  bytes->owner = memory;
  DLTensor& tensor = bytes->managed.dl_tensor;
  tensor.data = reinterpret_cast<void*>(memory->address());
  tensor.device = DLDevice{kDLCUDA, static_cast<std::int32_t>(memory->device())};
  tensor.ndim = 2;
  tensor.dtype = DLDataType{kDLUInt, 8, 1};
  tensor.shape = bytes->shape;
  tensor.strides = bytes->strides;
  tensor.byte_offset = 0;
  bytes->managed.manager_ctx = bytes.get();
  bytes->managed.deleter = &release_bytes;
  PyObject* capsule = PyCapsule_New(&bytes->managed, kCapsuleName, &release_unused_capsule);
  if (capsule == nullptr) throw py::error_already_set();
  bytes.release();
  return py::reinterpret_steal<py::object>(capsule);
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
  m.def("bytes_capsule", &bytes_capsule, py::arg("memory"),
        "The memory's bytes as a DLPack capsule of a [domains, stride] uint8 CUDA tensor, which holds the memory.");
  m.def("deferred_localized_releases", &deferred_localized_releases,
        "Releases of memory per locality domain that a stream capture kept waiting.");
}

}  // namespace tgc::python
