//===- RuntimeBindings.h - Launching kernels from Python ------*- C++ -*-===//
//
// mosaic_gpu._mosaic's bindings of runtime/ (the CUDA-driver runtime):
// device memory and loading and launching a compiled kernel. Built only when
// runtime/ is (cuda.h found); documented in python/README.md.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_PYTHON_RUNTIMEBINDINGS_H
#define MOSAIC_PYTHON_RUNTIMEBINDINGS_H

#include <pybind11/pybind11.h>

namespace mosaic::python {

/// Adds DeviceMemory, LoadedKernel, cuda_driver_version and driver_library
/// to `m`.
void registerRuntime(pybind11::module_ &m);

} // namespace mosaic::python

#endif // MOSAIC_PYTHON_RUNTIMEBINDINGS_H
