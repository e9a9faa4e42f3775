// Python bindings of the core (module torch_green_contexts._C). The public classes live in
// the Python shim; these are the pieces it is built from.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "bench/driver_baseline.h"
#include "core/context_recycler.h"
#include "core/device.h"
#include "core/driver_info.h"
#include "core/errors.h"
#include "core/green_context.h"
#include "core/sm_partition.h"
#include "core/sm_probe.h"
#include "core/split.h"
#include "core/stream_fence.h"
#include "core/stream_sm_count.h"
#include "core/warnings.h"
#include "torch/torch_bridge.h"

namespace py = pybind11;
using namespace tgc;

namespace {

// Drops the last reference to a green context with the GIL released: destroying a context
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

std::shared_ptr<SmPartition> wrap_partition(SmPartition partition) {
  return release_gil_on_destruction(std::make_shared<SmPartition>(std::move(partition)));
}

std::vector<std::shared_ptr<GreenContext>> wrap_contexts(std::vector<std::shared_ptr<GreenContext>> made) {
  for (auto& context : made) context = release_gil_on_destruction(std::move(context));
  return made;
}

using WorkqueueScope = tgc::abi::CUdevWorkqueueConfigScope;

// `device`, or PyTorch's current device when None, checked by the core against the devices the
// driver sees (the driver asked first: without one, its error comes before PyTorch's).
int resolve_device(std::optional<long long> device) {
  if (device) return check_device(*device);
  device_count();
  return check_device(torch_bridge::current_device());
}

std::optional<WorkqueueConfig> workqueue_config(std::optional<WorkqueueScope> scope,
                                                std::optional<unsigned> limit) {
  if (!scope) return std::nullopt;
  return WorkqueueConfig{*scope, limit};
}

// torch_green_contexts.DriverError (defined in Python, so that it documents and types itself),
// looked up once; never released, as exception types live as long as the interpreter.
PyObject* driver_error_type() {
  static PyObject* type =
      py::object(py::module_::import("torch_green_contexts._errors").attr("DriverError")).release().ptr();
  return type;
}

// Raises `error` as torch_green_contexts.DriverError with its call, code and name as attributes
// and its message unchanged; as a plain RuntimeError should making that exception fail.
void set_driver_error(const tgc::DriverError& error) {
  try {
    py::object exception = py::reinterpret_borrow<py::object>(driver_error_type())(
        py::str(error.what()), error.call(), error.code(), error.name());
    PyErr_SetObject(driver_error_type(), exception.ptr());
  } catch (const py::error_already_set&) {
    PyErr_SetString(PyExc_RuntimeError, error.what());
  }
}

void route_warnings_to_python() {
  set_warning_handler([](const std::string& message) {
    if (!Py_IsInitialized()) throw std::runtime_error("interpreter gone");
    py::gil_scoped_acquire gil;
    if (PyErr_WarnEx(PyExc_RuntimeWarning, message.c_str(), 1) != 0) PyErr_Clear();
  });
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "torch_green_contexts native core";

  py::register_exception_translator([](std::exception_ptr error) {
    try {
      if (error) std::rethrow_exception(error);
    } catch (const tgc::TypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const tgc::ValueError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const tgc::DriverError& e) {
      set_driver_error(e);
    }
  });
  driver_error_type();  // imported now: a translator should not be the first to import
  route_warnings_to_python();

  py::enum_<WorkqueueScope>(m, "WorkqueueScope")
      .value("device_ctx", tgc::abi::CU_WORKQUEUE_SCOPE_DEVICE_CTX)
      .value("balanced", tgc::abi::CU_WORKQUEUE_SCOPE_GREEN_CTX_BALANCED);
  m.def(
      "workqueue_scope",
      [](const py::handle& value) {
        if (!py::isinstance<py::str>(value)) throw unknown_workqueue_scope(py::repr(value).cast<std::string>());
        return workqueue_scope_named(value.cast<std::string>());
      },
      py::arg("value"), "The WorkqueueScope a workqueue_scope argument names; ValueError for any other value.");
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
            std::vector<std::shared_ptr<SmPartition>> out;
            for (SmPartition& group : result.groups) out.push_back(wrap_partition(std::move(group)));
            std::shared_ptr<SmPartition> remainder;
            if (result.remainder) remainder = wrap_partition(std::move(*result.remainder));
            return py::make_tuple(out, remainder);
          },
          py::arg("requests"), py::arg("path") = SplitPath::kAuto);

  py::class_<GreenContext, std::shared_ptr<GreenContext>>(m, "_GreenContext")
      .def_static(
          "create",
          // A context on `sm_partition` (on its device, which `device` must name when given), on
          // the smallest partition of at least `num_sms` SMs, or on the whole device.
          [](std::optional<long long> device, const SmPartition* sm, std::optional<WorkqueueScope> scope,
             std::optional<unsigned> limit, std::optional<long long> num_sms) {
            auto workqueue = workqueue_config(scope, limit);
            std::shared_ptr<GreenContext> context;
            {
              py::gil_scoped_release release;
              if (sm != nullptr && device) check_partition_device(*sm, *device);
              const int ordinal = sm != nullptr ? sm->device() : resolve_device(device);
              std::optional<SmPartition> at_least;
              if (num_sms) sm = &at_least.emplace(partition_with_at_least(ordinal, *num_sms));
              torch_bridge::ensure_primary_context(ordinal);
              context = GreenContext::create(ordinal, sm, workqueue);
            }
            return release_gil_on_destruction(std::move(context));
          },
          py::arg("device").none(true), py::arg("sm_partition").none(true), py::arg("workqueue_scope").none(true),
          py::arg("workqueue_concurrency_limit").none(true), py::arg("num_sms").none(true) = py::none())
      .def_static(
          "create_all",
          [](int device, const std::vector<std::shared_ptr<SmPartition>>& partitions,
             std::optional<WorkqueueScope> scope, std::optional<unsigned> limit) {
            auto workqueue = workqueue_config(scope, limit);
            std::vector<const SmPartition*> raw;
            for (const auto& partition : partitions) raw.push_back(partition.get());
            std::vector<std::shared_ptr<GreenContext>> made;
            {
              py::gil_scoped_release release;
              torch_bridge::ensure_primary_context(device);
              made = GreenContext::create_all(device, raw, workqueue);
            }
            return wrap_contexts(std::move(made));
          },
          py::arg("device"), py::arg("sm_partitions"), py::arg("workqueue_scope").none(true),
          py::arg("workqueue_concurrency_limit").none(true))
      // GreenContext.split: from the requests to the contexts, the partitions never leaving C++.
      .def_static(
          "split",
          [](std::optional<long long> device, const std::vector<GroupRequest>& requests,
             std::optional<WorkqueueScope> scope, std::optional<unsigned> limit, SplitPath path) {
            check_group_list(requests);  // needs no driver: before the device is looked up
            auto workqueue = workqueue_config(scope, limit);
            std::vector<std::shared_ptr<GreenContext>> made;
            {
              py::gil_scoped_release release;
              const int ordinal = resolve_device(device);
              torch_bridge::ensure_primary_context(ordinal);
              made = GreenContext::create_split(ordinal, requests, workqueue, path);
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
           [](const std::shared_ptr<GreenContext>& self) {
             return wrap_partition(GreenContext::sm_partition(self));
           })
      .def(
          "stream",
          [](GreenContext& self, int priority) {
            tgc::abi::CUstream stream = self.stream(priority);
            return torch_bridge::stream_triple(stream, self.device());
          },
          py::arg("priority") = 0)
      // The whole of GreenContext.Stream() in one call: the pooled stream, wrapped as the shim's
      // stream class (torch's constructor with the packed stream, priority 0 positionally
      // first), holding this context.
      .def(
          "new_stream",
          [](const py::object& self, int priority) {
            auto& context = self.cast<GreenContext&>();
            const StreamFactory& factory = stream_factory();
            if (!factory.base_new) throw std::runtime_error("_C._set_stream_factory was not called");
            auto [stream_id, device_index, device_type] =
                torch_bridge::stream_triple(context.stream(priority), context.device());
            py::object stream = factory.base_new(factory.stream_class, 0, stream_id, device_index, device_type);
            stream.attr("_green_context") = self;
            return stream;
          },
          py::arg("priority") = 0)
      .def_property_readonly("stream_count", &GreenContext::stream_count)
      .def("push_current", &GreenContext::push_current)
      .def("pop_current", &GreenContext::pop_current);

  // Orders streams of green contexts after others without the host waiting (layout switches).
  py::class_<StreamFence, std::shared_ptr<StreamFence>>(m, "_StreamFence")
      .def(py::init([](const std::vector<std::pair<std::shared_ptr<GreenContext>, std::uintptr_t>>& streams) {
             std::vector<StreamFence::Member> members;
             members.reserve(streams.size());
             for (const auto& [context, handle] : streams) {
               members.push_back({context, reinterpret_cast<tgc::abi::CUstream>(handle)});
             }
             py::gil_scoped_release release;  // pushes contexts to make the events
             return std::make_shared<StreamFence>(std::move(members));
           }),
           py::arg("streams"))
      // Never blocks: a few driver calls that only queue waits. Kept with the GIL, as cheap as can be.
      .def("order_after", &StreamFence::order_after, py::arg("before"))
      .def("order_each_after", &StreamFence::order_each_after, py::arg("before"))
      .def_property_readonly("size", &StreamFence::size)
      .def_property_readonly("device", &StreamFence::device);
  m.def("live_fence_events", &live_fence_events, "Events held by all _StreamFences, for leak checks.");
  m.def(
      "_set_stream_factory",
      [](py::object stream_class, py::object base_new) {
        stream_factory() = StreamFactory{std::move(stream_class), std::move(base_new)};
      },
      py::arg("stream_class"), py::arg("base_new"),
      "The class of GreenContext.Stream()'s streams and torch's compiled stream constructor.");

  m.def(
      "partition_with_at_least",
      [](int device, long long min_sms) { return wrap_partition(partition_with_at_least(device, min_sms)); },
      py::arg("device"), py::arg("min_sms"));
  m.def(
      "groups_that_fit",
      [](int device, unsigned min_sms) { return groups_that_fit(SmPartition::from_device(device), min_sms); },
      py::arg("device"), py::arg("min_sms"));
  m.def("native_split_available", [] { return native_split_available_path() == SplitPath::kNative; });
  m.def(
      "launch_sm_probe",
      [](std::uintptr_t stream, std::uintptr_t sm_ids, unsigned blocks, unsigned threads,
         unsigned long long spin_ns) {
        launch_sm_probe(reinterpret_cast<tgc::abi::CUstream>(stream), static_cast<tgc::abi::CUdeviceptr>(sm_ids),
                        blocks, threads, spin_ns);
      },
      py::arg("stream"), py::arg("sm_ids"), py::arg("blocks"), py::arg("threads"), py::arg("spin_ns"));
  m.def("driver_version", &loaded_driver_version,
        "The CUDA driver's version (e.g. 13000). RuntimeError if no driver can be used.");
  m.def("installed_driver_version", &installed_driver_version,
        "The installed driver's version without initialising CUDA; 0 if none is installed.");
  m.def("driver_library", &loaded_driver_library);
  m.def("driver_initialized", &driver_initialized,
        "Whether the driver is initialised in this process (by anyone), asked without initialising it.");
  m.def("format_driver_version", &format_driver_version);
  m.def("device_count", &device_count);
  m.def("device_sm_count", &device_sm_count, py::arg("device"));
  m.def("current_context", [] { return reinterpret_cast<std::uintptr_t>(current_context()); },
        "The calling thread's current CUDA context (0: none), as an integer handle.");
  m.def("compute_capability", [](int device) {
    ComputeCapability cc = device_compute_capability(device);
    return py::make_tuple(cc.major, cc.minor);
  });
  m.def("locality_domain_count", &device_locality_domain_count, py::arg("device"),
        "The device's locality-domain count (driver 13.4+); makes no context.");
  // Per kernel launch: kept with the GIL, a few driver queries that never wait.
  m.def(
      "stream_sm_count",
      [](std::uintptr_t stream, int device) { return stream_sm_count(reinterpret_cast<tgc::abi::CUstream>(stream), device); },
      py::arg("stream"), py::arg("device"));
  m.def("current_stream_sm_count", [] {
    auto [stream, device] = torch_bridge::current_stream();
    return stream_sm_count(stream, device);
  });
  m.def("remembered_green_contexts", &remembered_green_contexts);
  m.def("max_workqueue_concurrency", &GreenContext::max_workqueue_concurrency, py::arg("device"));
  m.def("current_device", &torch_bridge::current_device);
  m.def("resolve_device", &resolve_device, py::arg("device").none(true),
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
  m.def(
      "release_idle_contexts", [] { ContextRecycler::instance().release_all(); },
      py::call_guard<py::gil_scoped_release>());
  m.def("idle_context_limit", [] { return ContextRecycler::instance().limit(); });
  m.def(
      "set_idle_context_limit", [](std::size_t limit) { ContextRecycler::instance().set_limit(limit); },
      py::arg("limit"), py::call_guard<py::gil_scoped_release>());
  m.attr("IDLE_LIMIT_ENV") = idle_limit_env();
#ifdef TGC_BUILT_AGAINST_TORCH
  m.attr("BUILT_AGAINST_TORCH") = TGC_BUILT_AGAINST_TORCH;
#endif
  m.def("entry_points", [] {
    py::dict result;
    for (const EntryPointStatus& entry : entry_point_status()) {
      result[py::str(entry.name)] = py::make_tuple(entry.present, entry.since);
    }
    return result;
  });

  // Baselines for benchmarks/: the raw driver calls behind the public calls, timed in C++.
  py::module_ bench = m.def_submodule("_bench");
  // (create_ns, destroy_ns, split_ns); the driver calls run with the GIL released.
  auto as_tuple = [](const bench::Timing& t) { return std::make_tuple(t.create_ns, t.destroy_ns, t.split_ns); };
  bench.def(
      "raw_create",
      [as_tuple](int device, unsigned min_sms, bool bare) { return as_tuple(bench::raw_create(device, min_sms, bare)); },
      py::arg("device"), py::arg("min_sms"), py::arg("bare") = false, py::call_guard<py::gil_scoped_release>());
  bench.def(
      "raw_split_create",
      [as_tuple](int device, unsigned first_sms, bool concurrently) {
        return as_tuple(bench::raw_split_create(device, first_sms, concurrently));
      },
      py::arg("device"), py::arg("first_sms"), py::arg("concurrently") = false,
      py::call_guard<py::gil_scoped_release>());
  bench.def(
      "raw_stream_create",
      [as_tuple](std::uintptr_t green_ctx, int priority) { return as_tuple(bench::raw_stream_create(green_ctx, priority)); },
      py::arg("green_ctx"), py::arg("priority") = 0);

  py::module_ versions = m.def_submodule("feature_version");
  versions.attr("green_contexts") = feature_version::kGreenContexts;
  versions.attr("green_context_streams") = feature_version::kGreenContextStreams;
  versions.attr("native_split") = feature_version::kNativeSplit;
  versions.attr("workqueues") = feature_version::kWorkqueues;
  versions.attr("locality_domains") = feature_version::kLocalityDomains;
  m.attr("DRIVER_LIBRARY_ENV") = driver_library_env();
}
