// Credit from Python: token advantages of routed completions (credit::AssignTokenCredit,
// batched into one [B, L] array), GRPO group advantages, Murphy trees, MT-GRPO turn
// advantages, the ReflexiCoder reward, and egca's own tokenizer (byte offsets).
#include <fmt/format.h>

#include <cmath>
#include <thread>

#include "egca/credit/grpo.h"
#include "egca/credit/mt_grpo.h"
#include "egca/credit/murphy.h"
#include "egca/credit/reflexicoder.h"
#include "egca/credit/token_credit.h"
#include "egca/trainer/policy/tokenizer.h"
#include "common.h"
#include "routing.h"

namespace egca::python {
namespace {

using credit::TokenByteRange;

credit::LocalizationTarget Target(const std::string& name) {
  auto t = credit::ParseLocalizationTarget(name);
  if (!t) {
    Raise(PyExc_ValueError,
          "target: expected \"earliest\", \"last\", \"random\" or \"uniform\", got \"" + name + "\"");
  }
  return *t;
}

credit::TokenCreditOptions CreditOptions(const std::string& target, double soft_weight,
                                         uint64_t seed, const std::string& positive_logic,
                                         const std::string& syntax, double min_confidence) {
  credit::TokenCreditOptions o;
  o.target = Target(target);
  auto pl = credit::ParsePositiveLogicCredit(positive_logic);
  if (!pl) {
    Raise(PyExc_ValueError, "positive_logic: expected \"span\", \"uniform\", \"prefix\" or "
                            "\"zero\", got \"" + positive_logic + "\"");
  }
  o.positive_logic = *pl;
  auto sx = credit::ParseSyntaxCredit(syntax);
  if (!sx) {
    Raise(PyExc_ValueError,
          "syntax: expected \"span\", \"uniform\" or \"cause\", got \"" + syntax + "\"");
  }
  o.syntax = *sx;
  if (!(soft_weight >= 0 && soft_weight <= 1)) {
    Raise(PyExc_ValueError, fmt::format("soft_weight must be in [0, 1], got {}", soft_weight));
  }
  o.soft_weight = soft_weight;
  if (!(min_confidence >= 0 && min_confidence <= 1)) {
    Raise(PyExc_ValueError, fmt::format("min_confidence must be in [0, 1], got {}", min_confidence));
  }
  o.min_confidence = min_confidence;
  o.seed = seed;
  return o;
}

// Byte offset of every character boundary of UTF-8 `text`: result[k] = byte where
// character k starts (result[n] = text.size()).
std::vector<uint32_t> CharToByte(std::string_view text) {
  std::vector<uint32_t> out;
  out.reserve(text.size() + 1);
  for (size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) out.push_back(static_cast<uint32_t>(i));
  }
  out.push_back(static_cast<uint32_t>(text.size()));
  return out;
}

// One sample's token ranges from a [T, 2] integer array (begin, end); `chars`: the ranges
// are character offsets into `text` (Hugging Face's offset_mapping) and are mapped to bytes.
std::vector<TokenByteRange> TokenRanges(const py::handle& value, size_t sample, bool chars,
                                        std::string_view text) {
  py::array_t<int64_t, py::array::c_style | py::array::forcecast> a;
  try {
    a = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(value);
  } catch (const py::error_already_set&) {
    a = {};
  }
  if (!a) {
    PyErr_Clear();
    Raise(PyExc_TypeError, fmt::format("token_offsets[{}]: expected a [T, 2] array of integer "
                                       "offsets, got {}",
                                       sample, Py_TYPE(value.ptr())->tp_name));
  }
  if (a.ndim() == 1 && a.shape(0) == 0) return {};
  if (a.ndim() != 2 || a.shape(1) != 2) {
    Raise(PyExc_ValueError,
          fmt::format("token_offsets[{}]: expected shape [T, 2], got {} dimensions", sample, a.ndim()));
  }
  std::vector<uint32_t> map;
  if (chars) map = CharToByte(text);
  auto r = a.unchecked<2>();
  std::vector<TokenByteRange> out(static_cast<size_t>(a.shape(0)));
  for (py::ssize_t t = 0; t < a.shape(0); ++t) {
    int64_t b = r(t, 0), e = r(t, 1);
    int64_t limit = chars ? static_cast<int64_t>(map.size()) - 1 : int64_t{UINT32_MAX};
    if (b < 0 || e < 0 || b > limit || e > limit) {
      Raise(PyExc_ValueError,
            fmt::format("token_offsets[{}][{}] = ({}, {}) is outside the completion ({} {})",
                        sample, t, b, e, limit, chars ? "characters" : "bytes"));
    }
    if (chars) {
      b = map[static_cast<size_t>(b)];
      e = map[static_cast<size_t>(e)];
    }
    out[static_cast<size_t>(t)] = {static_cast<uint32_t>(b), static_cast<uint32_t>(e)};
  }
  return out;
}

std::optional<SourceSpan> CompletionSpan(const std::optional<batch::LocatedSpan>& s) {
  if (!s || !s->in_completion) return std::nullopt;
  return s->completion;
}

// A route's credit sample: spans in completion bytes (code_offset 0), as the trainer does.
credit::CreditSample FromRoute(const Route& r, double advantage, std::vector<TokenByteRange> tokens,
                               uint64_t index) {
  credit::CreditSample s;
  s.mode = r.record.mode;
  s.advantage = advantage;
  s.token_bytes = std::move(tokens);
  s.code_offset = 0;
  s.error_span = CompletionSpan(r.record.error);
  s.cause_span = CompletionSpan(r.record.cause);
  s.earliest_divergence = CompletionSpan(r.record.earliest);
  s.last_divergence = CompletionSpan(r.record.last);
  s.random_boundary = CompletionSpan(r.record.random);
  s.localization_confidence = r.record.localization_confidence;
  s.sample_index = index;
  return s;
}

std::optional<SourceSpan> SpanArg(const py::object& value, const char* name) {
  if (value.is_none()) return std::nullopt;
  auto pair = value.cast<std::pair<int64_t, int64_t>>();
  if (pair.first < 0 || pair.second < 0) {
    Raise(PyExc_ValueError, std::string(name) + ": byte offsets must be >= 0");
  }
  SourceSpan s;
  s.begin_byte = static_cast<uint32_t>(pair.first);
  s.end_byte = static_cast<uint32_t>(pair.second);
  return s;
}

credit::FailureMode ModeArg(const std::string& name) {
  auto m = credit::ParseFailureMode(name);
  if (!m) {
    Raise(PyExc_ValueError,
          "mode: expected SYNTAX, CONSTRAINT, LOGIC or CORRECT, got \"" + name + "\"");
  }
  return *m;
}

py::array_t<double> ToArray(const std::vector<double>& v) {
  py::array_t<double> out(static_cast<py::ssize_t>(v.size()));
  std::copy(v.begin(), v.end(), out.mutable_data());
  return out;
}

credit::GroupAdvantageOptions GroupOptions(const std::string& normalization, double eps) {
  credit::GroupAdvantageOptions o;
  if (normalization == "mean_std") {
    o.normalization = credit::AdvantageNormalization::kMeanStd;
  } else if (normalization == "mean_centered") {
    o.normalization = credit::AdvantageNormalization::kMeanCentered;
  } else {
    Raise(PyExc_ValueError, "normalization: expected \"mean_std\" or \"mean_centered\", got \"" +
                                normalization + "\"");
  }
  if (!(eps >= 0) || !std::isfinite(eps)) Raise(PyExc_ValueError, "eps must be finite and >= 0");
  o.eps = eps;
  return o;
}

std::vector<double> FiniteVector(const std::vector<double>& v, const char* name) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (!std::isfinite(v[i])) Raise(PyExc_ValueError, fmt::format("{}[{}] is not finite", name, i));
  }
  return v;
}

