// The core's exceptions as Python ones: the package's own types (defined in Python, in
// torch_green_contexts._errors, so that they document and type themselves) with the facts the
// core keeps apart as attributes; the rest as the built-in types the contract names.
#include <pybind11/stl.h>

#include <exception>
#include <string>

#include "bindings.h"
#include "core/errors.h"
#include "core/warnings.h"

namespace tgc::python {

namespace {

// The exception class `name` of torch_green_contexts._errors, looked up once; never released,
// as exception types live as long as the interpreter.
PyObject* package_error(const char* name) {
  return py::object(py::module_::import("torch_green_contexts._errors").attr(name)).release().ptr();
}

struct PackageErrors {
  PyObject* driver = package_error("DriverError");
  PyObject* feature = package_error("FeatureUnavailableError");
  PyObject* split = package_error("SplitError");
};

const PackageErrors& package_errors() {
  static const PackageErrors* errors = new PackageErrors();
  return *errors;
}

// Raises `type(message, *attributes)`; `fallback` with the message should making it fail.
void raise_as(PyObject* type, PyObject* fallback, const std::exception& error, const py::tuple& attributes) {
  try {
    py::tuple args(attributes.size() + 1);
    args[0] = py::str(error.what());
    for (std::size_t i = 0; i < attributes.size(); ++i) args[i + 1] = attributes[i];
    py::object exception = py::reinterpret_borrow<py::object>(type)(*args);
    PyErr_SetObject(type, exception.ptr());
  } catch (const py::error_already_set&) {
    PyErr_SetString(fallback, error.what());
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

void bind_errors(py::module_& m) {
  py::register_exception_translator([](std::exception_ptr error) {
    try {
      if (error) std::rethrow_exception(error);
    } catch (const TypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const SplitError& e) {
      py::object group = e.group() ? py::object(py::int_(*e.group())) : py::object(py::none());
      raise_as(package_errors().split, PyExc_ValueError, e,
               py::make_tuple(group, e.sm_count(), py::cast(e.nearest_counts())));
    } catch (const ValueError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const DriverError& e) {
      raise_as(package_errors().driver, PyExc_RuntimeError, e, py::make_tuple(e.call(), e.code(), e.name()));
    } catch (const FeatureUnavailableError& e) {
      raise_as(package_errors().feature, PyExc_RuntimeError, e,
               py::make_tuple(e.feature(), e.needed_version(), e.found_version()));
    }
  });
  package_errors();  // imported now: a translator should not be the first to import
  route_warnings_to_python();
  m.def("format_driver_version", &format_driver_version);
}

}  // namespace tgc::python
