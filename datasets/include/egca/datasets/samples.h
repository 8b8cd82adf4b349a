// Candidate samples: the egca sample JSONL (read and written here), converters from the
// published sample files (CodeT, MapCoder, LDB, Reflexion) into it, and ProgramOf(), the one
// way a sample becomes the program that is run.
//
// Sample JSONL, one object per line:
//   {"problem_id": "HumanEval/0", "completion": "...",          required, strings
//    "model": "codegen16B", "sample_id": "...",                   optional strings
//    "completion_is_body": true,                                  optional bool (false;
//                                                                 null: ProgramOf decides)
//    "reported_solved": true}                                     optional bool (the source's
//                                                                 own verdict; absent: unknown)
// The sample files of the official harnesses are read too: human-eval's
// {"task_id", "completion"} (a function body or a whole program: decided per sample by
// ProgramOf, Sample::detect_body) and evalplus's {"task_id", "solution"} (a whole program).
// Converters produce problem ids exactly as the loaders in datasets.h do.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "egca/datasets/problem.h"
#include "egca/cfg/extract.h"
#include "egca/core/status.h"

namespace egca::datasets {

// Reads a sample JSONL file (".gz" read transparently). Records are split on '\n' only (a
// completion may contain U+2028). A record that does not parse, lacks problem_id/completion,
// has an ill-typed field or non-UTF-8 text is reported with file and line and skipped; a
// completion of any size is loaded as is. Sample::origin is "<path>:<line>". NOT_FOUND if
// the file cannot be read. `report` is required (not owned).
StatusOr<std::vector<Sample>> LoadSamples(const std::string& path, LoadReport* report);

// One JSON object per sample per line, fields as above (empty optional fields omitted; the
// origin is not written). LoadSamples(WriteSamplesJsonl(x)) gives back x (origins aside).
std::string SamplesToJsonl(const std::vector<Sample>& samples);
// Writes SamplesToJsonl(samples) to `path` atomically.
Status WriteSamplesJsonl(const std::string& path, const std::vector<Sample>& samples);

// Published sample files the converters read.
enum class SampleSource {
  kCodeT,      // CodeT HumanEval_*.jsonl.gz: {prompt, samples[]} function bodies
  kMapCoder,   // MapCoder final-results.tar.gz (or its extracted folder / one run .jsonl)
  kLdb,        // LDB ldb.tar.gz (or folder / one .jsonl): seeds and debugging runs
  kReflexion,  // Reflexion programming_runs.tar.gz (or folder / one .jsonl)
  kMbxp,       // MBXP/mxeval samples JSONL {task_id, completion, language}: function bodies
};

// "codet", "mapcoder", "ldb", "reflexion", "mbxp".
const char* SampleSourceName(SampleSource source);
StatusOr<SampleSource> ParseSampleSource(std::string_view name);
std::vector<std::string> SampleSourceNames();

struct ConvertOptions {
  // Model name for every sample; empty: from the source (CodeT: "codegen16B"; MapCoder:
  // the run file's stem, e.g. "GPT4-Turbo-MapCoder-3-5-APPS-Python3-0-1"; LDB/Reflexion:
  // "<tool>/<run folder>").
  std::string model;
  // Only run files under a folder with this name (case-insensitive), e.g. MapCoder "APPS",
  // "HumanEval", "MBPP", "HumanEvalET"; LDB "humaneval", "mbpp". Empty: every run file.
  std::string dataset;
  // Only run files whose path (inside the tarball/folder) contains this substring.
  std::string run_filter;
  // Every attempt a record carries (MapCoder source_codes[], LDB/Reflexion
  // implementations[]) instead of only the final program (the last code / `solution`).
  bool all_attempts = false;
  // MapCoder/LDB/Reflexion samples are the raw responses with fences and prose when the
  // source has them (MapCoder responses[]); false: the source's already-extracted code.
  bool raw_responses = false;
};

// Converts a published sample file into samples for `problems` (the problems the samples
// must match; ids exactly as LoadProblems produces them). Records whose problem is not in
// `problems` are counted in report->unmatched and reported as bad records, one per record;
// a run file none of whose records matches (a run on another data set) is reported once
// (line 0) instead. report->records counts source records read, report->loaded samples
// produced. An unparsable line (MapCoder has one) is reported with its file
// ("<tarball>/<path inside>") and line. NOT_FOUND / DATA_LOSS only when `path` cannot be
// read or unpacked. Samples of a HumanEval-style problem that do not define the entry point
// themselves are function bodies (completion_is_body = true).
//   kCodeT: each record matched to its HumanEval problem by prompt (exact, else with
//     trailing whitespace ignored); completion_is_body = true.
//   kMapCoder: problem by id field (APPS: "apps/<id>"; HumanEval: task_id; MBPP: "mbpp/<n>").
//   kLdb / kReflexion: task_id "HumanEval/<n>", "MBPP/<n>", MultiPL-E "mbpp_<n>_<name>" and
//     "HumanEval_<n>_<name>" mapped to "HumanEval/<n>" / "mbpp/<n>"; `is_solved` (a string
//     there) kept as Sample::reported_solved.
//   kMbxp: problem by task_id ("MBCPP/3"); the completion continues the problem's prompt
//     (completion_is_body = true); model "mbxp" unless ConvertOptions::model is set.
StatusOr<std::vector<Sample>> ConvertSamples(const std::string& path, SampleSource source,
                                             const std::vector<ProblemRecord>& problems,
                                             const ConvertOptions& options, LoadReport* report);

// The program that is run for a sample, and where it sits in the completion.
//
// What is executed, as the official harnesses execute it:
//   body samples      prompt + completion (human-eval's check_correctness runs exactly
//                     that), the completion cut at a closing Markdown fence;
//   whole programs    the prompt's context, then the program extracted from the completion
//                     (cfg::ExtractProgram: fences, prose). The context is what prompt +
//                     completion would have defined and the completion does not: the
//                     prompt's imports, module-level assignments and helper functions and
//                     classes (e.g. HumanEval/38's encode_cyclic), without the entry point's
//                     own stub, any top-level def/class the program defines itself, and
//                     any import line the program has too. Problems whose prompt is not code (MBPP,
//                     APPS) get none.
struct SampleProgram {
  std::string code;
  // completion byte = code byte + offset, when no dedent happened. Code bytes before the
  // completion's (the prompt of a body sample, the prompt's context) have a negative
  // completion byte: no completion token produced them.
  int64_t offset = 0;
  bool from_body = false;  // true: prompt + completion; `extraction` unused
  cfg::ExtractedProgram extraction;  // the cfg::ExtractProgram result otherwise
  // Whole programs: bytes of the prompt's context at the start of `code`.
  uint32_t context_bytes = 0;
  // The completion holds no code (blank, only comments, an empty fence): an empty sample
  // (API failures). Graded, counted apart, never localized.
  bool empty = false;

  // Completion byte of code byte `code_byte`; -1 when the byte lies in the prompt or its
  // context. Exact with dedent (delegates to the extraction's line map).
  int64_t ToCompletionByte(int64_t code_byte) const;
  // "body" or cfg::ExtractionKindName() of the extraction ("whole", "fence", ...).
  const char* KindName() const;
};

// Body samples (completion_is_body, or detect_body and the completion does not define the
// entry point): prompt + completion. Otherwise the prompt's context + cfg::ExtractProgram(
// completion) with the problem's entry point, so the right fenced block is chosen.
SampleProgram ProgramOf(const Sample& sample, const ProblemRecord& problem);

// The prompt's context a whole program runs after (see SampleProgram); "" when the prompt
// is not code or has nothing the program lacks.
std::string PromptContext(const ProblemRecord& problem, std::string_view program);

// Whether the problem's prompt is code the completion continues (HumanEval: the reference
// starts with the prompt, which defines the entry point).
bool PromptIsCode(const ProblemRecord& problem);

}  // namespace egca::datasets
