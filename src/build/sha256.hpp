// SHA-256 (FIPS 180-4), for build-cache keys and candidate identities in results.
#pragma once

#include <string>

namespace pkb::build {

std::string sha256_hex(const std::string& data);

}  // namespace pkb::build
