//===- References.cpp - Float64 references of the example kernels -------===//

#include "References.h"

#include "mosaic/Contracts/Format.h"

#include <algorithm>
#include <cmath>
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
           std::string(spelling(buffer.elementType)) + " " +
           formatList(buffer.shape);
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
// sqrt(d)))) per row, for Q, K, V [heads, seq, d] (heads counting batch too),
// O [heads, seq, d], LSE [heads, seq]; `attention_causal` masks keys after the
// query.
Status attentionSignature(const Manifest &manifest, const char *name) {
  const char *what = "bf16 3-D buffers Q, K, V, O [heads, seq, d] and an f32 "
                     "LSE [heads, seq]";
  const std::vector<BufferParameter> &buffers = manifest.buffers;
  bool ok = buffers.size() == 5 && buffers[4].elementType == ElementType::F32 &&
            buffers[4].shape.size() == 2;
  for (size_t i = 0; ok && i < 4; ++i)
    ok = buffers[i].elementType == ElementType::BF16 &&
         buffers[i].shape == buffers[0].shape && buffers[i].shape.size() == 3;
  ok = ok && buffers[4].shape[0] == buffers[0].shape[0] &&
       buffers[4].shape[1] == buffers[0].shape[1];
  if (ok)
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
  const std::vector<int64_t> &q = manifest.buffers[0].shape;
  return 4.0 * q[0] * q[1] * q[1] * q[2];
}

double causalAttentionFlops(const Manifest &manifest) {
  return attentionFlops(manifest) / 2;
}

/// One query row's LSE and output row.
struct AttentionRow {
  double lse;
  std::vector<double> out;
};

AttentionRow attentionRow(const std::vector<HostBuffer> &buffers,
                          uint64_t head, uint64_t row, bool causal) {
  uint64_t seq = buffers[0].parameter.shape[1];
  uint64_t d = buffers[0].parameter.shape[2];
  const double *q = buffers[0].values.data() + (head * seq + row) * d;
  const double *k = buffers[1].values.data() + head * seq * d;
  const double *v = buffers[2].values.data() + head * seq * d;
  uint64_t keys = causal ? row + 1 : seq;
  double scale = 1 / std::sqrt(double(d));
  std::vector<double> scores(keys);
  double rowMax = -INFINITY;
  for (uint64_t key = 0; key < keys; ++key) {
    double dot = 0;
    for (uint64_t i = 0; i < d; ++i)
      dot += q[i] * k[key * d + i];
    scores[key] = dot * scale;
    rowMax = std::max(rowMax, scores[key]);
  }
  double sum = 0;
  AttentionRow result{0, std::vector<double>(d)};
  for (uint64_t key = 0; key < keys; ++key) {
    double p = std::exp(scores[key] - rowMax);
    sum += p;
    for (uint64_t i = 0; i < d; ++i)
      result.out[i] += p * v[key * d + i];
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
  uint64_t seq = buffers[0].parameter.shape[1];
  uint64_t d = buffers[0].parameter.shape[2];
  uint64_t perRow = output == 0 ? d : 1;
  std::vector<double> out;
  out.reserve(indices.size());
  uint64_t cachedRow = UINT64_MAX;
  AttentionRow row;
  for (uint64_t index : indices) {
    uint64_t flatRow = index / perRow;
    if (flatRow != cachedRow) {
      row = attentionRow(buffers, flatRow / seq, flatRow % seq, causal);
      cachedRow = flatRow;
    }
    out.push_back(output == 0 ? row.out[index % perRow] : row.lse);
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
     "seq, d], f32 LSE [heads, seq]",
     kBF16Tolerance, 4096, attentionSignature, attentionFlops, attention, 2},
    {"attention_causal", "attention with the keys after each query masked",
     kBF16Tolerance, 4096, causalAttentionSignature, causalAttentionFlops,
     causalAttention, 2},
};

} // namespace

const Reference *findReference(std::string_view name) {
  for (const Reference &reference : kReferences)
    if (name == reference.name)
      return &reference;
  return nullptr;
}

const Reference *referenceForEntry(std::string_view entry) {
  if (const Reference *exact = findReference(entry))
    return exact;
  // `gemm_ws` is a gemm: the longest reference name followed by `_`.
  const Reference *best = nullptr;
  for (const Reference &reference : kReferences) {
    std::string_view name = reference.name;
    if (entry.size() > name.size() && entry.substr(0, name.size()) == name &&
        entry[name.size()] == '_' &&
        (!best || name.size() > std::string_view(best->name).size()))
      best = &reference;
  }
  return best;
}

std::string referenceNames() {
  std::string names;
  for (const Reference &reference : kReferences)
    names += (names.empty() ? "" : ", ") + std::string(reference.name);
  return names;
}

} // namespace mosaic::run
