// RUN: mosaic-opt %s -split-input-file -mosaic-gpu-infer-layouts -verify-diagnostics
// RUN: mosaic-opt %s -split-input-file -mosaic-gpu-lower -verify-diagnostics
// An async wgmma's result is in flight until a wgmma_wait covers its group;
// both inference and the lowering (for hand-annotated IR) reject every
// other read before that, on every path, naming the reading op.

!a_smem = memref<64x64xbf16, #gpu.address_space<workgroup>>
!b_smem = memref<64x128xbf16, #gpu.address_space<workgroup>>
!acc = vector<64x128xf32>

func.func @read_without_wait(%acc: !acc, %a: !a_smem, %b: !b_smem) -> vector<64x128xbf16> {
  // expected-note @+1 {{the async wgmma}}
  %r = mosaic_gpu.wgmma async %acc, %a, %b : !acc, !a_smem, !b_smem -> !acc
  // expected-error @+1 {{'arith.truncf' op reads the result of an async wgmma while it may still be in flight: no wgmma_wait covers it on every path here; it needs `mosaic_gpu.wgmma_wait 0` first}}
  %t = arith.truncf %r : !acc to vector<64x128xbf16>
  return %t : vector<64x128xbf16>
}

// -----

!a_smem = memref<64x64xbf16, #gpu.address_space<workgroup>>
!b_smem = memref<64x128xbf16, #gpu.address_space<workgroup>>
!acc = vector<64x128xf32>

// wgmma_wait 1 leaves the newest group pending.
func.func @wait_leaves_newest_pending(%acc: !acc, %a: !a_smem, %b: !b_smem) -> vector<64x128xbf16> {
  // expected-note @+1 {{the async wgmma}}
  %r = mosaic_gpu.wgmma async %acc, %a, %b : !acc, !a_smem, !b_smem -> !acc
  mosaic_gpu.wgmma_wait 1
  // expected-error @+1 {{'arith.truncf' op reads the result of an async wgmma while it may still be in flight}}
  %t = arith.truncf %r : !acc to vector<64x128xbf16>
  return %t : vector<64x128xbf16>
}

// -----

!a_smem = memref<64x64xbf16, #gpu.address_space<workgroup>>
!b_smem = memref<64x128xbf16, #gpu.address_space<workgroup>>
!acc = vector<64x128xf32>

// Two groups: wait 1 completes the older one only.
func.func @two_groups(%acc: !acc, %acc2: !acc, %a: !a_smem, %b: !b_smem) -> (!acc, !acc) {
  %r1 = mosaic_gpu.wgmma async %acc, %a, %b : !acc, !a_smem, !b_smem -> !acc
  // expected-note @+1 {{the async wgmma}}
  %r2 = mosaic_gpu.wgmma async %acc2, %a, %b : !acc, !a_smem, !b_smem -> !acc
  mosaic_gpu.wgmma_wait 1
  %s1 = arith.addf %r1, %r1 : !acc
  // expected-error @+1 {{'arith.addf' op reads the result of an async wgmma while it may still be in flight}}
  %s2 = arith.addf %r2, %r2 : !acc
  return %s1, %s2 : !acc, !acc
}

// -----

!a_smem = memref<64x64xbf16, #gpu.address_space<workgroup>>
!b_smem = memref<64x128xbf16, #gpu.address_space<workgroup>>
!acc = vector<64x128xf32>

// The accumulator stays in flight across iterations (wait 1 keeps this
// step's group pending); after the loop it needs wait 0.
func.func @loop_without_final_wait(%a: !a_smem, %b: !b_smem, %n: index) -> vector<64x128xbf16> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant dense<0.0> : !acc
  %acc = scf.for %i = %c0 to %n step %c1 iter_args(%in = %zero) -> (!acc) {
    // expected-note @+1 {{the async wgmma}}
    %out = mosaic_gpu.wgmma async %in, %a, %b : !acc, !a_smem, !b_smem -> !acc
    mosaic_gpu.wgmma_wait 1
    scf.yield %out : !acc
  }
  // expected-error @+1 {{'arith.truncf' op reads the result of an async wgmma while it may still be in flight}}
  %t = arith.truncf %acc : !acc to vector<64x128xbf16>
  return %t : vector<64x128xbf16>
}

// -----

!a_smem = memref<64x64xbf16, #gpu.address_space<workgroup>>
!b_smem = memref<64x128xbf16, #gpu.address_space<workgroup>>
!acc = vector<64x128xf32>

// Reading the carried accumulator inside the loop: in flight from the
// previous iteration's wgmma.
func.func @read_in_loop(%a: !a_smem, %b: !b_smem, %n: index) -> !acc {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant dense<0.0> : !acc
  %acc = scf.for %i = %c0 to %n step %c1 iter_args(%in = %zero) -> (!acc) {
    // expected-error @+1 {{'arith.addf' op reads the result of an async wgmma while it may still be in flight}}
    %doubled = arith.addf %in, %in : !acc
    // expected-note @+1 {{the async wgmma}}
    %out = mosaic_gpu.wgmma async %doubled, %a, %b : !acc, !a_smem, !b_smem -> !acc
    scf.yield %out : !acc
  }
  mosaic_gpu.wgmma_wait 0
  return %acc : !acc
}

