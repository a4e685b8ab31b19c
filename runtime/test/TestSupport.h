//===- TestSupport.h - Manifests and helpers the tests share --*- C++ -*-===//

#ifndef MOSAIC_RUNTIME_TEST_TESTSUPPORT_H
#define MOSAIC_RUNTIME_TEST_TESTSUPPORT_H

#include <string>

namespace mosaic::runtime::test {

/// What mosaic-compile writes for examples/elementwise.mlir (ptxas report
/// shortened).
inline const std::string kElementwiseManifest = R"({
  "arch": "sm_90a",
  "block": [128, 1, 1],
  "cluster": [1, 1, 1],
  "cubin": "elementwise.cubin",
  "dynamic_smem_bytes": 0,
  "entry": "elementwise",
  "grid": [128, 1, 1],
  "parameters": [
    {"alignment": 16, "element_type": "f32", "index": 0, "kind": "buffer", "shape": [1048576]},
    {"alignment": 16, "element_type": "f32", "index": 1, "kind": "buffer", "shape": [1048576]},
    {"alignment": 16, "element_type": "f32", "index": 2, "kind": "buffer", "shape": [1048576]}
  ],
  "ptx": "elementwise.ptx",
  "ptxas": {"registers": 80, "report": "...", "spill_loads": 0, "spill_stores": 0, "stack_frame_bytes": 0},
  "tensor_maps": []
})";

/// What mosaic-compile writes for examples/tma_roundtrip.mlir (keys in
/// another order, ptxas report and the optional `ptx` left out): each 4096x64 bf16 buffer is read
/// or written in 128x64 boxes through the (8, 64) tiling with the 128-byte
/// swizzle, so each map has rank 4.
inline const std::string kRoundTripManifest = R"({
  "arch": "sm_90a",
  "block": [128, 1, 1],
  "cluster": [1, 1, 1],
  "cubin": "tma_roundtrip.cubin",
  "dynamic_smem_bytes": 32776,
  "entry": "tma_roundtrip",
  "grid": [32, 1, 1],
  "parameters": [
    {"alignment": 16, "element_type": "bf16", "index": 0, "kind": "buffer", "shape": [4096, 64]},
    {"alignment": 16, "element_type": "bf16", "index": 1, "kind": "buffer", "shape": [4096, 64]},
    {"index": 2, "kind": "tensor_map", "tensor_map": 0},
    {"index": 3, "kind": "tensor_map", "tensor_map": 1}
  ],
  "tensor_maps": [
    {"index": 0, "parameter": 2, "buffer": 0, "element_type": "bf16", "rank": 4,
     "global_dims": [64, 8, 1, 512], "global_strides": [128, 128, 1024],
     "box_dims": [64, 8, 1, 16], "element_strides": [1, 1, 1, 1],
     "swizzle": 128, "interleave": "none", "l2_promotion": "none", "oob_fill": "none"},
    {"index": 1, "parameter": 3, "buffer": 1, "element_type": "bf16", "rank": 4,
     "global_dims": [64, 8, 1, 512], "global_strides": [128, 128, 1024],
     "box_dims": [64, 8, 1, 16], "element_strides": [1, 1, 1, 1],
     "swizzle": 128, "interleave": "none", "l2_promotion": "none", "oob_fill": "none"}
  ]
})";

/// `text` with the first occurrence of `from` replaced by `to`; fails the
/// test if `from` does not occur.
std::string replaceOnce(std::string text, const std::string &from,
                        const std::string &to);

/// Writes `contents` to `name` in the test's temporary directory and
/// returns the path.
std::string writeTempFile(const std::string &name, const std::string &contents);

struct Outcome {
  int status = -1;
  std::string output; // stdout and stderr together.
};

/// Runs `command` with /bin/sh, capturing stdout and stderr together.
Outcome runCommand(const std::string &command);

/// Runs the mosaic-run binary with `arguments`, after `environment`
/// assignments (shell syntax).
Outcome runMosaicRun(const std::string &arguments,
                     const std::string &environment = "");

} // namespace mosaic::runtime::test

#endif // MOSAIC_RUNTIME_TEST_TESTSUPPORT_H
