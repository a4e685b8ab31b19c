//===- References.cpp - Float64 references of the example kernels -------===//

#include "References.h"

#include "mosaic/Contracts/Format.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <thread>

namespace mosaic::run {

using mosaic::BufferParameter;
using mosaic::ElementType;
using mosaic::Error;
using mosaic::formatList;
using mosaic::spelling;

namespace {

/// float32 arithmetic lands far under 1e-3 against a float64 reference; 1e-5
/// leaves room for the GPU's approximate exp while catching a single wrong
/// element in 10^5.
constexpr double kF32Tolerance = 1e-5;
/// bf16 operands or outputs land between 1e-3 and 1e-2.
constexpr double kBF16Tolerance = 1e-2;

std::string describeBuffers(const Manifest &manifest) {
  std::string out;
  for (const BufferParameter &buffer : manifest.buffers)
    out += (out.empty() ? "" : ", ") +
           std::string(buffer.symmetric ? "symmetric " : "") +
           spelling(buffer.elementType) + " " + formatList(buffer.shape);
  return out.empty() ? "no buffers" : out;
}

/// Checks that there are `count` buffers of type `type` and rank `rank` (any
/// rank if negative); `what` names the expected signature.
Status checkBuffers(const Manifest &manifest, size_t count, ElementType type,
                    int rank, const char *name, const char *what) {
  bool ok = manifest.buffers.size() == count;
  for (size_t i = 0; ok && i < count; ++i)
    ok = manifest.buffers[i].elementType == type &&
         (rank < 0 || manifest.buffers[i].shape.size() == size_t(rank));
  if (ok)
    return Status();
  return Error{std::string("reference `") + name + "` expects " + what +
               "; the kernel's buffers are " + describeBuffers(manifest)};
}

Status checkSameShapes(const Manifest &manifest, const char *name) {
  for (const BufferParameter &buffer : manifest.buffers)
    if (buffer.shape != manifest.buffers.front().shape)
      return Error{std::string("reference `") + name +
                   "` expects buffers of one shape; the kernel's buffers are " +
                   describeBuffers(manifest)};
  return Status();
}

double noFlops(const Manifest &) { return 0; }

// elementwise: out = x * y + x.
Status elementwiseSignature(const Manifest &manifest) {
  MOSAIC_RETURN_IF_ERROR(checkBuffers(manifest, 3, ElementType::F32, -1,
                                      "elementwise", "f32 buffers x, y, out"));
  return checkSameShapes(manifest, "elementwise");
}

double elementwiseFlops(const Manifest &manifest) {
  return 2.0 * manifest.buffers[0].elementCount();
}

std::vector<double> elementwise(const std::vector<HostBuffer> &buffers,
                                unsigned /*output*/,
                                const std::vector<uint64_t> &indices) {
  const std::vector<double> &x = buffers[0].values, &y = buffers[1].values;
  std::vector<double> out;
  out.reserve(indices.size());
  for (uint64_t i : indices)
    out.push_back(x[i] * y[i] + x[i]);
  return out;
}

// softmax: each row of a 2-D buffer, normalized over the last dimension.
Status softmaxSignature(const Manifest &manifest) {
  MOSAIC_RETURN_IF_ERROR(checkBuffers(manifest, 2, ElementType::F32, 2,
                                      "softmax", "f32 2-D buffers x, out"));
  return checkSameShapes(manifest, "softmax");
}

std::vector<double> softmax(const std::vector<HostBuffer> &buffers,
                            unsigned /*output*/,
                            const std::vector<uint64_t> &indices) {
  const std::vector<double> &x = buffers[0].values;
  uint64_t rows = buffers[0].parameter.shape[0];
  uint64_t columns = buffers[0].parameter.shape[1];
  std::vector<double> rowMax(rows), rowSum(rows);
  for (uint64_t r = 0; r < rows; ++r) {
    const double *row = x.data() + r * columns;
    rowMax[r] = *std::max_element(row, row + columns);
    double sum = 0;
    for (uint64_t c = 0; c < columns; ++c)
      sum += std::exp(row[c] - rowMax[r]);
    rowSum[r] = sum;
  }
  std::vector<double> out;
  out.reserve(indices.size());
  for (uint64_t i : indices) {
    uint64_t r = i / columns;
    out.push_back(std::exp(x[i] - rowMax[r]) / rowSum[r]);
  }
  return out;
}

// tma_roundtrip: out = in + in.
Status roundTripSignature(const Manifest &manifest) {
  MOSAIC_RETURN_IF_ERROR(checkBuffers(manifest, 2, ElementType::BF16, 2,
                                      "tma_roundtrip",
                                      "bf16 2-D buffers in, out"));
  return checkSameShapes(manifest, "tma_roundtrip");
}

std::vector<double> roundTrip(const std::vector<HostBuffer> &buffers,
                              unsigned /*output*/,
                              const std::vector<uint64_t> &indices) {
  std::vector<double> out;
  out.reserve(indices.size());
  for (uint64_t i : indices)
    out.push_back(2 * buffers[0].values[i]);
  return out;
}

// gemm: C = A * B, A [M, K], B [K, N], C [M, N], row-major.
Status gemmSignature(const Manifest &manifest) {
  const char *what = "bf16 2-D buffers A [M, K], B [K, N], C [M, N]";
  MOSAIC_RETURN_IF_ERROR(
      checkBuffers(manifest, 3, ElementType::BF16, 2, "gemm", what));
  const std::vector<int64_t> &a = manifest.buffers[0].shape,
                             &b = manifest.buffers[1].shape,
                             &c = manifest.buffers[2].shape;
  if (a[1] != b[0] || c[0] != a[0] || c[1] != b[1])
    return Error{std::string("reference `gemm` expects ") + what +
                 "; the kernel's buffers are " + describeBuffers(manifest)};
  return Status();
}

double gemmFlops(const Manifest &manifest) {
  const std::vector<int64_t> &a = manifest.buffers[0].shape;
  return 2.0 * a[0] * a[1] * manifest.buffers[1].shape[1];
}

std::vector<double> gemm(const std::vector<HostBuffer> &buffers,
                         unsigned /*output*/,
                         const std::vector<uint64_t> &indices) {
  const std::vector<double> &a = buffers[0].values, &b = buffers[1].values;
  uint64_t m = buffers[0].parameter.shape[0];
  uint64_t k = buffers[0].parameter.shape[1];
  uint64_t n = buffers[1].parameter.shape[1];
  std::vector<double> out(indices.size());
  // A sample: one dot product per element.
  if (indices.size() < m * n) {
    for (size_t s = 0; s < indices.size(); ++s) {
      uint64_t i = indices[s] / n, j = indices[s] % n;
      double sum = 0;
      for (uint64_t p = 0; p < k; ++p)
        sum += a[i * k + p] * b[p * n + j];
      out[s] = sum;
    }
    return out;
  }
  // Every element: whole rows, which stream through B, on every core.
  std::vector<double> full(m * n);
  auto rows = [&](uint64_t first, uint64_t last) {
    for (uint64_t i = first; i < last; ++i) {
      double *row = full.data() + i * n;
      for (uint64_t p = 0; p < k; ++p) {
        double scale = a[i * k + p];
        const double *bRow = b.data() + p * n;
        for (uint64_t j = 0; j < n; ++j)
          row[j] += scale * bRow[j];
      }
    }
  };
  uint64_t threads = std::max(1u, std::thread::hardware_concurrency());
  uint64_t chunk = (m + threads - 1) / threads;
  std::vector<std::thread> workers;
  for (uint64_t first = 0; first < m; first += chunk)
    workers.emplace_back(rows, first, std::min(m, first + chunk));
  for (std::thread &worker : workers)
    worker.join();
  for (size_t s = 0; s < indices.size(); ++s)
    out[s] = full[indices[s]];
  return out;
}

// attention: O = softmax(Q K^T / sqrt(d)) V and LSE = log(sum(exp(Q K^T /
// sqrt(d)))) per row, in either of two layouts:
// - head-major: Q, K, V, O [heads, seq, d] (heads counting batch too), LSE
//   [heads, seq];
// - token-major, as FlashAttention takes them: Q and O [batch * seq, heads *
//   d], K and V [batch * seq, kv_heads * d] (grouped heads when kv_heads
//   divides heads), LSE [batch, heads, seq].
// `attention_causal` masks the keys after each query.
struct AttentionShape {
  uint64_t batch, heads, kvHeads, seq, d;
  bool tokenMajor;
};

std::optional<AttentionShape>
attentionShape(const std::vector<const BufferParameter *> &buffers) {
  if (buffers.size() != 5 || buffers[4]->elementType != ElementType::F32)
    return std::nullopt;
  for (size_t i = 0; i < 4; ++i)
    if (buffers[i]->elementType != ElementType::BF16)
      return std::nullopt;
  const std::vector<int64_t> &q = buffers[0]->shape, &k = buffers[1]->shape,
                             &lse = buffers[4]->shape;
  if (q.size() == 3 && lse.size() == 2) {
    for (size_t i = 1; i < 4; ++i)
      if (buffers[i]->shape != q)
        return std::nullopt;
    if (lse[0] != q[0] || lse[1] != q[1])
      return std::nullopt;
    return AttentionShape{
        1,    uint64_t(q[0]), uint64_t(q[0]), uint64_t(q[1]), uint64_t(q[2]),
        false};
  }
  if (q.size() != 2 || k.size() != 2 || lse.size() != 3 || lse[1] <= 0 ||
      buffers[3]->shape != q || buffers[2]->shape != k ||
      q[0] != lse[0] * lse[2] || k[0] != q[0] || q[1] % lse[1] != 0)
    return std::nullopt;
  int64_t d = q[1] / lse[1];
  if (d <= 0 || k[1] % d != 0 || k[1] == 0 || lse[1] % (k[1] / d) != 0)
    return std::nullopt;
  return AttentionShape{uint64_t(lse[0]), uint64_t(lse[1]), uint64_t(k[1] / d),
                        uint64_t(lse[2]), uint64_t(d),      true};
}

Status attentionSignature(const Manifest &manifest, const char *name) {
  const char *what =
      "bf16 Q, K, V, O and an f32 LSE, either head-major (Q, K, V, O [heads, "
      "seq, d], LSE [heads, seq]) or token-major (Q, O [batch * seq, heads * "
      "d], K, V [batch * seq, kv_heads * d], LSE [batch, heads, seq])";
  std::vector<const BufferParameter *> buffers;
  for (const BufferParameter &buffer : manifest.buffers)
    buffers.push_back(&buffer);
  if (attentionShape(buffers))
    return Status();
  return Error{std::string("reference `") + name + "` expects " + what +
               "; the kernel's buffers are " + describeBuffers(manifest)};
}

Status attentionSignature(const Manifest &manifest) {
  return attentionSignature(manifest, "attention");
}

Status causalAttentionSignature(const Manifest &manifest) {
  return attentionSignature(manifest, "attention_causal");
}

double attentionFlops(const Manifest &manifest) {
  std::vector<const BufferParameter *> buffers;
  for (const BufferParameter &buffer : manifest.buffers)
    buffers.push_back(&buffer);
  AttentionShape shape = *attentionShape(buffers);
  return 4.0 * shape.batch * shape.heads * shape.seq * shape.seq * shape.d;
}

double causalAttentionFlops(const Manifest &manifest) {
  return attentionFlops(manifest) / 2;
}

AttentionShape attentionShapeOf(const std::vector<HostBuffer> &buffers) {
  std::vector<const BufferParameter *> parameters;
  for (const HostBuffer &buffer : buffers)
    parameters.push_back(&buffer.parameter);
  return *attentionShape(parameters);
}

/// One query row's LSE and output row.
struct AttentionRow {
  double lse;
  std::vector<double> out;
};

/// Query `row` of head `head` of sequence `b`.
AttentionRow attentionRow(const std::vector<HostBuffer> &buffers,
                          const AttentionShape &shape, uint64_t b,
                          uint64_t head, uint64_t row, bool causal) {
  uint64_t d = shape.d;
  uint64_t kvHead = head / (shape.heads / shape.kvHeads);
  // Element (token, i) of head h of a buffer of `heads` heads.
  auto at = [&](const HostBuffer &buffer, uint64_t heads, uint64_t h,
                uint64_t token) {
    uint64_t offset = shape.tokenMajor
                          ? ((b * shape.seq + token) * heads + h) * d
                          : (h * shape.seq + token) * d;
    return buffer.values.data() + offset;
  };
  const double *q = at(buffers[0], shape.heads, head, row);
  uint64_t keys = causal ? row + 1 : shape.seq;
  double scale = 1 / std::sqrt(double(d));
  std::vector<double> scores(keys);
  double rowMax = -INFINITY;
  for (uint64_t key = 0; key < keys; ++key) {
    const double *k = at(buffers[1], shape.kvHeads, kvHead, key);
    double dot = 0;
    for (uint64_t i = 0; i < d; ++i)
      dot += q[i] * k[i];
    scores[key] = dot * scale;
    rowMax = std::max(rowMax, scores[key]);
  }
  double sum = 0;
  AttentionRow result{0, std::vector<double>(d)};
  for (uint64_t key = 0; key < keys; ++key) {
    const double *v = at(buffers[2], shape.kvHeads, kvHead, key);
    double p = std::exp(scores[key] - rowMax);
    sum += p;
    for (uint64_t i = 0; i < d; ++i)
      result.out[i] += p * v[i];
  }
  for (double &value : result.out)
    value /= sum;
  result.lse = rowMax + std::log(sum);
  return result;
}

/// Output 0 is O, output 1 the LSE; each row is computed once however many
/// of its elements are sampled.
std::vector<double> attention(const std::vector<HostBuffer> &buffers,
                              unsigned output,
                              const std::vector<uint64_t> &indices,
                              bool causal) {
  AttentionShape shape = attentionShapeOf(buffers);
  uint64_t seq = shape.seq, heads = shape.heads, d = shape.d;
  std::vector<double> out;
  out.reserve(indices.size());
  uint64_t cachedRow = UINT64_MAX;
  AttentionRow row;
  for (uint64_t index : indices) {
    // (sequence, head, query row) of the element, and its column in O.
    uint64_t b, head, query, column = index % d;
    if (output == 1 || !shape.tokenMajor) {
      // LSE [batch, heads, seq] or [heads, seq]; head-major O [heads, seq, d].
      uint64_t flat = output == 1 ? index : index / d;
      query = flat % seq;
      head = flat / seq % heads;
      b = flat / seq / heads;
    } else {
      // Token-major O [batch * seq, heads * d].
      uint64_t token = index / (heads * d);
      head = index / d % heads;
      query = token % seq;
      b = token / seq;
    }
    uint64_t flatRow = (b * heads + head) * seq + query;
    if (flatRow != cachedRow) {
      row = attentionRow(buffers, shape, b, head, query, causal);
      cachedRow = flatRow;
    }
    out.push_back(output == 0 ? row.out[column] : row.lse);
  }
  return out;
}

std::vector<double> attention(const std::vector<HostBuffer> &buffers,
                              unsigned output,
                              const std::vector<uint64_t> &indices) {
  return attention(buffers, output, indices, /*causal=*/false);
}

std::vector<double> causalAttention(const std::vector<HostBuffer> &buffers,
                                    unsigned output,
                                    const std::vector<uint64_t> &indices) {
  return attention(buffers, output, indices, /*causal=*/true);
}

const Reference kReferences[] = {
    {"elementwise", "out = x * y + x over f32 buffers of one shape",
     kF32Tolerance, 0, elementwiseSignature, elementwiseFlops, elementwise},
    {"softmax", "row softmax over the last dimension of a 2-D f32 buffer",
     kF32Tolerance, 0, softmaxSignature, noFlops, softmax},
    {"tma_roundtrip", "out = in + in over 2-D bf16 buffers", kBF16Tolerance, 0,
     roundTripSignature, noFlops, roundTrip},
    {"gemm", "C = A * B with bf16 A [M, K], B [K, N], C [M, N]", kBF16Tolerance,
     4096, gemmSignature, gemmFlops, gemm},
    {"attention",
     "O = softmax(Q K^T / sqrt(d)) V and its LSE, bf16 Q, K, V, O [heads, "
     "seq, d], f32 LSE [heads, seq], or token-major: Q, O [batch * seq, "
     "heads * d], K, V [batch * seq, kv_heads * d], LSE [batch, heads, seq]",
     kBF16Tolerance, 4096, attentionSignature, attentionFlops, attention, 2},
    {"attention_causal", "attention with the keys after each query masked",
     kBF16Tolerance, 4096, causalAttentionSignature, causalAttentionFlops,
     causalAttention, 2},
};

// Kernels that span devices (docs/RationaleMultiDevice.md). Their buffers:
// each device's inputs A and B, two symmetric buffers (the kernel's staging
// buffer and its i32 semaphores), then the output.

/// bf16 operands with an f32 accumulator and an f32 output: the products
/// are exact, and the sums' rounding (the tensor cores' included, and the
/// partial sums stored between devices) lands far under 1e-4, while a
/// single wrong element of 10^4 does not.
constexpr double kF32AccumulateTolerance = 1e-4;

/// Checks the collective kernels' common layout: bf16 A [rows, k], bf16 B
/// [k, n], a symmetric `staging` of type `stagingType` and `stagingShape`,
/// a symmetric 1-D i32 semaphore buffer, and an output of `outputType` and
/// `outputShape`, where `rows`, k and n are read from A and B.
Status checkCollectiveBuffers(
    const Manifest &manifest, const char *name, const char *what,
    ElementType stagingType, ElementType outputType,
    std::vector<int64_t> (*stagingShape)(int64_t rows, int64_t n, int64_t k,
                                         unsigned devices),
    std::vector<int64_t> (*outputShape)(int64_t rows, int64_t n,
                                        unsigned devices),
    unsigned devices) {
  const std::vector<BufferParameter> &buffers = manifest.buffers;
  auto fail = [&]() -> Status {
    return Error{std::string("reference `") + name + "` on " +
                 std::to_string(devices) + " devices expects " + what +
                 "; the kernel's buffers are " + describeBuffers(manifest)};
  };
  if (buffers.size() != 5)
    return fail();
  const BufferParameter &a = buffers[0], &b = buffers[1], &staging = buffers[2],
                        &semaphores = buffers[3], &out = buffers[4];
  if (a.elementType != ElementType::BF16 || a.shape.size() != 2 ||
      b.elementType != ElementType::BF16 || b.shape.size() != 2 ||
      a.shape[1] != b.shape[0] || a.symmetric || b.symmetric)
    return fail();
  int64_t rows = a.shape[0], k = a.shape[1], n = b.shape[1];
  if (!staging.symmetric || staging.elementType != stagingType ||
      staging.shape != stagingShape(rows, n, k, devices))
    return fail();
  if (!semaphores.symmetric || semaphores.elementType != ElementType::I32 ||
      semaphores.shape.size() != 1)
    return fail();
  if (out.symmetric || out.elementType != outputType ||
      out.shape != outputShape(rows, n, devices))
    return fail();
  return Status();
}

// allgather_matmul: device d computes C_d = concat(A_0, ..., A_{D-1}) B_d,
// A_q [m, k], B_d [k, n], C_d [D m, n] in bf16; `gathered` [D m, k] bf16.
const char *const kAllGatherWhat =
    "bf16 A [m, k], bf16 B [k, n], symmetric bf16 gathered [D*m, k], "
    "symmetric i32 semaphores [S], bf16 C [D*m, n]";

Status allGatherSignature(const Manifest &manifest, unsigned devices) {
  return checkCollectiveBuffers(
      manifest, "allgather_matmul", kAllGatherWhat, ElementType::BF16,
      ElementType::BF16,
      [](int64_t rows, int64_t, int64_t k, unsigned devices) {
        return std::vector<int64_t>{devices * rows, k};
      },
      [](int64_t rows, int64_t n, unsigned devices) {
        return std::vector<int64_t>{devices * rows, n};
      },
      devices);
}

double allGatherFlops(const Manifest &manifest, unsigned devices) {
  const std::vector<int64_t> &a = manifest.buffers[0].shape;
  return 2.0 * devices * a[0] * a[1] * manifest.buffers[1].shape[1] * devices;
}

std::vector<double>
allGather(const std::vector<std::vector<HostBuffer>> &buffers, unsigned device,
          const std::vector<uint64_t> &indices) {
  uint64_t m = buffers[0][0].parameter.shape[0];
  uint64_t k = buffers[0][0].parameter.shape[1];
  uint64_t n = buffers[0][1].parameter.shape[1];
  const std::vector<double> &b = buffers[device][1].values;
  std::vector<double> out;
  out.reserve(indices.size());
  for (uint64_t index : indices) {
    uint64_t row = index / n, column = index % n;
    const double *a = buffers[row / m][0].values.data() + (row % m) * k;
    double sum = 0;
    for (uint64_t p = 0; p < k; ++p)
      sum += a[p] * b[p * n + column];
    out.push_back(sum);
  }
  return out;
}

// matmul_reduce_scatter: device d gets rows [d M / D, (d + 1) M / D) of
// S = sum_q A_q B_q, A_q [M, k], B_q [k, N] bf16, out [M / D, N] f32;
// `partial` [M, N] f32.
const char *const kReduceScatterWhat =
    "bf16 A [M, k], bf16 B [k, N], symmetric f32 partial [M, N], symmetric "
    "i32 semaphores [S], f32 out [M/D, N] (M a multiple of D)";

Status reduceScatterSignature(const Manifest &manifest, unsigned devices) {
  if (!manifest.buffers.empty() && manifest.buffers[0].shape.size() == 2 &&
      manifest.buffers[0].shape[0] % devices != 0)
    return Error{"reference `matmul_reduce_scatter` on " +
                 std::to_string(devices) + " devices expects " +
                 kReduceScatterWhat +
                 "; M = " + std::to_string(manifest.buffers[0].shape[0]) +
                 " is not a multiple of " + std::to_string(devices)};
  return checkCollectiveBuffers(
      manifest, "matmul_reduce_scatter", kReduceScatterWhat, ElementType::F32,
      ElementType::F32,
      [](int64_t rows, int64_t n, int64_t, unsigned) {
        return std::vector<int64_t>{rows, n};
      },
      [](int64_t rows, int64_t n, unsigned devices) {
        return std::vector<int64_t>{rows / devices, n};
      },
      devices);
}

double reduceScatterFlops(const Manifest &manifest, unsigned devices) {
  const std::vector<int64_t> &a = manifest.buffers[0].shape;
  return 2.0 * a[0] * a[1] * manifest.buffers[1].shape[1] * devices;
}

std::vector<double>
reduceScatter(const std::vector<std::vector<HostBuffer>> &buffers,
              unsigned device, const std::vector<uint64_t> &indices) {
  uint64_t rows = buffers[0][0].parameter.shape[0];
  uint64_t k = buffers[0][0].parameter.shape[1];
  uint64_t n = buffers[0][1].parameter.shape[1];
  uint64_t first = device * (rows / buffers.size());
  std::vector<double> out;
  out.reserve(indices.size());
  for (uint64_t index : indices) {
    uint64_t row = first + index / n, column = index % n;
    double sum = 0;
    for (const std::vector<HostBuffer> &peer : buffers) {
      const double *a = peer[0].values.data() + row * k;
      const std::vector<double> &b = peer[1].values;
      for (uint64_t p = 0; p < k; ++p)
        sum += a[p] * b[p * n + column];
    }
    out.push_back(sum);
  }
  return out;
}

const CollectiveReference kCollectiveReferences[] = {
    {"allgather_matmul",
     "C_d = concat(A_0 .. A_{D-1}) B_d with bf16 A_q [m, k], B_d [k, n], "
     "C_d [D m, n]",
     kBF16Tolerance, 4096, allGatherSignature, allGatherFlops, allGather},
    {"matmul_reduce_scatter",
     "rows [d M/D, (d+1) M/D) of sum_q A_q B_q with bf16 A_q [M, k], B_q "
     "[k, N], f32 out [M/D, N]",
     kF32AccumulateTolerance, 4096, reduceScatterSignature, reduceScatterFlops,
     reduceScatter},
};

/// The entry of `table` called `name`, or else the one whose name followed
/// by `_` begins it, the longest such (`gemm_ws` is a `gemm`).
template <typename T, size_t N>
const T *findByEntry(const T (&table)[N], std::string_view entry) {
  const T *best = nullptr;
  for (const T &item : table) {
    std::string_view name = item.name;
    if (entry == name)
      return &item;
    if (entry.size() > name.size() && entry.substr(0, name.size()) == name &&
        entry[name.size()] == '_' &&
        (!best || name.size() > std::string_view(best->name).size()))
      best = &item;
  }
  return best;
}

template <typename T, size_t N> std::string namesOf(const T (&table)[N]) {
  std::string names;
  for (const T &item : table)
    names += (names.empty() ? "" : ", ") + std::string(item.name);
  return names;
}

} // namespace

const Reference *findReference(std::string_view name) {
  for (const Reference &reference : kReferences)
    if (name == reference.name)
      return &reference;
  return nullptr;
}

const Reference *referenceForEntry(std::string_view entry) {
  return findByEntry(kReferences, entry);
}

std::string referenceNames() { return namesOf(kReferences); }

const CollectiveReference *findCollectiveReference(std::string_view name) {
  for (const CollectiveReference &reference : kCollectiveReferences)
    if (name == reference.name)
      return &reference;
  return nullptr;
}

const CollectiveReference *collectiveReferenceForEntry(std::string_view entry) {
  return findByEntry(kCollectiveReferences, entry);
}

std::string collectiveReferenceNames() {
  return namesOf(kCollectiveReferences);
}

} // namespace mosaic::run
