//===- JaxFfi.h - Kernels as XLA FFI calls --------------------*- C++ -*-===//
//
// The XLA FFI handlers through which mosaic_gpu.to_jax runs kernels inside
// XLA programs (JaxFfi.cpp), as C symbols of the XLA FFI handler type. The
// extension hands them to JAX as capsules (`jax_ffi_handlers`). Built only
// when runtime/ is and jaxlib's FFI headers are found
// (MOSAIC_JAX_FFI_INCLUDE_DIR); documented in python/README.md ("JAX
// functions").
//
// Both take the attributes `inputs` (the kernel's input count, an i64) and
// `manifest` (the path of a compiled kernel's manifest); as arguments the
// kernel's inputs, then the initial values of outputs that have them (each
// aliased to its output); as results the kernel's outputs.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_PYTHON_JAXFFI_H
#define MOSAIC_PYTHON_JAXFFI_H

extern "C" {
struct XLA_FFI_CallFrame;
struct XLA_FFI_Error;

/// The CUDA platform's: launches on XLA's stream over XLA's buffers and
/// returns without waiting.
XLA_FFI_Error *MosaicGpuJaxKernelCuda(XLA_FFI_CallFrame *callFrame);

/// The host platform's: runs the kernel on the PTX emulator over copies of
/// XLA's host buffers, and waits for it.
XLA_FFI_Error *MosaicGpuJaxKernelHost(XLA_FFI_CallFrame *callFrame);
}

#endif // MOSAIC_PYTHON_JAXFFI_H
