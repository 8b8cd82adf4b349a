// The hostile-program corpus end to end: every tests/sandbox/hostile/*.py runs through the
// Python executor (egca::tracer) in the sandbox and must get the verdict its manifest
// entry names; the test process survives, nothing outside the sandbox changes, and the
// batch leaves no process behind.
//
// Manifest (tests/sandbox/hostile/expected.json):
//   {"limits": {...},
//    "programs": {"<file>.py": {"verdict": "VIOLATION", "detail": "clone",
//                               "requires": ["landlock"], "tests": [<test JSON>],
//                               "limits": {"wall_seconds": .., "cpu_seconds": ..}}}}
// (an entry's "limits", optional, replace those of the corpus's for that program:
// wall_seconds, cpu_seconds, memory_bytes)
// `tests` uses the `egca-run --tests` format (ParseTestsJson); "tests_json" instead holds
// that JSON as text (numbers beyond what nlohmann::json holds exactly); `detail` must occur in
// Verdict::detail; `requires` names protections without which the verdict differs
// ("landlock", "fs_confined" = Landlock or a mount namespace, "uid_drop"); programs whose
// requirements this machine lacks are reported and skipped.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "egca/sandbox/fork_server.h"
#include "egca/sandbox/verdict.h"
#include "egca/tracer/executor.h"
#include "egca/tracer/test_case.h"

