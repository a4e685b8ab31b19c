//===- MosaicGPUOps.td - mosaic_gpu operations --------------*- tablegen -*-===//
//
// The Hopper op set of the mosaic_gpu dialect: barriers, TMA transfers,
// register <-> memory transfers, wgmma, and layout and shape manipulation.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_DIALECT_MOSAICGPU_OPS_TD
#define MOSAIC_DIALECT_MOSAICGPU_OPS_TD

include "mosaic/Dialect/MosaicGPU/MosaicGPUAttrs.td"
include "mosaic/Dialect/MosaicGPU/MosaicGPUTypes.td"
include "mlir/Dialect/LLVMIR/LLVMOpBase.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/CommonTypeConstraints.td"

//===----------------------------------------------------------------------===//
// Constraints
//===----------------------------------------------------------------------===//

// The verifiers check the memory space and rank of barrier refs so that the
// message can say which of the two is wrong.
def MosaicGPU_BarrierRef : MemRefOf<[MosaicGPU_BarrierType]>;

def MosaicGPU_SharedPointer : LLVM_PointerInAddressSpace<3>;

// What mosaic-gpu-infer-layouts and mosaic-gpu-apply-transforms record on an
// op whose verifier reads them (see Annotations.h): the transforms of each
// shared-memory buffer operand, and whether the buffers have their tiled
// types. Declared on the op, so no verifier depends on a discardable
// attribute.
defvar MosaicGPU_TransformAnnotations = (ins
  OptionalAttr<ArrayAttr>:$in_transforms,
  UnitAttr:$transforms_applied
);

// Memory effects per operand, so CSE, LICM and canonicalization know what
// each op reads and writes. Barrier operations read and update the barrier.
def MosaicGPU_BarrierUpdate : Arg<MosaicGPU_BarrierRef, "", [MemRead, MemWrite]>;

def MosaicGPU_ClusterDims : TypedArrayAttrBase<MosaicGPU_DimensionAttr,
    "cluster dimensions">;

def MosaicGPU_WGMMAElementType
    : AnyTypeOf<[F16, BF16, TF32, F32, F8E4M3FN, F8E5M2, I8],
                "f16, bf16, tf32, f32 (as tf32), f8E4M3FN, f8E5M2 or i8">;
def MosaicGPU_WGMMAAccumulatorType : AnyTypeOf<[F16, F32, I32]>;

def MosaicGPU_RegisterLayout : AnyAttrOf<[
    MosaicGPU_WGSplatFragLayout, MosaicGPU_WGStridedFragLayout,
    MosaicGPU_TiledLayout]>;

//===----------------------------------------------------------------------===//
// Barriers
//===----------------------------------------------------------------------===//

def MosaicGPU_InitializeBarrierOp : MosaicGPU_Op<"initialize_barrier"> {
  let summary = "Initializes consecutive mbarriers in shared memory";
  let description = [{
    Initializes `num_barriers` consecutive barriers starting at
    `base_pointer`, each completing a phase once `arrival_count` arrivals (and
    all expected transaction bytes) are in. The count is in units of the
    arriving entity the kernel uses (a warpgroup arrives once).

    `base_pointer` is a shared-memory pointer, as in the reference dialect, or
    (our extension, so kernels need no pointer casts) the memref of barriers
    itself, whose element count must then equal `num_barriers`.

    ```mlir
    mosaic_gpu.initialize_barrier %ptr, arrival_count = 1, num_barriers = 4
        : !llvm.ptr<3>
    mosaic_gpu.initialize_barrier %bars, arrival_count = 1, num_barriers = 2
        : memref<2x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
    ```
  }];
  let arguments = (ins
    Arg<AnyTypeOf<[MosaicGPU_SharedPointer, MosaicGPU_BarrierRef]>, "",
        [MemWrite]>:$base_pointer,
    I64Attr:$arrival_count,
    I32Attr:$num_barriers,
    DefaultValuedAttr<BoolAttr, "false">:$orders_tensor_core
  );
  let assemblyFormat = [{
    $base_pointer `,` `arrival_count` `=` $arrival_count `,`
    `num_barriers` `=` $num_barriers attr-dict `:` qualified(type($base_pointer))
  }];
  let hasVerifier = 1;
}

def MosaicGPU_ArriveOp : MosaicGPU_Op<"arrive"> {
  let summary = "Arrives on a barrier";
  let description = [{
    The warpgroup arrives once on `barrier`, releasing what its threads did
    before. With `collective` (cluster dims; our extension) it arrives on
    the barrier at the same shared-memory offset in every block of the
    cluster that differs from this one only along those dims, itself
    included: the consumers of a stage that TMA multicasts into all of them
    release it to every producer that writes it. Such a barrier counts the
    arrivals of all those blocks. A kernel with a collective arrive ends
    with a cluster barrier, so that no block exits while a peer may still
    arrive on its barriers.

    ```mlir
    mosaic_gpu.arrive %bar : memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
    mosaic_gpu.arrive %bar {collective = [#mosaic_gpu.dim<x>]}
        : memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
    ```
  }];
  let arguments = (ins
    MosaicGPU_BarrierUpdate:$barrier,
    DefaultValuedAttr<BoolAttr, "false">:$orders_tensor_core,
    DefaultValuedAttr<MosaicGPU_ClusterDims, "{}">:$collective
  );
  let assemblyFormat = "$barrier attr-dict `:` type($barrier)";
  let hasVerifier = 1;
}