// -----

!a_smem = memref<64x64xbf16, #gpu.address_space<workgroup>>
!b_smem = memref<64x128xbf16, #gpu.address_space<workgroup>>
!acc = vector<64x128xf32>

// A wait on one branch only does not cover the other.
func.func @wait_on_one_branch(%acc: !acc, %a: !a_smem, %b: !b_smem, %c: i1) -> !acc {
  // expected-note @+1 {{the async wgmma}}
  %r = mosaic_gpu.wgmma async %acc, %a, %b : !acc, !a_smem, !b_smem -> !acc
  scf.if %c {
    mosaic_gpu.wgmma_wait 0
  }
  // expected-error @+1 {{'arith.addf' op reads the result of an async wgmma while it may still be in flight}}
  %s = arith.addf %r, %r : !acc
  return %s : !acc
}

// -----

!a_smem = memref<64x64xbf16, #gpu.address_space<workgroup>>
!b_smem = memref<64x128xbf16, #gpu.address_space<workgroup>>
!acc = vector<64x128xf32>

// A second wgmma accumulating into an in-flight result overwrites it.
func.func @overwritten_accumulator(%acc: !acc, %a: !a_smem, %b: !b_smem) -> (!acc, !acc) {
  %r1 = mosaic_gpu.wgmma async %acc, %a, %b : !acc, !a_smem, !b_smem -> !acc
  // expected-note @+1 {{the async wgmma that overwrote it}}
  %r2 = mosaic_gpu.wgmma async %r1, %a, %b : !acc, !a_smem, !b_smem -> !acc
  mosaic_gpu.wgmma_wait 0
  // expected-error @+1 {{'arith.addf' op reads an accumulator that an async wgmma overwrote in place while it was in flight; use that wgmma's result instead}}
  %s = arith.addf %r1, %r2 : !acc
  return %s, %r2 : !acc, !acc
}

// -----

!a_smem = memref<64x64xbf16, #gpu.address_space<workgroup>>
!b_smem = memref<64x128xbf16, #gpu.address_space<workgroup>>
!acc = vector<64x128xf32>

// An in-flight result as a scf.while argument is still in flight in the
// after region.
func.func @while_loop(%acc: !acc, %a: !a_smem, %b: !b_smem, %c: i1) -> !acc {
  // expected-note @+1 {{the async wgmma}}
  %r = mosaic_gpu.wgmma async %acc, %a, %b : !acc, !a_smem, !b_smem -> !acc
  %w = scf.while (%x = %r) : (!acc) -> !acc {
    scf.condition(%c) %x : !acc
  } do {
  ^bb0(%y: !acc):
    // expected-error @+1 {{'arith.addf' op reads the result of an async wgmma while it may still be in flight}}
    %s = arith.addf %y, %y : !acc
    scf.yield %s : !acc
  }
  mosaic_gpu.wgmma_wait 0
  return %w : !acc
}

// -----

!a_smem = memref<64x64xf16, #gpu.address_space<workgroup>>
!b_smem = memref<64x64xf16, #gpu.address_space<workgroup>>
!acc = vector<64x64xf16>

// An f16 result used as the register A operand of the next wgmma is read
// when that wgmma issues.
func.func @register_a_in_flight(%acc: !acc, %a: !a_smem, %b: !b_smem) -> !acc {
  // expected-note @+1 {{the async wgmma}}
  %r = mosaic_gpu.wgmma async %acc, %a, %b : !acc, !a_smem, !b_smem -> !acc
  // expected-error @+1 {{'mosaic_gpu.wgmma' op reads the result of an async wgmma while it may still be in flight}}
  %r2 = mosaic_gpu.wgmma %acc, %r, %b : !acc, !acc, !b_smem -> !acc
  return %r2 : !acc
}

// -----

!a_smem = memref<64x64xbf16, #gpu.address_space<workgroup>>
!b_smem = memref<64x128xbf16, #gpu.address_space<workgroup>>
!acc = vector<64x128xf32>

// Two async wgmmas accumulating in turn, waited for, in every iteration:
// each iteration's first result is a new value, which the previous
// iteration's second wgmma did not overwrite. Only the read after the loop
// is reported.
func.func @chain_in_loop(%a: !a_smem, %b: !b_smem, %n: index) -> vector<64x128xbf16> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant dense<0.0> : !acc
  %last = scf.for %i = %c0 to %n step %c1 iter_args(%in = %zero) -> (!acc) {
    %first = mosaic_gpu.wgmma async %zero, %a, %b : !acc, !a_smem, !b_smem -> !acc
    %second = mosaic_gpu.wgmma async %first, %a, %b : !acc, !a_smem, !b_smem -> !acc
    mosaic_gpu.wgmma_wait 0
    %sum = arith.addf %in, %second : !acc
    scf.yield %sum : !acc
  }
  // expected-note @+1 {{the async wgmma}}
  %r = mosaic_gpu.wgmma async %last, %a, %b : !acc, !a_smem, !b_smem -> !acc
  // expected-error @+1 {{'arith.truncf' op reads the result of an async wgmma while it may still be in flight}}
  %t = arith.truncf %r : !acc to vector<64x128xbf16>
  return %t : vector<64x128xbf16>
}
