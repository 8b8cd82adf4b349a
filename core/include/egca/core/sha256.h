// SHA-256 (FIPS 180-4): program identities in traces, collision-resistant sample keys.
#pragma once

#include <string>
#include <string_view>

namespace egca {

// Lowercase hex SHA-256 (64 characters) of `data`. Uses the x86 SHA extensions when the CPU
// has them (checked once), else portable code; the result is the same.
std::string Sha256Hex(std::string_view data);
// Always the portable code (for tests comparing the two paths).
std::string Sha256HexPortable(std::string_view data);
// True if Sha256Hex() runs on the CPU's SHA extensions.
bool Sha256UsesCpuExtensions();

}  // namespace egca
