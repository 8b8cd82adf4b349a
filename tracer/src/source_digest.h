// SHA-256 of a program's source, the program identity recorded in every trace. The digest
// itself lives in core (egca/core/sha256.h), shared with the batch store's sample keys.
#pragma once

#include "egca/core/sha256.h"

namespace egca::tracer::hook {

using ::egca::Sha256Hex;
using ::egca::Sha256HexPortable;
using ::egca::Sha256UsesCpuExtensions;

}  // namespace egca::tracer::hook
