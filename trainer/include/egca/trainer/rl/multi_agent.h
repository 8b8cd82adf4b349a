// Cooperating agents: MAGRPO-MT joint rollouts (multi_agent.* keys of egca-train).
//
// N agents, each with its own policy, optimizer and checkpoints, answer one task together.
// Every turn, each agent samples G completions from its own prompt; their completions form
// joint responses (align: completion j of every agent is joint response j, G per node;
// cross: the Cartesian product, G^N per node). A joint response's agents' code is joined
// into one program (the prompt's imports + each agent's functions, in agent order), graded
// by the sandboxed executor, and expanded at the next turn with one prompt per agent built
// by the transition (plain, level_feedback, egca, expert_edits, or a user's executable).
// Returns are backed up through the tree of joint responses; every agent's completions get
// group-relative advantages at every node (cross: the mean of the joint returns a completion
// took part in); EGCA token credit is per agent: the bytes of the earliest divergence (or
// the syntax error, or a naming conflict) belong to one agent's completion, whose tokens
// there carry the localized advantage; the other agents' completions are credited as
// `multi_agent.other_credit` says. docs/training.md ("Cooperating agents") and
// docs/credit.md describe every choice; this header holds the pure pieces (tested alone)
// and MultiAgentTrainer.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "egca/core/span.h"
#include "egca/core/status.h"
#include "egca/datasets/problem.h"
#include "egca/datasets/samples.h"
#include "egca/gates/router.h"
#include "egca/trainer/dist/distribution.h"
#include "egca/trainer/rl/grpo_config.h"
#include "egca/trainer/rl/grpo_trainer.h"
#include "egca/trainer/rl/metrics_log.h"

