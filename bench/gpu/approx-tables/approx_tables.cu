//===- approx_tables.cu - The .approx instructions over fixed inputs ------===//
//
// The kernel of bench/gpu/approx-tables: out[i] = INSTRUCTION(in[i]) for one
// .approx instruction per kernel, so that a GPU's results can be recorded
// as tables and the emulator's compared with them bit for bit.
//
//===----------------------------------------------------------------------===//

#include <cstdint>

#define APPROX_KERNEL(NAME, INSTRUCTION)                                       \
  extern "C" __global__ void NAME(const float *in, float *out,                 \
                                  uint32_t count) {                            \
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;                        \
    if (i >= count)                                                            \
      return;                                                                  \
    float d;                                                                   \
    asm(INSTRUCTION " %0, %1;" : "=f"(d) : "f"(in[i]));                        \
    out[i] = d;                                                                \
  }

APPROX_KERNEL(ex2_approx_ftz_f32, "ex2.approx.ftz.f32")
APPROX_KERNEL(ex2_approx_f32, "ex2.approx.f32")
APPROX_KERNEL(rcp_approx_ftz_f32, "rcp.approx.ftz.f32")
APPROX_KERNEL(rsqrt_approx_ftz_f32, "rsqrt.approx.ftz.f32")
APPROX_KERNEL(sqrt_approx_ftz_f32, "sqrt.approx.ftz.f32")
APPROX_KERNEL(lg2_approx_ftz_f32, "lg2.approx.ftz.f32")
APPROX_KERNEL(sin_approx_ftz_f32, "sin.approx.ftz.f32")
APPROX_KERNEL(cos_approx_ftz_f32, "cos.approx.ftz.f32")
APPROX_KERNEL(tanh_approx_f32, "tanh.approx.f32")
