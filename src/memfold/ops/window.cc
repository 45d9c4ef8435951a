#include "memfold/ops/window.h"

#include <algorithm>
#include <limits>
#include <string>

namespace memfold {
namespace {

Result<int64_t> PairAttr(const Attrs& attrs, const char* name, int index) {
  const AttrValue* value = attrs.Find(name);
  if (value == nullptr) return int64_t{1};
  const auto& pair = std::get<std::vector<int64_t>>(*value);
  if (pair.size() != 2)
    return Status::Error(std::string("attribute '") + name + "' needs 2 values [h, w]");
  if (pair[static_cast<size_t>(index)] < 1)
    return Status::Error(std::string("attribute '") + name + "' must be positive");
  return pair[static_cast<size_t>(index)];
}

}  // namespace

Result<Window2D> ComputeWindow(const Attrs& attrs, int64_t in_h, int64_t in_w, int64_t k_h,
                               int64_t k_w) {
  Window2D w;
  w.in_h = in_h;
  w.in_w = in_w;
  w.k_h = k_h;
  w.k_w = k_w;
  MF_ASSIGN_OR_RETURN(w.stride_h, PairAttr(attrs, "stride", 0));
  MF_ASSIGN_OR_RETURN(w.stride_w, PairAttr(attrs, "stride", 1));
  MF_ASSIGN_OR_RETURN(w.dil_h, PairAttr(attrs, "dilation", 0));
  MF_ASSIGN_OR_RETURN(w.dil_w, PairAttr(attrs, "dilation", 1));
  if (k_h < 1 || k_w < 1) return Status::Error("the window must be at least 1x1");
  const int64_t eff_h = (k_h - 1) * w.dil_h + 1;
  const int64_t eff_w = (k_w - 1) * w.dil_w + 1;
  const std::string& padding = attrs.Str("padding");
  std::span<const int64_t> pads;
  if (padding == "explicit") {
    pads = attrs.Ints("pads");
    if (pads.size() != 4 || *std::min_element(pads.begin(), pads.end()) < 0) {
      return Status::Error("explicit padding needs 'pads' = [top, bottom, left, right] >= 0");
    }
  } else if (padding != "same" && padding != "valid") {
    return Status::Error("padding must be 'same', 'valid' or 'explicit', not '" + padding + "'");
  }
  if (padding != "same") {
    const int64_t pad_h = pads.empty() ? 0 : pads[0] + pads[1];
    const int64_t pad_w = pads.empty() ? 0 : pads[2] + pads[3];
    if (in_h + pad_h < eff_h || in_w + pad_w < eff_w) {
      return Status::Error("the window (" + std::to_string(eff_h) + "x" + std::to_string(eff_w) +
                           ") is larger than the padded input (" + std::to_string(in_h + pad_h) +
                           "x" + std::to_string(in_w + pad_w) + ")");
    }
  }
  PlaceWindow(padding, pads, &w);
  return w;
}

Result<ActivationRange> ParseActivation(const Attrs& attrs) {
  const AttrValue* value = attrs.Find("activation");
  const std::string name = value ? std::get<std::string>(*value) : "none";
  if (name == "none" || name == "relu" || name == "relu6" || name == "relu_n1_to_1")
    return ActivationRangeOf(name);
  return Status::Error("activation must be none, relu, relu6 or relu_n1_to_1, not '" + name + "'");
}

}  // namespace memfold
