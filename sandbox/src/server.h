// The fork server process: warm-up, then one sandboxed child per request.
#pragma once

#include <cstddef>

#include "egca/sandbox/fork_server.h"

namespace egca::sandbox::internal {

// The server's end of its channel to the caller (exec mode: where it is on entry).
constexpr int kServerChannelFd = 3;
// argv[1] of a server program started by ForkServer.
constexpr char kServeFlag[] = "--egca-fork-server";

// Runs in the process forked by ForkServer::Start(), or in a server program through
// ServeMain(); `sock` is its end of the socketpair.
// Never returns: exits when the caller closes its end (or dies).
[[noreturn]] void ServerMain(const ForkServerOptions& options, int sock);

// In a spare child: populates writable the ranges SetSparePrefault() registered in the
// server (prefault.h). Returns the pages populated.
size_t PopulateSparePrefault();

}  // namespace egca::sandbox::internal