namespace egca::trainer {

// ---- configuration ----------------------------------------------------------------------

// One agent of multi_agent.agents (a YAML list of mappings).
struct AgentSpec {
  std::string name;         // [A-Za-z0-9_-]+, unique: RUN_DIR/agents/<name>/
  std::string model;        // its checkpoint (the same one may be named by two agents)
  std::string instruction;  // text before the statement; "" = the environment's default
  // Functions it owns (multi_agent.environment = functions); "{entry_point}" is replaced by
  // the problem's entry point. environment = code: agent 0 owns "aux", agent 1 the entry
  // point.
  std::vector<std::string> functions;
};

bool IsMultiAgent(const GrpoConfig& c);  // multi_agent.agents is set

// The agents of the config; errors name the key and the agent.
StatusOr<std::vector<AgentSpec>> ParseAgents(const GrpoConfig& c);

// Joint responses of one node: G (align) or G^N (cross).
int64_t JointResponsesPerNode(const std::string& mode, int64_t agents, int64_t g);
// Joint responses of a full tree of T turns: sum over t of JointResponsesPerNode^t.
int64_t JointTreeNodes(const std::string& mode, int64_t agents, int64_t g, int64_t turns);

// Every multi_agent.* check (N >= 2, known joint mode, each agent's model given, unique
// names, the full tree within multi_agent.max_nodes, ...): one line naming the key.
Status ValidateMultiAgentConfig(const GrpoConfig& c);

// ---- the code environment ---------------------------------------------------------------

// The functions each agent owns for `problem` (placeholders replaced).
std::vector<std::vector<std::string>> OwnedFunctions(const GrpoConfig& c,
                                                     const std::vector<AgentSpec>& agents,
                                                     const datasets::ProblemRecord& problem);

// A joint program: the prompt's imports, then each agent's code in agent order.
struct JointProgram {
  std::string code;
  struct Segment {
    int64_t begin = 0, end = 0;       // bytes of `code`
    datasets::SampleProgram program;  // the agent's code cut from its completion
  };
  std::vector<Segment> segments;  // one per agent
  // A naming conflict (an agent defines a function another agent owns, or two agents define
  // one name): the offending definition's line in `code`, its agent, and why.
  std::optional<SourceSpan> conflict_span;
  int conflict_agent = -1;
  std::string conflict;
};

// Joins `completions` (one per agent) for `problem`: each agent's code is the fenced block
// (or whole completion) that defines its first owned function.
JointProgram BuildJointProgram(const datasets::ProblemRecord& problem,
                               const std::vector<std::vector<std::string>>& owned,
                               const std::vector<std::string>& completions);

// The agent whose code holds byte `byte` of the joint program (-1: the imports).
int AgentOfByte(const JointProgram& joint, int64_t byte);
// `span` (joint program bytes) moved into agent `agent`'s completion bytes; nullopt when it
// does not lie in that agent's code.
std::optional<SourceSpan> SpanInAgentCompletion(const JointProgram& joint, int agent,
                                                const SourceSpan& span);

// The public implementation's leveled code reward (reward.kind = magrpo_levels) on a code
// environment joint program (agent 0 = aux, agent 1 = main): level 1 aux defined with a
// return (+0.4), main defined with a return (+0.6); level 2 (when main is defined) the
// joint program parses (+0.5); level 3 (when it parses) the fraction of tests passed (+1),
// +0.5 when a test passes and main calls aux, +1 when a test passes and main is not a mere
// wrapper of aux, -0.5 when main calls aux and drops its return value. A naming conflict
// (main redefines aux) scores 0. Returns scale * levels + shift; `terms` says which terms.
struct LevelReward {
  double raw = 0;     // 0 .. 4
  double value = 0;   // scale * raw + shift
  std::string terms;  // "aux_def+main_def+syntax+tests(0.50)+calls_aux..."
};
LevelReward MagrpoLevelReward(const JointProgram& joint, const std::string& entry_point,
                              bool syntax_ok, double pass_fraction, double scale, double shift);

// ---- the tree of joint responses and its credit -------------------------------------------

// One joint response: agent i's completion is sample members[i] of the node's group.
struct JointNode {
  int group = 0;             // the group (node expansion) it was formed in
  std::vector<int> members;  // per agent
  double reward = 0;         // r of the joint program
  int child_group = -1;      // the group sampled from it at the next turn (-1: leaf)
  double ret = 0;            // backed-up return (filled by CreditJointTree)
};
// One expansion: every agent sampled G completions from its prompt at this node.
struct JointGroup {
  int parent = -1;  // joint node it expands (-1: the task's prompt)
  int turn = 1;
  std::vector<int> nodes;  // its joint responses, in formation order
  // Per agent, per sample: the aggregated return and the advantage (filled by
  // CreditJointTree).
  std::vector<std::vector<double>> agent_return, agent_advantage;
};
struct JointTree {
  std::vector<JointGroup> groups;
  std::vector<JointNode> nodes;
};

// The member lists of one group's joint responses: align (j, j, ..., j) for j < G; cross
// every tuple in lexicographic order (agent 0 slowest).
std::vector<std::vector<int>> FormJointResponses(const std::string& mode, int64_t agents,
                                                 int64_t g);

struct JointCreditOptions {
  std::string backup = "mean";  // mean (MAGRPO-MT: r + gamma * mean), mars, mers
  double gamma = 1.0;
  std::string advantage = "mean";  // baseline: mean, max, rloo
  bool zscore = false;             // divide by the group's (population) std when > 0
};

// Backs up returns leaf to root, then for every group and agent: the return of each of the
// agent's G completions (the mean of the returns of the joint responses it is a member of:
// one in align, G^(N-1) in cross) and its advantage against the baseline.
Status CreditJointTree(JointTree* tree, int64_t agents, int64_t g,
                       const JointCreditOptions& options);

// Advantages of `returns` against a baseline (mean, max, rloo), optionally z-scored.
std::vector<double> BaselineAdvantages(const std::vector<double>& returns,
                                       const std::string& baseline, bool zscore);

// ---- the transition's custom hook ----------------------------------------------------------

// What the custom transition receives (the paper's interface, one JSON object on stdin):
//   {"prompt", "agent_completions", "num_agents", "prompt_history_per_agent",
//    "response_history_per_agent", "turn", "joint_program", "mode", "R_hat", "reward",
//    "execution_feedback", "agent_names"}
// and must print a JSON array of num_agents strings (the next prompts' user messages).
// A non-zero exit, a timeout, more than 1 MiB of output, output that is not such an array,
// or an array of the wrong length is an error naming the command.
struct TransitionHookInput {
  std::string prompt;
  std::vector<std::string> agent_completions, agent_names;
  std::vector<std::vector<std::string>> prompt_history, response_history;
  int64_t turn = 1;
  std::string joint_program, mode, execution_feedback;
  double r_hat = 0, reward = 0;
  std::string ToJson() const;
};
StatusOr<std::vector<std::string>> RunTransitionHook(const std::string& command,
                                                     const TransitionHookInput& input,
                                                     double timeout_seconds);

// ---- the trainer ---------------------------------------------------------------------------

// Where one agent's sample of a step (a RolloutRecord of last_records(agent), whose `route`
// is its per-agent credit view of the joint response: spans in its completion bytes when
// they lie in its code) sits in the joint tree, and what its credit was.
struct AgentSampleInfo {
  int tree = 0;    // index of the prompt in the step
  int group = 0;   // JointGroup in that tree
  int member = 0;  // sample index in the group
  // The credit view's joint response (its own index in every agent: (k, ..., k)) blamed:
  // "self" (the span is in this completion), "other" (another agent's code), "imports",
  // or "" (no span: correct, or not localized).
  std::string blame;
  bool credit_none = false;  // other_credit = none zeroed its token advantages
};

// A joint response of a step, as dumped and measured.
struct JointRecord {
  int tree = 0, node = 0, turn = 1;
  int parent = -1;  // joint node of the same tree it was expanded from (-1: the task)
  std::string problem_id;
  std::vector<int64_t> samples;  // per agent: index into that agent's samples
  std::string code;
  gates::RouteResult route;
  std::string route_error;
  double reward = 0;
  std::string reward_terms;  // magrpo_levels
  int blamed_agent = -1;     // whose bytes the failure's span lies in (-1: none / imports)
  bool expanded = false;
  std::string not_expanded;  // why a node that could have been expanded was not
};

class MultiAgentTrainer {
 public:
  struct Options {
    bool resume = false;
    bool overwrite = false;
    bool progress = true;
    // Fixed completions: an agent's prompts are asked for as "<id>@<agent>" (turn 1) and
    // "<id>@<agent>#turn<t>" (later turns).
    std::shared_ptr<RolloutSource> rollouts;
    std::shared_ptr<dist::Distribution> distribution;
  };
  static StatusOr<std::unique_ptr<MultiAgentTrainer>> Create(const GrpoConfig& config,
                                                             Options options);
  ~MultiAgentTrainer();

  Status Train();
  StatusOr<Scalars> Step();
  Status SaveCheckpoint();

  int64_t step() const;
  int64_t num_agents() const;
  const std::vector<AgentSpec>& agents() const;
  DecoderModel& policy(int64_t agent);
  // The last step's per-agent samples, joint responses and trees.
  const std::vector<RolloutRecord>& last_records(int64_t agent) const;
  const std::vector<AgentSampleInfo>& last_sample_info(int64_t agent) const;
  const std::vector<JointRecord>& last_joint() const;
  const std::vector<JointTree>& last_trees() const;

 private:
  struct State;
  MultiAgentTrainer();
  std::unique_ptr<State> s_;
};

}  // namespace egca::trainer
