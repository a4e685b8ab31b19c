//===- Passes.td - Layout inference passes -----------------*- tablegen -*-===//

#ifndef MOSAIC_LAYOUTINFERENCE_PASSES_TD
#define MOSAIC_LAYOUTINFERENCE_PASSES_TD

include "mlir/Pass/PassBase.td"

def MosaicGPUInferLayouts : Pass<"mosaic-gpu-infer-layouts"> {
  let summary = "Infer register layouts and shared-memory transforms";
  let description = [{
    Decides how every vector value is laid out over the warpgroup's 128
    threads and how every shared-memory buffer is tiled and swizzled, by
    solving the constraints that each op imposes (see
    docs/RationaleLayoutInference.md), and writes the result as discardable
    attributes: `in_layouts` / `out_layouts` (one per vector operand /
    result) and `in_transforms` / `out_transforms` (one list per
    shared-memory buffer operand / result, barriers excluded).

    Before:

    ```mlir
    %c = arith.constant dense<1.0> : vector<128xf32>
    %v = mosaic_gpu.vector_load %ref : memref<128xf32> -> vector<128xf32>
    %s = arith.addf %v, %c : vector<128xf32>
    ```

    After:

    ```mlir
    %c = arith.constant {out_layouts = [#mosaic_gpu.WGSplatFragLayout<[128]>]} dense<1.0> : vector<128xf32>
    %v = mosaic_gpu.vector_load %ref {out_layouts = [#mosaic_gpu.WGStridedFragLayout<[128], 1>]} : ...
    %s = arith.addf %v, %c {in_layouts = [#mosaic_gpu.WGStridedFragLayout<[128], 1>,
                                          #mosaic_gpu.WGStridedFragLayout<[128], 1>],
                            out_layouts = [#mosaic_gpu.WGStridedFragLayout<[128], 1>]} : vector<128xf32>
    ```

    Ambiguity is resolved deterministically: layouts that decided
    neighbouring ops imply first, then the cheapest register layout (fewest
    registers per thread, then least replication; among equals WGMMA first
    for reduced values, then the strided default of 128-bit chunks), Splat
    only where the values flowing in are Splat, and for buffers swizzle 128
    before 64 before 32, then no transforms. Undefined vectors (`ub.poison`,
    `llvm.mlir.undef`, `llvm.mlir.poison`) are Splat, which converts to any
    layout. When no assignment exists the error names the op, the values
    and the layouts each side demands, and why a value that had to be Splat
    is not.
  }];
  let dependentDialects = ["::mosaic_gpu::MosaicGPUDialect"];
  let options = [
    Option<"fuel", "fuel", "int64_t", /*default=*/"100000",
           "Rejected candidate assignments and backtracks the search may "
           "spend before giving up">,
    Option<"arch", "arch", "std::string", /*default=*/"\"sm_90a\"",
           "Target architecture (only sm_90a is supported)">,
    Option<"verifySolution", "verify-solution", "bool", /*default=*/"false",
           "Check the solution against every constraint before writing it "
           "(for tests of the solver; a violation is an internal error)">,
    Option<"reportCost", "report-cost", "bool", /*default=*/"false",
           "Report what the chosen assignment costs (relayouts through "
           "shared memory and registers) as a remark on the root op">,
  ];
}

#endif // MOSAIC_LAYOUTINFERENCE_PASSES_TD