def MosaicGPU_ArriveExpectTxOp : MosaicGPU_Op<"arrive_expect_tx"> {
  let summary = "Arrives on a barrier and expects transaction bytes";
  let description = [{
    An arrival that also tells the barrier to wait for `expect_tx` bytes of
    asynchronous transfers (TMA loads completing on it) before its phase flips.

    ```mlir
    mosaic_gpu.arrive_expect_tx %bar, 16384 : memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
    ```
  }];
  let arguments = (ins MosaicGPU_BarrierUpdate:$barrier, I32Attr:$expect_tx);
  let assemblyFormat = "$barrier `,` $expect_tx attr-dict `:` type($barrier)";
  let hasVerifier = 1;
}

// Waiting makes the writes of every asynchronous transfer that completed on
// the barrier visible, whatever memory they wrote: loads may not move across
// it, so it reads and writes all memory.
def MosaicGPU_WaitOp : MosaicGPU_Op<"wait", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Waits until a barrier completes the phase of a parity";
  let description = [{
    Every thread of the warpgroup blocks until the barrier has completed the
    phase whose parity is `parity`: all arrivals and expected bytes are in.

    ```mlir
    mosaic_gpu.wait %bar, %parity : memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
    ```
  }];
  let arguments = (ins MosaicGPU_BarrierRef:$barrier, I1:$parity);
  let assemblyFormat = "$barrier `,` $parity attr-dict `:` type($barrier)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Warpgroup roles
//===----------------------------------------------------------------------===//

