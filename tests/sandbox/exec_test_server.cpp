// A fork server program for the sandbox tests (exec mode): the fork server tests'
// TestChild, plus what only a separate program can show. Payloads beyond TestChild's:
//   config       the ServerConfig bytes its warm-up received
//   scan:PREFIX  searches the child's whole address space (/proc/self/maps and
//                /proc/self/mem) for PREFIX followed by 32 hex digits; writes the first
//                such string found, or "not found"
//   server_fds   the server's open descriptors and their targets ("3=socket:[...]"),
//                recorded at warm-up
// Warm-up config "fail" makes the warm-up throw.
#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>

#include "egca/sandbox/fork_server.h"
#include "test_child.h"

namespace {

std::string g_config;
std::string g_server_fds;

std::string ListFds() {
  std::string out;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.' || std::atoi(e->d_name) == dirfd(d)) continue;
      char target[256] = {};
      std::string link = std::string("/proc/self/fd/") + e->d_name;
      ssize_t n = readlink(link.c_str(), target, sizeof(target) - 1);
      out += std::string(e->d_name) + "=" + (n > 0 ? std::string(target, n) : "?") + "\n";
    }
    closedir(d);
  }
  return out;
}

int ServerChild(std::string_view payload, int result_fd) {
  using egca::sandbox::testing::WriteAllFd;
  if (payload == "config") return WriteAllFd(result_fd, g_config) ? 0 : 1;
  if (payload == "server_fds") return WriteAllFd(result_fd, g_server_fds) ? 0 : 1;
  if (payload.rfind("scan:", 0) == 0) {
    return WriteAllFd(result_fd, egca::sandbox::testing::ScanOwnMemory(std::string(payload.substr(5)))) ? 0 : 1;
  }
  return egca::sandbox::testing::TestChild(payload, result_fd);
}

}  // namespace

int main(int argc, char** argv) {
  egca::sandbox::ServeHooks hooks;
  hooks.warm_up = [](std::string_view config) {
    if (config == "fail") throw std::runtime_error("warm-up asked to fail");
    g_config = std::string(config);
    g_server_fds = ListFds();
  };
  hooks.child_main = ServerChild;
  return egca::sandbox::ServeMain(argc, argv, std::move(hooks));
}
