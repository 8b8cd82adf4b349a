// Constraint files (JSON object / JSONL), their errors, and extraction from real HumanEval
// canonical solutions.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "egca/core/files.h"
#include "egca/gates/constraints.h"

namespace egca::gates {
namespace {

const std::string kFixtures = std::string(EGCA_SOURCE_DIR) + "/tests/fixtures/constraints/";

std::string ErrorOf(std::string_view text) {
  auto parsed = ParseConstraints(text, "c.json");
  EXPECT_FALSE(parsed.ok());
  return parsed.ok() ? "" : parsed.status().message();
}

TEST(ConstraintFiles, ReadsTheTeacherFixture) {
  auto c = ReadConstraintsFile(kFixtures + "teacher_humaneval.json");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->size(), 2u);
  const auto& he0 = c->at("HumanEval/0");
  ASSERT_EQ(he0.size(), 2u);
  EXPECT_EQ(he0[0].ToString(), "max_loop_depth(1)");
  EXPECT_EQ(he0[0].note, "sort once, then compare neighbours: O(n log n)");
  EXPECT_EQ(he0[1].ToString(), "requires_sorting");
  EXPECT_EQ(c->at("HumanEval/46")[0].kind, "forbids_recursion");
}

TEST(ConstraintFiles, WriteThenReadIsTheSameMap) {
  ConstraintsByProblem in;
  in["HumanEval/0"] = {{"max_loop_depth", int64_t{2}, "reference depth 1 + slack 1"},
                       {"forbids_import", std::string("numpy"), ""},
                       {"requires_recursion", {}, "quote \" and \\ and \n newline"}};
  in["HumanEval/1"] = {};
  in["mbpp 7"] = {{"forbids_call", std::string(".sort"), ""}};
  std::string path = (std::filesystem::temp_directory_path() /
                      ("egca_constraints_" + std::to_string(::getpid()) + ".json"))
                         .string();
  ASSERT_TRUE(WriteConstraintsFile(path, in).ok());
  auto back = ReadConstraintsFile(path);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, in);
  // One entry per line, problems sorted by id.
  auto text = ReadFile(path);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->substr(0, 62),
            "{\n  \"HumanEval/0\": [\n    {\"kind\": \"max_loop_depth\", \"value\": 2");
  EXPECT_NE(text->find("\"HumanEval/1\": []"), std::string::npos);
  std::filesystem::remove(path);
  // Writing an invalid spec is refused, naming the problem and entry.
  in["HumanEval/1"] = {{"max_loop_depth", std::string("deep"), ""}};
  Status st = WriteConstraintsFile(path, in);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("problem HumanEval/1, entry 0: max_loop_depth needs an integer"),
            std::string::npos)
      << st.message();
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(ConstraintFiles, ReadsJsonlRecords) {
  auto c = ParseConstraints(
      "{\"problem_id\": \"HumanEval/3\", \"constraints\": [{\"kind\": \"forbids_sorting\"}]}\n"
      "\n"
      "{\"problem_id\": 11, \"constraints\": [{\"kind\": \"max_statements\", \"value\": 30}]}\n",
      "c.jsonl");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->size(), 2u);
  EXPECT_EQ(c->at("HumanEval/3")[0].ToString(), "forbids_sorting");
  EXPECT_EQ(c->at("11")[0].ToString(), "max_statements(30)");
  // A single record, and an array of records.
  auto one = ParseConstraints("{\"problem_id\": \"p\", \"constraints\": []}", "c.jsonl");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->count("p"), 1u);
  auto arr = ParseConstraints("[{\"problem_id\": \"p\", \"constraints\": []}]", "c.json");
  ASSERT_TRUE(arr.ok());
  EXPECT_EQ(arr->count("p"), 1u);
}

