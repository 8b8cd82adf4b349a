// The fork server process: warm-up, then one sandboxed child per request.
#pragma once

#include "egca/sandbox/fork_server.h"

namespace egca::sandbox::internal {

// Runs in the process forked by ForkServer::Start(); `sock` is its end of the socketpair.
// Never returns: exits when the caller closes its end (or dies).
[[noreturn]] void ServerMain(const ForkServerOptions& options, int sock);

}  // namespace egca::sandbox::internal
