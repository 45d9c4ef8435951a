// Element types of memfold values, their names and storage sizes.
//
// kBit is a packed 1-bit type (masks): n elements take ceil(n / 8) bytes.
// All functions are O(1) apart from name parsing.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace memfold {

// kU32 last: the values of the others are in tables and files already.
enum class DType : uint8_t { kF32, kI8, kU8, kI16, kI32, kI64, kBool, kBit, kU32 };
inline constexpr int kNumDTypes = 9;

std::string_view DTypeName(DType type);
std::optional<DType> ParseDType(std::string_view name);

// Bytes one element takes; 0 for kBit, which is packed (use StorageBytes).
int ElementBytes(DType type);

// Bytes needed to store `count` elements of `type`.
int64_t StorageBytes(DType type, int64_t count);

// Calls visit(T{}) with the C++ element type of `type` (bool as uint8_t); returns false, without
// calling it, for the packed kBit, which has none.
template <typename Visit>
bool VisitElementType(DType type, Visit&& visit) {
  switch (type) {
    case DType::kF32:
      visit(float{});
      return true;
    case DType::kI8:
      visit(int8_t{});
      return true;
    case DType::kU8:
    case DType::kBool:
      visit(uint8_t{});
      return true;
    case DType::kI16:
      visit(int16_t{});
      return true;
    case DType::kI32:
      visit(int32_t{});
      return true;
    case DType::kI64:
      visit(int64_t{});
      return true;
    case DType::kU32:
      visit(uint32_t{});
      return true;
    case DType::kBit:
      break;
  }
  return false;
}

}  // namespace memfold
