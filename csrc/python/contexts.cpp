// Green contexts: made from a partition, a count or a split; their partitions, streams and
// context stack.
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <variant>
#include <vector>

#include "bindings.h"
#include "core/green_context.h"
#include "core/workqueue.h"
#include "torch/torch_bridge.h"

namespace tgc::python {

namespace {

using WorkqueueScope = abi::CUdevWorkqueueConfigScope;

std::optional<WorkqueueConfig> workqueue_config(std::optional<WorkqueueScope> scope, std::optional<unsigned> limit) {
  if (!scope) return std::nullopt;
  return WorkqueueConfig{*scope, limit};
}

std::vector<std::shared_ptr<GreenContext>> wrap_contexts(std::vector<std::shared_ptr<GreenContext>> made) {
  for (auto& context : made) context = release_gil_on_destruction(std::move(context));
  return made;
}

std::vector<const SmPartition*> raw(const std::vector<std::shared_ptr<SmPartition>>& partitions) {
  std::vector<const SmPartition*> out;
  for (const auto& partition : partitions) out.push_back(partition.get());
  return out;
}

}  // namespace

void bind_contexts(py::module_& m) {
  py::enum_<WorkqueueScope>(m, "WorkqueueScope")
      .value("device_ctx", abi::CU_WORKQUEUE_SCOPE_DEVICE_CTX)
      .value("balanced", abi::CU_WORKQUEUE_SCOPE_GREEN_CTX_BALANCED);
  m.def(
      "workqueue_scope",
      [](const py::handle& value) {
        if (!py::isinstance<py::str>(value)) throw unknown_workqueue_scope(py::repr(value).cast<std::string>());
        return workqueue_scope_named(value.cast<std::string>());
      },
      py::arg("value"), "The WorkqueueScope a workqueue_scope argument names; ValueError for any other value.");

  py::class_<GreenContext, std::shared_ptr<GreenContext>>(m, "_GreenContext")
      // GreenContext(...): `sms` is the sm_partition, a num_sms count, or None for the whole device.
      .def_static(
          "create",
          [](std::optional<long long> device, std::optional<std::variant<std::shared_ptr<SmPartition>, long long>> sms,
             std::optional<WorkqueueScope> scope, std::optional<unsigned> limit) {
            GreenContext::Request request{device, GreenContext::WholeDevice{}, workqueue_config(scope, limit)};
            if (sms) {
              if (const auto* partition = std::get_if<std::shared_ptr<SmPartition>>(&*sms)) {
                request.sms = partition->get();
              } else {
                request.sms = GreenContext::AtLeast{std::get<long long>(*sms)};
              }
            }
            std::shared_ptr<GreenContext> context;
            {
              py::gil_scoped_release release;
              context = GreenContext::create(request, torch_bridge::host());
            }
            return release_gil_on_destruction(std::move(context));
          },
          py::arg("device").none(true), py::arg("sms").none(true), py::arg("workqueue_scope").none(true),
          py::arg("workqueue_concurrency_limit").none(true))
      .def_static(
          "create_all",
          [](int device, const std::vector<std::shared_ptr<SmPartition>>& partitions,
             std::optional<WorkqueueScope> scope, std::optional<unsigned> limit) {
            std::vector<std::shared_ptr<GreenContext>> made;
            {
              py::gil_scoped_release release;
              made = GreenContext::create_all(device, raw(partitions), workqueue_config(scope, limit),
                                              torch_bridge::host());
            }
            return wrap_contexts(std::move(made));
          },
          py::arg("device"), py::arg("sm_partitions"), py::arg("workqueue_scope").none(true),
          py::arg("workqueue_concurrency_limit").none(true))
      // GreenContext.split: from the requests to the contexts, the partitions never leaving C++.
      .def_static(
          "create_split",
          [](std::optional<long long> device, const std::vector<GroupRequest>& requests,
             std::optional<WorkqueueScope> scope, std::optional<unsigned> limit, SplitPath path) {
            std::vector<std::shared_ptr<GreenContext>> made;
            {
              py::gil_scoped_release release;
              made = GreenContext::create_split(device, requests, workqueue_config(scope, limit), path,
                                                torch_bridge::host());
            }
            return wrap_contexts(std::move(made));
          },
          py::arg("device").none(true), py::arg("requests"), py::arg("workqueue_scope").none(true),
          py::arg("workqueue_concurrency_limit").none(true), py::arg("path") = SplitPath::kAuto)
      .def_property_readonly("device", &GreenContext::device)
      .def_property_readonly("sm_count", &GreenContext::sm_count)
      .def_property_readonly("locality_domain_id", &GreenContext::locality_domain_id)
      .def_property_readonly("handle",
                             [](const GreenContext& c) { return reinterpret_cast<std::uintptr_t>(c.handle()); })
      .def_property_readonly("context_handle",
                             [](const GreenContext& c) { return reinterpret_cast<std::uintptr_t>(c.context()); })
      .def("sm_partition",
           [](const std::shared_ptr<GreenContext>& self) { return wrap_partition(GreenContext::sm_partition(self)); })
      .def(
          "stream",
          [](GreenContext& self, int priority) { return torch_bridge::stream_triple(self.stream(priority), self.device()); },
          py::arg("priority") = 0)
      .def("new_stream", &new_torch_stream, py::arg("priority") = 0)
      .def_property_readonly("stream_count", &GreenContext::stream_count)
      .def("push_current", &GreenContext::push_current)
      .def("pop_current", &GreenContext::pop_current);
  m.def("max_workqueue_concurrency", &GreenContext::max_workqueue_concurrency, py::arg("device"));
}

}  // namespace tgc::python
