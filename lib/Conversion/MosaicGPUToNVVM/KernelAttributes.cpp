//===- KernelAttributes.cpp - Tensor-map descriptions in the IR ---------===//

#include "mosaic/Conversion/MosaicGPUToNVVM/KernelAttributes.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace {

constexpr std::pair<const char *, unsigned> kInterleaves[] = {{"16B", 16},
                                                              {"32B", 32}};
constexpr std::pair<const char *, unsigned> kL2Promotions[] = {
    {"64B", 64}, {"128B", 128}, {"256B", 256}};

template <typename T> SmallVector<int64_t> widened(ArrayRef<T> values) {
  return SmallVector<int64_t>(values.begin(), values.end());
}

template <typename T>
FailureOr<std::vector<T>> narrowed(DictionaryAttr attribute, StringRef name) {
  auto array = attribute.getAs<DenseI64ArrayAttr>(name);
  if (!array)
    return failure();
  std::vector<T> values;
  for (int64_t value : array.asArrayRef()) {
    if (value < 0)
      return failure();
    values.push_back(static_cast<T>(value));
  }
  return values;
}

FailureOr<unsigned> unsignedField(DictionaryAttr attribute, StringRef name) {
  auto value = attribute.getAs<IntegerAttr>(name);
  if (!value || value.getInt() < 0)
    return failure();
  return static_cast<unsigned>(value.getInt());
}

/// The bytes `name` spells among `choices`; 0 when the field is absent.
template <size_t N>
FailureOr<unsigned>
choiceField(DictionaryAttr attribute, StringRef name,
            const std::pair<const char *, unsigned> (&choices)[N]) {
  auto spelled = attribute.getAs<StringAttr>(name);
  if (!spelled)
    return attribute.get(name) ? FailureOr<unsigned>(failure()) : 0u;
  for (const auto &[spelling, bytes] : choices)
    if (spelled.getValue() == spelling)
      return bytes;
  return failure();
}

template <size_t N>
StringRef spell(unsigned bytes,
                const std::pair<const char *, unsigned> (&choices)[N]) {
  for (const auto &[spelling, value] : choices)
    if (value == bytes)
      return spelling;
  return "?";
}

} // namespace

DictionaryAttr mosaic::tensorMapAttribute(MLIRContext *context,
                                          const TensorMapDescription &map,
                                          bool withPosition) {
  Builder builder(context);
  NamedAttrList fields;
  fields.append("buffer", builder.getI64IntegerAttr(map.buffer));
  fields.append("element_type",
                builder.getStringAttr(spelling(map.elementType)));
  if (map.dataType)
    fields.append("data_type", builder.getStringAttr(spelling(*map.dataType)));
  fields.append("rank", builder.getI64IntegerAttr(map.rank));
  fields.append("global_dims", builder.getDenseI64ArrayAttr(
                                   widened(ArrayRef(map.globalDims))));
  fields.append("global_strides", builder.getDenseI64ArrayAttr(
                                      widened(ArrayRef(map.globalStrides))));
  fields.append("box_dims",
                builder.getDenseI64ArrayAttr(widened(ArrayRef(map.boxDims))));
  fields.append("element_strides", builder.getDenseI64ArrayAttr(
                                       widened(ArrayRef(map.elementStrides))));
  fields.append("swizzle", builder.getI64IntegerAttr(map.swizzleBytes));
  if (map.interleaveBytes)
    fields.append("interleave", builder.getStringAttr(
                                    spell(map.interleaveBytes, kInterleaves)));
  if (map.l2PromotionBytes)
    fields.append("l2_promotion", builder.getStringAttr(spell(
                                      map.l2PromotionBytes, kL2Promotions)));
  if (map.oobFillNan)
    fields.append("oob_fill", builder.getStringAttr("nan"));
  if (map.peer)
    fields.append("peer", builder.getUnitAttr());
  if (withPosition) {
    fields.append("parameter", builder.getI64IntegerAttr(map.parameter));
    fields.append("index", builder.getI64IntegerAttr(map.index));
  }
  return fields.getDictionary(context);
}

FailureOr<mosaic::TensorMapDescription>
mosaic::tensorMapFromAttribute(DictionaryAttr attribute) {
  TensorMapDescription map;
  FailureOr<unsigned> index = unsignedField(attribute, "index");
  FailureOr<unsigned> parameter = unsignedField(attribute, "parameter");
  FailureOr<unsigned> buffer = unsignedField(attribute, "buffer");
  FailureOr<unsigned> rank = unsignedField(attribute, "rank");
  FailureOr<unsigned> swizzle = unsignedField(attribute, "swizzle");
  FailureOr<std::vector<uint64_t>> globalDims =
      narrowed<uint64_t>(attribute, "global_dims");
  FailureOr<std::vector<uint64_t>> globalStrides =
      narrowed<uint64_t>(attribute, "global_strides");
  FailureOr<std::vector<uint32_t>> boxDims =
      narrowed<uint32_t>(attribute, "box_dims");
  FailureOr<std::vector<uint32_t>> elementStrides =
      narrowed<uint32_t>(attribute, "element_strides");
  FailureOr<unsigned> interleave =
      choiceField(attribute, "interleave", kInterleaves);
  FailureOr<unsigned> l2Promotion =
      choiceField(attribute, "l2_promotion", kL2Promotions);
  auto elementType = attribute.getAs<StringAttr>("element_type");
  if (failed(index) || failed(parameter) || failed(buffer) || failed(rank) ||
      failed(swizzle) || failed(globalDims) || failed(globalStrides) ||
      failed(boxDims) || failed(elementStrides) || failed(interleave) ||
      failed(l2Promotion) || !elementType)
    return failure();
  std::optional<ElementType> element = parseElementType(elementType.getValue());
  if (!element)
    return failure();
  if (auto dataType = attribute.getAs<StringAttr>("data_type")) {
    map.dataType = parseTensorMapDataType(dataType.getValue());
    if (!map.dataType)
      return failure();
  }
  if (auto fill = attribute.getAs<StringAttr>("oob_fill")) {
    if (fill.getValue() != "nan")
      return failure();
    map.oobFillNan = true;
  }
  map.peer = bool(attribute.get("peer"));
  map.index = *index;
  map.parameter = *parameter;
  map.buffer = *buffer;
  map.elementType = *element;
  map.rank = *rank;
  map.globalDims = std::move(*globalDims);
  map.globalStrides = std::move(*globalStrides);
  map.boxDims = std::move(*boxDims);
  map.elementStrides = std::move(*elementStrides);
  map.swizzleBytes = *swizzle;
  map.interleaveBytes = *interleave;
  map.l2PromotionBytes = *l2Promotion;
  return map;
}