TEST(ConstraintFiles, ErrorsNameTheFileProblemAndEntry) {
  EXPECT_EQ(
      ErrorOf(
          R"({"HumanEval/3": [{"kind": "forbids_sorting"}, {"kind": "max_depth", "value": 1}]})"),
      "c.json: problem HumanEval/3, entry 1: unknown kind 'max_depth'");
  EXPECT_EQ(ErrorOf(R"({"p": [{"kind": "max_loop_depth", "value": 1.5}]})"),
            "c.json: problem p, entry 0: \"value\" must be an integer or a string, not 1.5");
  EXPECT_EQ(ErrorOf(R"({"p": [{"kind": "max_loop_depth"}]})"),
            "c.json: problem p, entry 0: max_loop_depth needs an integer value >= 0");
  EXPECT_EQ(ErrorOf(R"({"p": [{"kind": "forbids_sorting", "valeu": 1}]})"),
            "c.json: problem p, entry 0: unknown field \"valeu\" (fields: kind, value, note)");
  EXPECT_EQ(ErrorOf(R"({"p": [{"value": 1}]})"), "c.json: problem p, entry 0: missing \"kind\"");
  EXPECT_EQ(ErrorOf(R"({"p": {"kind": "forbids_sorting"}})"),
            "c.json: problem p: constraints must be an array");
  EXPECT_EQ(ErrorOf(R"({"p": ["forbids_sorting"]})"),
            "c.json: problem p, entry 0: an entry must be an object {\"kind\", \"value\"}");
  EXPECT_EQ(ErrorOf("42"), "c.json: expected a JSON object keyed by problem id, or JSONL records");
  // JSONL: the line number too; a problem given twice.
  auto twice = ParseConstraints(
      "{\"problem_id\": \"a\", \"constraints\": []}\n{\"problem_id\": \"a\", \"constraints\": "
      "[]}\n",
      "c.jsonl");
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.status().message(), "c.jsonl:2: problem a given twice");
  auto bad_line = ParseConstraints(
      "{\"problem_id\": \"a\", \"constraints\": []}\n{\"problem_id\": \"b\", \"constraints\": [\n",
      "c.jsonl");
  ASSERT_FALSE(bad_line.ok());
  EXPECT_EQ(bad_line.status().message().rfind("c.jsonl:2: not valid JSON", 0), 0u)
      << bad_line.status().message();
  auto bad_entry = ParseConstraints(
      "{\"problem_id\": \"a\", \"constraints\": [{\"kind\": \"forbids_loop\", \"value\": "
      "\"do\"}]}\n",
      "c.jsonl");
  ASSERT_FALSE(bad_entry.ok());
  EXPECT_EQ(
      bad_entry.status().message().rfind("c.jsonl:1: problem a, entry 0: forbids_loop needs", 0),
      0u)
      << bad_entry.status().message();
  // A broken pretty-printed object reports the document's line, not JSONL's.
  std::string broken =
      ErrorOf("{\n  \"p\": [\n    {\"kind\": \"forbids_sorting\"}\n    {\"kind\": 1}\n  ]\n}\n");
  EXPECT_EQ(broken.rfind("c.json:4: not valid JSON", 0), 0u) << broken;
  // A missing file names the path.
  auto missing = ReadConstraintsFile("/nonexistent/constraints.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().ToString().find("/nonexistent/constraints.json"), std::string::npos);
}

// ---- extraction from real HumanEval canonical solutions --------------------------------

struct HumanEvalTask {
  std::string prompt, reference;
};

std::map<std::string, HumanEvalTask> LoadHumanEval() {
  std::map<std::string, HumanEvalTask> out;
  auto text = ReadMaybeGzipFile(std::string(EGCA_DATA_DIR) + "/humaneval/HumanEval.jsonl.gz");
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  if (!text.ok()) return out;
  std::istringstream in(*text);
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object()) continue;
    std::string prompt = j["prompt"];
    out[j["task_id"]] = {prompt, prompt + j["canonical_solution"].get<std::string>()};
  }
  return out;
}

std::vector<std::string> Strings(const std::vector<ConstraintSpec>& specs) {
  std::vector<std::string> out;
  for (const ConstraintSpec& s : specs) out.push_back(s.ToString());
  return out;
}

// The default policy's fixed tail: heavy imports and calls the references never need.
std::vector<std::string> DefaultBans() {
  std::vector<std::string> out;
  ExtractionPolicy p;
  for (const std::string& m : p.forbidden_imports) out.push_back("forbids_import(" + m + ")");
  for (const std::string& c : p.forbidden_calls) out.push_back("forbids_call(" + c + ")");
  return out;
}

