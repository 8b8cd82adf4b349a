// Exec mode (ForkServerOptions::server_binary): the server is a separate program
// (exec_test_server.cpp) holding nothing of the caller. The whole fork server suite also
// runs in this mode (the "exec:" tests of sandbox_fork_server_test); these are the
// properties only exec mode has, and its errors.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "egca/sandbox/fork_server.h"
#include "test_child.h"

namespace egca::sandbox {
namespace {

const std::string kServer = EGCA_TEST_SERVER;
// Never written whole in this file: the secret is this prefix plus 32 random hex digits.
const std::string kSecretPrefix = std::string("EGCA-CALLER") + "-SECRET:";

std::string ScratchRoot() { return fmt::format("/tmp/egca-exec-server-test-{}", getpid()); }

ChildRequest Req(std::string payload) {
  ChildRequest r;
  r.payload = std::move(payload);
  r.limits.wall_seconds = 10;
  r.limits.cpu_seconds = 10;
  r.limits.memory_bytes = 1ull << 30;
  return r;
}

ForkServerOptions ExecOptions(std::string config = "") {
  ForkServerOptions options;
  options.server_binary = kServer;
  options.server_config = std::move(config);
  options.scratch_root = ScratchRoot();
  return options;
}

std::string NewSecret() {
  std::random_device rd;
  std::string secret = kSecretPrefix;
  for (int i = 0; i < 4; ++i) secret += fmt::format("{:08x}", rd());
  return secret;
}

class ScratchCleanup : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(ScratchRoot(), ignored);
  }
};
const auto* const kScratchCleanup = ::testing::AddGlobalTestEnvironment(new ScratchCleanup);

TEST(SandboxExecServer, RunsTheProgramsChildMainWithItsConfig) {
  auto server = ForkServer::Start(ExecOptions("config bytes \x01\x02"));
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto hello = server.value()->Run(Req("hello"));
  ASSERT_TRUE(hello.ok()) << hello.status().ToString();
  EXPECT_EQ(hello->result, "result bytes");
  EXPECT_EQ(hello->stdout_data, "to stdout");
  auto config = server.value()->Run(Req("config"));
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->result, "config bytes \x01\x02");
  // The server is that program, not a fork of this test.
  char exe[4096] = {};
  ASSERT_GT(readlink(fmt::format("/proc/{}/exe", server.value()->server_pid()).c_str(), exe,
                     sizeof(exe) - 1),
            0);
  EXPECT_EQ(std::filesystem::canonical(exe), std::filesystem::canonical(kServer));
}

// The point of exec mode: a string in the caller's heap (an expected answer, a key) is
// nowhere in a child's address space. The fork-mode run is the control showing that the
// scan finds such a string when it is there.
TEST(SandboxExecServer, CallerHeapIsNotInTheChildsAddressSpace) {
  const std::string secret = NewSecret();
  ASSERT_GT(secret.capacity(), 32u);  // on the heap
  ForkServerOptions fork_options;
  fork_options.scratch_root = ScratchRoot();
  fork_options.child_main = [](std::string_view prefix, int fd) {
    return testing::WriteAllFd(fd, testing::ScanOwnMemory(std::string(prefix))) ? 0 : 1;
  };
  auto fork_server = ForkServer::Start(std::move(fork_options));
  ASSERT_TRUE(fork_server.ok()) << fork_server.status().ToString();
  auto found = fork_server.value()->Run(Req(kSecretPrefix));
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(found->result, secret) << "the control: a fork of this process holds the secret";

  auto exec_server = ForkServer::Start(ExecOptions());
  ASSERT_TRUE(exec_server.ok()) << exec_server.status().ToString();
  auto scanned = exec_server.value()->Run(Req("scan:" + kSecretPrefix));
  ASSERT_TRUE(scanned.ok()) << scanned.status().ToString();
  EXPECT_EQ(scanned->termination, Termination::kExited) << scanned->stderr_data;
  EXPECT_EQ(scanned->result, "not found");
  EXPECT_EQ(secret.size(), kSecretPrefix.size() + 32);  // kept alive until here
}