py::array_t<double> TurnArray(const credit::TurnAdvantages& t) {
  py::array_t<double> out({static_cast<py::ssize_t>(t.num_samples), static_cast<py::ssize_t>(t.num_turns)});
  auto w = out.mutable_unchecked<2>();
  for (int i = 0; i < t.num_samples; ++i) {
    for (int k = 0; k < t.num_turns; ++k) w(i, k) = t.advantages[i][k];
  }
  return out;
}

void SetReflectionOption(credit::ReflectionRewardOptions* o, const std::string& key,
                         const py::handle& value) {
  if (key == "n0") {
    o->n0 = value.cast<int>();
    return;
  }
  std::pair<const char*, double*> fields[] = {
      {"alpha", &o->alpha}, {"beta", &o->beta},   {"gamma", &o->gamma}, {"delta", &o->delta},
      {"lambda", &o->lambda}, {"s", &o->s},       {"eps", &o->eps},     {"h_pos", &o->h_pos},
      {"h_neg", &o->h_neg}, {"r_max", &o->r_max}, {"eta", &o->eta},     {"tau_q", &o->tau_q},
      {"eps2", &o->eps2},   {"phi", &o->phi},     {"psi", &o->psi},     {"xi", &o->xi}};
  for (auto& [name, field] : fields) {
    if (key == name) {
      *field = value.cast<double>();
      return;
    }
  }
  Raise(PyExc_TypeError, "unknown ReflexiCoder option \"" + key + "\"");
}

