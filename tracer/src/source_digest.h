// SHA-256 of a program's source, the program identity recorded in every trace.
#pragma once

#include <string>
#include <string_view>

namespace egca::tracer::hook {

// Lowercase hex SHA-256 (FIPS 180-4) of `data`.
std::string Sha256Hex(std::string_view data);

}  // namespace egca::tracer::hook
