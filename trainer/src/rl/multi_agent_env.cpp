// Cooperating agents, the pure pieces: the multi_agent.* config (agents, checks, the tree's
// size), the code environment (joint programs, naming conflicts, which agent wrote a byte),
// the leveled code reward and the custom transition hook.
#include <algorithm>
#include <cmath>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "egca/core/json_depth.h"
#include "egca/trainer/rl/feedback.h"
#include "egca/trainer/rl/multi_agent.h"

namespace egca::trainer {

// ---- configuration ----------------------------------------------------------------------

bool IsMultiAgent(const GrpoConfig& c) { return !c.ma_agents.empty(); }

StatusOr<std::vector<AgentSpec>> ParseAgents(const GrpoConfig& c) {
  auto bad = [](const std::string& why) {
    return InvalidArgument(fmt::format("config key 'multi_agent.agents': {}", why));
  };
  YAML::Node list;
  try {
    list = YAML::Load(c.ma_agents);
  } catch (const YAML::Exception& e) {
    return bad(fmt::format("not a YAML list: {}", e.msg));
  }
  if (!list.IsSequence()) return bad("expected a list of {name, model, instruction, functions}");
  std::vector<AgentSpec> out;
  static const std::regex kName("[A-Za-z0-9_-]+");
  for (size_t i = 0; i < list.size(); ++i) {
    const YAML::Node& a = list[i];
    if (!a.IsMap()) return bad(fmt::format("agent {}: expected a mapping", i + 1));
    AgentSpec s;
    try {
      for (const auto& kv : a) {
        const std::string k = kv.first.as<std::string>();
        if (k == "name") {
          s.name = kv.second.as<std::string>();
        } else if (k == "model") {
          s.model = kv.second.IsNull() ? "" : kv.second.as<std::string>();
        } else if (k == "instruction") {
          s.instruction = kv.second.as<std::string>();
        } else if (k == "functions") {
          if (!kv.second.IsSequence())
            return bad(fmt::format("agent {}: functions must be a list", i + 1));
          for (const auto& f : kv.second) s.functions.push_back(f.as<std::string>());
        } else {
          return bad(fmt::format("agent {}: unknown key '{}' (name, model, instruction, functions)",
                                 i + 1, k));
        }
      }
    } catch (const YAML::Exception& e) {
      return bad(fmt::format("agent {}: {}", i + 1, e.msg));
    }
    if (s.name.empty()) return bad(fmt::format("agent {}: 'name' is required", i + 1));
    if (!std::regex_match(s.name, kName)) {
      return bad(
          fmt::format("agent {}: name '{}' must be letters, digits, '_' or '-'", i + 1, s.name));
    }
    if (s.model.empty())
      return bad(fmt::format("agent '{}': 'model' is required (its checkpoint)", s.name));
    for (const auto& prev : out) {
      if (prev.name == s.name) return bad(fmt::format("agent name '{}' appears twice", s.name));
    }
    out.push_back(std::move(s));
  }
  return out;
}

int64_t JointResponsesPerNode(const std::string& mode, int64_t agents, int64_t g) {
  if (mode != "cross") return g;
  int64_t n = 1;
  for (int64_t i = 0; i < agents; ++i) {
    if (n > (int64_t{1} << 40) / std::max<int64_t>(g, 1)) return int64_t{1} << 40;
    n *= g;
  }
  return n;
}

int64_t JointTreeNodes(const std::string& mode, int64_t agents, int64_t g, int64_t turns) {
  const int64_t per = JointResponsesPerNode(mode, agents, g);
  int64_t total = 0, level = 1;
  constexpr int64_t kCap = int64_t{1} << 40;
  for (int64_t t = 0; t < turns; ++t) {
    level = level > kCap / std::max<int64_t>(per, 1) ? kCap : level * per;
    total = std::min(kCap, total + level);
  }
  return total;
}

Status ValidateMultiAgentConfig(const GrpoConfig& c) {
  auto bad = [](const char* key, const std::string& why) {
    return InvalidArgument(fmt::format("config key '{}': {}", key, why));
  };
  EGCA_ASSIGN_OR_RETURN(const std::vector<AgentSpec> agents, ParseAgents(c));
  if (c.ma_joint_mode != "align" && c.ma_joint_mode != "cross") {
    return bad("multi_agent.joint_mode",
               fmt::format("'{}' is not align or cross", c.ma_joint_mode));
  }
  const int64_t n = static_cast<int64_t>(agents.size());
  if (n < 2) {
    return bad(
        "multi_agent.agents",
        fmt::format("{} agent(s): joint mode '{}' needs at least 2 (train one policy without "
                    "multi_agent.agents)",
                    n, c.ma_joint_mode));
  }
  if (c.ma_environment == "code") {
    if (n != 2) {
      return bad(
          "multi_agent.environment",
          fmt::format("code takes 2 agents (aux, main), not {}; use functions for N agents", n));
    }
  } else if (c.ma_environment == "functions") {
    for (const auto& a : agents) {
      if (a.functions.empty()) {
        return bad(
            "multi_agent.agents",
            fmt::format("agent '{}': environment functions needs its 'functions' list", a.name));
      }
    }
  } else {
    return bad("multi_agent.environment",
               fmt::format("'{}' is not code or functions", c.ma_environment));
  }
  if (c.ma_max_nodes < 1) return bad("multi_agent.max_nodes", "must be >= 1");
  const int64_t nodes = JointTreeNodes(c.ma_joint_mode, n, c.group_size, c.turns);
  if (nodes > c.ma_max_nodes) {
    return bad(
        "multi_agent.max_nodes",
        fmt::format("a {} tree of {} agents, G = {}, T = {} has {} joint responses, over the "
                    "budget of {}",
                    c.ma_joint_mode, n, c.group_size, c.turns, nodes, c.ma_max_nodes));
  }
  if (c.ma_backup != "mean" && c.ma_backup != "mars" && c.ma_backup != "mers") {
    return bad("multi_agent.backup", fmt::format("'{}' is not mean, mars or mers", c.ma_backup));
  }
  if (!(c.ma_gamma >= 0 && c.ma_gamma <= 1)) return bad("multi_agent.gamma", "must be in [0, 1]");
  if (c.ma_advantage != "mean" && c.ma_advantage != "max" && c.ma_advantage != "rloo") {
    return bad("multi_agent.advantage",
               fmt::format("'{}' is not mean, max or rloo", c.ma_advantage));
  }
  if (c.ma_other_credit != "uniform" && c.ma_other_credit != "none") {
    return bad("multi_agent.other_credit",
               fmt::format("'{}' is not uniform or none", c.ma_other_credit));
  }
  if (!(c.ma_early_termination >= 0)) return bad("multi_agent.early_termination", "must be >= 0");
  if (!(c.ma_transition_timeout > 0)) return bad("multi_agent.transition_timeout", "must be > 0");
  if (c.reward == "magrpo_levels" && c.ma_environment != "code") {
    return bad("reward.kind", "magrpo_levels needs multi_agent.environment = code (aux + main)");
  }
  if (c.reward == "reflexicoder") return bad("reward.kind", "reflexicoder is single-agent");
  if (c.turns > 1 && c.feedback == "custom" && c.feedback_command.empty()) {
    return bad("multi_turn.feedback_command", "required by multi_turn.feedback = custom");
  }
  if (c.tree_advantage != "murphy") {
    return bad("multi_turn.advantage",
               "multi-agent trees take multi_agent.advantage, not multi_turn.advantage");
  }
  if (c.prune != "none")
    return bad("multi_turn.prune", "pruning is not available for multi-agent trees");
  return Status::Ok();
}

// ---- the code environment ---------------------------------------------------------------

std::vector<std::vector<std::string>> OwnedFunctions(const GrpoConfig& c,
                                                     const std::vector<AgentSpec>& agents,
                                                     const datasets::ProblemRecord& problem) {
  std::vector<std::vector<std::string>> out(agents.size());
  if (c.ma_environment == "code") {
    out[0] = {"aux"};
    if (out.size() > 1) out[1] = {problem.entry_point.empty() ? "main" : problem.entry_point};
    return out;
  }
  for (size_t i = 0; i < agents.size(); ++i) {
    for (std::string f : agents[i].functions) {
      const auto at = f.find("{entry_point}");
      if (at != std::string::npos) f.replace(at, 13, problem.entry_point);
      out[i].push_back(f);
    }
  }
  return out;
}

namespace {

// Top-level definitions of `code`: (name, byte of the line start, byte of the line end).
struct Definition {
  std::string name;
  int64_t begin = 0, end = 0;
};
std::vector<Definition> TopLevelDefinitions(const std::string& code) {
  static const std::regex kDef(R"(^(?:async[ \t]+)?(?:def|class)[ \t]+([A-Za-z_][A-Za-z_0-9]*))");
  std::vector<Definition> out;
  size_t pos = 0;
  while (pos < code.size()) {
    size_t eol = code.find('\n', pos);
    if (eol == std::string::npos) eol = code.size();
    const std::string line = code.substr(pos, eol - pos);
    std::smatch m;
    if (std::regex_search(line, m, kDef)) {
      out.push_back({m[1].str(), static_cast<int64_t>(pos), static_cast<int64_t>(eol)});
    }
    pos = eol + 1;
  }
  return out;
}

// The import lines of the task's prompt (HumanEval: "from typing import List").
std::string PromptImports(const std::string& prompt) {
  std::string out;
  size_t pos = 0;
  while (pos < prompt.size()) {
    size_t eol = prompt.find('\n', pos);
    if (eol == std::string::npos) eol = prompt.size();
    const std::string line = prompt.substr(pos, eol - pos);
    if (line.rfind("import ", 0) == 0 || line.rfind("from ", 0) == 0) out += line + "\n";
    pos = eol + 1;
  }
  return out;
}

SourceSpan SpanOf(const std::string& code, int64_t begin, int64_t end) {
  SourceSpan s;
  s.begin_byte = static_cast<uint32_t>(begin);
  s.end_byte = static_cast<uint32_t>(end);
  const int64_t line = 1 + std::count(code.begin(), code.begin() + begin, '\n');
  int64_t line_start = 0;
  if (begin > 0) {
    const size_t nl = code.rfind('\n', static_cast<size_t>(begin - 1));
    line_start = nl == std::string::npos ? 0 : static_cast<int64_t>(nl) + 1;
  }
  s.begin.line = static_cast<int32_t>(line);
  s.begin.column = static_cast<int32_t>(begin - line_start);
  s.end.line = static_cast<int32_t>(line);
  s.end.column = static_cast<int32_t>(end - line_start);
  return s;
}

// The body lines of function `name` in `code` (indented lines after its def, up to the next
// top-level line).
std::vector<std::string> FunctionBody(const std::string& code, const std::string& name,
                                      bool* found) {
  *found = false;
  std::vector<std::string> body;
  const std::regex def("^(?:async[ \\t]+)?def[ \\t]+" + name + "[ \\t]*\\(");
  size_t pos = 0;
  bool inside = false;
  while (pos < code.size()) {
    size_t eol = code.find('\n', pos);
    if (eol == std::string::npos) eol = code.size();
    const std::string line = code.substr(pos, eol - pos);
    pos = eol + 1;
    if (!inside) {
      if (std::regex_search(line, def)) inside = *found = true;
      continue;
    }
    const bool blank = line.find_first_not_of(" \t\r") == std::string::npos;
    if (!blank && line[0] != ' ' && line[0] != '\t') break;
    if (!blank) body.push_back(line.substr(line.find_first_not_of(" \t")));
  }
  return body;
}

}  // namespace

JointProgram BuildJointProgram(const datasets::ProblemRecord& problem,
                               const std::vector<std::vector<std::string>>& owned,
                               const std::vector<std::string>& completions) {
  JointProgram jp;
  jp.code = PromptImports(problem.prompt);
  for (size_t i = 0; i < completions.size(); ++i) {
    datasets::ProblemRecord rec = problem;
    // The block that defines the agent's own function is its code; no prompt context (the
    // imports come once, above).
    rec.entry_point = owned[i].empty() ? "" : owned[i][0];
    rec.prompt.clear();
    datasets::Sample sample;
    sample.problem_id = problem.id;
    sample.completion = completions[i];
    JointProgram::Segment seg;
    seg.program = datasets::ProgramOf(sample, rec);
    std::string code = seg.program.code.substr(
        std::min<size_t>(seg.program.context_bytes, seg.program.code.size()));
    if (!jp.code.empty() && jp.code.back() != '\n') jp.code += "\n";
    if (!jp.code.empty()) jp.code += "\n";
    seg.begin = static_cast<int64_t>(jp.code.size());
    jp.code += code;
    seg.end = static_cast<int64_t>(jp.code.size());
    if (!jp.code.empty() && jp.code.back() != '\n') jp.code += "\n";
    jp.segments.push_back(std::move(seg));
  }
  // Naming conflicts, in agent order: the first offending definition wins.
  std::set<std::string> defined_before;
  for (size_t i = 0; i < jp.segments.size() && !jp.conflict_span; ++i) {
    const auto& seg = jp.segments[i];
    const std::string code =
        jp.code.substr(static_cast<size_t>(seg.begin), static_cast<size_t>(seg.end - seg.begin));
    std::set<std::string> mine;
    for (const Definition& d : TopLevelDefinitions(code)) {
      int owner = -1;
      for (size_t j = 0; j < owned.size(); ++j) {
        if (std::find(owned[j].begin(), owned[j].end(), d.name) != owned[j].end())
          owner = static_cast<int>(j);
      }
      std::string why;
      if (owner >= 0 && owner != static_cast<int>(i)) {
        why = fmt::format("agent {} redefines '{}', which agent {} owns", i, d.name, owner);
      } else if (defined_before.count(d.name) > 0) {
        why = fmt::format("agent {} defines '{}' again (an earlier agent defines it)", i, d.name);
      }
      if (!why.empty()) {
        jp.conflict_span = SpanOf(jp.code, seg.begin + d.begin, seg.begin + d.end);
        jp.conflict_agent = static_cast<int>(i);
        jp.conflict = why;
        break;
      }
      mine.insert(d.name);
    }
    defined_before.insert(mine.begin(), mine.end());
  }
  return jp;
}

int AgentOfByte(const JointProgram& joint, int64_t byte) {
  for (size_t i = 0; i < joint.segments.size(); ++i) {
    if (byte >= joint.segments[i].begin && byte < joint.segments[i].end) return static_cast<int>(i);
  }
  return -1;
}

std::optional<SourceSpan> SpanInAgentCompletion(const JointProgram& joint, int agent,
                                                const SourceSpan& span) {
  if (agent < 0 || static_cast<size_t>(agent) >= joint.segments.size()) return std::nullopt;
  const auto& seg = joint.segments[static_cast<size_t>(agent)];
  if (static_cast<int64_t>(span.begin_byte) < seg.begin ||
      static_cast<int64_t>(span.begin_byte) >= seg.end) {
    return std::nullopt;
  }
  const int64_t end = std::min<int64_t>(span.end_byte, seg.end);
  const int64_t ctx = seg.program.context_bytes;
  const int64_t b = seg.program.ToCompletionByte(ctx + span.begin_byte - seg.begin);
  int64_t e = end > static_cast<int64_t>(span.begin_byte)
                  ? seg.program.ToCompletionByte(ctx + end - 1 - seg.begin)
                  : b;
  if (b < 0 || e < 0) return std::nullopt;
  if (end > static_cast<int64_t>(span.begin_byte)) e += 1;
  SourceSpan out = span;
  out.begin_byte = static_cast<uint32_t>(b);
  out.end_byte = static_cast<uint32_t>(std::max(b, e));
  return out;
}

LevelReward MagrpoLevelReward(const JointProgram& joint, const std::string& entry_point,
                              bool syntax_ok, double pass_fraction, double scale, double shift) {
  LevelReward r;
  auto add = [&](double v, const std::string& term) {
    r.raw += v;
    r.terms += (r.terms.empty() ? "" : "+") + term;
  };
  if (joint.conflict_span) {
    r.terms = "conflict";
    r.value = scale * 0 + shift;
    return r;
  }
  auto segment = [&](size_t i) {
    if (i >= joint.segments.size()) return std::string();
    const auto& s = joint.segments[i];
    return joint.code.substr(static_cast<size_t>(s.begin), static_cast<size_t>(s.end - s.begin));
  };
  const std::string aux_code = segment(0), main_code = segment(1);
  auto has_return = [](const std::vector<std::string>& body) {
    for (const auto& l : body) {
      if (l.rfind("return", 0) == 0 && (l.size() == 6 || l[6] == ' ' || l[6] == '(')) return true;
    }
    return false;
  };
  bool aux_found = false, main_found = false;
  const auto aux_body = FunctionBody(aux_code, "aux", &aux_found);
  const auto main_body = FunctionBody(main_code, entry_point, &main_found);
  if (aux_found && has_return(aux_body)) add(0.4, "aux_def");
  if (main_found && has_return(main_body)) add(0.6, "main_def");
  if (main_found && has_return(main_body)) {
    if (syntax_ok) {
      add(0.5, "syntax");
      add(pass_fraction, fmt::format("tests({:.2f})", pass_fraction));
      static const std::regex kCall(R"(\baux[ \t]*\()");
      bool calls = false, dropped = false;
      std::vector<std::string> statements;
      for (const auto& l : main_body) {
        if (std::regex_search(l, kCall)) calls = true;
        if (l.rfind("aux(", 0) == 0 || l.rfind("aux (", 0) == 0) dropped = true;
        if (l.rfind("#", 0) != 0 && l.rfind("\"\"\"", 0) != 0 && l.rfind("'''", 0) != 0)
          statements.push_back(l);
      }
      // A wrapper: its only statement returns aux's result.
      const bool wrapper =
          calls && statements.size() == 1 &&
          std::regex_search(statements[0], std::regex(R"(^return[ \t]+aux[ \t]*\()"));
      if (pass_fraction > 0 && calls) add(0.5, "calls_aux");
      if (pass_fraction > 0 && !wrapper) add(1.0, "not_wrapper");
      if (dropped) add(-0.5, "drops_aux_return");
    }
  }
  r.value = scale * r.raw + shift;
  return r;
}

// ---- the transition's custom hook ----------------------------------------------------------

std::string TransitionHookInput::ToJson() const {
  nlohmann::ordered_json j;
  j["prompt"] = prompt;
  j["agent_completions"] = agent_completions;
  j["num_agents"] = agent_completions.size();
  j["prompt_history_per_agent"] = prompt_history;
  j["response_history_per_agent"] = response_history;
  j["agent_names"] = agent_names;
  j["turn"] = turn;
  j["joint_program"] = joint_program;
  j["mode"] = mode;
  j["R_hat"] = r_hat;
  j["reward"] = reward;
  j["execution_feedback"] = execution_feedback;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

StatusOr<std::vector<std::string>> RunTransitionHook(const std::string& command,
                                                     const TransitionHookInput& input,
                                                     double timeout_seconds) {
  EGCA_ASSIGN_OR_RETURN(std::string out, RunHookCommand(command, input.ToJson() + "\n",
                                                        timeout_seconds, "transition hook"));
  EGCA_RETURN_IF_ERROR(CheckJsonDepth(out, fmt::format("transition hook '{}': output", command)));
  auto j = nlohmann::json::parse(out, nullptr, false);
  if (j.is_discarded() || !j.is_array()) {
    return InvalidArgument(
        fmt::format("transition hook '{}': output is not a JSON array of prompts", command));
  }
  if (j.size() != input.agent_completions.size()) {
    return InvalidArgument(fmt::format("transition hook '{}': {} prompts for {} agents", command,
                                       j.size(), input.agent_completions.size()));
  }
  std::vector<std::string> prompts;
  for (const auto& p : j) {
    if (!p.is_string() || p.get<std::string>().empty()) {
      return InvalidArgument(
          fmt::format("transition hook '{}': every prompt must be a non-empty string", command));
    }
    prompts.push_back(p.get<std::string>());
  }
  return prompts;
}

}  // namespace egca::trainer