namespace egca::sandbox {
namespace {

using nlohmann::json;

const std::string kCorpusDir = std::string(EGCA_SOURCE_DIR) + "/tests/sandbox/hostile";

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> CorpusFiles() {
  std::vector<std::string> files;
  if (DIR* d = opendir(kCorpusDir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name.size() > 3 && name.substr(name.size() - 3) == ".py") files.push_back(name);
    }
    closedir(d);
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Names under `dir` that start with "egca_hostile" (every probe file the corpus tries
// to create outside its private directory is named so).
std::set<std::string> ProbeFiles(const std::string& dir) {
  std::set<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name.rfind("egca_hostile", 0) == 0 && name.find("sentinel") == std::string::npos) {
        out.insert(name);
      }
    }
    closedir(d);
  }
  return out;
}

std::vector<int> ChildrenOf(int pid) {
  std::vector<int> out;
  std::string task_dir = fmt::format("/proc/{}/task", pid);
  if (DIR* d = opendir(task_dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::ifstream in(fmt::format("{}/{}/children", task_dir, e->d_name));
      int child;
      while (in >> child) out.push_back(child);
    }
    closedir(d);
  }
  return out;
}

bool Satisfied(const json& requires_list, const Capabilities& caps, std::string* missing) {
  for (const auto& r : requires_list) {
    std::string need = r.get<std::string>();
    bool ok = need == "landlock"      ? caps.landlock_abi > 0
              : need == "fs_confined" ? caps.landlock_abi > 0 || caps.mount_namespace
              : need == "uid_drop"    ? caps.uid_drop
                                      : false;
    if (!ok) {
      *missing = need;
      return false;
    }
  }
  return true;
}

TEST(SandboxHostileCorpus, ManifestCoversEveryProgram) {
  json manifest = json::parse(Slurp(kCorpusDir + "/expected.json"));
  std::vector<std::string> files = CorpusFiles();
  EXPECT_GE(files.size(), 30u);
  for (const std::string& f : files) {
    ASSERT_TRUE(manifest["programs"].contains(f)) << f << " has no manifest entry";
    const json& entry = manifest["programs"][f];
    VerdictKind kind;
    EXPECT_TRUE(ParseVerdictName(entry.at("verdict").get<std::string>(), &kind)) << f;
    // The expectation is documented in the program itself.
    std::string source = Slurp(kCorpusDir + "/" + f);
    EXPECT_NE(source.find("# Expected: " + entry.at("verdict").get<std::string>()),
              std::string::npos)
        << f << ": the header comment must state '# Expected: <VERDICT>'";
  }
  for (const auto& [name, entry] : manifest["programs"].items()) {
    EXPECT_TRUE(std::find(files.begin(), files.end(), name) != files.end())
        << name << " is in the manifest but not in the corpus";
  }
}

TEST(SandboxHostileCorpus, EveryProgramGetsItsVerdictAndNothingEscapes) {
  json manifest = json::parse(Slurp(kCorpusDir + "/expected.json"));
  const char* home_env = std::getenv("HOME");
  std::string home = home_env != nullptr ? home_env : "/root";
  std::string scratch = fmt::format("/tmp/egca-hostile-e2e-{}", getpid());
  // Sentinels the corpus tries to overwrite or delete.
  const std::string sentinel_text = "egca sentinel: must survive the hostile corpus\n";
  std::vector<std::string> sentinels = {home + "/egca_hostile_sentinel",
                                        "/tmp/egca_hostile_sentinel"};
  for (const auto& s : sentinels) std::ofstream(s) << sentinel_text;
  for (const auto& dir : {home, std::string("/tmp")}) {
    for (const auto& leftover : ProbeFiles(dir)) std::remove((dir + "/" + leftover).c_str());
  }

  tracer::ExecutorOptions options;
  options.scratch_root = scratch;
  auto executor = tracer::Executor::Create(options);
  ASSERT_TRUE(executor.ok()) << executor.status().ToString();
  std::vector<int> before_children = ChildrenOf(getpid());
  ASSERT_EQ(before_children.size(), 1u) << "expected exactly the fork server as a child";
  int server = before_children[0];
  Capabilities caps = ProbeCapabilities();

  tracer::RunOptions run;
  const json& limits = manifest.at("limits");
  run.limits.wall_seconds = limits.at("wall_seconds").get<double>();
  run.limits.cpu_seconds = limits.at("cpu_seconds").get<double>();
  run.limits.memory_bytes = limits.at("memory_bytes").get<uint64_t>();
  run.limits.output_bytes = limits.at("output_bytes").get<uint64_t>();
  run.limits.file_bytes = limits.at("file_bytes").get<uint64_t>();
  run.limits.max_threads = limits.at("max_threads").get<int>();

  int checked = 0;
  for (const std::string& file : CorpusFiles()) {
    SCOPED_TRACE(file);
    const json& entry = manifest["programs"][file];
    std::string missing;
    if (!Satisfied(entry.value("requires", json::array()), caps, &missing)) {
      std::printf("[ SKIP     ] %s needs %s\n", file.c_str(), missing.c_str());
      continue;
    }
    // "tests_json": the tests as JSON text, for numbers the manifest's own parser cannot
    // hold (integers beyond 64 bits or beyond double range, which ParseTestsJson reads
    // exactly).
    auto tests =
        tracer::ParseTestsJson(entry.contains("tests_json") ? entry["tests_json"].get<std::string>()
                                                            : entry.at("tests").dump(),
                               file);
    ASSERT_TRUE(tests.ok()) << tests.status().ToString();
    ASSERT_EQ(tests->size(), 1u);
    // An entry's own "limits" replace the corpus's (a program whose honest work must not
    // race a limit on a slow machine, e.g. a whole-address-space scan).
    tracer::RunOptions this_run = run;
    if (entry.contains("limits")) {
      const json& own = entry["limits"];
      this_run.limits.wall_seconds = own.value("wall_seconds", run.limits.wall_seconds);
      this_run.limits.cpu_seconds = own.value("cpu_seconds", run.limits.cpu_seconds);
      this_run.limits.memory_bytes = own.value("memory_bytes", run.limits.memory_bytes);
    }
    auto result =
        executor.value()->Run(Slurp(kCorpusDir + "/" + file), tests->front(), this_run);
    ASSERT_TRUE(result.ok()) << result.status().ToString();
    const Verdict& v = result->verdict;
    std::string expected = entry.at("verdict").get<std::string>();
    EXPECT_EQ(VerdictName(v.kind), expected)
        << "detail: " << v.detail << " | " << v.error_type << ": " << v.message << " | termination "
        << TerminationName(result->termination) << " signal " << v.signal
        << " | stderr: " << result->stderr_data.substr(0, 400);
    if (entry.contains("detail")) {
      EXPECT_NE(v.detail.find(entry["detail"].get<std::string>()), std::string::npos)
          << "detail was '" << v.detail << "'";
    }
    if (entry.contains("error_type")) {
      EXPECT_EQ(v.error_type, entry["error_type"].get<std::string>()) << v.message;
    }
    ++checked;
  }
  EXPECT_GE(checked, 25);

  // Nothing outside the sandbox changed.
  for (const auto& s : sentinels) EXPECT_EQ(Slurp(s), sentinel_text) << s;
  EXPECT_TRUE(ProbeFiles(home).empty()) << "a probe file appeared in " << home;
  EXPECT_TRUE(ProbeFiles("/tmp").empty()) << "a probe file appeared in /tmp";
  // The batch left nothing running: our children are the executor's fork servers (the
  // candidates' and, since the first assert test, the test processes'); the candidates'
  // has at most its spare child (forked ahead for the next job, waiting for it: it never
  // ran a program, and it has no child of its own), the test processes' at most the reused
  // test process waiting for the next test (tracer/src/test_session.h) and a spare, and
  // nothing is left once the executor is gone.
  std::vector<int> after_children = ChildrenOf(getpid());
  EXPECT_EQ(after_children.size(), 2u);
  EXPECT_NE(std::find(after_children.begin(), after_children.end(), server), after_children.end());
  for (int pid : after_children) {
    const std::vector<int> children = ChildrenOf(pid);
    EXPECT_LE(children.size(), pid == server ? 1u : 2u) << pid;
    for (int child : children) EXPECT_TRUE(ChildrenOf(child).empty()) << child;
  }
  executor.value().reset();
  EXPECT_TRUE(ChildrenOf(getpid()).empty());
  for (const auto& s : sentinels) std::remove(s.c_str());
  std::error_code ignored;
  std::filesystem::remove_all(scratch, ignored);
}

}  // namespace
}  // namespace egca::sandbox
