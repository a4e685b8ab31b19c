//===- DriverPeer.cpp - Peer context memory access ------------------------===//
//
// cuda.h's peer context memory access: any two different devices of the
// emulator are peers (one NVLink domain). Enabling access from the current
// context to a peer context lets kernels of the current context's device
// reach every block of the peer's device (DeviceMemory::setPeerAccess).
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

using namespace mosaic::emulator;
using namespace mosaic::emulator::driver;

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuDeviceCanAccessPeer(int *canAccessPeer,
                                                         CUdevice dev,
                                                         CUdevice peerDev) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(requireDevice(__func__, dev));
  MOSAIC_EMU_TRY(requireDevice(__func__, peerDev));
  MOSAIC_EMU_TRY(nonNull(__func__, canAccessPeer, "canAccessPeer"));
  *canAccessPeer = dev != peerDev;
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI
cuDeviceGetP2PAttribute(int *value, CUdevice_P2PAttribute attrib,
                        CUdevice srcDevice, CUdevice dstDevice) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(requireDevice(__func__, srcDevice));
  MOSAIC_EMU_TRY(requireDevice(__func__, dstDevice));
  MOSAIC_EMU_TRY(nonNull(__func__, value, "value"));
  if (srcDevice == dstDevice)
    return fail(CUDA_ERROR_INVALID_DEVICE, __func__,
                "`srcDevice` and `dstDevice` are both device " +
                    std::to_string(srcDevice) +
                    ": P2P attributes describe two different devices");
  switch (attrib) {
  case CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK:
    *value = 0;
    return CUDA_SUCCESS;
  case CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED:
  case CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED:
    *value = 1;
    return CUDA_SUCCESS;
  case CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED:
    // The emulator has no CUDA arrays.
  case CU_DEVICE_P2P_ATTRIBUTE_ONLY_PARTIAL_NATIVE_ATOMIC_SUPPORTED:
    // All of them are.
    *value = 0;
    return CUDA_SUCCESS;
  default:
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "P2P attribute " + std::to_string(int(attrib)) +
                    " is not modelled by the emulator");
  }
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuCtxEnablePeerAccess(CUcontext peerContext,
                                                         unsigned int Flags) {
  Lock lock(state().mutex);
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  Context *peer = nullptr;
  MOSAIC_EMU_TRY(findContext(__func__, peerContext, peer));
  if (Flags != 0)
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "`Flags` must be 0, not " + std::to_string(Flags));
  if (peer->device == context->device)
    return fail(CUDA_ERROR_INVALID_DEVICE, __func__,
                "the peer context is on device " +
                    std::to_string(peer->device) +
                    ", the current context's own device");
  if (!context->peers.insert(peer).second)
    return fail(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, __func__,
                "the current context (device " +
                    std::to_string(context->device) +
                    ") already has access to the peer context (device " +
                    std::to_string(peer->device) + ")");
  updatePeerAccess();
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI
cuCtxDisablePeerAccess(CUcontext peerContext) {
  Lock lock(state().mutex);
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  Context *peer = nullptr;
  MOSAIC_EMU_TRY(findContext(__func__, peerContext, peer));
  if (!context->peers.erase(peer))
    return fail(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, __func__,
                "the current context (device " +
                    std::to_string(context->device) +
                    ") has no access to the peer context (device " +
                    std::to_string(peer->device) +
                    ") to disable (cuCtxEnablePeerAccess)");
  // Launches queued before the call still had access.
  runQueuedWork();
  updatePeerAccess();
  return CUDA_SUCCESS;
}
