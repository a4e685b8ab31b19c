//===- Manifest.cpp - The JSON manifest of a compiled kernel ------------===//

#include "mosaic/Contracts/Manifest.h"

#include "mosaic/Contracts/Format.h"
#include "mosaic/Contracts/Json.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <sstream>
#include <utility>

namespace mosaic {

uint64_t BufferParameter::elementCount() const {
  uint64_t count = 1;
  for (int64_t dim : shape)
    count *= static_cast<uint64_t>(dim);
  return count;
}

uint64_t BufferParameter::byteSize() const {
  return elementCount() * mosaic::byteSize(elementType);
}

std::string BufferParameter::describe() const {
  return std::string(spelling(elementType)) + " buffer of shape " +
         formatList(shape) + " (" + std::to_string(byteSize()) + " bytes)";
}

const BufferParameter *Manifest::bufferAt(unsigned index) const {
  if (index >= parameters.size() ||
      parameters[index].kind != Parameter::Kind::Buffer)
    return nullptr;
  return &buffers[parameters[index].slot];
}

std::optional<unsigned> Manifest::collectiveParameter() const {
  for (unsigned i = 0; i < parameters.size(); ++i)
    if (parameters[i].kind == Parameter::Kind::Collective)
      return i;
  return std::nullopt;
}

std::vector<unsigned> Manifest::symmetricBuffers() const {
  std::vector<unsigned> out;
  for (unsigned i = 0; i < buffers.size(); ++i)
    if (buffers[i].symmetric)
      out.push_back(i);
  return out;
}

std::vector<unsigned> Manifest::peerTensorMaps() const {
  std::vector<unsigned> out;
  for (unsigned i = 0; i < tensorMaps.size(); ++i)
    if (tensorMaps[i].peer)
      out.push_back(i);
  return out;
}

namespace {

constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();
constexpr int64_t kMaxUint32 = std::numeric_limits<uint32_t>::max();
constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
/// Buffers larger than this many bytes are rejected as nonsense.
constexpr uint64_t kMaxBufferBytes = uint64_t(1) << 50;

std::string join(const std::string &path, const std::string &key) {
  return path.empty() ? key : path + "." + key;
}

std::string index(const std::string &path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

std::string show(const JsonValue &value) {
  switch (value.kind()) {
  case JsonValue::Kind::Number:
    if (value.isInteger())
      return std::to_string(value.asInteger());
    return "the non-integer " + std::to_string(value.asNumber());
  case JsonValue::Kind::String:
    return "the string \"" + value.asString() + "\"";
  default:
    return describe(value.kind());
  }
}

std::string range(int64_t low, int64_t high) {
  if (high == kMaxInt64)
    return "an integer >= " + std::to_string(low);
  return "an integer from " + std::to_string(low) + " to " +
         std::to_string(high);
}

/// Reads the fields of one JSON object, naming each by its path in errors.
class ObjectReader {
public:
  ObjectReader(const JsonValue &object, std::string path)
      : object(object), path(std::move(path)) {}

  static Expected<ObjectReader> of(const JsonValue &value, std::string path) {
    if (value.kind() != JsonValue::Kind::Object)
      return Error{"`" + path + "` must be an object, got " + show(value)};
    return ObjectReader(value, std::move(path));
  }

  std::string pathOf(const std::string &key) const { return join(path, key); }

  bool has(const std::string &key) const { return object.find(key) != nullptr; }

  Expected<const JsonValue *> get(const std::string &key,
                                  JsonValue::Kind kind) const {
    const JsonValue *value = object.find(key);
    if (!value)
      return Error{
          (path.empty() ? std::string("the manifest") : "`" + path + "`") +
          " has no `" + key + "`"};
    if (value->kind() != kind)
      return Error{"`" + pathOf(key) + "` must be " + describe(kind) +
                   ", got " + show(*value)};
    return value;
  }

  /// An optional boolean: `absent` when the key is missing.
  Expected<bool> flag(const std::string &key, bool absent) const {
    if (!has(key))
      return absent;
    Expected<const JsonValue *> value = get(key, JsonValue::Kind::Bool);
    MOSAIC_RETURN_IF_ERROR(value);
    return (*value)->asBool();
  }

  Expected<std::string> string(const std::string &key) const {
    Expected<const JsonValue *> value = get(key, JsonValue::Kind::String);
    MOSAIC_RETURN_IF_ERROR(value);
    if ((*value)->asString().empty())
      return Error{"`" + pathOf(key) + "` is empty"};
    return (*value)->asString();
  }

  Expected<int64_t> integer(const std::string &key, int64_t low,
                            int64_t high) const {
    Expected<const JsonValue *> value = get(key, JsonValue::Kind::Number);
    MOSAIC_RETURN_IF_ERROR(value);
    return checkInteger(**value, pathOf(key), low, high);
  }

  Expected<std::vector<int64_t>> integers(const std::string &key, int64_t low,
                                          int64_t high) const {
    Expected<const JsonValue *> value = get(key, JsonValue::Kind::Array);
    MOSAIC_RETURN_IF_ERROR(value);
    std::vector<int64_t> result;
    const std::vector<JsonValue> &elements = (*value)->elements();
    for (size_t i = 0; i < elements.size(); ++i) {
      Expected<int64_t> element =
          checkInteger(elements[i], index(pathOf(key), i), low, high);
      MOSAIC_RETURN_IF_ERROR(element);
      result.push_back(*element);
    }
    return result;
  }

  /// A string member that must be one of `choices`; returns its value.
  Expected<unsigned>
  choice(const std::string &key,
         const std::vector<std::pair<const char *, unsigned>> &choices) const {
    Expected<std::string> value = string(key);
    MOSAIC_RETURN_IF_ERROR(value);
    std::string allowed;
    for (const auto &[name, result] : choices) {
      if (*value == name)
        return result;
      allowed += std::string(allowed.empty() ? "\"" : ", \"") + name + "\"";
    }
    return Error{"`" + pathOf(key) + "` is \"" + *value +
                 "\", expected one of " + allowed};
  }

  static Expected<int64_t> checkInteger(const JsonValue &value,
                                        const std::string &path, int64_t low,
                                        int64_t high) {
    if (!value.isInteger())
      return Error{"`" + path + "` must be " + range(low, high) + ", got " +
                   show(value)};
    if (value.asInteger() < low || value.asInteger() > high)
      return Error{"`" + path + "` is " + std::to_string(value.asInteger()) +
                   ", expected " + range(low, high)};
    return value.asInteger();
  }

private:
  const JsonValue &object;
  std::string path;
};

Expected<std::array<uint32_t, 3>> readDim3(const ObjectReader &reader,
                                           const std::string &key) {
  Expected<std::vector<int64_t>> values = reader.integers(key, 1, kMaxInt32);
  MOSAIC_RETURN_IF_ERROR(values);
  if (values->size() != 3)
    return Error{"`" + key + "` must have 3 entries (x, y, z), got " +
                 std::to_string(values->size())};
  return std::array<uint32_t, 3>{static_cast<uint32_t>((*values)[0]),
                                 static_cast<uint32_t>((*values)[1]),
                                 static_cast<uint32_t>((*values)[2])};
}

/// `file` (a manifest's `cubin` or `ptx`) resolved against `directory`.
std::string resolve(const std::string &file, const std::string &directory) {
  if (file.front() == '/' || directory.empty())
    return file;
  if (directory.back() == '/')
    return directory + file;
  return directory + "/" + file;
}

/// Reads `sm_<major><minor>` with an optional `a` or `f` feature suffix.
Status readArch(const std::string &arch, Manifest &manifest) {
  size_t end = arch.size();
  char suffix = end > 3 ? arch.back() : '\0';
  if (suffix == 'a' || suffix == 'f')
    --end;
  else
    suffix = '\0';
  bool ok = arch.compare(0, 3, "sm_") == 0 && end >= 5 && end <= 6;
  int number = 0;
  for (size_t i = 3; ok && i < end; ++i) {
    ok = arch[i] >= '0' && arch[i] <= '9';
    number = number * 10 + (arch[i] - '0');
  }
  if (!ok)
    return Error{"`arch` is \"" + arch +
                 "\", expected sm_<major><minor>[a|f] such as \"sm_90a\""};
  manifest.arch = arch;
  manifest.archNumber = number;
  manifest.archSuffix = suffix;
  return Status();
}

Expected<ElementType> readElementType(const ObjectReader &reader) {
  Expected<std::string> name = reader.string("element_type");
  MOSAIC_RETURN_IF_ERROR(name);
  std::optional<ElementType> type = parseElementType(*name);
  if (!type)
    return Error{"`" + reader.pathOf("element_type") + "` is \"" + *name +
                 "\", expected one of " + elementTypeSpellings()};
  return *type;
}

Expected<BufferParameter> readBuffer(const ObjectReader &reader,
                                     unsigned position) {
  BufferParameter buffer;
  buffer.index = position;
  Expected<ElementType> type = readElementType(reader);
  MOSAIC_RETURN_IF_ERROR(type);
  buffer.elementType = *type;
  Expected<std::vector<int64_t>> shape = reader.integers("shape", 1, kMaxInt64);
  MOSAIC_RETURN_IF_ERROR(shape);
  buffer.shape = *shape;
  uint64_t bytes = byteSize(buffer.elementType);
  for (int64_t dim : buffer.shape) {
    if (static_cast<uint64_t>(dim) > kMaxBufferBytes / bytes)
      return Error{"`" + reader.pathOf("shape") + "` " + formatList(*shape) +
                   " describes more than 2^50 bytes"};
    bytes *= static_cast<uint64_t>(dim);
  }
  Expected<int64_t> alignment = reader.integer("alignment", 1, 1 << 30);
  MOSAIC_RETURN_IF_ERROR(alignment);
  if ((*alignment & (*alignment - 1)) != 0)
    return Error{"`" + reader.pathOf("alignment") + "` is " +
                 std::to_string(*alignment) + ", expected a power of two"};
  buffer.alignment = static_cast<uint64_t>(*alignment);
  Expected<bool> symmetric = reader.flag("symmetric", false);
  MOSAIC_RETURN_IF_ERROR(symmetric);
  buffer.symmetric = *symmetric;
  return buffer;
}

template <typename T>
Expected<std::vector<T>> readArray(const ObjectReader &reader,
                                   const std::string &key, int64_t high) {
  Expected<std::vector<int64_t>> values = reader.integers(key, 0, high);
  MOSAIC_RETURN_IF_ERROR(values);
  return std::vector<T>(values->begin(), values->end());
}

Expected<TensorMapDescription> readTensorMap(const ObjectReader &reader,
                                             unsigned position) {
  TensorMapDescription map;
  map.index = position;
  Expected<int64_t> parameter = reader.integer("parameter", 0, kMaxInt32);
  Expected<int64_t> buffer = reader.integer("buffer", 0, kMaxInt32);
  Expected<ElementType> type = readElementType(reader);
  Expected<int64_t> rank = reader.integer("rank", 1, limits::kMaxTensorMapRank);
  Expected<std::vector<uint64_t>> globalDims =
      readArray<uint64_t>(reader, "global_dims", kMaxInt64);
  Expected<std::vector<uint64_t>> globalStrides =
      readArray<uint64_t>(reader, "global_strides", kMaxInt64);
  Expected<std::vector<uint32_t>> boxDims =
      readArray<uint32_t>(reader, "box_dims", kMaxUint32);
  Expected<std::vector<uint32_t>> elementStrides =
      readArray<uint32_t>(reader, "element_strides", kMaxUint32);
  Expected<int64_t> swizzle = reader.integer("swizzle", 0, 128);
  Expected<unsigned> interleave =
      reader.choice("interleave", {{"none", 0}, {"16B", 16}, {"32B", 32}});
  Expected<unsigned> l2Promotion = reader.choice(
      "l2_promotion", {{"none", 0}, {"64B", 64}, {"128B", 128}, {"256B", 256}});
  Expected<unsigned> oobFill =
      reader.choice("oob_fill", {{"none", 0}, {"nan", 1}});
  Expected<bool> peer = reader.flag("peer", false);
  MOSAIC_RETURN_IF_ERROR(peer);
  map.peer = *peer;
  if (reader.has("data_type")) {
    Expected<std::string> name = reader.string("data_type");
    MOSAIC_RETURN_IF_ERROR(name);
    map.dataType = parseTensorMapDataType(*name);
    if (!map.dataType)
      return Error{"`" + reader.pathOf("data_type") + "` is \"" + *name +
                   "\", expected one of " + tensorMapDataTypeSpellings()};
  }
  for (const Status &status :
       {parameter.status(), buffer.status(), type.status(), rank.status(),
        globalDims.status(), globalStrides.status(), boxDims.status(),
        elementStrides.status(), swizzle.status(), interleave.status(),
        l2Promotion.status(), oobFill.status()})
    MOSAIC_RETURN_IF_ERROR(status);
  if (*swizzle != 0 && *swizzle != 32 && *swizzle != 64 && *swizzle != 128)
    return Error{"`" + reader.pathOf("swizzle") + "` is " +
                 std::to_string(*swizzle) + ", expected 0, 32, 64 or 128"};
  map.parameter = static_cast<unsigned>(*parameter);
  map.buffer = static_cast<unsigned>(*buffer);
  map.elementType = *type;
  map.rank = static_cast<unsigned>(*rank);
  map.globalDims = *globalDims;
  map.globalStrides = *globalStrides;
  map.boxDims = *boxDims;
  map.elementStrides = *elementStrides;
  map.swizzleBytes = static_cast<unsigned>(*swizzle);
  map.interleaveBytes = *interleave;
  map.l2PromotionBytes = *l2Promotion;
  map.oobFillNan = *oobFill == 1;
  return map;
}

Expected<const std::vector<JsonValue> *> readList(const ObjectReader &reader,
                                                  const std::string &key) {
  Expected<const JsonValue *> list = reader.get(key, JsonValue::Kind::Array);
  MOSAIC_RETURN_IF_ERROR(list);
  return &(*list)->elements();
}

/// The `index` member of entry `position` of a list, which must equal it.
Status checkPosition(const ObjectReader &reader, size_t position) {
  Expected<int64_t> indexValue = reader.integer("index", 0, kMaxInt32);
  if (!indexValue.ok())
    return indexValue.status();
  if (static_cast<size_t>(*indexValue) != position)
    return Error{"`" + reader.pathOf("index") + "` is " +
                 std::to_string(*indexValue) + ", expected " +
                 std::to_string(position) + " (entries are listed in order)"};
  return Status();
}

Status readParameters(const ObjectReader &top, Manifest &manifest) {
  Expected<const std::vector<JsonValue> *> list = readList(top, "parameters");
  MOSAIC_RETURN_IF_ERROR(list);
  for (size_t i = 0; i < (*list)->size(); ++i) {
    Expected<ObjectReader> reader =
        ObjectReader::of((**list)[i], index("parameters", i));
    MOSAIC_RETURN_IF_ERROR(reader);
    MOSAIC_RETURN_IF_ERROR(checkPosition(*reader, i));
    Expected<unsigned> kind = reader->choice(
        "kind", {{"buffer", 0}, {"tensor_map", 1}, {"collective", 2}});
    MOSAIC_RETURN_IF_ERROR(kind);
    Parameter parameter;
    if (*kind == 2) {
      if (manifest.collectiveParameter())
        return Error{"`" + index("parameters", i) +
                     "` is a second collective table"};
      parameter.kind = Parameter::Kind::Collective;
    } else if (*kind == 0) {
      Expected<BufferParameter> buffer =
          readBuffer(*reader, static_cast<unsigned>(i));
      MOSAIC_RETURN_IF_ERROR(buffer);
      parameter.kind = Parameter::Kind::Buffer;
      parameter.slot = static_cast<unsigned>(manifest.buffers.size());
      manifest.buffers.push_back(std::move(*buffer));
    } else {
      Expected<int64_t> map = reader->integer("tensor_map", 0, kMaxInt32);
      MOSAIC_RETURN_IF_ERROR(map);
      parameter.kind = Parameter::Kind::TensorMap;
      parameter.slot = static_cast<unsigned>(*map);
    }
    manifest.parameters.push_back(parameter);
  }
  return Status();
}

Status readTensorMaps(const ObjectReader &top, Manifest &manifest) {
  Expected<const std::vector<JsonValue> *> list = readList(top, "tensor_maps");
  MOSAIC_RETURN_IF_ERROR(list);
  for (size_t j = 0; j < (*list)->size(); ++j) {
    std::string path = index("tensor_maps", j);
    Expected<ObjectReader> reader = ObjectReader::of((**list)[j], path);
    MOSAIC_RETURN_IF_ERROR(reader);
    MOSAIC_RETURN_IF_ERROR(checkPosition(*reader, j));
    Expected<TensorMapDescription> map =
        readTensorMap(*reader, static_cast<unsigned>(j));
    MOSAIC_RETURN_IF_ERROR(map);
    if (map->peer) {
      if (map->parameter != manifest.collectiveParameter())
        return Error{"`" + path + ".parameter` is " +
                     std::to_string(map->parameter) +
                     ", but a peer tensor map is delivered through the "
                     "collective table, which is not that parameter"};
    } else if (map->parameter >= manifest.parameters.size() ||
               manifest.parameters[map->parameter].kind !=
                   Parameter::Kind::TensorMap ||
               manifest.parameters[map->parameter].slot != j) {
      return Error{"`" + path + ".parameter` is " +
                   std::to_string(map->parameter) +
                   ", but that is not a tensor_map parameter naming " +
                   "tensor map " + std::to_string(j)};
    }
    const BufferParameter *buffer = manifest.bufferAt(map->buffer);
    if (!buffer)
      return Error{"`" + path + ".buffer` is " + std::to_string(map->buffer) +
                   ", which is not a buffer parameter"};
    if (map->peer && !buffer->symmetric)
      return Error{"`" + path + "` is a peer tensor map over buffer " +
                   std::to_string(map->buffer) + ", which is not symmetric"};
    MOSAIC_RETURN_IF_ERROR(checkTensorMap(*map, *buffer));
    manifest.tensorMaps.push_back(std::move(*map));
  }
  std::optional<unsigned> collective = manifest.collectiveParameter();
  if (collective && *collective + 1 != manifest.parameters.size())
    return Error{"`parameters[" + std::to_string(*collective) +
                 "]` is the collective table, which must be the last "
                 "parameter"};
  if (!collective && (!manifest.symmetricBuffers().empty() ||
                      !manifest.peerTensorMaps().empty()))
    return Error{"the kernel has symmetric buffers or peer tensor maps but "
                 "no collective table parameter"};
  for (size_t k = 0; k < manifest.parameters.size(); ++k) {
    const Parameter &parameter = manifest.parameters[k];
    if (parameter.kind == Parameter::Kind::TensorMap &&
        parameter.slot >= manifest.tensorMaps.size())
      return Error{"`parameters[" + std::to_string(k) + "].tensor_map` is " +
                   std::to_string(parameter.slot) + ", but there are " +
                   std::to_string(manifest.tensorMaps.size()) + " tensor maps"};
  }
  return Status();
}

Expected<PtxasReport> readPtxasReport(const ObjectReader &top) {
  Expected<const JsonValue *> object =
      top.get("ptxas", JsonValue::Kind::Object);
  MOSAIC_RETURN_IF_ERROR(object);
  ObjectReader reader(**object, "ptxas");
  PtxasReport report;
  for (auto [key, field] :
       {std::pair{"registers", &report.registers},
        std::pair{"spill_stores", &report.spillStores},
        std::pair{"spill_loads", &report.spillLoads},
        std::pair{"stack_frame_bytes", &report.stackFrameBytes}}) {
    Expected<int64_t> value = reader.integer(key, -1, kMaxInt64);
    MOSAIC_RETURN_IF_ERROR(value);
    *field = *value;
  }
  Expected<const JsonValue *> text =
      reader.get("report", JsonValue::Kind::String);
  MOSAIC_RETURN_IF_ERROR(text);
  report.text = (*text)->asString();
  return report;
}

template <typename Range> JsonValue integers(const Range &values) {
  std::vector<JsonValue> elements;
  for (auto value : values)
    elements.push_back(JsonValue::integer(static_cast<int64_t>(value)));
  return JsonValue::array(std::move(elements));
}

/// The spelling of `bytes` among `choices` ((spelling, bytes) pairs).
const char *choiceSpelling(
    unsigned bytes,
    std::initializer_list<std::pair<const char *, unsigned>> choices) {
  for (const auto &[name, value] : choices)
    if (value == bytes)
      return name;
  return "?";
}

JsonValue tensorMapJson(const TensorMapDescription &map) {
  using Member = JsonValue::Member;
  std::vector<Member> members = {
      {"index", JsonValue::integer(map.index)},
      {"parameter", JsonValue::integer(map.parameter)},
      {"buffer", JsonValue::integer(map.buffer)},
      {"element_type", JsonValue::string(spelling(map.elementType))},
      {"rank", JsonValue::integer(map.rank)},
      {"global_dims", integers(map.globalDims)},
      {"global_strides", integers(map.globalStrides)},
      {"box_dims", integers(map.boxDims)},
      {"element_strides", integers(map.elementStrides)},
      {"swizzle", JsonValue::integer(map.swizzleBytes)},
      {"interleave",
       JsonValue::string(choiceSpelling(
           map.interleaveBytes, {{"none", 0}, {"16B", 16}, {"32B", 32}}))},
      {"l2_promotion",
       JsonValue::string(choiceSpelling(
           map.l2PromotionBytes,
           {{"none", 0}, {"64B", 64}, {"128B", 128}, {"256B", 256}}))},
      {"oob_fill", JsonValue::string(map.oobFillNan ? "nan" : "none")}};
  if (map.dataType)
    members.push_back(
        {"data_type", JsonValue::string(spelling(*map.dataType))});
  if (map.peer)
    members.push_back({"peer", JsonValue::boolean(true)});
  return JsonValue::object(std::move(members));
}

JsonValue parameterJson(const Manifest &manifest, size_t position) {
  const Parameter &parameter = manifest.parameters[position];
  int64_t index = static_cast<int64_t>(position);
  if (parameter.kind == Parameter::Kind::Collective)
    return JsonValue::object({{"index", JsonValue::integer(index)},
                              {"kind", JsonValue::string("collective")}});
  if (parameter.kind == Parameter::Kind::TensorMap)
    return JsonValue::object(
        {{"index", JsonValue::integer(index)},
         {"kind", JsonValue::string("tensor_map")},
         {"tensor_map", JsonValue::integer(parameter.slot)}});
  const BufferParameter &buffer = manifest.buffers[parameter.slot];
  std::vector<JsonValue::Member> members = {
      {"index", JsonValue::integer(index)},
      {"kind", JsonValue::string("buffer")},
      {"element_type", JsonValue::string(spelling(buffer.elementType))},
      {"shape", integers(buffer.shape)},
      {"alignment",
       JsonValue::integer(static_cast<int64_t>(buffer.alignment))}};
  if (buffer.symmetric)
    members.push_back({"symmetric", JsonValue::boolean(true)});
  return JsonValue::object(std::move(members));
}

} // namespace

std::string formatManifest(const Manifest &manifest) {
  std::vector<JsonValue> parameters, tensorMaps;
  for (size_t i = 0; i < manifest.parameters.size(); ++i)
    parameters.push_back(parameterJson(manifest, i));
  for (const TensorMapDescription &map : manifest.tensorMaps)
    tensorMaps.push_back(tensorMapJson(map));
  std::vector<JsonValue::Member> members = {
      {"entry", JsonValue::string(manifest.entry)},
      {"arch", JsonValue::string(manifest.arch)},
      {"cubin", JsonValue::string(manifest.cubin)},
      {"parameters", JsonValue::array(std::move(parameters))},
      {"grid", integers(manifest.grid)},
      {"block", integers(manifest.block)},
      {"cluster", integers(manifest.cluster)},
      {"dynamic_smem_bytes", JsonValue::integer(manifest.dynamicSmemBytes)},
      {"tensor_maps", JsonValue::array(std::move(tensorMaps))}};
  if (!manifest.ptx.empty())
    members.push_back({"ptx", JsonValue::string(manifest.ptx)});
  if (!manifest.ptxFeatures.empty())
    members.push_back(
        {"ptx_features", JsonValue::string(manifest.ptxFeatures)});
  if (const std::optional<PtxasReport> &report = manifest.ptxas)
    members.push_back(
        {"ptxas",
         JsonValue::object(
             {{"registers", JsonValue::integer(report->registers)},
              {"spill_stores", JsonValue::integer(report->spillStores)},
              {"spill_loads", JsonValue::integer(report->spillLoads)},
              {"stack_frame_bytes",
               JsonValue::integer(report->stackFrameBytes)},
              {"report", JsonValue::string(report->text)}})});
  return formatJson(JsonValue::object(std::move(members)));
}

Expected<Manifest> parseManifest(std::string_view json,
                                 const std::string &directory) {
  Expected<JsonValue> document = parseJson(json);
  MOSAIC_RETURN_IF_ERROR(document);
  if (document->kind() != JsonValue::Kind::Object)
    return Error{std::string("the manifest must be a JSON object, got ") +
                 describe(document->kind())};
  ObjectReader top(*document, "");

  Manifest manifest;
  Expected<std::string> arch = top.string("arch");
  MOSAIC_RETURN_IF_ERROR(arch);
  MOSAIC_RETURN_IF_ERROR(readArch(*arch, manifest));
  Expected<std::string> entry = top.string("entry");
  MOSAIC_RETURN_IF_ERROR(entry);
  manifest.entry = *entry;
  Expected<std::string> cubin = top.string("cubin");
  MOSAIC_RETURN_IF_ERROR(cubin);
  manifest.cubin = *cubin;
  manifest.cubinPath = resolve(*cubin, directory);
  if (top.has("ptx")) {
    Expected<std::string> ptx = top.string("ptx");
    MOSAIC_RETURN_IF_ERROR(ptx);
    manifest.ptx = *ptx;
    manifest.ptxPath = resolve(*ptx, directory);
  }

  if (top.has("ptx_features")) {
    Expected<std::string> features = top.string("ptx_features");
    MOSAIC_RETURN_IF_ERROR(features);
    manifest.ptxFeatures = *features;
  }
  if (top.has("ptxas")) {
    Expected<PtxasReport> report = readPtxasReport(top);
    MOSAIC_RETURN_IF_ERROR(report);
    manifest.ptxas = std::move(*report);
  }

  Expected<std::array<uint32_t, 3>> grid = readDim3(top, "grid");
  MOSAIC_RETURN_IF_ERROR(grid);
  Expected<std::array<uint32_t, 3>> block = readDim3(top, "block");
  MOSAIC_RETURN_IF_ERROR(block);
  Expected<std::array<uint32_t, 3>> cluster = readDim3(top, "cluster");
  MOSAIC_RETURN_IF_ERROR(cluster);
  manifest.grid = *grid;
  manifest.block = *block;
  manifest.cluster = *cluster;
  for (int d = 0; d < 3; ++d) {
    if (manifest.grid[d] % manifest.cluster[d] != 0)
      return Error{"`grid` " + formatList(manifest.grid) +
                   " is not a multiple of `cluster` " +
                   formatList(manifest.cluster) + " in dim " +
                   std::to_string(d)};
  }
  Expected<int64_t> smem = top.integer("dynamic_smem_bytes", 0, kMaxInt32);
  MOSAIC_RETURN_IF_ERROR(smem);
  manifest.dynamicSmemBytes = static_cast<uint32_t>(*smem);

  MOSAIC_RETURN_IF_ERROR(readParameters(top, manifest));
  MOSAIC_RETURN_IF_ERROR(readTensorMaps(top, manifest));
  return manifest;
}

Expected<std::string> readFile(const std::string &path) {
  std::ifstream stream(path, std::ios::binary);
  if (!stream)
    return Error{"cannot read `" + path + "`: " + std::strerror(errno)};
  std::ostringstream contents;
  contents << stream.rdbuf();
  if (stream.bad())
    return Error{"cannot read `" + path + "`: " + std::strerror(errno)};
  return contents.str();
}

Expected<Manifest> loadManifest(const std::string &path) {
  Expected<std::string> text = readFile(path);
  MOSAIC_RETURN_IF_ERROR(text);
  size_t slash = path.rfind('/');
  std::string directory =
      slash == std::string::npos ? "" : path.substr(0, slash + 1);
  Expected<Manifest> manifest = parseManifest(*text, directory);
  if (!manifest.ok())
    return Error{path + ": " + manifest.message()};
  return manifest;
}

} // namespace mosaic
