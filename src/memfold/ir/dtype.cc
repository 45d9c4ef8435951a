#include "memfold/ir/dtype.h"

#include <array>

namespace memfold {
namespace {

struct DTypeInfo {
  DType type;
  std::string_view name;
  int bytes;
};

constexpr std::array<DTypeInfo, kNumDTypes> kDTypes = {{
    {DType::kF32, "f32", 4},
    {DType::kI8, "i8", 1},
    {DType::kU8, "u8", 1},
    {DType::kI16, "i16", 2},
    {DType::kI32, "i32", 4},
    {DType::kI64, "i64", 8},
    {DType::kBool, "bool", 1},
    {DType::kBit, "bit", 0},
    {DType::kU32, "u32", 4},
}};

}  // namespace

std::string_view DTypeName(DType type) { return kDTypes[static_cast<int>(type)].name; }

std::optional<DType> ParseDType(std::string_view name) {
  for (const DTypeInfo& info : kDTypes) {
    if (info.name == name) return info.type;
  }
  return std::nullopt;
}

int ElementBytes(DType type) { return kDTypes[static_cast<int>(type)].bytes; }

int64_t StorageBytes(DType type, int64_t count) {
  if (type == DType::kBit) return (count + 7) / 8;
  return count * ElementBytes(type);
}

}  // namespace memfold
