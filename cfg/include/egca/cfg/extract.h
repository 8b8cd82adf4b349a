// Program extraction from an LLM completion: the code may come bare, inside Markdown
// fences, or with prose around it. The extracted code is always a contiguous substring of
// the completion, so a span in the code maps back to the completion by adding `offset`
// (and from there to tokens).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace egca::cfg {

enum class ExtractionKind : uint8_t {
  kWhole,          // no fence, the completion parses as it is (or nothing better was found)
  kFence,          // the chosen ``` / ~~~ fenced block
  kUnclosedFence,  // an opening fence with no closing one (truncated completion): to the end
  kProseTrimmed,   // no fence; leading and/or trailing prose cut off
};

const char* ExtractionKindName(ExtractionKind kind);

struct ExtractOptions {
  // The function the program must define (HumanEval's entry_point); empty if unknown.
  std::string entry_point;

  ExtractOptions& set_entry_point(std::string v) { entry_point = std::move(v); return *this; }
};

struct ExtractedProgram {
  std::string code;
  uint32_t offset = 0;  // byte offset of code[0] in the completion
  ExtractionKind kind = ExtractionKind::kWhole;
  int32_t fence_count = 0;  // fenced blocks found (of any language)
};

// Which fenced block: among blocks whose info string is empty or python/py/python3/py3
// (any case), the last one that defines `def <entry_point>(` if an entry point is given,
// else the last one with a top-level def/class, else the longest; blocks in other languages
// only if there is no Python-looking block. Without fences: the completion as is if it
// parses; otherwise from the first line that starts a Python statement at column 0
// (def/class/import/from/@/async/if __name__) to the longest following prefix that parses,
// cutting at most 64 trailing lines of prose; if nothing parses, from that line to the end.
ExtractedProgram ExtractProgram(std::string_view completion, const ExtractOptions& options = {});

}  // namespace egca::cfg