std::vector<std::string> Concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(ConstraintExtraction, HumanEvalCanonicalSolutions) {
  auto he = LoadHumanEval();
  ASSERT_EQ(he.size(), 164u);
  auto extract = [&](const std::string& id, const ExtractionPolicy& p = {}) {
    auto s = ExtractConstraints(he[id].reference, p, he[id].prompt);
    EXPECT_TRUE(s.ok()) << id << ": " << s.status().ToString();
    return s.ok() ? Strings(*s) : std::vector<std::string>{};
  };
  // has_close_elements: two nested for loops; 9 statements (import, def, for, for, if,
  // assign, if, return, return): 3 x 9 + 10 = 37.
  EXPECT_EQ(extract("HumanEval/0"),
            Concat({"max_loop_depth(3)", "max_statements(37)"}, DefaultBans()));
  // fib4: the prompt says "Do not use recursion."; one loop; 8 statements: 3 x 8 + 10 = 34.
  EXPECT_EQ(
      extract("HumanEval/46"),
      Concat({"forbids_recursion", "max_loop_depth(2)", "max_statements(34)"}, DefaultBans()));
  // fib: the reference recurses, but nothing asks for it, so nothing about recursion; no
  // loops; 6 statements: 28.
  EXPECT_EQ(extract("HumanEval/55"),
            Concat({"max_loop_depth(1)", "max_statements(28)"}, DefaultBans()));
  // longest: a generator expression and a for loop, both depth 1; 8 statements: 34.
  EXPECT_EQ(extract("HumanEval/12"),
            Concat({"max_loop_depth(2)", "max_statements(34)"}, DefaultBans()));

  // Opt-in rules only fire when the reference lacks the property.
  ExtractionPolicy strict;
  strict.forbid_sorting_if_absent = true;
  strict.forbid_recursion_if_absent = true;
  strict.forbid_while_if_absent = true;
  strict.forbid_structures_if_absent = {DataStructure::kHeap, DataStructure::kList};
  strict.forbidden_imports = {"math"};
  strict.forbidden_calls = {"eval"};
  EXPECT_EQ(extract("HumanEval/0", strict),
            (std::vector<std::string>{
                "forbids_recursion", "max_loop_depth(3)", "max_statements(37)", "forbids_sorting",
                "forbids_structure(heap)", "forbids_structure(list)", "forbids_loop(while)",
                "forbids_import(math)", "forbids_call(eval)"}));
  // fib recurses: no forbids_recursion; do_algebra (160) calls eval: not banned.
  auto fib = extract("HumanEval/55", strict);
  EXPECT_EQ(std::count(fib.begin(), fib.end(), "forbids_recursion"), 0);
  auto algebra = extract("HumanEval/160", strict);
  EXPECT_EQ(std::count(algebra.begin(), algebra.end(), "forbids_call(eval)"), 0);
  // Every extracted set accepts its own reference, for every task.
  for (const auto& [id, task] : he) {
    auto specs = ExtractConstraints(task.reference, strict, task.prompt);
    ASSERT_TRUE(specs.ok()) << id;
    auto facts = ComputeFacts(task.reference);
    ASSERT_TRUE(facts.ok()) << id;
    auto violations = CheckFacts(*facts, *specs);
    EXPECT_TRUE(violations.empty()) << id << ": " << violations[0].ToString();
  }
}

TEST(ConstraintExtraction, RecursionRequestsInProblemText) {
  const std::string ref = "def f(n):\n    return n\n";
  auto first = [&](std::string_view text) {
    auto s = ExtractConstraints(ref, {}, text);
    EXPECT_TRUE(s.ok());
    return s.ok() && !s->empty() ? s->front().ToString() : "";
  };
  EXPECT_EQ(first("Write it recursively."), "requires_recursion");
  EXPECT_EQ(first("Use recursion to walk the tree."), "requires_recursion");
  EXPECT_EQ(first("Do not use recursion."), "forbids_recursion");
  EXPECT_EQ(first("Solve it without\n    recursion, please."), "forbids_recursion");
  EXPECT_EQ(first("A non-recursive solution."), "forbids_recursion");
  EXPECT_EQ(first("Don't write a recursive function"), "forbids_recursion");
  EXPECT_EQ(first("It is not hard. Use recursion."), "requires_recursion");
  EXPECT_EQ(first("The recursive_helper name is a hint."), "max_loop_depth(1)");
  EXPECT_EQ(first("Nothing about it."), "max_loop_depth(1)");
  ExtractionPolicy off;
  off.follow_recursion_request = false;
  auto s = ExtractConstraints(ref, off, "Write it recursively.");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->front().ToString(), "max_loop_depth(1)");
  auto bad = ExtractConstraints("def f(:\n", {}, "");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind("reference: program does not parse", 0), 0u)
      << bad.status().message();
}

}  // namespace
}  // namespace egca::gates
