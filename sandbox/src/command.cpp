#include "egca/sandbox/command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "posix_util.h"

extern char** environ;

namespace egca::sandbox {
namespace {

using internal::UniqueFd;

bool MakePipe(UniqueFd* read_end, UniqueFd* write_end) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return false;
  read_end->Reset(fds[0]);
  write_end->Reset(fds[1]);
  return true;
}

}  // namespace

StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                   const CommandOptions& options) {
  if (argv.empty()) return InvalidArgument("RunCommand: empty argv");
  UniqueFd in_r, in_w, out_r, out_w, err_r, err_w;
  if (!MakePipe(&in_r, &in_w) || !MakePipe(&out_r, &out_w) || !MakePipe(&err_r, &err_w)) {
    return Internal(std::string("RunCommand: pipe: ") + std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_r.get(), 0);
  posix_spawn_file_actions_adddup2(&actions, out_w.get(), 1);
  posix_spawn_file_actions_adddup2(&actions, err_w.get(), 2);
  if (!options.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, options.cwd.c_str());
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t empty;
  sigemptyset(&empty);
  posix_spawnattr_setsigmask(&attr, &empty);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const double start = internal::MonotonicSeconds();
  int rc = posix_spawnp(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return NotFound("cannot run " + argv[0] + ": " + std::strerror(rc));
  }
  in_r.Reset();
  out_w.Reset();
  err_w.Reset();
  // A small stdin fits the pipe buffer; larger inputs are written as the poll loop allows.
  size_t in_pos = 0;
  internal::SetNonBlocking(in_w.get());
  internal::SetNonBlocking(out_r.get());
  internal::SetNonBlocking(err_r.get());
  if (options.stdin_data.empty()) in_w.Reset();

  CommandResult result;
  bool killed = false;
  char buf[65536];
  while (out_r.valid() || err_r.valid()) {
    double left = options.wall_seconds - (internal::MonotonicSeconds() - start);
    if (left <= 0 && !killed) {
      ::kill(-pid, SIGKILL);
      killed = true;
      result.timed_out = true;
    }
    pollfd fds[3];
    int n = 0;
    int out_i = -1, err_i = -1, in_i = -1;
    if (out_r.valid()) fds[out_i = n++] = {out_r.get(), POLLIN, 0};
    if (err_r.valid()) fds[err_i = n++] = {err_r.get(), POLLIN, 0};
    if (in_w.valid()) fds[in_i = n++] = {in_w.get(), POLLOUT, 0};
    int timeout_ms = killed ? 1000 : static_cast<int>(left * 1000) + 1;
    int ready = ::poll(fds, n, timeout_ms);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) {
      if (killed) break;  // killed and still silent: descendants hold the pipes; give up
      continue;
    }
    auto drain = [&](int i, UniqueFd* fd, std::string* sink) {
      if (i < 0 || fds[i].revents == 0) return;
      ssize_t got = ::read(fd->get(), buf, sizeof(buf));
      if (got > 0) {
        size_t room = options.output_bytes > sink->size() ? options.output_bytes - sink->size() : 0;
        sink->append(buf, std::min<size_t>(room, static_cast<size_t>(got)));
      } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
        fd->Reset();
      }
    };
    drain(out_i, &out_r, &result.stdout_data);
    drain(err_i, &err_r, &result.stderr_data);
    if (in_i >= 0 && fds[in_i].revents != 0) {
      ssize_t put = ::write(in_w.get(), options.stdin_data.data() + in_pos,
                            options.stdin_data.size() - in_pos);
      if (put > 0) in_pos += static_cast<size_t>(put);
      if (put < 0 && errno != EAGAIN && errno != EINTR) in_w.Reset();
      if (in_pos >= options.stdin_data.size()) in_w.Reset();
    }
  }
  in_w.Reset();
  int status = 0;
  while (true) {
    pid_t got = ::waitpid(pid, &status, killed ? 0 : WNOHANG);
    if (got == pid) break;
    if (got < 0 && errno != EINTR) break;
    if (got == 0) {
      double left = options.wall_seconds - (internal::MonotonicSeconds() - start);
      if (left <= 0) {
        ::kill(-pid, SIGKILL);
        killed = true;
        result.timed_out = true;
      } else {
        ::usleep(2000);
      }
    }
  }
  result.wall_seconds = internal::MonotonicSeconds() - start;
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  return result;
}

}  // namespace egca::sandbox
