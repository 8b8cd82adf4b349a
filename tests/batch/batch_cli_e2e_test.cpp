// egca-batch end to end on real data (tests/fixtures/batch: 5 HumanEval problems x 10 CodeT
// samples): kill -9 at a seeded random point and resume gives the uninterrupted summary;
// 3 shards merged give the single-run summary; a file of bad records has every one of them
// reported with file:line and every good record processed; usage errors are one line, exit 2.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <thread>

#include "common/run_command.h"
#include "common/scratch_dir.h"
#include "egca/core/files.h"

namespace {

using egca::testing::RunCommand;
using egca::testing::ScratchDir;
using json = nlohmann::json;

const std::string kTool = std::string(EGCA_BINARY_DIR) + "/tools/egca-batch/egca-batch";
const std::string kFixtures = std::string(EGCA_SOURCE_DIR) + "/tests/fixtures/batch/";
const std::string kProblems = kFixtures + "humaneval5.jsonl";
const std::string kSamples = kFixtures + "codet5x10.jsonl";

std::string RunArgs(const std::string& store, const std::string& extra = "",
                    const std::string& timeout = "1") {
  return kTool + " run --problems " + kProblems + " --samples " + kSamples + " --store " + store +
         " --timeout " + timeout + " --progress never " + extra;
}

json Summary(const std::string& store) {
  auto text = egca::ReadFile(store + "/report.json");
  EXPECT_TRUE(text.ok()) << store;
  if (!text.ok()) return json();
  return json::parse(text.value())["summary"];
}

int64_t SampleLines(const std::string& store) {
  auto text = egca::ReadFile(store + "/results.jsonl");
  if (!text.ok()) return 0;
  int64_t n = 0;
  for (size_t p = text->find("{\"type\":\"sample\""); p != std::string::npos;
       p = text->find("{\"type\":\"sample\"", p + 1)) {
    if (text->find('\n', p) != std::string::npos) ++n;  // whole lines only
  }
  return n;
}

// Starts `args` with stdout/stderr to `log`; returns the pid.
pid_t Spawn(const std::vector<std::string>& args, const std::string& log) {
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

TEST(EgcaBatchCli, UsageErrorsAreOneLineExit2) {
  ScratchDir dir("batch_cli_usage");
  auto check = [](const std::string& command, const std::string& needle) {
    auto r = RunCommand(command + " 2>&1");
    EXPECT_EQ(r.exit_code, 2) << command << "\n" << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
    EXPECT_EQ(r.out.rfind("egca-batch: ", 0), 0u) << r.out;
    EXPECT_NE(r.out.find(needle), std::string::npos) << r.out;
  };
  std::string store = (dir.path() / "s").string();
  check(kTool, "subcommand");
  check(kTool + " run --problems " + kProblems + " --samples " + kSamples, "--store");
  check(RunArgs(store, "--shard 3/3"), "--shard");
  check(kTool + " run --problems /nonexistent.jsonl --samples " + kSamples + " --store " + store,
        "/nonexistent.jsonl");
  check(kTool + " report " + (dir.path() / "nothing").string(), "no egca-batch store");
  check(RunArgs(store, "--bogus"), "--bogus");
  check(RunArgs(store, "--field tests=x"), "--field");
  check(RunArgs(store, "--grading-trace sometimes"), "--grading-trace");
}

// APPS+ with renamed fields (its file's keys are not published): mapped by --field.
TEST(EgcaBatchCli, AppsPlusFieldsMappedByOption) {
  ScratchDir dir("batch_cli_apps_plus");
  std::string samples = (dir.path() / "samples.jsonl").string();
  ASSERT_TRUE(egca::WriteFileAtomic(
                  samples, "{\"problem_id\": \"apps_plus/p0001\", \"completion\": \"print(1)\\n\"}\n")
                  .ok());
  std::string base = kTool + " run --problems " + kFixtures +
                     "data/apps_plus_renamed.jsonl --format apps_plus --samples " + samples +
                     " --timeout 2 --progress never --store ";
  std::string mapping =
      " --field id=id --field description=prompt --field solution=canonical_solution"
      " --field inputs=test_case.inputs --field outputs=test_case.outputs --field difficulty=level";
  std::string store = (dir.path() / "s").string();
  auto r = RunCommand(base + store + mapping + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("5 problems (0 bad records)"), std::string::npos) << r.out;
  json summary = Summary(store);
  EXPECT_EQ(summary["samples"], 1) << summary.dump();

  // Without the mapping every record is bad and named by line; with no problem left, no
  // sample can match one: a usage error, not an empty result.
  std::string unmapped = (dir.path() / "u").string();
  auto u = RunCommand(base + unmapped + " 2>&1");
  EXPECT_NE(u.out.find("apps_plus_renamed.jsonl:1:"), std::string::npos) << u.out;
  EXPECT_NE(u.out.find("0 problems (5 bad records)"), std::string::npos) << u.out;
  EXPECT_EQ(u.exit_code, 2) << u.out;
  EXPECT_NE(u.out.find("no sample matches a problem of --problems"), std::string::npos) << u.out;
}

TEST(EgcaBatchCli, RefusesToResumeWithAnotherConfig) {
  ScratchDir dir("batch_cli_config");
  std::string store = (dir.path() / "s").string();
  auto first = RunCommand(RunArgs(store, "--limit 4") + " 2>&1");
  ASSERT_EQ(first.exit_code, 0) << first.out;
  auto second = RunCommand(RunArgs(store, "--limit 4", "2") + " 2>&1");
  EXPECT_EQ(second.exit_code, 2) << second.out;
  EXPECT_NE(second.out.find("refusing to resume: config differs in timeout_seconds"),
            std::string::npos)
      << second.out;
}

TEST(EgcaBatchCli, KillAndResumeGivesTheUninterruptedSummary) {
  ScratchDir dir("batch_cli_kill");
  std::string whole = (dir.path() / "whole").string();
  auto r = RunCommand(RunArgs(whole) + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  json expected = Summary(whole);
  ASSERT_EQ(expected["samples"], 50);

  // SIGKILL once a seeded random number of records has landed.
  std::mt19937 rng(20261122);
  int64_t threshold = std::uniform_int_distribution<int64_t>(3, 30)(rng);
  std::string killed = (dir.path() / "killed").string();
  std::vector<std::string> args = {kTool,        "run",     "--problems", kProblems,   "--samples",
                                   kSamples,     "--store", killed,       "--timeout", "1",
                                   "--progress", "never",   "--workers",  "1"};
  pid_t pid = Spawn(args, (dir.path() / "killed.log").string());
  ASSERT_GT(pid, 0);
  // A bound for a run that hangs, not a speed requirement (records land in seconds).
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(200);
  bool sent = false;
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (SampleLines(killed) >= threshold) {
      kill(pid, SIGKILL);
      sent = true;
      break;
    }
    if (waitpid(pid, &status, WNOHANG) == pid) break;  // finished before the threshold
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  if (sent) waitpid(pid, &status, 0);
  ASSERT_TRUE(sent) << "the run ended before " << threshold << " records landed";
  ASSERT_TRUE(WIFSIGNALED(status));
  int64_t landed = SampleLines(killed);
  EXPECT_GE(landed, threshold);
  EXPECT_LT(landed, 50) << "killed too late to test resuming";

  auto resumed = RunCommand(RunArgs(killed, "--workers 2") + " 2>&1");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out;
  EXPECT_NE(resumed.out.find("resuming"), std::string::npos) << resumed.out;
  EXPECT_EQ(Summary(killed), expected) << "interrupted:\n"
                                       << Summary(killed).dump(1) << "\nwhole:\n"
                                       << expected.dump(1);
  EXPECT_EQ(SampleLines(killed), 50);
}

TEST(EgcaBatchCli, ThreeShardsMergedEqualOneRun) {
  ScratchDir dir("batch_cli_shards");
  std::string whole = (dir.path() / "whole").string();
  auto r = RunCommand(RunArgs(whole) + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::vector<std::string> shards;
  int64_t total = 0;
  for (int i = 0; i < 3; ++i) {
    std::string store = (dir.path() / ("shard" + std::to_string(i))).string();
    auto s = RunCommand(RunArgs(store, "--shard " + std::to_string(i) + "/3") + " 2>&1");
    ASSERT_EQ(s.exit_code, 0) << s.out;
    total += SampleLines(store);
    shards.push_back(store);
  }
  EXPECT_EQ(total, 50);  // the shards partition the problems
  std::string merged = (dir.path() / "merged").string();
  auto m = RunCommand(kTool + " merge " + merged + " " + shards[0] + " " + shards[1] + " " +
                      shards[2] + " 2>&1");
  ASSERT_EQ(m.exit_code, 0) << m.out;
  EXPECT_EQ(Summary(merged), Summary(whole));

  auto missing = RunCommand(kTool + " merge " + (dir.path() / "m2").string() + " " + shards[0] +
                            " " + shards[2] + " 2>&1");
  EXPECT_EQ(missing.exit_code, 2) << missing.out;
  EXPECT_NE(missing.out.find("shards 1 of 3 are missing"), std::string::npos) << missing.out;
}

TEST(EgcaBatchCli, BadRecordsReportedGoodOnesProcessed) {
  ScratchDir dir("batch_cli_bad");
  // Problems: the 5 real ones (lines 1-5), then a broken line (6), a record without a
  // prompt (7) and a problem with zero tests (8).
  std::string problems_text = egca::ReadFile(kProblems).value();
  json he0 = json::parse(problems_text.substr(0, problems_text.find('\n')));
  json no_prompt = he0;
  no_prompt.erase("prompt");
  no_prompt["task_id"] = "HumanEval/901";
  json no_tests = he0;
  no_tests["task_id"] = "HumanEval/900";
  no_tests["test"] = "";
  problems_text += "{\"task_id\": \"HumanEval/902\", \"prompt\": \n";
  problems_text += no_prompt.dump() + "\n" + no_tests.dump() + "\n";
  std::string problems = dir.Write("problems.jsonl", problems_text);

  // Samples: 2 good ones per problem (lines 1-10), then bad ones (11-15).
  std::string good;
  {
    std::ifstream in(kSamples);
    std::map<std::string, int> taken;
    for (std::string line; std::getline(in, line);) {
      std::string id = json::parse(line)["problem_id"];
      if (taken[id]++ < 2) good += line + "\n";
    }
  }
  json sample = json::parse(good.substr(0, good.find('\n')));
  std::string samples_text = good;
  samples_text += "{\"problem_id\": \"HumanEval/0\", \"completion\": \"    return 1\n";  // 11
  samples_text += "{\"problem_id\": \"HumanEval/0\", \"model\": \"m\"}\n";               // 12
  samples_text +=
      "{\"problem_id\": \"HumanEval/0\", \"completion\": \"    return \xff\xfe\"}\n";  // 13
  json huge = sample;
  huge["completion"] = std::string(10 << 20, ' ') + "return 1\n";  // a 10 MB program
  samples_text += huge.dump() + "\n";                              // 14
  json orphan = sample;
  orphan["problem_id"] = "HumanEval/900";  // its problem has no tests
  samples_text += orphan.dump() + "\n";    // 15
  std::string samples = dir.Write("samples.jsonl", samples_text);

  std::string store = (dir.path() / "s").string();
  auto r = RunCommand(kTool + " run --problems " + problems + " --samples " + samples +
                      " --store " + store + " --timeout 1 --progress never 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  json s = Summary(store);
  EXPECT_EQ(s["samples"], 10);
  EXPECT_EQ(s["problems"], 5);
  std::set<std::pair<std::string, int64_t>> bad;
  for (const auto& b : s["bad_records"]) bad.emplace(b["file"], b["line"]);
  std::set<std::pair<std::string, int64_t>> want = {{problems, 6}, {problems, 7}, {problems, 8},
                                                    {samples, 11}, {samples, 12}, {samples, 13},
                                                    {samples, 14}, {samples, 15}};
  EXPECT_EQ(bad, want) << s["bad_records"].dump(1);
  // Reported on stderr too, with file:line.
  EXPECT_NE(r.out.find(samples + ":11"), std::string::npos) << r.out;
  std::string md = egca::ReadFile(store + "/report.md").value();
  EXPECT_NE(md.find("8 bad input records"), std::string::npos);
}

}  // namespace
