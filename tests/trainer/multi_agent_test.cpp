// Cooperating agents, the pure pieces: joint response formation, tree sizes, the credit of a
// joint tree (returns with gamma, mean / max / rloo baselines, z-score, cross aggregation)
// against values computed by hand; joint programs (segments, conflicts as CONSTRAINT spans,
// bytes back to each agent's completion); the leveled code reward; the multi_agent.* config
// checks; the custom transition hook's failures.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include <nlohmann/json.hpp>

#include "egca/trainer/rl/feedback.h"
#include "egca/trainer/rl/multi_agent.h"

namespace egca::trainer {
namespace {

TEST(MultiAgentJoint, FormsAlignAndCrossResponses) {
  EXPECT_EQ(FormJointResponses("align", 2, 3),
            (std::vector<std::vector<int>>{{0, 0}, {1, 1}, {2, 2}}));
  EXPECT_EQ(FormJointResponses("cross", 2, 2),
            (std::vector<std::vector<int>>{{0, 0}, {0, 1}, {1, 0}, {1, 1}}));
  EXPECT_EQ(FormJointResponses("cross", 3, 2).size(), 8u);
  EXPECT_EQ(FormJointResponses("cross", 3, 2)[5], (std::vector<int>{1, 0, 1}));
  EXPECT_EQ(JointResponsesPerNode("align", 3, 4), 4);
  EXPECT_EQ(JointResponsesPerNode("cross", 3, 4), 64);
  // Full trees: align G + G^2, cross G^N + G^(2N).
  EXPECT_EQ(JointTreeNodes("align", 2, 4, 2), 4 + 16);
  EXPECT_EQ(JointTreeNodes("cross", 2, 4, 2), 16 + 256);
  EXPECT_EQ(JointTreeNodes("cross", 3, 2, 2), 8 + 64);
  EXPECT_EQ(JointTreeNodes("cross", 2, 4, 3), 16 + 256 + 4096);
}

TEST(MultiAgentJoint, BaselinesByHand) {
  const std::vector<double> r = {1, 0, 0.5};
  // mean 0.5: [0.5, -0.5, 0]; max 1: [0, -1, -0.5]; rloo: 1 - 0.25, 0 - 0.75, 0.5 - 0.5.
  const auto mean = BaselineAdvantages(r, "mean", false);
  const auto max = BaselineAdvantages(r, "max", false);
  const auto rloo = BaselineAdvantages(r, "rloo", false);
  const std::vector<double> em = {0.5, -0.5, 0}, ex = {0, -1, -0.5}, er = {0.75, -0.75, 0};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(mean[i], em[i], 1e-12);
    EXPECT_NEAR(max[i], ex[i], 1e-12);
    EXPECT_NEAR(rloo[i], er[i], 1e-12);
  }
  // z-score: population std of {1, 0, 0.5} = sqrt(1/6).
  const auto z = BaselineAdvantages(r, "mean", true);
  EXPECT_NEAR(z[0], 0.5 / std::sqrt(1.0 / 6), 1e-12);
  // Equal returns: no signal, no division by zero.
  for (double a : BaselineAdvantages({0.3, 0.3}, "rloo", true)) EXPECT_EQ(a, 0.0);
}

// The align tree of 2 agents, G = 2, T = 2:
//   g0 (task):  n0 (0,0) r 1 -> g1;  n1 (1,1) r 0 -> g2
//   g1:         n2 r 1, n3 r 0;      g2: n4 r 0, n5 r 0
JointTree AlignTree() {
  JointTree t;
  t.groups.resize(3);
  t.groups[0] = {-1, 1, {0, 1}, {}, {}};
  t.groups[1] = {0, 2, {2, 3}, {}, {}};
  t.groups[2] = {1, 2, {4, 5}, {}, {}};
  t.nodes = {{0, {0, 0}, 1, 1, 0},  {0, {1, 1}, 0, 2, 0},  {1, {0, 0}, 1, -1, 0},
             {1, {1, 1}, 0, -1, 0}, {2, {0, 0}, 0, -1, 0}, {2, {1, 1}, 0, -1, 0}};
  return t;
}

TEST(MultiAgentCredit, AlignReturnsWithGammaAndBaselines) {
  JointCreditOptions o;
  o.gamma = 0.5;
  // mean backup: n0 = 1 + 0.5 * mean(1, 0) = 1.25; n1 = 0 + 0.5 * 0 = 0.
  JointTree t = AlignTree();
  ASSERT_TRUE(CreditJointTree(&t, 2, 2, o).ok());
  EXPECT_NEAR(t.nodes[0].ret, 1.25, 1e-12);
  EXPECT_NEAR(t.nodes[1].ret, 0.0, 1e-12);
  EXPECT_NEAR(t.nodes[2].ret, 1.0, 1e-12);
  for (int a = 0; a < 2; ++a) {  // align: every agent gets its joint response's return
    EXPECT_NEAR(t.groups[0].agent_return[a][0], 1.25, 1e-12);
    EXPECT_NEAR(t.groups[0].agent_advantage[a][0], 0.625, 1e-12);
    EXPECT_NEAR(t.groups[0].agent_advantage[a][1], -0.625, 1e-12);
    EXPECT_NEAR(t.groups[1].agent_advantage[a][0], 0.5, 1e-12);
    EXPECT_NEAR(t.groups[2].agent_advantage[a][0], 0.0, 1e-12);
  }
  o.advantage = "max";
  t = AlignTree();
  ASSERT_TRUE(CreditJointTree(&t, 2, 2, o).ok());
  EXPECT_NEAR(t.groups[0].agent_advantage[0][0], 0.0, 1e-12);
  EXPECT_NEAR(t.groups[0].agent_advantage[0][1], -1.25, 1e-12);
  o.advantage = "rloo";
  t = AlignTree();
  ASSERT_TRUE(CreditJointTree(&t, 2, 2, o).ok());
  EXPECT_NEAR(t.groups[0].agent_advantage[1][0], 1.25, 1e-12);
  EXPECT_NEAR(t.groups[0].agent_advantage[1][1], -1.25, 1e-12);
  o.advantage = "mean";
  o.zscore = true;  // std of {1.25, 0} = 0.625
  t = AlignTree();
  ASSERT_TRUE(CreditJointTree(&t, 2, 2, o).ok());
  EXPECT_NEAR(t.groups[0].agent_advantage[0][0], 1.0, 1e-12);
  EXPECT_NEAR(t.groups[0].agent_advantage[0][1], -1.0, 1e-12);
  // MaRS: max(1, 0.5 * 1) = 1; MeRS: (1 + 0.5 * 0.5) / 2 = 0.625.
  o.zscore = false;
  o.backup = "mars";
  t = AlignTree();
  ASSERT_TRUE(CreditJointTree(&t, 2, 2, o).ok());
  EXPECT_NEAR(t.nodes[0].ret, 1.0, 1e-12);
  o.backup = "mers";
  t = AlignTree();
  ASSERT_TRUE(CreditJointTree(&t, 2, 2, o).ok());
  EXPECT_NEAR(t.nodes[0].ret, 0.625, 1e-12);
}

TEST(MultiAgentCredit, CrossAggregatesTheMeanOfTheJointReturns) {
  // One group, 2 agents, G = 2: (0,0) 1, (0,1) 0, (1,0) 0.5, (1,1) 0.
  JointTree t;
  t.groups = {{-1, 1, {0, 1, 2, 3}, {}, {}}};
  t.nodes = {
      {0, {0, 0}, 1, -1, 0}, {0, {0, 1}, 0, -1, 0}, {0, {1, 0}, 0.5, -1, 0}, {0, {1, 1}, 0, -1, 0}};
  ASSERT_TRUE(CreditJointTree(&t, 2, 2, {}).ok());
  // Agent 0: completion 0 in (0,0), (0,1): 0.5; completion 1 in (1,0), (1,1): 0.25.
  EXPECT_NEAR(t.groups[0].agent_return[0][0], 0.5, 1e-12);
  EXPECT_NEAR(t.groups[0].agent_return[0][1], 0.25, 1e-12);
  EXPECT_NEAR(t.groups[0].agent_advantage[0][0], 0.125, 1e-12);
  // Agent 1: completion 0 in (0,0), (1,0): 0.75; completion 1: 0.
  EXPECT_NEAR(t.groups[0].agent_return[1][0], 0.75, 1e-12);
  EXPECT_NEAR(t.groups[0].agent_advantage[1][1], -0.375, 1e-12);
}

datasets::ProblemRecord Problem() {
  datasets::ProblemRecord p;
  p.id = "t/0";
  p.prompt =
      "from typing import List\n\n\ndef f(x: List[int]) -> int:\n    \"\"\"Sum plus one.\"\"\"\n";
  p.entry_point = "f";
  return p;
}

TEST(MultiAgentProgram, JoinsImportsAuxAndMainAndMapsBytesBack) {
  const std::string aux = "Here:\n```python\ndef aux(x):\n    return sum(x) + 1\n```\n";
  const std::string main = "```python\ndef f(x):\n    return aux(x)\n```";
  const JointProgram jp = BuildJointProgram(Problem(), {{"aux"}, {"f"}}, {aux, main});
  EXPECT_EQ(jp.code,
            "from typing import List\n\ndef aux(x):\n    return sum(x) + 1\n\ndef f(x):\n    "
            "return aux(x)\n");
  ASSERT_EQ(jp.segments.size(), 2u);
  EXPECT_FALSE(jp.conflict_span);
  const int64_t at = static_cast<int64_t>(jp.code.find("sum(x)"));
  EXPECT_EQ(AgentOfByte(jp, at), 0);
  EXPECT_EQ(AgentOfByte(jp, 0), -1);  // the imports
  EXPECT_EQ(AgentOfByte(jp, static_cast<int64_t>(jp.code.find("return aux"))), 1);
  SourceSpan s;
  s.begin_byte = static_cast<uint32_t>(at);
  s.end_byte = static_cast<uint32_t>(at + 6);
  s.begin.line = 4;
  const auto in_aux = SpanInAgentCompletion(jp, 0, s);
  ASSERT_TRUE(in_aux);
  EXPECT_EQ(aux.substr(in_aux->begin_byte, in_aux->end_byte - in_aux->begin_byte), "sum(x)");
  EXPECT_FALSE(SpanInAgentCompletion(jp, 1, s));  // not main's bytes
}

TEST(MultiAgentProgram, ConflictsAreConstraintSpansOfTheOffender) {
  const std::string aux = "```python\ndef aux(x):\n    return x\n```";
  const std::string main =
      "```python\ndef aux(x):\n    return 0\n\ndef f(x):\n    return aux(x)\n```";
  const JointProgram jp = BuildJointProgram(Problem(), {{"aux"}, {"f"}}, {aux, main});
  ASSERT_TRUE(jp.conflict_span);
  EXPECT_EQ(jp.conflict_agent, 1);
  EXPECT_NE(jp.conflict.find("redefines 'aux'"), std::string::npos) << jp.conflict;
  EXPECT_EQ(jp.code.substr(jp.conflict_span->begin_byte,
                           jp.conflict_span->end_byte - jp.conflict_span->begin_byte),
            "def aux(x):");
  EXPECT_EQ(AgentOfByte(jp, jp.conflict_span->begin_byte), 1);
  EXPECT_EQ(jp.conflict_span->begin.line, 6);
  // Two agents defining one helper (general form, 3 agents).
  const JointProgram j3 =
      BuildJointProgram(Problem(), {{"a"}, {"b"}, {"f"}},
                        {"```python\ndef a():\n    return 1\n\ndef h():\n    return 2\n```",
                         "```python\ndef h():\n    return 3\n\ndef b():\n    return a()\n```",
                         "```python\ndef f(x):\n    return b()\n```"});
  ASSERT_TRUE(j3.conflict_span);
  EXPECT_EQ(j3.conflict_agent, 1);
  EXPECT_NE(j3.conflict.find("defines 'h' again"), std::string::npos) << j3.conflict;
}

TEST(MultiAgentReward, LevelsByHand) {
  const std::string aux = "```python\ndef aux(x):\n    return sum(x) + 1\n```";
  // A wrapper main: 0.4 + 0.6 + 0.5 + 1 (tests) + 0.5 (calls aux) = 3.0; no wrapper bonus.
  const JointProgram wrap = BuildJointProgram(
      Problem(), {{"aux"}, {"f"}}, {aux, "```python\ndef f(x):\n    return aux(x)\n```"});
  LevelReward r = MagrpoLevelReward(wrap, "f", true, 1.0, 1.0, 0.0);
  EXPECT_NEAR(r.raw, 3.0, 1e-12) << r.terms;
  EXPECT_EQ(r.terms, "aux_def+main_def+syntax+tests(1.00)+calls_aux");
  r = MagrpoLevelReward(wrap, "f", true, 1.0, 0.5, -1.0);  // scale and shift
  EXPECT_NEAR(r.value, 0.5, 1e-12);
  // Drops aux's value, half the tests: 0.4 + 0.6 + 0.5 + 0.5 + 0.5 + 1 - 0.5 = 3.0.
  const JointProgram drop =
      BuildJointProgram(Problem(), {{"aux"}, {"f"}},
                        {aux, "```python\ndef f(x):\n    aux(x)\n    return sum(x) + 1\n```"});
  r = MagrpoLevelReward(drop, "f", true, 0.5, 1.0, 0.0);
  EXPECT_NEAR(r.raw, 3.0, 1e-12) << r.terms;
  EXPECT_NE(r.terms.find("drops_aux_return"), std::string::npos);
  // A syntax error stops at level 2: 0.4 + 0.6.
  r = MagrpoLevelReward(drop, "f", false, 0.0, 1.0, 0.0);
  EXPECT_NEAR(r.raw, 1.0, 1e-12) << r.terms;
  // No main: level 1 only (aux).
  const JointProgram nomain = BuildJointProgram(Problem(), {{"aux"}, {"f"}}, {aux, "nothing"});
  r = MagrpoLevelReward(nomain, "f", true, 0.0, 1.0, 0.0);
  EXPECT_NEAR(r.raw, 0.4, 1e-12) << r.terms;
  // main redefines aux: 0.
  const JointProgram bad = BuildJointProgram(
      Problem(), {{"aux"}, {"f"}},
      {aux, "```python\ndef aux(x):\n    return 1\n\ndef f(x):\n    return aux(x)\n```"});
  r = MagrpoLevelReward(bad, "f", true, 1.0, 1.0, 0.0);
  EXPECT_EQ(r.raw, 0.0);
  EXPECT_EQ(r.terms, "conflict");
}

GrpoConfig TwoAgents() {
  GrpoConfig c;
  c.run_dir = "/tmp/x";
  c.train_data = "/tmp/x.jsonl";
  c.ma_agents = "[{name: aux, model: /m}, {name: main, model: /m}]";
  c.group_size = 4;
  c.turns = 2;
  return c;
}

TEST(MultiAgentConfig, BadConfigurationsNameTheKey) {
  EXPECT_TRUE(ValidateGrpoConfig(TwoAgents()).ok()) << ValidateGrpoConfig(TwoAgents()).ToString();
  struct Case {
    std::string name;
    std::function<void(GrpoConfig*)> edit;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {"one agent", [](GrpoConfig* c) { c->ma_agents = "[{name: solo, model: /m}]"; },
       "needs at least 2"},
      {"unknown mode", [](GrpoConfig* c) { c->ma_joint_mode = "diagonal"; },
       "'diagonal' is not align or cross"},
      {"missing model",
       [](GrpoConfig* c) { c->ma_agents = "[{name: aux}, {name: main, model: /m}]"; },
       "agent 'aux': 'model' is required"},
      {"duplicate",
       [](GrpoConfig* c) { c->ma_agents = "[{name: a, model: /m}, {name: a, model: /m}]"; },
       "'a' appears twice"},
      {"budget",
       [](GrpoConfig* c) {
         c->ma_joint_mode = "cross";
         c->turns = 3;
       },
       "4368 joint responses, over the budget of 4096"},
      {"unknown agent key",
       [](GrpoConfig* c) { c->ma_agents = "[{name: a, model: /m, lr: 1}, {name: b, model: /m}]"; },
       "unknown key 'lr'"},
      {"not a list", [](GrpoConfig* c) { c->ma_agents = "aux"; }, "expected a list"},
      {"baseline", [](GrpoConfig* c) { c->ma_advantage = "median"; }, "multi_agent.advantage"},
      {"other credit", [](GrpoConfig* c) { c->ma_other_credit = "some"; },
       "multi_agent.other_credit"},
      {"levels on functions",
       [](GrpoConfig* c) {
         c->reward = "magrpo_levels";
         c->ma_environment = "functions";
         c->ma_agents =
             "[{name: a, model: /m, functions: [a]}, {name: b, model: /m, functions: "
             "['{entry_point}']}]";
       },
       "magrpo_levels needs multi_agent.environment = code"},
      {"three agents in code",
       [](GrpoConfig* c) {
         c->ma_agents = "[{name: a, model: /m}, {name: b, model: /m}, {name: c, model: /m}]";
       },
       "code takes 2 agents"},
  };
  for (const Case& k : cases) {
    GrpoConfig c = TwoAgents();
    k.edit(&c);
    const Status s = ValidateGrpoConfig(c);
    ASSERT_FALSE(s.ok()) << k.name;
    EXPECT_NE(s.message().find(k.expect), std::string::npos) << k.name << ": " << s.message();
    EXPECT_EQ(s.message().find('\n'), std::string::npos) << k.name;
  }
  // The functions environment with owned names, and the placeholder.
  GrpoConfig f = TwoAgents();
  f.ma_environment = "functions";
  f.ma_agents =
      "[{name: a, model: /m, functions: [helper]}, {name: b, model: /m, functions: "
      "['{entry_point}']}]";
  ASSERT_TRUE(ValidateGrpoConfig(f).ok()) << ValidateGrpoConfig(f).ToString();
  auto agents = ParseAgents(f);
  ASSERT_TRUE(agents.ok());
  EXPECT_EQ(OwnedFunctions(f, *agents, Problem()),
            (std::vector<std::vector<std::string>>{{"helper"}, {"f"}}));
  // The config file round trip keeps the list (config.yaml of the run directory).
  EXPECT_NE(GrpoConfigToYaml(f).find("functions: ['{entry_point}']"), std::string::npos)
      << GrpoConfigToYaml(f);
}

TEST(MultiAgentHook, PromptsOrAnErrorNamingTheCommand) {
  TransitionHookInput in;
  in.prompt = "task";
  in.agent_completions = {"a", "b"};
  in.agent_names = {"aux", "main"};
  in.prompt_history = {{"p1"}, {"p2"}};
  in.response_history = {{"a"}, {"b"}};
  auto ok = RunTransitionHook("cat >/dev/null; echo '[\"one\", \"two\"]'", in, 10);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(*ok, (std::vector<std::string>{"one", "two"}));
  // The paper's interface on stdin.
  auto echo = RunHookCommand("cat", in.ToJson(), 10, "x");
  ASSERT_TRUE(echo.ok());
  auto j = nlohmann::json::parse(*echo);
  EXPECT_EQ(j["num_agents"], 2);
  EXPECT_EQ(j["prompt_history_per_agent"][1][0], "p2");
  EXPECT_EQ(j["response_history_per_agent"][0][0], "a");
  struct Case {
    std::string command, expect;
  };
  for (const Case& k : std::vector<Case>{
           {"cat >/dev/null; exit 3", "status 3"},
           {"sleep 5", "no answer within"},
           {"cat >/dev/null; echo '[\"only one\"]'", "1 prompts for 2 agents"},
           {"cat >/dev/null; head -c 3000000 /dev/zero | tr '\\0' x", "more than 1 MiB"},
           {"cat >/dev/null; echo 'revise'", "not a JSON array"},
           {"cat >/dev/null; echo '[\"\", \"x\"]'", "non-empty string"}}) {
    // Only the sleeping hook is timed out; the others get time to spare on a loaded machine.
    auto r = RunTransitionHook(k.command, in, k.command == "sleep 5" ? 0.5 : 60);
    ASSERT_FALSE(r.ok()) << k.command;
    EXPECT_NE(r.status().message().find(k.expect), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("transition hook"), std::string::npos);
  }
}

}  // namespace
}  // namespace egca::trainer