def MosaicGPU_WarpgroupIdOp : MosaicGPU_Op<"warpgroup_id", [Pure]> {
  let summary = "The index of the executing warpgroup in its block";
  let description = [{
    The block's linear thread index divided by 128, the same in every thread
    of a warp (the lowering broadcasts it from lane 0, so the compiler knows
    that branches on it do not diverge within a warp). Warp-specialized
    kernels branch on it to give warpgroups roles:

    ```mlir
    %wg = mosaic_gpu.warpgroup_id : index
    scf.index_switch %wg
    case 0 { mosaic_gpu.set_max_registers decrease 40  ... scf.yield }
    default { mosaic_gpu.set_max_registers increase 232 ... scf.yield }
    ```
  }];
  let results = (outs Index:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def MosaicGPU_SetMaxRegistersOp : MosaicGPU_Op<"set_max_registers"> {
  let summary = "Reallocates the registers of the executing warpgroup";
  let description = [{
    `setmaxnreg.inc` or `.dec`: every thread of the warpgroup ends up with
    `count` registers (a multiple of 8 in 24..256). A decrease returns
    registers to the block's pool; an increase takes them from it and waits
    until the pool has them. All four warps of the warpgroup must execute
    it, with the same count; an increase must not ask for fewer registers
    than the warpgroup holds, nor a decrease for more.

    The block starts with the count ptxas gives the kernel, at most
    65536 / threads per block (rounded down to a multiple of 8; 168 for
    384 threads). A producer/consumer kernel of one producer and two
    consumer warpgroups typically moves 168 -> 40 in the producer and
    168 -> 232 in the consumers: 40 + 2 * 232 = 504 <= 3 * 168.

    ```mlir
    mosaic_gpu.set_max_registers decrease 40
    ```
  }];
  let arguments = (ins MosaicGPU_RegisterAction:$action, I32Attr:$count);
  let assemblyFormat = "$action $count attr-dict";
  let hasVerifier = 1;
}

def MosaicGPU_NamedBarrierOp : MosaicGPU_Op<"named_barrier"> {
  let summary = "Synchronizes the warpgroups of a role on a named barrier";
  let description = [{
    `bar.sync id, 128 * warpgroups`: the executing warpgroup waits until
    `warpgroups` warpgroups in all (itself included) have reached named
    barrier `id`, and their earlier memory accesses are visible. Roles use
    it to synchronize among themselves without the rest of the block (the
    consumers of a warp-specialized kernel, say, while the producer keeps
    loading). Barrier 0 is the block-wide one, and the lowering uses
    1 .. W (W warpgroups in the block) for each warpgroup's own barrier, so
    `id` is in W + 1 .. 15; `warpgroups` is at most W. Every warpgroup that
    uses an `id` must use it with the same count.

    With `arrive` it is `bar.arrive id, 128 * warpgroups`: the warpgroup
    counts towards the barrier's completion without waiting for it, and
    orders no memory. A producer/consumer pair of warpgroups uses it to
    hand a turn over: the waiting side syncs, the signalling side arrives
    (the ping-pong of the consumers in examples/attention_fwd.mlir). Each
    phase of a barrier needs as many arrivals as the count says, so the
    arrivals of the signalling side must match the syncs of the waiting
    side one for one.

    ```mlir
    mosaic_gpu.named_barrier 4, warpgroups = 2
    mosaic_gpu.named_barrier arrive 5, warpgroups = 2
    ```
  }];
  let arguments = (ins ConfinedAttr<I32Attr, [IntMinValue<1>, IntMaxValue<15>]>:$id,
                       ConfinedAttr<I32Attr, [IntMinValue<1>]>:$warpgroups,
                       UnitAttr:$arrive);
  let assemblyFormat = "(`arrive` $arrive^)? $id `,` `warpgroups` `=` $warpgroups attr-dict";
}

//===----------------------------------------------------------------------===//
// TMA
//===----------------------------------------------------------------------===//

def MosaicGPU_AsyncLoadOp : MosaicGPU_Op<"async_load", [AttrSizedOperandSegments]> {
  let summary = "Copies a slice of a global buffer into shared memory with TMA";
  let description = [{
    Starts an asynchronous copy of the slice of `source` (global memory) that
    begins at `indices` and spans `slice_lengths` into `destination` (shared
    memory, contiguous). The copy completes on `barrier`, which must expect
    the bytes (`arrive_expect_tx`). A slice length of `-1` copies one element
    and squeezes that dim out of `destination`. `collective` lists the cluster
    dimensions the load is multicast over; `predicate`, when given, guards the
    copy.

    The slice may reach past the edges of `source`, and may be longer than
    a dim: TMA fills the elements outside the tensor with zeros and still
    completes the whole slice's bytes on `barrier`, so one box serves the
    edge tiles of a shape that is not a multiple of it. Only
    `oob_fill_mode = promise_in_bounds` rejects a slice longer than its
    dim.

    `destination` must start 128-byte aligned in shared memory, and with a
    swizzle on the swizzle's repeat (8 rows of the swizzle width: 256, 512
    or 1024 bytes for the 32-, 64- and 128-byte swizzles), since TMA
    computes the swizzle from the address. The verifier follows
    `destination` back through `with_transforms`, `memref.subview`,
    `memref.cast`, `memref.expand_shape`, `memref.collapse_shape` and
    `memref.transpose` to its `slice_smem` and checks the offset when it is
    static; a dynamic subview offset must step by whole multiples of the
    alignment. The swizzle is the one `in_transforms` records, or a
    `with_transforms` on the way. Buffers whose origin it cannot see (block
    arguments) are not checked.

    ```mlir
    mosaic_gpu.async_load %a[%i, %c0] to %a_smem, %bar
        slice_lengths [128, 64] {collective = [#mosaic_gpu.dim<x>]}
        : memref<1024x1024xbf16>, memref<128x64xbf16, #gpu.address_space<workgroup>>,
          memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
    ```
  }];
  let arguments = !con((ins
    Arg<AnyMemRef, "", [MemRead]>:$source,
    Arg<AnyMemRef, "", [MemWrite]>:$destination,
    MosaicGPU_BarrierUpdate:$barrier,
    Variadic<I32>:$indices,
    Optional<I1>:$predicate,
    DenseI64ArrayAttr:$slice_lengths,
    DefaultValuedAttr<MosaicGPU_ClusterDims, "{}">:$collective,
    DefaultValuedAttr<MosaicGPU_OOBFillModeAttr,
                      "::mosaic_gpu::OOBFillMode::kZeros">:$oob_fill_mode
  ), MosaicGPU_TransformAnnotations);
  let assemblyFormat = [{
    $source `[` $indices `]` `to` $destination `,` $barrier
    (`if` $predicate^)? `slice_lengths` $slice_lengths attr-dict `:`
    type($source) `,` type($destination) `,` type($barrier)
  }];
  let hasVerifier = 1;
}

def MosaicGPU_AsyncPrefetchOp : MosaicGPU_Op<"async_prefetch",
    [AttrSizedOperandSegments]> {
  let summary = "Prefetches a slice of a global buffer into L2 with TMA";
  let description = [{
    ```mlir
    mosaic_gpu.async_prefetch %a[%i, %c0] slice_lengths [128, 64] : memref<1024x1024xbf16>
    ```
  }];
  let arguments = (ins
    Arg<AnyMemRef, "", [MemRead]>:$source,
    Variadic<I32>:$indices,
    Optional<I1>:$predicate,
    DenseI64ArrayAttr:$slice_lengths,
    DefaultValuedAttr<MosaicGPU_ClusterDims, "{}">:$collective
  );
  let assemblyFormat = [{
    $source `[` $indices `]` (`if` $predicate^)? `slice_lengths` $slice_lengths
    attr-dict `:` type($source)
  }];
  let hasVerifier = 1;
}

def MosaicGPU_AsyncStoreOp : MosaicGPU_Op<"async_store", [AttrSizedOperandSegments]> {
  let summary = "Copies a shared-memory buffer into a slice of a global buffer with TMA";
  let description = [{
    Starts an asynchronous copy of `source` (shared memory, contiguous) into
    the slice of `destination` (global memory) that begins at `indices` and
    spans `slice_lengths`; a `-1` length writes a dim of one element that
    `source` does not have. With `commit_group` (the default) the store closes
    a bulk async group. `source` is aligned as `async_load` requires of its
    `destination`. Elements of the slice outside `destination` are not
    written (TMA clips the box at the tensor's edges).

    By default the warpgroup waits until TMA has read `source` before it
    goes on, so the buffer may be written again at once. With `defer_wait`
    it does not: the store's reads overlap whatever follows (the next tile's
    main loop, in a persistent kernel), and an `async_store_wait` must come
    before `source` is written again. A kernel with deferred stores waits
    for them all before it exits.

    `reduction_op` combines the data with what is in global memory instead
    of overwriting it (`cp.reduce.async.bulk.tensor`). The instruction takes
    its element type from the tensor map, and the PTX ISA defines each
    reduction on some types only:

    | `reduction_op` | element types |
    |---|---|
    | `add` | f16, bf16, f32, i32, i64 |
    | `min`, `max` | f16, bf16 |
    | `smin`, `smax`, `umin`, `umax` | i32, i64 |
    | `inc`, `dec` | i32 |
    | `and`, `or`, `xor` | i32, i64 |

    Integers are signless, and the reduction says how it reads them:
    `smin`/`smax` as signed and `umin`/`umax` as unsigned, through a tensor
    map of data type INT32/INT64 or UINT32/UINT64 (the instruction has no
    type suffix). The other integer reductions read them as unsigned: `add`,
    `and`, `or` and `xor` give the same bits either way, `inc` and `dec` are
    defined on .u32 only, and 64-bit `add` on .u64 only.

    ```mlir
    mosaic_gpu.async_store %c_smem to %c[%i, %j] slice_lengths [128, 128]
        : memref<128x128xbf16, #gpu.address_space<workgroup>>, memref<1024x1024xbf16>
    ```
  }];
  // A reduction also reads the destination.
  let arguments = !con((ins
    Arg<AnyMemRef, "", [MemRead]>:$source,
    Arg<AnyMemRef, "", [MemRead, MemWrite]>:$destination,
    Variadic<I32>:$indices,
    Optional<I1>:$predicate,
    DenseI64ArrayAttr:$slice_lengths,
    DefaultValuedAttr<BoolAttr, "true">:$commit_group,
    OptionalAttr<MosaicGPU_TMAReductionAttr>:$reduction_op,
    UnitAttr:$defer_wait
  ), MosaicGPU_TransformAnnotations);
  let assemblyFormat = [{
    $source `to` $destination `[` $indices `]` (`if` $predicate^)?
    `slice_lengths` $slice_lengths attr-dict `:`
    type($source) `,` type($destination)
  }];
  let hasVerifier = 1;
}

def MosaicGPU_AsyncStoreWaitOp : MosaicGPU_Op<"async_store_wait"> {
  let summary = "Waits until at most `pending` TMA store groups still read shared memory";
  let description = [{
    The warpgroup waits until at most `pending` of the store groups it
    committed (`async_store` with `defer_wait`) are still reading their
    shared-memory source (`cp.async.bulk.wait_group.read N` by the thread
    that issued them, then a warpgroup barrier): the older sources may be
    written again.

    With `complete`, it waits until the older groups have also written
    global memory (`cp.async.bulk.wait_group N`): their writes are then
    performed, and a later release (a `semaphore_signal`) publishes them to
    another device. Without it, the writes may still be in flight.

    ```mlir
    mosaic_gpu.async_store_wait 0
    mosaic_gpu.async_store_wait 0 complete
    ```
  }];
  let arguments = (ins ConfinedAttr<I32Attr, [IntNonNegative]>:$pending,
                       UnitAttr:$complete);
  let assemblyFormat = "$pending (`complete` $complete^)? attr-dict";
}

//===----------------------------------------------------------------------===//
// Registers <-> memory
//===----------------------------------------------------------------------===//

def MosaicGPU_VectorLoadOp : MosaicGPU_Op<"vector_load"> {
  let summary = "Loads a whole memref into a warpgroup vector";
  let description = [{
    Reads all of `source` (shared or global memory, any strides) into a vector
    of the same shape and element type, distributed over the warpgroup by the
    layout inference chooses. With `optimized = true`, the lowering must use
    wide, conflict-free accesses or fail.

    ```mlir
    %v = mosaic_gpu.vector_load %ref : memref<128x64xf32> -> vector<128x64xf32>
    ```
  }];
  let arguments = !con((ins Arg<AnyNon0RankedMemRef, "", [MemRead]>:$source,
                            OptionalAttr<BoolAttr>:$optimized),
                       MosaicGPU_TransformAnnotations);
  let results = (outs AnyFixedVectorOfNonZeroRank:$result);
  let assemblyFormat = "$source attr-dict `:` type($source) `->` type($result)";
  let hasVerifier = 1;
}

def MosaicGPU_VectorStoreOp : MosaicGPU_Op<"vector_store"> {
  let summary = "Stores a warpgroup vector into a whole memref";
  let description = [{
    ```mlir
    mosaic_gpu.vector_store %v, %ref : vector<128x64xf32>, memref<128x64xf32>
    ```

    With `valid` (one index per dim), only the elements whose index is
    below `valid` in every dim are stored: `destination` may be a view
    that reaches past the end of its global buffer (a tile on the edge of
    a shape that is not a multiple of it), and `valid` says how much of it
    is inside (zero or negative: nothing). Each thread then stores its
    elements one by one, each under its own predicate. Only global
    destinations and tiled layouts take `valid`.

    ```mlir
    mosaic_gpu.vector_store %v, %edge valid [%rows, %cols]
        : vector<64x256xbf16>, memref<64x256xbf16, strided<[50257, 1], offset: ?>>
    ```
  }];
  let arguments = !con((ins
    AnyFixedVectorOfNonZeroRank:$valueToStore,
    Arg<AnyNon0RankedMemRef, "", [MemWrite]>:$destination,
    Variadic<Index>:$valid,
    OptionalAttr<BoolAttr>:$optimized
  ), MosaicGPU_TransformAnnotations);
  let assemblyFormat = [{
    $valueToStore `,` $destination (`valid` `[` $valid^ `]`)? attr-dict `:`
    type($valueToStore) `,` type($destination)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Matrix multiplication
//===----------------------------------------------------------------------===//

// wgmma reads `a` when it is in shared memory, and `b` (getEffects).
def MosaicGPU_WGMMAOp : MosaicGPU_Op<"wgmma",
    [AllTypesMatch<["accumulator", "result"]>,
     DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "Warpgroup matrix multiply-accumulate: accumulator + a * b";
  let description = [{
    Computes `accumulator + a * b` with as many `wgmma.mma_async` instructions
    as the shapes need. `accumulator` (M x N) lives in registers; `b` (K x N)
    in shared memory; `a` (M x K) in shared memory or registers. M is a
    multiple of 64, N a multiple of 8 up to 256, K a multiple of what one
    instruction consumes (32 bytes of elements: 16 for f16/bf16, 8 for tf32,
    32 for 8-bit types).

    Element types: `a` and `b` are equal among f16, bf16, tf32 (f32 operands
    are multiplied as tf32), f8E4M3FN, f8E5M2 and i8, except that the two fp8
    types may be mixed. The accumulator is f32 or f16 for floating-point
    inputs (f32 only for tf32) and i32 for i8. A shared-memory operand whose
    minor dim is not contiguous is transposed; only 16-bit types may be.
    Shared-memory operands are matrices; after `mosaic-gpu-apply-transforms`
    they have their tiled types (M/8, K/64, 8, 64) and the op's
    `in_transforms` records the tiling.

    By default the op is synchronous: the result is ready when it returns.
    With `async` it only issues the MMA and commits it as one wgmma group:
    the result is *in flight* until a `wgmma_wait` lets at most N groups
    stay pending with this one not among them. An in-flight result may only
    be the accumulator of further `wgmma` ops (which accumulate in the same
    registers, in order) or be passed through `scf.yield` / loop arguments;
    any other use, and any use of an accumulator after an async `wgmma`
    accumulated into it while it was in flight, is an error that
    mosaic-gpu-infer-layouts and mosaic-gpu-lower report on the reading op.
    `a` and `b` are read asynchronously too: their shared memory must not
    be overwritten before a wait covers the op (the consumer-release
    barriers of a pipeline say when).

    ```mlir
    %acc2 = mosaic_gpu.wgmma %acc, %a, %b
        : vector<128x128xf32>, memref<128x64xbf16, #gpu.address_space<workgroup>>,
          memref<64x128xbf16, #gpu.address_space<workgroup>> -> vector<128x128xf32>
    %acc3 = mosaic_gpu.wgmma async %acc2, %a, %b : ...
    mosaic_gpu.wgmma_wait 0
    ```
  }];
  let arguments = !con((ins
    VectorOfRankAndType<[2], [MosaicGPU_WGMMAAccumulatorType]>:$accumulator,
    AnyTypeOf<[MemRefOf<[MosaicGPU_WGMMAElementType]>,
               VectorOfRankAndType<[2], [MosaicGPU_WGMMAElementType]>]>:$a,
    MemRefOf<[MosaicGPU_WGMMAElementType]>:$b,
    UnitAttr:$async
  ), MosaicGPU_TransformAnnotations);
  let results = (outs VectorOfRankAndType<[2], [MosaicGPU_WGMMAAccumulatorType]>:$result);
  let assemblyFormat = [{
    (`async` $async^)? $accumulator `,` $a `,` $b attr-dict `:`
    type($accumulator) `,` type($a) `,` type($b) `->` type($result)
  }];
  let hasVerifier = 1;
}

def MosaicGPU_WGMMAWaitOp : MosaicGPU_Op<"wgmma_wait"> {
  let summary = "Waits until at most `pending` wgmma groups are in flight";
  let description = [{
    `wgmma.wait_group N`: the executing warp waits until at most `pending`
    of the groups its async `wgmma` ops committed are still in flight; the
    results of the older ones become readable and their shared-memory
    operands free. It covers the executing warp only: each thread that then
    releases the operands (an `arrive` on a barrier that counts 128
    arrivals per warpgroup) does so for its own warp.

    ```mlir
    mosaic_gpu.wgmma_wait 1
    ```
  }];
  let arguments = (ins ConfinedAttr<I32Attr, [IntNonNegative]>:$pending);
  let assemblyFormat = "$pending attr-dict";
}

//===----------------------------------------------------------------------===//
// Multiple devices
//===----------------------------------------------------------------------===//

// A semaphore array: an i32 buffer (a symmetric kernel argument, or a remote
// view of one; the verifiers check where it comes from).
def MosaicGPU_SemaphoreRef : MemRefOf<[I32]>;

def MosaicGPU_DeviceIdOp : MosaicGPU_Op<"device_id", [Pure]> {
  let summary = "The logical id of the device that runs this kernel instance";
  let description = [{
    A kernel that spans devices runs once on each of D devices; this is the
    instance's device, 0 .. D-1, read from the kernel's collective table
    (docs/RationaleMultiDevice.md). It is the same for the whole launch.

    ```mlir
    %id = mosaic_gpu.device_id : i32
    ```
  }];
  let results = (outs I32:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def MosaicGPU_DeviceCountOp : MosaicGPU_Op<"device_count", [Pure]> {
  let summary = "The number of devices the kernel runs on";
  let description = [{
    D, read from the kernel's collective table. The same CUBIN runs for any
    D: nothing is compiled per device count.

    ```mlir
    %n = mosaic_gpu.device_count : i32
    ```
  }];
  let results = (outs I32:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def MosaicGPU_RemoteRefOp : MosaicGPU_Op<"remote_ref",
    [Pure, AllTypesMatch<["ref", "result"]>]> {
  let summary = "The copy of a symmetric buffer on another device";
  let description = [{
    `ref` is a kernel argument marked `mosaic_gpu.symmetric`: a buffer that
    exists, with the same type, on every device. The result is the copy of
    device `device` (a logical id, 0 .. D-1), as this device addresses it:
    the pointer the runtime put in the collective table. TMA transfers
    (`async_load`, `async_store`), `vector_load`, `vector_store` and
    `semaphore_signal` accept the view; `semaphore_wait` does not (a device
    waits on its own semaphores). A remote view of a remote view is refused:
    take the view of the argument again.

    ```mlir
    gpu.func @k(%x: memref<128x64xf32> {mosaic_gpu.symmetric}) kernel {
      %next = ...
      %peer = mosaic_gpu.remote_ref %x, %next : memref<128x64xf32>
      mosaic_gpu.vector_store %v, %peer : vector<128x64xf32>, memref<128x64xf32>
    ```
  }];
  let arguments = (ins AnyStaticShapeMemRef:$ref, I32:$device);
  let results = (outs AnyStaticShapeMemRef:$result);
  let assemblyFormat = "$ref `,` $device attr-dict `:` type($ref)";
  let hasVerifier = 1;
}

// The release (signal) and acquire (wait) order every other memory access
// of the warpgroup around the op, so both also read and write all memory.
def MosaicGPU_SemaphoreSignalOp : MosaicGPU_Op<"semaphore_signal",
    [AttrSizedOperandSegments, MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Adds to a semaphore, releasing the warpgroup's writes";
  let description = [{
    Adds `value` to the semaphore `semaphores[indices]` at system scope with
    release semantics: every write of every thread of the warpgroup before
    the op (vector stores, completed TMA stores) is visible to whoever
    acquires the semaphore after reading the addition. With `on %device`
    it is the semaphore of that device's copy of the symmetric buffer, and
    `semaphores` may also be a `remote_ref` view (then without `on`).

    The lowering synchronizes the warpgroup (`bar.sync`), then its first
    thread performs `red.release.sys.global.add.u32`.

    ```mlir
    mosaic_gpu.semaphore_signal %sems[%c0], %one : memref<4xi32>
    mosaic_gpu.semaphore_signal %sems[%c0], %one on %next : memref<4xi32>
    ```
  }];
  let arguments = (ins
    Arg<MosaicGPU_SemaphoreRef, "", [MemRead, MemWrite]>:$semaphores,
    Variadic<I32>:$indices,
    I32:$value,
    Optional<I32>:$device
  );
  let assemblyFormat = [{
    $semaphores `[` $indices `]` `,` $value (`on` $device^)? attr-dict `:`
    type($semaphores)
  }];
  let hasVerifier = 1;
}

def MosaicGPU_SemaphoreWaitOp : MosaicGPU_Op<"semaphore_wait",
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Waits until a semaphore reaches a count, then consumes it";
  let description = [{
    Waits until the semaphore `semaphores[indices]` of this device holds at
    least `count`, then subtracts `count`, with acquire semantics at system
    scope: every write that the signals it read released is visible to every
    thread of the warpgroup after the op. `semaphores` is a symmetric
    argument, never a remote view. A kernel leaves its semaphores as it
    found them when every signal is consumed by a wait.

    The lowering makes the warpgroup's first thread poll with
    `ld.acquire.sys.global.u32`, subtract with
    `red.relaxed.sys.global.add.u32` of -count, then synchronizes the
    warpgroup (`bar.sync`).

    ```mlir
    mosaic_gpu.semaphore_wait %sems[%c0], %one : memref<4xi32>
    ```
  }];
  let arguments = (ins
    Arg<MosaicGPU_SemaphoreRef, "", [MemRead, MemWrite]>:$semaphores,
    Variadic<I32>:$indices,
    I32:$count
  );
  let assemblyFormat = [{
    $semaphores `[` $indices `]` `,` $count attr-dict `:` type($semaphores)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Layout and shape
//===----------------------------------------------------------------------===//

def MosaicGPU_LayoutCastOp : MosaicGPU_Op<"layout_cast",
    [Pure, AllTypesMatch<["x", "result"]>]> {
  let summary = "Fixes the register layout of a vector";
  let description = [{
    Returns `x` unchanged in value, laid out as `new_layout`. Layout inference
    pins the result to `new_layout` and relayouts `x` if it is legal to.

    ```mlir
    %y = mosaic_gpu.layout_cast %x : vector<128x64xf32>
        to #mosaic_gpu.WGStridedFragLayout<[128, 64], 4>
    ```
  }];
  let arguments = (ins AnyVectorOfNonZeroRank:$x, MosaicGPU_RegisterLayout:$new_layout);
  let results = (outs AnyVectorOfNonZeroRank:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `to` $new_layout";
  let hasVerifier = 1;
}

def MosaicGPU_BroadcastInDimOp : MosaicGPU_Op<"broadcast_in_dim", [Pure]> {
  let summary = "Broadcasts a vector to a larger shape";
  let description = [{
    Operand dim `i` becomes result dim `broadcast_dimensions[i]`; the other
    result dims are new. The mapped dims are strictly increasing, and each
    operand dim either keeps its size or has size 1 and is expanded (as in
    `lax.broadcast_in_dim`).

    ```mlir
    %b = mosaic_gpu.broadcast_in_dim %row, dims [0] : vector<128xf32> -> vector<128x64xf32>
    ```
  }];
  let arguments = (ins AnyVectorOfNonZeroRank:$operand, DenseI64ArrayAttr:$broadcast_dimensions);
  let results = (outs AnyVectorOfNonZeroRank:$result);
  let assemblyFormat = [{
    $operand `,` `dims` $broadcast_dimensions attr-dict `:` type($operand) `->` type($result)
  }];
  let hasVerifier = 1;
}

def MosaicGPU_BroadcastedIotaOp : MosaicGPU_Op<"broadcasted_iota", [Pure]> {
  let summary = "A vector whose elements count along one dimension";
  let description = [{
    Element (i0, .., in) is `i[dimension]`.

    ```mlir
    %cols = mosaic_gpu.broadcasted_iota 1 : vector<128x64xi32>
    ```
  }];
  let arguments = (ins I32Attr:$dimension);
  let results = (outs AnyFixedVectorOfNonZeroRank:$result);
  let assemblyFormat = "$dimension attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def MosaicGPU_OptimizationBarrierOp : MosaicGPU_Op<"optimization_barrier",
    [DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "Returns its operands; keeps the compiler from moving code across it";
  let description = [{
    The results equal the operands, but the compiler cannot see through
    them: the lowering passes every register vector and scalar operand
    (integers, floats, indices) through one empty inline-asm statement with
    side effects whose outputs are tied to its inputs. LLVM can then neither
    fold constants through the barrier nor move computations across it.
    Other operands (shared-memory references) pass unchanged.

    ```mlir
    %r:2 = mosaic_gpu.optimization_barrier(%x, %y) : vector<128xf32>, i32
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$operands);
  let results = (outs Variadic<AnyType>:$results);
  let assemblyFormat = "`(` $operands `)` attr-dict (`:` type($operands)^)?";
}

def MosaicGPU_SliceSMEMOp : MosaicGPU_Op<"slice_smem", [Pure]> {
  let summary = "A typed view of the kernel's dynamic shared memory at a byte offset";
  let description = [{
    The kernel's dynamic shared memory is one buffer; `slice_smem` carves a
    typed, statically shaped region out of it starting at `offset` bytes.
    Slices with the same `alias_id` may overlap and share layout decisions.

    `offset` is a multiple of the element size. A slice that TMA reads or
    writes must start 128-byte aligned (the TMA ops check it), and a
    swizzled slice on the swizzle's repeat: 256, 512 or 1024 bytes for the
    32-, 64- and 128-byte swizzles (`mosaic-gpu-apply-transforms` checks it
    once layout inference has chosen the swizzle).

    ```mlir
    %a = mosaic_gpu.slice_smem 0 : memref<128x64xbf16, #gpu.address_space<workgroup>>
    ```
  }];
  let arguments = (ins I32Attr:$offset, OptionalAttr<I64Attr>:$alias_id);
  let results = (outs AnyStaticShapeMemRef:$result);
  let assemblyFormat = "$offset attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def MosaicGPU_WithTransformsOp : MosaicGPU_Op<"with_transforms",
    [Pure, AllTypesMatch<["ref", "result"]>]> {
  let summary = "Fixes the tiling and swizzle of a shared-memory buffer";
  let description = [{
    Returns `ref` and tells layout inference that it is stored with
    `transforms` (at most one `tile` followed by at most one `swizzle`).

    ```mlir
    %t = mosaic_gpu.with_transforms %a
        : memref<128x64xbf16, #gpu.address_space<workgroup>>
        with [#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]
    ```
  }];
  let arguments = (ins AnyMemRef:$ref, ArrayAttr:$transforms);
  let results = (outs AnyMemRef:$result);
  let assemblyFormat = "$ref attr-dict `:` type($ref) `with` $transforms";
  let hasVerifier = 1;
}

def MosaicGPU_AssumeMultipleOp : MosaicGPU_Op<"assume_multiple",
    [Pure, AllTypesMatch<["value", "result"]>]> {
  let summary = "Promises that an integer is a multiple of a constant";
  let description = [{
    Returns `value`, which the author guarantees to be a multiple of
    `multiple`; divisibility checks (TMA slices against tilings) may rely on it.

    ```mlir
    %j = mosaic_gpu.assume_multiple %i, 64 : i32
    ```
  }];
  let arguments = (ins AnySignlessIntegerOrIndex:$value, I32Attr:$multiple);
  let results = (outs AnySignlessIntegerOrIndex:$result);
  let assemblyFormat = "$value `,` $multiple attr-dict `:` type($value)";
  let hasVerifier = 1;
}

def MosaicGPU_CustomPrimitiveOp : MosaicGPU_Op<"custom_primitive",
    [IsolatedFromAbove, SingleBlock]> {
  let summary = "A user-lowered region with declared layouts";
  let description = [{
    Its body, whose block arguments receive the operands, is lowered as
    written; layout inference treats it as a black box whose vector operands
    and results have the layouts `in_layouts` / `out_layouts` (one per vector,
    in order) and whose shared-memory ref operands have the transforms
    `in_transforms` (one list per ref). Results are vectors. The body ends with
    `mosaic_gpu.return`.

    ```mlir
    %r = mosaic_gpu.custom_primitive (%x) {
        in_layouts = [#mosaic_gpu.WGStridedFragLayout<[128], 1>],
        in_transforms = [],
        out_layouts = [#mosaic_gpu.WGStridedFragLayout<[128], 1>]}
        : (vector<128xf32>) -> vector<128xf32> {
    ^bb0(%arg: vector<128xf32>):
      mosaic_gpu.return %arg : vector<128xf32>
    }
    ```
  }];
  let arguments = (ins
    Variadic<AnyType>:$operands,
    ArrayAttr:$in_layouts,
    ArrayAttr:$in_transforms,
    ArrayAttr:$out_layouts
  );
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `(` $operands `)` attr-dict `:` functional-type($operands, $results) $body
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def MosaicGPU_ReturnOp : MosaicGPU_Op<"return",
    [Pure, ReturnLike, Terminator, HasParent<"CustomPrimitiveOp">]> {
  let summary = "Ends a custom_primitive's body and yields its results";
  let arguments = (ins Variadic<AnyType>:$operands);
  let assemblyFormat = "attr-dict ($operands^ `:` type($operands))?";
  let hasVerifier = 1;
}

#endif // MOSAIC_DIALECT_MOSAICGPU_OPS_TD
