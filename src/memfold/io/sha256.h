// SHA-256 of a byte range as lowercase hex, via OpenSSL's libcrypto. O(n).
#pragma once

#include <cstddef>
#include <string>

namespace memfold {

std::string Sha256Hex(const std::byte* data, size_t size);

}  // namespace memfold
