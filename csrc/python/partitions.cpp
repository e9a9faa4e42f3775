// SM partitions and their splits.
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <vector>

#include "bindings.h"
#include "core/split.h"

namespace tgc::python {

void bind_partitions(py::module_& m) {
  py::enum_<SplitPath>(m, "SplitPath")
      .value("auto", SplitPath::kAuto)
      .value("native", SplitPath::kNative)
      .value("emulated", SplitPath::kEmulated);
  py::class_<GroupRequest>(m, "GroupRequest")
      .def(py::init([](unsigned sm_count, unsigned coscheduled_sm_count, unsigned preferred_coscheduled_sm_count,
                       bool backfill, std::optional<unsigned> locality_domain_id) {
             return GroupRequest{sm_count, coscheduled_sm_count, preferred_coscheduled_sm_count, backfill,
                                 locality_domain_id};
           }),
           py::arg("sm_count") = 0, py::arg("coscheduled_sm_count") = 0, py::arg("preferred_coscheduled_sm_count") = 0,
           py::arg("backfill") = false, py::arg("locality_domain_id") = py::none())
      .def_readonly("sm_count", &GroupRequest::sm_count)
      .def_readonly("coscheduled_sm_count", &GroupRequest::coscheduled_sm_count)
      .def_readonly("preferred_coscheduled_sm_count", &GroupRequest::preferred_coscheduled_sm_count)
      .def_readonly("backfill", &GroupRequest::backfill)
      .def_readonly("locality_domain_id", &GroupRequest::locality_domain_id);

  py::class_<SmPartition, std::shared_ptr<SmPartition>>(m, "_SmPartition")
      .def_static(
          "from_device", [](int device) { return wrap_partition(SmPartition::from_device(device)); },
          py::arg("device"))
      .def_property_readonly("device", &SmPartition::device)
      .def_property_readonly("sm_count", &SmPartition::sm_count)
      .def_property_readonly("coscheduled_sm_count", &SmPartition::coscheduled_sm_count)
      .def_property_readonly("min_partition_size", &SmPartition::min_partition_size)
      .def_property_readonly("split_granularity", &SmPartition::split_granularity)
      .def_property_readonly("locality_domain_id", &SmPartition::locality_domain_id)
      .def_property_readonly("splittable", &SmPartition::splittable)
      .def_static(
          "union",
          [](const std::vector<std::shared_ptr<SmPartition>>& parts) {
            std::vector<const SmPartition*> raw;
            for (const auto& part : parts) raw.push_back(part.get());
            std::optional<SmPartition> combined;
            {
              py::gil_scoped_release release;
              combined.emplace(SmPartition::combine(raw));
            }
            return wrap_partition(std::move(*combined));
          },
          py::arg("parts"))
      .def(
          "split",
          [](const SmPartition& self, const std::vector<GroupRequest>& requests, SplitPath path) {
            SplitResult result;
            {
              py::gil_scoped_release release;
              result = split(self, requests, path);
            }
            std::vector<std::shared_ptr<SmPartition>> groups;
            for (SmPartition& group : result.groups) groups.push_back(wrap_partition(std::move(group)));
            std::shared_ptr<SmPartition> remainder;
            if (result.remainder) remainder = wrap_partition(std::move(*result.remainder));
            return py::make_tuple(groups, remainder);
          },
          py::arg("requests"), py::arg("path") = SplitPath::kAuto);

  m.def(
      "groups_that_fit",
      [](int device, unsigned min_sms) {
        py::gil_scoped_release release;
        return groups_that_fit(SmPartition::from_device(device), min_sms);
      },
      py::arg("device"), py::arg("min_sms"));
  m.def("native_split_available", [] { return native_split_available_path() == SplitPath::kNative; });
}

}  // namespace tgc::python
