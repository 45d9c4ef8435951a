// SHA-256 of bytes as lowercase hex, via OpenSSL's libcrypto. O(n).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace memfold {

std::string Sha256Hex(const std::byte* data, size_t size);
// SHA-256 of the parts one after another (e.g. every gradient of a training step).
std::string Sha256Hex(std::span<const std::vector<std::byte>> parts);

}  // namespace memfold
