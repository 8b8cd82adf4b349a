// The framing between the caller and its fork server over their socketpair. Both ends are
// the same build of this module on the same machine (a fork of the caller, or a server
// program built with it: the options frame carries kWireVersion and the server refuses
// another), so fixed-width host-order fields are enough; every frame starts with a magic
// number so a desynchronized stream is caught.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "egca/sandbox/fork_server.h"

namespace egca::sandbox::internal {

constexpr uint32_t kReadyMagic = 0x45524459;    // server -> caller after warm-up
constexpr uint32_t kRequestMagic = 0x45524551;  // caller -> server
constexpr uint32_t kOutcomeMagic = 0x454f5554;  // server -> caller
constexpr uint32_t kOptionsMagic = 0x454f5054;  // caller -> exec'd server, first frame
// Changes whenever a frame's layout (or Limits / ChildPhases) changes.
constexpr uint32_t kWireVersion = 3;

// Ready frame: whether warm-up succeeded (else `error` says why) and the protections the
// server actually put in place.
struct ReadyMessage {
  bool ok = false;
  std::string error;
  Capabilities capabilities;
};

std::string EncodeReady(const ReadyMessage& ready);
std::string EncodeRequest(const ChildRequest& request);
// `error` non-empty: the server failed this run (egca error, not a candidate outcome).
std::string EncodeOutcome(const ChildOutcome& outcome, const std::string& error);

// Exec mode: everything of ForkServerOptions but warm_up, child_main and server_binary.
std::string EncodeOptions(const ForkServerOptions& options);

// Sends an EncodeRequest() frame; with `peer_fd` >= 0 that descriptor travels with it
// (SCM_RIGHTS on the frame's first byte).
bool SendRequest(int sock, const std::string& frame, int peer_fd);

// One recvmsg of at most `size` bytes into `data` (retried on EINTR), with the descriptors
// sent alongside (SCM_RIGHTS): up to `max_fds` (at most kMaxReceivedFds) of them into
// `fds`, and in *fd_count how many the message carried (possibly more than were kept).
// `flags`: recvmsg's (MSG_CMSG_CLOEXEC, ...). Returns recvmsg's result; *msg_flags: the
// message's flags (MSG_TRUNC, MSG_CTRUNC: the data or the descriptors did not fit).
constexpr int kMaxReceivedFds = 3;
ssize_t ReceiveWithFds(int sock, void* data, size_t size, int flags, int* fds, int max_fds,
                       int* fd_count, int* msg_flags);

// Each Receive* reads one frame from `fd`; false on EOF/error/bad magic.
bool ReceiveReady(int fd, ReadyMessage* ready);
// False also for another kWireVersion (`error` says which).
bool ReceiveOptions(int fd, ForkServerOptions* options, std::string* error);
// request->peer_fd: the descriptor that came with the frame (owned by the caller now), or
// -1. A frame that announces one and comes without it (or the reverse) is refused.
bool ReceiveRequest(int fd, ChildRequest* request);
bool ReceiveOutcome(int fd, ChildOutcome* outcome, std::string* error);

}  // namespace egca::sandbox::internal