credit::ReflectionRewardOptions ReflectionOptions(const py::kwargs& kwargs) {
  credit::ReflectionRewardOptions o;
  for (auto item : kwargs) SetReflectionOption(&o, item.first.cast<std::string>(), item.second);
  return o;
}

}  // namespace

void BindCredit(py::module_& m) {
  // ---- token credit ---------------------------------------------------------------------
  m.def(
      "route_token_credit",
      [](const std::vector<const Route*>& routes, const std::vector<double>& advantages,
         const py::sequence& offsets, bool char_offsets, const std::string& target,
         double soft_weight, uint64_t seed, int64_t max_len, float pad,
         const std::string& positive_logic, const std::string& syntax, double min_confidence) {
        if (routes.size() != advantages.size() || routes.size() != offsets.size()) {
          Raise(PyExc_ValueError,
                fmt::format("routes, advantages and token offsets differ in length ({}, {}, {})",
                            routes.size(), advantages.size(), offsets.size()));
        }
        credit::TokenCreditOptions options =
            CreditOptions(target, soft_weight, seed, positive_logic, syntax, min_confidence);
        std::vector<credit::CreditSample> samples;
        samples.reserve(routes.size());
        for (size_t i = 0; i < routes.size(); ++i) {
          if (routes[i] == nullptr) Raise(PyExc_TypeError, fmt::format("routes[{}] is None", i));
          samples.push_back(FromRoute(*routes[i], advantages[i],
                                      TokenRanges(offsets[i], i, char_offsets,
                                                  routes[i]->completion),
                                      i));
        }
        std::vector<credit::TokenCredit> credits, weights;
        credit::TokenCreditStats stats;
        Status status;
        size_t longest = 0;
        {
          py::gil_scoped_release release;
          status = credit::AssignGroupTokenCreditInto(samples, options, &credits, &stats);
          if (status.ok()) {
            // The soft mask: where the credit goes, whatever the size of A_i (the same
            // operator with A_i = +-1, of A_i's sign, divided by it: the sign-aware options
            // place positive and negative advantages differently).
            for (auto& s : samples) s.advantage = s.advantage < 0 ? -1.0 : 1.0;
            status = credit::AssignGroupTokenCreditInto(samples, options, &weights);
            for (size_t i = 0; i < weights.size() && status.ok(); ++i) {
              if (samples[i].advantage < 0) {
                for (double& w : weights[i].advantages) w = -w;
              }
            }
          }
          for (const auto& s : samples) longest = std::max(longest, s.token_bytes.size());
        }
        ThrowIfError(status, "token credit");
        if (max_len < -1) {
          Raise(PyExc_ValueError, fmt::format("max_len must be >= 0 or None, got {}", max_len));
        }
        size_t L = max_len >= 0 ? static_cast<size_t>(max_len) : longest;
        // [B, L] float32 twice: a size that overflows or cannot be held is refused before
        // anything is allocated (a huge max_len wrapped B x L and wrote out of bounds).
        constexpr size_t kMaxCells = size_t{1} << 31;
        if (!routes.empty() && L > kMaxCells / routes.size()) {
          Raise(PyExc_ValueError,
                fmt::format("max_len {} x {} samples exceeds {} cells per array", L,
                            routes.size(), kMaxCells));
        }
        std::vector<float> adv = credit::PackTokenAdvantages(credits, L, pad);
        std::vector<float> mask = credit::PackTokenAdvantages(weights, L, 0.0f);
        const auto B = static_cast<py::ssize_t>(routes.size());
        const auto cols = static_cast<py::ssize_t>(L);
        py::array_t<float> adv_a({B, cols}), mask_a({B, cols});
        std::copy(adv.begin(), adv.end(), adv_a.mutable_data());
        std::copy(mask.begin(), mask.end(), mask_a.mutable_data());
        py::array_t<int64_t> lengths(B), span_begin(B), span_count(B);
        std::vector<std::string> placement, fallback;
        for (size_t i = 0; i < credits.size(); ++i) {
          lengths.mutable_data()[i] = static_cast<int64_t>(samples[i].token_bytes.size());
          span_begin.mutable_data()[i] = credits[i].span_token_begin;
          span_count.mutable_data()[i] = credits[i].span_token_count;
          placement.push_back(credit::CreditPlacementName(credits[i].placement));
          fallback.push_back(credit::FallbackReasonName(credits[i].fallback));
        }
        py::dict out;
        out["advantages"] = adv_a;
        out["mask"] = mask_a;
        out["lengths"] = lengths;
        out["span_token_begin"] = span_begin;
        out["span_token_count"] = span_count;
        out["placement"] = placement;
        out["fallback"] = fallback;
        out["stats"] = stats.ToString();
        return out;
      },
      py::arg("routes"), py::arg("advantages"), py::arg("token_offsets"),
      py::arg("char_offsets") = false, py::arg("target") = "earliest",
      py::arg("soft_weight") = 1.0, py::arg("seed") = 0, py::arg("max_len") = -1,
      py::arg("pad") = 0.0f, py::arg("positive_logic") = "span", py::arg("syntax") = "span",
      py::arg("min_confidence") = 0.0);

  m.def(
      "assign_token_credit",
      [](const std::string& mode, double advantage, const py::object& token_bytes,
         uint32_t code_offset, const py::object& error_span, const py::object& earliest,
         const py::object& last, const py::object& random, uint64_t sample_index,
         const std::string& target, double soft_weight, uint64_t seed, const py::object& cause,
         const std::string& positive_logic, const std::string& syntax,
         const py::object& localization_confidence, double min_confidence) {
        credit::CreditSample s;
        s.mode = ModeArg(mode);
        s.advantage = advantage;
        s.token_bytes = TokenRanges(token_bytes, 0, false, {});
        s.code_offset = code_offset;
        s.error_span = SpanArg(error_span, "error_span");
        s.earliest_divergence = SpanArg(earliest, "earliest");
        s.last_divergence = SpanArg(last, "last");
        s.random_boundary = SpanArg(random, "random");
        s.cause_span = SpanArg(cause, "cause");
        s.sample_index = sample_index;
        if (!localization_confidence.is_none()) {
          s.localization_confidence = localization_confidence.cast<double>();
        }
        credit::TokenCredit c = Unwrap(credit::AssignTokenCredit(
            s, CreditOptions(target, soft_weight, seed, positive_logic, syntax, min_confidence)));
        py::dict out;
        out["advantages"] = ToArray(c.advantages);
        out["placement"] = credit::CreditPlacementName(c.placement);
        out["fallback"] = credit::FallbackReasonName(c.fallback);
        out["span_token_begin"] = c.span_token_begin;
        out["span_token_count"] = c.span_token_count;
        return out;
      },
      py::arg("mode"), py::arg("advantage"), py::arg("token_bytes"), py::kw_only(),
      py::arg("code_offset") = 0, py::arg("error_span") = py::none(),
      py::arg("earliest") = py::none(), py::arg("last") = py::none(),
      py::arg("random") = py::none(), py::arg("sample_index") = 0,
      py::arg("target") = "earliest", py::arg("soft_weight") = 1.0, py::arg("seed") = 0,
      py::arg("cause") = py::none(), py::arg("positive_logic") = "span",
      py::arg("syntax") = "span", py::arg("localization_confidence") = py::none(),
      py::arg("min_confidence") = 0.0,
      "credit::AssignTokenCredit on one sample; spans are (begin, end) code bytes.");

  // ---- GRPO -----------------------------------------------------------------------------
  m.def(
      "group_advantages",
      [](const std::vector<double>& rewards, const std::string& normalization, double eps) {
        return ToArray(credit::GroupAdvantages(FiniteVector(rewards, "rewards"),
                                               GroupOptions(normalization, eps)));
      },
      py::arg("rewards"), py::arg("normalization") = "mean_std", py::arg("eps") = 1e-6);
  m.def("constrained_reward", &credit::ConstrainedReward, py::arg("pass_fraction"),
        py::arg("constraints_satisfied"));

  // ---- MT-GRPO --------------------------------------------------------------------------
  m.def(
      "mt_grpo_advantages",
      [](const std::vector<std::vector<double>>& intermediate, const std::vector<double>& outcome,
         double alpha, const std::string& normalization, double eps) {
        credit::MtGrpoOptions o;
        o.alpha = alpha;
        o.normalization = GroupOptions(normalization, eps);
        return TurnArray(Unwrap(credit::MtGrpoAdvantages(intermediate, outcome, o)));
      },
      py::arg("intermediate"), py::arg("outcome"), py::arg("alpha") = 1.0,
      py::arg("normalization") = "mean_std", py::arg("eps") = 1e-6,
      "MT-GRPO: intermediate[k][i] = R^I of sample i at turn k+1, outcome[i] = R^O -> [G, K].");
  m.def(
      "outcome_only_advantages",
      [](const std::vector<std::vector<double>>& intermediate, const std::vector<double>& outcome,
         const std::string& normalization, double eps) {
        return TurnArray(Unwrap(credit::OutcomeOnlyAdvantages(intermediate, outcome,
                                                              GroupOptions(normalization, eps))));
      },
      py::arg("intermediate"), py::arg("outcome"), py::arg("normalization") = "mean_std",
      py::arg("eps") = 1e-6);
  m.def(
      "merged_reward_advantages",
      [](const std::vector<std::vector<double>>& intermediate, const std::vector<double>& outcome,
         const std::string& normalization, double eps) {
        return TurnArray(Unwrap(credit::MergedRewardAdvantages(intermediate, outcome,
                                                               GroupOptions(normalization, eps))));
      },
      py::arg("intermediate"), py::arg("outcome"), py::arg("normalization") = "mean_std",
      py::arg("eps") = 1e-6);
  m.def(
      "broadcast_turn_advantages",
      [](const std::vector<double>& turn_advantages, const std::vector<int>& token_turn) {
        return ToArray(Unwrap(credit::BroadcastTurnAdvantages(turn_advantages, token_turn)));
      },
      py::arg("turn_advantages"), py::arg("token_turn"));

  // ---- Murphy ---------------------------------------------------------------------------
  py::class_<credit::MurphyTree>(m, "MurphyTree", "A Murphy rollout tree (credit/murphy.h).")
      .def(py::init([](double max_reward, const std::string& task) {
             credit::MurphyTree t;
             t.max_reward = max_reward;
             t.task = task;
             return t;
           }),
           py::arg("max_reward") = 1.0, py::arg("task") = "")
      .def(
          "add_response",
          [](credit::MurphyTree& t, int parent, double reward, const std::string& completion,
             const std::string& feedback, const std::string& prompt,
             std::optional<int64_t> token_count) {
            if (parent < -1 || parent >= static_cast<int>(t.nodes.size())) {
              Raise(PyExc_IndexError, fmt::format("parent {} is not -1 or a node id (0..{})",
                                                  parent, static_cast<int>(t.nodes.size()) - 1));
            }
            if (!std::isfinite(reward)) Raise(PyExc_ValueError, "reward is not finite");
            return t.AddResponse(parent, reward, completion, feedback, prompt, token_count);
          },
          py::arg("parent"), py::arg("reward"), py::arg("completion") = "",
          py::arg("feedback") = "", py::arg("prompt") = "", py::arg("token_count") = py::none())
      .def("__len__", [](const credit::MurphyTree& t) { return t.nodes.size(); })
      .def_property_readonly("num_turns", &credit::MurphyTree::num_turns)
      .def_property_readonly("rewards",
                             [](const credit::MurphyTree& t) {
                               std::vector<double> r;
                               for (const auto& n : t.nodes) r.push_back(n.reward);
                               return ToArray(r);
                             })
      .def_property_readonly("retained",
                             [](const credit::MurphyTree& t) {
                               std::vector<bool> r;
                               for (const auto& n : t.nodes) r.push_back(n.retained);
                               return r;
                             })
      .def("validate",
           [](const credit::MurphyTree& t) { ThrowIfError(credit::ValidateTree(t), "MurphyTree"); })
      .def(
          "prune",
          [](const credit::MurphyTree& t, const std::string& strategy, int budget,
             bool intra_include_root_group, int intra_last_turn) {
            ThrowIfError(credit::ValidateTree(t), "MurphyTree");
            credit::PruneOptions o;
            if (strategy == "none") {
              o.strategy = credit::PruneStrategy::kNone;
            } else if (strategy == "intra") {
              o.strategy = credit::PruneStrategy::kIntraGroup;
            } else if (strategy == "inter") {
              o.strategy = credit::PruneStrategy::kInterGroup;
            } else {
              Raise(PyExc_ValueError,
                    "strategy: expected \"none\", \"intra\" or \"inter\", got \"" + strategy + "\"");
            }
            if (budget < 0) Raise(PyExc_ValueError, "budget must be >= 0");
            o.budget = budget;
            o.intra_include_root_group = intra_include_root_group;
            o.intra_last_turn = intra_last_turn;
            return credit::Prune(t, o);
          },
          py::arg("strategy"), py::arg("budget"), py::arg("intra_include_root_group") = true,
          py::arg("intra_last_turn") = 0, "A copy with pruned nodes marked (IntraP / InterP).")
      .def(
          "backup_rewards",
          [](const credit::MurphyTree& t, const std::string& strategy, double gamma) {
            ThrowIfError(credit::ValidateTree(t), "MurphyTree");
            credit::BackupOptions o;
            if (strategy == "mars") {
              o.strategy = credit::BackupStrategy::kMaRS;
            } else if (strategy == "mers") {
              o.strategy = credit::BackupStrategy::kMeRS;
            } else if (strategy == "none") {
              o.strategy = credit::BackupStrategy::kNone;
            } else {
              Raise(PyExc_ValueError,
                    "strategy: expected \"mars\", \"mers\" or \"none\", got \"" + strategy + "\"");
            }
            o.gamma = gamma;
            return ToArray(credit::BackupRewards(t, o));
          },
          py::arg("strategy") = "mars", py::arg("gamma") = 1.0,
          "Credit-adjusted rewards R~ by node id (NaN for pruned nodes).")
      .def(
          "node_advantages",
          [](const credit::MurphyTree& t, const std::vector<double>& credited,
             const std::string& normalization, double eps) {
            ThrowIfError(credit::ValidateTree(t), "MurphyTree");
            if (credited.size() != t.nodes.size()) {
              Raise(PyExc_ValueError, fmt::format("credited has {} entries, the tree {} nodes",
                                                  credited.size(), t.nodes.size()));
            }
            auto a = credit::ComputeNodeAdvantages(t, credited, GroupOptions(normalization, eps));
            py::list groups;
            for (const auto& g : a.groups) {
              py::dict d;
              d["parent"] = g.parent;
              d["turn"] = g.turn;
              d["members"] = g.members;
              d["mean"] = g.stats.mean;
              d["std"] = g.stats.std;
              groups.append(d);
            }
            return py::make_tuple(ToArray(a.advantage), groups);
          },
          py::arg("credited"), py::arg("normalization") = "mean_std", py::arg("eps") = 1e-6,
          "Murphy eq. 5: (advantage by node id, retained groups).")
      .def(
          "grpo_mt_trajectories",
          [](const credit::MurphyTree& t, const std::string& normalization, double eps) {
            ThrowIfError(credit::ValidateTree(t), "MurphyTree");
            py::list out;
            for (const auto& tr : credit::GrpoMtTrajectories(t, GroupOptions(normalization, eps))) {
              py::dict d;
              d["path"] = tr.path;
              d["final_reward"] = tr.final_reward;
              d["advantage"] = tr.advantage;
              out.append(d);
            }
            return out;
          },
          py::arg("normalization") = "mean_std", py::arg("eps") = 1e-6)
      .def("sizes", [](const credit::MurphyTree& t) { return credit::ComputeTreeSizes(t).ToString(); })
      .def("dump", [](const credit::MurphyTree& t) { return credit::DumpMurphyTree(t); });

  // ---- ReflexiCoder ---------------------------------------------------------------------
  m.def(
      "parse_reflection_trajectory",
      [](const py::object& text, int max_reflections) {
        std::string t = Utf8Argument(text, "text");
        credit::ReflectionFormatOptions o;
        o.max_reflections = max_reflections;
        auto tr = credit::ParseReflectionTrajectory(t, o);
        py::dict d;
        d["well_formed"] = tr.well_formed;
        d["format_error"] = tr.format_error;
        d["think"] = tr.think;
        d["answers"] = tr.answers;
        d["reflections"] = tr.reflections;
        return d;
      },
      py::arg("text"), py::arg("max_reflections") = 8);
  m.def(
      "reflection_reward",
      [](bool format_ok, const std::vector<double>& scores, const py::kwargs& kwargs) {
        auto r = Unwrap(credit::ComputeReflectionReward(format_ok, scores, ReflectionOptions(kwargs)));
        py::dict d;
        d["format_ok"] = r.format_ok;
        d["n"] = r.n;
        d["penalty"] = r.penalty;
        d["weights"] = r.weights;
        d["signals"] = r.signals;
        d["trajectory"] = r.trajectory;
        d["efficiency"] = r.efficiency;
        d["overall"] = r.overall;
        return d;
      },
      py::arg("format_ok"), py::arg("scores"),
      "ReflexiCoder eq. 9 and its terms; options (alpha, beta, ...) as keywords.");
  m.def(
      "cycle_penalty",
      [](int n, const py::kwargs& kwargs) { return credit::CyclePenalty(n, ReflectionOptions(kwargs)); },
      py::arg("n"));
  m.def("improvement_weights", &credit::ImprovementWeights, py::arg("n"), py::arg("lambda_"));

  // ---- egca's tokenizer -----------------------------------------------------------------
  py::class_<trainer::Tokenizer>(m, "Tokenizer",
                                 "egca's byte-level BPE tokenizer; offsets are UTF-8 bytes.")
      .def_static(
          "from_file",
          [](const std::string& path) {
            return Unwrap(trainer::Tokenizer::FromFile(path));
          },
          py::arg("path"), "A tokenizer.json file or a directory holding one.")
      .def(
          "encode",
          [](const trainer::Tokenizer& t, const py::object& text, bool parse_special) {
            std::string s = Utf8Argument(text, "text");
            trainer::EncodeOptions o;
            o.parse_special_tokens = parse_special;
            trainer::Encoding e;
            {
              py::gil_scoped_release release;
              e = t.Encode(s, o);
            }
            py::array_t<int32_t> ids(static_cast<py::ssize_t>(e.ids.size()));
            std::copy(e.ids.begin(), e.ids.end(), ids.mutable_data());
            py::array_t<int64_t> offsets({static_cast<py::ssize_t>(e.ids.size()), py::ssize_t{2}});
            auto w = offsets.mutable_unchecked<2>();
            for (size_t i = 0; i < e.offsets.size(); ++i) {
              w(i, 0) = e.offsets[i].begin;
              w(i, 1) = e.offsets[i].end;
            }
            return py::make_tuple(ids, offsets);
          },
          py::arg("text"), py::arg("parse_special_tokens") = false,
          "(ids [T] int32, byte offsets [T, 2] int64)")
      .def(
          "decode",
          [](const trainer::Tokenizer& t, const std::vector<int32_t>& ids, bool skip_special) {
            return t.Decode(ids, skip_special);
          },
          py::arg("ids"), py::arg("skip_special") = false)
      .def_property_readonly("vocab_size", &trainer::Tokenizer::vocab_size);
}

}  // namespace egca::python
