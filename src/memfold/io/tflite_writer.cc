#include "memfold/io/tflite_writer.h"

#include <algorithm>
#include <cstring>

#include "memfold/io/tflite_schema.h"

namespace memfold {
namespace {

constexpr char kPlanName[] = "OfflineMemoryAllocation";

// A little-endian byte sink with forward-offset patching.
class Prefix {
 public:
  size_t size() const { return bytes_.size(); }
  void Align(size_t alignment) {
    while (bytes_.size() % alignment != 0) bytes_.push_back(std::byte{0});
  }
  template <typename T>
  size_t Put(T value) {
    const size_t at = bytes_.size();
    bytes_.resize(at + sizeof(T));
    std::memcpy(bytes_.data() + at, &value, sizeof(T));
    return at;
  }
  template <typename T>
  void Patch(size_t at, T value) {
    std::memcpy(bytes_.data() + at, &value, sizeof(T));
  }
  // Makes the uoffset field at `field` point to `target` (an absolute position > field).
  void Link(size_t field, size_t target) {
    Patch<uint32_t>(field, static_cast<uint32_t>(target - field));
  }
  Bytes& bytes() { return bytes_; }

 private:
  Bytes bytes_;
};

// Two layouts: positions in the prefix are known only after it is complete, and old
// positions shift by the prefix size; both are resolved in a second pass.
struct PendingLink {
  size_t field;
  size_t target;  // absolute in the prefix, or in the old file
  bool old_file;
};

size_t OldPosition(const TfliteModel& model, const void* p) {
  return static_cast<size_t>(static_cast<const uint8_t*>(p) -
                             reinterpret_cast<const uint8_t*>(model.file.data()));
}

// A table with `fields` 4-byte slots: vtable then table; returns the table's field positions.
// A field `absent` names has a slot but no vtable entry: a reader sees it unset (an offset
// field set to 0 would point to itself, which the flatbuffer verifier rejects).
std::vector<size_t> PutTable(Prefix& out, int fields, const std::vector<int>& absent = {}) {
  out.Align(4);
  const size_t vtable = out.size();
  out.Put<uint16_t>(static_cast<uint16_t>(4 + 2 * fields));
  out.Put<uint16_t>(static_cast<uint16_t>(4 + 4 * fields));
  for (int k = 0; k < fields; ++k) {
    const bool unset = std::find(absent.begin(), absent.end(), k) != absent.end();
    out.Put<uint16_t>(unset ? uint16_t{0} : static_cast<uint16_t>(4 + 4 * k));
  }
  out.Align(4);
  const size_t table = out.Put<int32_t>(0);
  out.Patch<int32_t>(table, static_cast<int32_t>(table - vtable));
  std::vector<size_t> slots;
  for (int k = 0; k < fields; ++k) slots.push_back(out.Put<uint32_t>(0));
  return slots;
}

}  // namespace

Result<Bytes> WithOfflinePlan(const TfliteModel& model, const std::vector<int32_t>& offsets) {
  if (static_cast<int32_t>(offsets.size()) != model.total_tensors) {
    return Status::Error("an offline plan needs one offset per tensor (" +
                         std::to_string(model.total_tensors) + "), got " +
                         std::to_string(offsets.size()));
  }
  const auto* old = flatbuffers::GetRoot<tflite::Model>(model.file.data());
  const auto* buffers = old->buffers();
  for (flatbuffers::uoffset_t i = 0; buffers && i < buffers->size(); ++i) {
    if (buffers->Get(i)->offset() > 1)
      return Status::Error(
          "models whose buffers live outside the flatbuffer (> 2 GB) cannot be rewritten");
  }
  std::vector<PendingLink> links;
  Prefix out;
  links.push_back({out.Put<uint32_t>(0), 0, false});  // root, resolved below
  for (char c : std::string("TFL3")) out.Put<char>(c);

  // The new root: version plus the old fields, with buffers and metadata replaced.
  constexpr int kCopiedSlots[] = {1, 2, 3, 5, 7};
  std::vector<int> absent;
  for (int slot : kCopiedSlots) {
    if (old->Target(slot) == nullptr) absent.push_back(slot);
  }
  const std::vector<size_t> root_fields = PutTable(out, tflite::Model::kSlots, absent);
  links[0].target = root_fields[0] - 4;  // the table starts at its soffset, just before field 0
  out.Patch<uint32_t>(root_fields[0], old->version());
  for (int slot : kCopiedSlots) {
    if (const uint8_t* target = old->Target(slot))
      links.push_back({root_fields[static_cast<size_t>(slot)], OldPosition(model, target), true});
  }
  // buffers: the old ones, then the plan's.
  const uint32_t old_buffers = buffers ? buffers->size() : 0;
  out.Align(4);
  links.push_back({root_fields[4], out.size(), false});
  out.Put<uint32_t>(old_buffers + 1);
  for (uint32_t i = 0; i < old_buffers; ++i)
    links.push_back({out.Put<uint32_t>(0), OldPosition(model, buffers->Get(i)), true});
  const size_t plan_buffer_element = out.Put<uint32_t>(0);
  // metadata: the old entries except a previous plan, then the new entry.
  std::vector<const tflite::Metadata*> kept;
  if (const auto* metadata = old->metadata()) {
    for (const tflite::Metadata* m : *metadata) {
      if (m->name() == nullptr || m->name()->str() != kPlanName) kept.push_back(m);
    }
  }
  links.push_back({root_fields[6], out.size(), false});
  out.Put<uint32_t>(static_cast<uint32_t>(kept.size() + 1));
  for (const tflite::Metadata* m : kept)
    links.push_back({out.Put<uint32_t>(0), OldPosition(model, m), true});
  const size_t plan_metadata_element = out.Put<uint32_t>(0);
  // The metadata entry: name and buffer index.
  const std::vector<size_t> entry = PutTable(out, 2);
  links.push_back({plan_metadata_element, entry[0] - 4, false});
  out.Patch<uint32_t>(entry[1], old_buffers);
  links.push_back({entry[0], out.size(), false});
  out.Put<uint32_t>(static_cast<uint32_t>(std::strlen(kPlanName)));
  for (const char* c = kPlanName; *c; ++c) out.Put<char>(*c);
  out.Put<char>('\0');
  // The plan buffer: a byte vector of int32 words, 16-byte aligned data.
  const std::vector<size_t> buffer = PutTable(out, 1);
  links.push_back({plan_buffer_element, buffer[0] - 4, false});
  while ((out.size() + 4) % 16 != 0) out.Put<uint8_t>(0);
  links.push_back({buffer[0], out.size(), false});
  out.Put<uint32_t>(static_cast<uint32_t>(4 * (3 + offsets.size())));
  out.Put<int32_t>(0);
  out.Put<int32_t>(model.subgraphs);
  out.Put<int32_t>(static_cast<int32_t>(offsets.size()));
  for (int32_t offset : offsets) out.Put<int32_t>(offset);
  out.Align(16);

  const size_t shift = out.size();
  for (const PendingLink& link : links)
    out.Link(link.field, link.old_file ? link.target + shift : link.target);
  Bytes result = std::move(out.bytes());
  result.insert(result.end(), model.file.begin(), model.file.end());
  return result;
}

}  // namespace memfold