TEST(SandboxExecServer, ServerHasOnlyItsChannelAndDevNull) {
  // An inheritable descriptor in the caller (no O_CLOEXEC) must not reach the server.
  int leaked[2];
  ASSERT_EQ(pipe(leaked), 0);
  auto server = ForkServer::Start(ExecOptions());
  close(leaked[0]);
  close(leaked[1]);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto fds = server.value()->Run(Req("server_fds"));
  ASSERT_TRUE(fds.ok());
  // At warm-up: 0-2 on /dev/null, 3 the channel; nothing else.
  EXPECT_EQ(fds->result.find("pipe:"), std::string::npos) << fds->result;
  EXPECT_NE(fds->result.find("0=/dev/null\n1=/dev/null\n2=/dev/null\n3=socket:"),
            std::string::npos)
      << fds->result;
  EXPECT_EQ(std::count(fds->result.begin(), fds->result.end(), '\n'), 4) << fds->result;
}

TEST(SandboxExecServer, EnvironmentIsTheFixedOneOnly) {
  setenv("EGCA_EXEC_TEST_CALLER_VARIABLE", "caller value", 1);
  auto server = ForkServer::Start(ExecOptions());
  unsetenv("EGCA_EXEC_TEST_CALLER_VARIABLE");
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto env = server.value()->Run(Req("env"));
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(env->result.find("EGCA_EXEC_TEST_CALLER_VARIABLE"), std::string::npos);
  EXPECT_NE(env->result.find("PYTHONHASHSEED=0\n"), std::string::npos) << env->result;
}

TEST(SandboxExecServer, RestartsTheProgramAfterItDied) {
  auto server = ForkServer::Start(ExecOptions("kept"));
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const int first = server.value()->server_pid();
  kill(first, SIGKILL);
  auto failed = server.value()->Run(Req("hello"));
  EXPECT_EQ(failed.status().code(), StatusCode::kUnavailable);
  auto again = server.value()->Run(Req("config"));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->result, "kept");  // the new server got the options again
  EXPECT_NE(server.value()->server_pid(), first);
}

TEST(SandboxExecServer, WarmUpFailureIsReportedWithItsMessage) {
  auto server = ForkServer::Start(ExecOptions("fail"));
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), StatusCode::kInternal);
  EXPECT_NE(server.status().message().find("warm-up asked to fail"), std::string::npos)
      << server.status().ToString();
}

TEST(SandboxExecServer, MissingOrForeignProgramIsAClearError) {
  ForkServerOptions missing = ExecOptions();
  missing.server_binary = "/nonexistent/egca-server";
  auto a = ForkServer::Start(std::move(missing));
  EXPECT_EQ(a.status().code(), StatusCode::kNotFound);
  EXPECT_NE(a.status().message().find("/nonexistent/egca-server"), std::string::npos);

  ForkServerOptions relative = ExecOptions();
  relative.server_binary = "egca-server";
  EXPECT_EQ(ForkServer::Start(std::move(relative)).status().code(),
            StatusCode::kInvalidArgument);

  ForkServerOptions with_closure = ExecOptions();
  with_closure.child_main = [](std::string_view, int) { return 0; };
  EXPECT_EQ(ForkServer::Start(std::move(with_closure)).status().code(),
            StatusCode::kInvalidArgument);

  // A program that is not a server: it exits without a ready message.
  ForkServerOptions foreign = ExecOptions();
  foreign.server_binary = "/bin/true";
  auto d = ForkServer::Start(std::move(foreign));
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("start-up"), std::string::npos) << d.status().ToString();
}

TEST(SandboxExecServer, TheProgramIsNotACommand) {
  const std::string command = kServer + " --egca-fork-server 3</dev/null 2>/dev/null";
  const int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
}

}  // namespace
}  // namespace egca::sandbox
