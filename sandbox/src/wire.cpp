#include "wire.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <type_traits>

#include "posix_util.h"

namespace egca::sandbox::internal {
namespace {

// A frame is: magic (u32), body length (u64), body. The frame is built in place (the
// header's room first), so a body is never copied into a second buffer; with `reserve`
// (the body's size, when known) it never reallocates either, which leaves no partial copy
// of it in freed memory (the outcome frame holds what a child sent: posix_util.h).
class Encoder {
 public:
  explicit Encoder(size_t reserve = 0) {
    frame_.reserve(kHeaderBytes + reserve);
    frame_.resize(kHeaderBytes);
  }
  template <typename T>
  void Put(T value) {
    static_assert(std::is_trivially_copyable_v<T>);
    frame_.append(reinterpret_cast<const char*>(&value), sizeof(value));
  }
  void PutString(const std::string& s) {
    Put<uint64_t>(s.size());
    frame_.append(s);
  }
  std::string Finish(uint32_t magic) && {
    const uint64_t size = frame_.size() - kHeaderBytes;
    std::memcpy(frame_.data(), &magic, sizeof(magic));
    std::memcpy(frame_.data() + sizeof(magic), &size, sizeof(size));
    return std::move(frame_);
  }

 private:
  static constexpr size_t kHeaderBytes = sizeof(uint32_t) + sizeof(uint64_t);
  std::string frame_;
};

class Decoder {
 public:
  explicit Decoder(const std::string& body) : body_(body) {}
  template <typename T>
  bool Get(T* value) {
    if (body_.size() - pos_ < sizeof(T)) return false;
    std::memcpy(value, body_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool GetString(std::string* s) {
    uint64_t size = 0;
    if (!Get(&size) || body_.size() - pos_ < size) return false;
    s->assign(body_, pos_, size);
    pos_ += size;
    return true;
  }
  bool done() const { return pos_ == body_.size(); }

 private:
  const std::string& body_;
  size_t pos_ = 0;
};

bool ReceiveFrame(int fd, uint32_t magic, std::string* body) {
  uint32_t got = 0;
  uint64_t size = 0;
  if (!ReadExact(fd, &got, sizeof(got)) || got != magic) return false;
  if (!ReadExact(fd, &size, sizeof(size))) return false;
  body->resize(size);
  return size == 0 || ReadExact(fd, body->data(), size);
}

void PutLimits(Encoder* e, const Limits& l) {
  e->Put(l.wall_seconds);
  e->Put(l.cpu_seconds);
  e->Put(l.memory_bytes);
  e->Put(l.output_bytes);
  e->Put(l.result_bytes);
  e->Put(l.file_bytes);
  e->Put<int32_t>(l.max_threads);
  e->Put<int32_t>(l.max_open_files);
}

bool GetLimits(Decoder* d, Limits* l) {
  int32_t threads = 0, files = 0;
  bool ok = d->Get(&l->wall_seconds) && d->Get(&l->cpu_seconds) && d->Get(&l->memory_bytes) &&
            d->Get(&l->output_bytes) && d->Get(&l->result_bytes) && d->Get(&l->file_bytes) &&
            d->Get(&threads) && d->Get(&files);
  l->max_threads = threads;
  l->max_open_files = files;
  return ok;
}

// Bounds on the options frame (its sender is the trusted caller; the bounds only keep a
// stray writer on fd 3 from making the server allocate without limit).
constexpr uint64_t kMaxOptionsBytes = 64ull << 20;
constexpr uint64_t kMaxListEntries = 1u << 16;

}  // namespace

std::string EncodeOptions(const ForkServerOptions& o) {
  Encoder e;
  e.Put<uint32_t>(kWireVersion);
  e.PutString(o.scratch_root);
  for (bool b :
       {o.install_seccomp, o.use_namespaces, o.use_landlock, o.confine_reads, o.seccomp_notify}) {
    e.Put<uint8_t>(b);
  }
  e.Put<uint64_t>(o.readable_paths.size());
  for (const std::string& path : o.readable_paths) e.PutString(path);
  e.Put<uint64_t>(o.extra_env.size());
  for (const auto& [name, value] : o.extra_env) {
    e.PutString(name);
    e.PutString(value);
  }
  e.Put<uint64_t>(o.scratch_tmpfs_bytes);
  e.PutString(o.server_config);
  return std::move(e).Finish(kOptionsMagic);
}

bool ReceiveOptions(int fd, ForkServerOptions* o, std::string* error) {
  uint32_t magic = 0;
  uint64_t size = 0;
  if (!ReadExact(fd, &magic, sizeof(magic)) || magic != kOptionsMagic ||
      !ReadExact(fd, &size, sizeof(size)) || size > kMaxOptionsBytes) {
    *error = "no options frame on the channel";
    return false;
  }
  std::string body(size, '\0');
  if (size > 0 && !ReadExact(fd, body.data(), size)) {
    *error = "short options frame";
    return false;
  }
  Decoder d(body);
  uint32_t version = 0;
  if (!d.Get(&version) || version != kWireVersion) {
    *error = "the server program was built from another egca version (wire version " +
             std::to_string(version) + ", expected " + std::to_string(kWireVersion) + ")";
    return false;
  }
  uint8_t flags[5] = {};
  uint64_t paths = 0, envs = 0;
  bool ok = d.GetString(&o->scratch_root);
  for (uint8_t& f : flags) ok = ok && d.Get(&f);
  ok = ok && d.Get(&paths) && paths <= kMaxListEntries;
  o->readable_paths.clear();
  for (uint64_t i = 0; ok && i < paths; ++i) {
    ok = d.GetString(&o->readable_paths.emplace_back());
  }
  ok = ok && d.Get(&envs) && envs <= kMaxListEntries;
  o->extra_env.clear();
  for (uint64_t i = 0; ok && i < envs; ++i) {
    auto& [name, value] = o->extra_env.emplace_back();
    ok = d.GetString(&name) && d.GetString(&value);
  }
  ok = ok && d.Get(&o->scratch_tmpfs_bytes) && d.GetString(&o->server_config) && d.done();
  o->install_seccomp = flags[0];
  o->use_namespaces = flags[1];
  o->use_landlock = flags[2];
  o->confine_reads = flags[3];
  o->seccomp_notify = flags[4];
  if (!ok) *error = "malformed options frame";
  return ok;
}

std::string EncodeReady(const ReadyMessage& ready) {
  Encoder e;
  e.Put<uint8_t>(ready.ok);
  e.PutString(ready.error);
  const Capabilities& c = ready.capabilities;
  for (bool b : {c.seccomp, c.network_namespace, c.mount_namespace, c.pid_namespace, c.uid_drop,
                 c.user_namespace, c.filesystem_view}) {
    e.Put<uint8_t>(b);
  }
  e.Put<int32_t>(c.landlock_abi);
  return std::move(e).Finish(kReadyMagic);
}

bool ReceiveReady(int fd, ReadyMessage* ready) {
  std::string body;
  if (!ReceiveFrame(fd, kReadyMagic, &body)) return false;
  Decoder d(body);
  uint8_t flags[8] = {};
  Capabilities& c = ready->capabilities;
  bool ok = d.Get(&flags[0]) && d.GetString(&ready->error);
  for (int i = 1; ok && i < 8; ++i) ok = d.Get(&flags[i]);
  int32_t abi = 0;
  ok = ok && d.Get(&abi) && d.done();
  ready->ok = flags[0];
  c.seccomp = flags[1];
  c.network_namespace = flags[2];
  c.mount_namespace = flags[3];
  c.pid_namespace = flags[4];
  c.uid_drop = flags[5];
  c.user_namespace = flags[6];
  c.filesystem_view = flags[7];
  c.landlock_abi = abi;
  return ok;
}

std::string EncodeRequest(const ChildRequest& request) {
  Encoder e;
  e.Put<uint8_t>(request.peer_fd >= 0);
  PutLimits(&e, request.limits);
  e.PutString(request.payload);
  e.PutString(request.stdin_data);
  return std::move(e).Finish(kRequestMagic);
}

bool SendRequest(int sock, const std::string& frame, int peer_fd) {
  if (peer_fd < 0) return WriteAll(sock, frame);
  // The descriptor rides on the first byte; the rest follows as usual.
  return SendByteWithFd(sock, frame[0], peer_fd) &&
         WriteAll(sock, std::string_view(frame).substr(1));
}

ssize_t ReceiveWithFds(int sock, void* data, size_t size, int flags, int* fds, int max_fds,
                       int* fd_count, int* msg_flags) {
  *fd_count = 0;
  *msg_flags = 0;
  max_fds = std::clamp(max_fds, 0, kMaxReceivedFds);
  iovec iov{data, size};
  alignas(cmsghdr) char control[CMSG_SPACE(kMaxReceivedFds * sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = CMSG_SPACE(max_fds * sizeof(int));
  ssize_t got;
  do {
    got = recvmsg(sock, &msg, flags);
  } while (got < 0 && errno == EINTR);
  if (got < 0) return got;
  *msg_flags = msg.msg_flags;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      *fd_count = static_cast<int>((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
      std::memcpy(fds, CMSG_DATA(c), std::min(*fd_count, max_fds) * sizeof(int));
    }
  }
  return got;
}

bool ReceiveRequest(int fd, ChildRequest* request) {
  request->peer_fd = -1;
  // The first byte alone, with whatever descriptor came with it.
  char first = 0;
  int peer = -1;
  int count = 0;
  int flags = 0;
  if (ReceiveWithFds(fd, &first, 1, MSG_CMSG_CLOEXEC, &peer, 1, &count, &flags) != 1) {
    return false;
  }
  if (count < 1) peer = -1;
  uint32_t magic = 0;
  std::memcpy(&magic, &first, 1);
  uint8_t rest[3];
  uint64_t size = 0;
  std::string body;
  bool ok = (flags & MSG_CTRUNC) == 0 && ReadExact(fd, rest, 3);
  if (ok) {
    std::memcpy(reinterpret_cast<char*>(&magic) + 1, rest, 3);
    ok = magic == kRequestMagic && ReadExact(fd, &size, sizeof(size));
  }
  if (ok) {
    body.resize(size);
    ok = size == 0 || ReadExact(fd, body.data(), size);
  }
  Decoder d(body);
  uint8_t has_peer = 0;
  ok = ok && d.Get(&has_peer) && (has_peer != 0) == (peer >= 0) &&
       GetLimits(&d, &request->limits) && d.GetString(&request->payload) &&
       d.GetString(&request->stdin_data) && d.done();
  if (ok) {
    request->peer_fd = peer;
  } else if (peer >= 0) {
    close(peer);
  }
  // The request may hold what a child must not find in the memory it inherits (a test's
  // data, a key): no copy stays behind in freed memory.
  explicit_bzero(body.data(), body.size());
  return ok;
}

std::string EncodeOutcome(const ChildOutcome& o, const std::string& error) {
  // The strings with their lengths, and at most 256 bytes of fixed-size fields.
  Encoder e(error.size() + o.violation.size() + o.stdout_data.size() + o.stderr_data.size() +
            o.result.size() + 5 * sizeof(uint64_t) + 256 + sizeof(o.phases));
  e.PutString(error);
  e.Put<int32_t>(static_cast<int32_t>(o.termination));
  e.Put<int32_t>(o.exit_code);
  e.Put<int32_t>(o.signal);
  e.PutString(o.violation);
  e.PutString(o.stdout_data);
  e.PutString(o.stderr_data);
  e.PutString(o.result);
  e.Put<uint8_t>(o.result_truncated);
  e.Put(o.wall_seconds);
  e.Put(o.cpu_seconds);
  e.Put(o.max_rss_bytes);
  e.Put(o.minor_faults);
  e.Put(o.phases);
  e.Put<int32_t>(o.pid);
  return std::move(e).Finish(kOutcomeMagic);
}

bool ReceiveOutcome(int fd, ChildOutcome* o, std::string* error) {
  std::string body;
  if (!ReceiveFrame(fd, kOutcomeMagic, &body)) return false;
  Decoder d(body);
  int32_t termination = 0, pid = 0;
  uint8_t truncated = 0;
  bool ok = d.GetString(error) && d.Get(&termination) && d.Get(&o->exit_code) &&
            d.Get(&o->signal) && d.GetString(&o->violation) && d.GetString(&o->stdout_data) &&
            d.GetString(&o->stderr_data) && d.GetString(&o->result) && d.Get(&truncated) &&
            d.Get(&o->wall_seconds) && d.Get(&o->cpu_seconds) && d.Get(&o->max_rss_bytes) &&
            d.Get(&o->minor_faults) && d.Get(&o->phases) && d.Get(&pid) && d.done();
  o->termination = static_cast<Termination>(termination);
  o->result_truncated = truncated;
  o->pid = pid;
  return ok;
}

}  // namespace egca::sandbox::internal
