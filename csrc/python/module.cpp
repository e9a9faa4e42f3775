#include "bindings.h"

PYBIND11_MODULE(_C, m) {
  m.doc() = "torch_green_contexts native core";
  tgc::python::bind_errors(m);
  tgc::python::bind_partitions(m);
  tgc::python::bind_contexts(m);
  tgc::python::bind_streams(m);
  tgc::python::bind_driver(m);
  tgc::python::bind_memory(m);
}
