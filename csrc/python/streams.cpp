// Streams: GreenContext.Stream()'s torch streams, the fences that order streams of several
// contexts, the SM count of a stream, and the SM probe kernel.
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "bindings.h"
#include "core/green_context.h"
#include "core/sm_probe.h"
#include "core/stream_fence.h"
#include "core/stream_sm_count.h"
#include "torch/torch_bridge.h"

namespace tgc::python {

namespace {

// What GreenContext.Stream() builds its result from, set once by the Python shim: the Python
// class of the streams (a torch.cuda.Stream subclass) and torch's compiled stream constructor.
// Never destroyed: it may be used until the interpreter is gone.
struct StreamFactory {
  py::object stream_class;
  py::object base_new;
};
StreamFactory& stream_factory() {
  static auto* factory = new StreamFactory();
  return *factory;
}

}  // namespace

py::object new_torch_stream(const py::object& context, int priority) {
  auto& green = context.cast<GreenContext&>();
  const StreamFactory& factory = stream_factory();
  if (!factory.base_new) throw std::runtime_error("_C._set_stream_factory was not called");
  auto [stream_id, device_index, device_type] = torch_bridge::stream_triple(green.stream(priority), green.device());
  // torch's constructor with the packed stream, priority 0 positionally first.
  py::object stream = factory.base_new(factory.stream_class, 0, stream_id, device_index, device_type);
  stream.attr("_green_context") = context;
  return stream;
}

void bind_streams(py::module_& m) {
  m.def(
      "_set_stream_factory",
      [](py::object stream_class, py::object base_new) {
        stream_factory() = StreamFactory{std::move(stream_class), std::move(base_new)};
      },
      py::arg("stream_class"), py::arg("base_new"),
      "The class of GreenContext.Stream()'s streams and torch's compiled stream constructor.");

  // Orders streams of green contexts after others without the host waiting (layout switches).
  py::class_<StreamFence, std::shared_ptr<StreamFence>>(m, "_StreamFence")
      .def(py::init([](const std::vector<std::pair<std::shared_ptr<GreenContext>, std::uintptr_t>>& streams) {
             std::vector<StreamFence::Member> members;
             members.reserve(streams.size());
             for (const auto& [context, handle] : streams) {
               members.push_back({context, reinterpret_cast<abi::CUstream>(handle)});
             }
             py::gil_scoped_release release;  // pushes contexts to make the events
             return std::make_shared<StreamFence>(std::move(members));
           }),
           py::arg("streams"))
      .def("order_after", &StreamFence::order_after, py::arg("before"))
      .def("order_each_after", &StreamFence::order_each_after, py::arg("before"))
      .def_property_readonly("size", &StreamFence::size)
      .def_property_readonly("device", &StreamFence::device);
  m.def("live_fence_events", &live_fence_events, "Events held by all _StreamFences, for leak checks.");

  m.def(
      "stream_sm_count",
      [](std::uintptr_t stream, int device) { return stream_sm_count(reinterpret_cast<abi::CUstream>(stream), device); },
      py::arg("stream"), py::arg("device"));
  m.def("current_stream_sm_count", [] {
    auto [stream, device] = torch_bridge::current_stream();
    return stream_sm_count(stream, device);
  });
  m.def("remembered_green_contexts", &remembered_green_contexts);
  m.def(
      "launch_sm_probe",
      [](std::uintptr_t stream, std::uintptr_t sm_ids, unsigned blocks, unsigned threads, unsigned long long spin_ns) {
        launch_sm_probe(reinterpret_cast<abi::CUstream>(stream), static_cast<abi::CUdeviceptr>(sm_ids), blocks,
                        threads, spin_ns);
      },
      py::arg("stream"), py::arg("sm_ids"), py::arg("blocks"), py::arg("threads"), py::arg("spin_ns"));
}

}  // namespace tgc::python
