// A hand-written subset of the TensorFlow Lite flatbuffer schema: the tables memfold reads,
// as slot-level accessors over the Debian flatbuffers runtime, each with a Verify() that the
// flatbuffers Verifier calls before anything is read (REFERENCE.md §3 lists the slots).
//
// Only fields memfold uses are verified and read; unknown fields are skipped, as flatbuffers
// allows. Options tables are read through OptionsView by slot number. Verification is O(file).
#pragma once

#include <flatbuffers/flatbuffers.h>

#include <cstdint>
#include <vector>

namespace memfold::tflite {

using flatbuffers::Offset;
using flatbuffers::String;
using flatbuffers::Table;
using flatbuffers::Vector;
using flatbuffers::Verifier;

// vtable offset of field `slot`.
constexpr flatbuffers::voffset_t Slot(int slot) {
  return static_cast<flatbuffers::voffset_t>(4 + 2 * slot);
}

struct Buffer : private Table {
  const Vector<uint8_t>* data() const { return GetPointer<const Vector<uint8_t>*>(Slot(0)); }
  uint64_t offset() const { return GetField<uint64_t>(Slot(1), 0); }
  uint64_t size() const { return GetField<uint64_t>(Slot(2), 0); }
  bool Verify(Verifier& v) const {
    return VerifyTableStart(v) && VerifyOffset(v, Slot(0)) && v.VerifyVector(data()) &&
           VerifyField<uint64_t>(v, Slot(1), 8) && VerifyField<uint64_t>(v, Slot(2), 8) &&
           v.EndTable();
  }
};

struct Quantization : private Table {
  const Vector<float>* scale() const { return GetPointer<const Vector<float>*>(Slot(2)); }
  const Vector<int64_t>* zero_point() const { return GetPointer<const Vector<int64_t>*>(Slot(3)); }
  int32_t quantized_dimension() const { return GetField<int32_t>(Slot(6), 0); }
  bool Verify(Verifier& v) const {
    return VerifyTableStart(v) && VerifyOffset(v, Slot(2)) && v.VerifyVector(scale()) &&
           VerifyOffset(v, Slot(3)) && v.VerifyVector(zero_point()) &&
           VerifyField<int32_t>(v, Slot(6), 4) && v.EndTable();
  }
};

struct Tensor : private Table {
  const Vector<int32_t>* shape() const { return GetPointer<const Vector<int32_t>*>(Slot(0)); }
  int8_t type() const { return GetField<int8_t>(Slot(1), 0); }
  uint32_t buffer() const { return GetField<uint32_t>(Slot(2), 0); }
  const String* name() const { return GetPointer<const String*>(Slot(3)); }
  const Quantization* quantization() const { return GetPointer<const Quantization*>(Slot(4)); }
  bool is_variable() const { return GetField<uint8_t>(Slot(5), 0) != 0; }
  bool has_sparsity() const { return CheckField(Slot(6)); }
  const Vector<int32_t>* shape_signature() const {
    return GetPointer<const Vector<int32_t>*>(Slot(7));
  }
  bool Verify(Verifier& v) const {
    return VerifyTableStart(v) && VerifyOffset(v, Slot(0)) && v.VerifyVector(shape()) &&
           VerifyField<int8_t>(v, Slot(1), 1) && VerifyField<uint32_t>(v, Slot(2), 4) &&
           VerifyOffset(v, Slot(3)) && v.VerifyString(name()) && VerifyOffset(v, Slot(4)) &&
           v.VerifyTable(quantization()) && VerifyField<uint8_t>(v, Slot(5), 1) &&
           VerifyOffset(v, Slot(7)) && v.VerifyVector(shape_signature()) && v.EndTable();
  }
};

// Any options table, read by slot. Verified against the layout of the op that owns it:
// `widths` gives each slot's scalar width in bytes (1, 4 or 8), 0 for an int32 vector.
struct Options : private Table {
  template <typename T>
  T Get(int slot, T fallback) const {
    return GetField<T>(Slot(slot), fallback);
  }
  const Vector<int32_t>* IntVector(int slot) const {
    return GetPointer<const Vector<int32_t>*>(Slot(slot));
  }
  bool Verify(Verifier& v, const std::vector<int>& widths) const {
    if (!VerifyTableStart(v)) return false;
    int slot = 0;
    for (int width : widths) {
      const auto s = Slot(slot++);
      const bool ok =
          width == 0   ? VerifyOffset(v, s) && v.VerifyVector(GetPointer<const Vector<int32_t>*>(s))
          : width == 1 ? VerifyField<uint8_t>(v, s, 1)
          : width == 4 ? VerifyField<uint32_t>(v, s, 4)
                       : VerifyField<uint64_t>(v, s, 8);
      if (!ok) return false;
    }
    return v.EndTable();
  }
};

struct Operator : private Table {
  uint32_t opcode_index() const { return GetField<uint32_t>(Slot(0), 0); }
  const Vector<int32_t>* inputs() const { return GetPointer<const Vector<int32_t>*>(Slot(1)); }
  const Vector<int32_t>* outputs() const { return GetPointer<const Vector<int32_t>*>(Slot(2)); }
  uint8_t builtin_options_type() const { return GetField<uint8_t>(Slot(3), 0); }
  const Options* builtin_options() const { return GetPointer<const Options*>(Slot(4)); }
  bool has_builtin_options() const { return CheckField(Slot(4)); }
  const Vector<uint8_t>* custom_options() const {
    return GetPointer<const Vector<uint8_t>*>(Slot(5));
  }
  const Vector<int32_t>* intermediates() const {
    return GetPointer<const Vector<int32_t>*>(Slot(8));
  }
  bool Verify(Verifier& v) const {
    return VerifyTableStart(v) && VerifyField<uint32_t>(v, Slot(0), 4) &&
           VerifyOffset(v, Slot(1)) && v.VerifyVector(inputs()) && VerifyOffset(v, Slot(2)) &&
           v.VerifyVector(outputs()) && VerifyField<uint8_t>(v, Slot(3), 1) &&
           VerifyOffset(v, Slot(4)) &&  // options: see Options
           VerifyOffset(v, Slot(5)) && v.VerifyVector(custom_options()) &&
           VerifyOffset(v, Slot(8)) && v.VerifyVector(intermediates()) && v.EndTable();
  }
};

struct OperatorCode : private Table {
  int8_t deprecated_builtin_code() const { return GetField<int8_t>(Slot(0), 0); }
  const String* custom_code() const { return GetPointer<const String*>(Slot(1)); }
  int32_t version() const { return GetField<int32_t>(Slot(2), 1); }
  int32_t builtin_code() const { return GetField<int32_t>(Slot(3), 0); }
  // REFERENCE.md §3: the operator code is the larger of the two fields.
  int32_t code() const {
    return builtin_code() > deprecated_builtin_code() ? builtin_code() : deprecated_builtin_code();
  }
  bool Verify(Verifier& v) const {
    return VerifyTableStart(v) && VerifyField<int8_t>(v, Slot(0), 1) && VerifyOffset(v, Slot(1)) &&
           v.VerifyString(custom_code()) && VerifyField<int32_t>(v, Slot(2), 4) &&
           VerifyField<int32_t>(v, Slot(3), 4) && v.EndTable();
  }
};

struct SubGraph : private Table {
  const Vector<Offset<Tensor>>* tensors() const {
    return GetPointer<const Vector<Offset<Tensor>>*>(Slot(0));
  }
  const Vector<int32_t>* inputs() const { return GetPointer<const Vector<int32_t>*>(Slot(1)); }
  const Vector<int32_t>* outputs() const { return GetPointer<const Vector<int32_t>*>(Slot(2)); }
  const Vector<Offset<Operator>>* operators() const {
    return GetPointer<const Vector<Offset<Operator>>*>(Slot(3));
  }
  const String* name() const { return GetPointer<const String*>(Slot(4)); }
  bool Verify(Verifier& v) const {
    return VerifyTableStart(v) && VerifyOffset(v, Slot(0)) && v.VerifyVector(tensors()) &&
           v.VerifyVectorOfTables(tensors()) && VerifyOffset(v, Slot(1)) &&
           v.VerifyVector(inputs()) && VerifyOffset(v, Slot(2)) && v.VerifyVector(outputs()) &&
           VerifyOffset(v, Slot(3)) && v.VerifyVector(operators()) &&
           v.VerifyVectorOfTables(operators()) && VerifyOffset(v, Slot(4)) &&
           v.VerifyString(name()) && v.EndTable();
  }
};

struct Metadata : private Table {
  const String* name() const { return GetPointer<const String*>(Slot(0)); }
  uint32_t buffer() const { return GetField<uint32_t>(Slot(1), 0); }
  bool Verify(Verifier& v) const {
    return VerifyTableStart(v) && VerifyOffset(v, Slot(0)) && v.VerifyString(name()) &&
           VerifyField<uint32_t>(v, Slot(1), 4) && v.EndTable();
  }
};

struct Model : private Table {
  static constexpr int kSlots = 8;
  uint32_t version() const { return GetField<uint32_t>(Slot(0), 0); }
  // Where offset field `slot` points (null if absent), for writers that rebuild the root.
  const uint8_t* Target(int slot) const { return GetPointer<const uint8_t*>(Slot(slot)); }
  const Vector<Offset<OperatorCode>>* operator_codes() const {
    return GetPointer<const Vector<Offset<OperatorCode>>*>(Slot(1));
  }
  const Vector<Offset<SubGraph>>* subgraphs() const {
    return GetPointer<const Vector<Offset<SubGraph>>*>(Slot(2));
  }
  const String* description() const { return GetPointer<const String*>(Slot(3)); }
  const Vector<Offset<Buffer>>* buffers() const {
    return GetPointer<const Vector<Offset<Buffer>>*>(Slot(4));
  }
  const Vector<Offset<Metadata>>* metadata() const {
    return GetPointer<const Vector<Offset<Metadata>>*>(Slot(6));
  }
  bool Verify(Verifier& v) const {
    return VerifyTableStart(v) && VerifyField<uint32_t>(v, Slot(0), 4) &&
           VerifyOffset(v, Slot(1)) && v.VerifyVector(operator_codes()) &&
           v.VerifyVectorOfTables(operator_codes()) && VerifyOffset(v, Slot(2)) &&
           v.VerifyVector(subgraphs()) && v.VerifyVectorOfTables(subgraphs()) &&
           VerifyOffset(v, Slot(3)) && v.VerifyString(description()) && VerifyOffset(v, Slot(4)) &&
           v.VerifyVector(buffers()) && v.VerifyVectorOfTables(buffers()) &&
           VerifyOffset(v, Slot(6)) && v.VerifyVector(metadata()) &&
           v.VerifyVectorOfTables(metadata()) && v.EndTable();
  }
};

}  // namespace memfold::tflite
