// Program extraction from an LLM completion: the code may come bare, inside Markdown
// fences, or with prose around it. The extracted code is a contiguous region of the
// completion, so a span in the code maps back to the completion by adding `offset` (and
// from there to tokens); when the region had to be dedented, ToCompletionByte() maps.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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

  ExtractOptions& set_entry_point(std::string v) {
    entry_point = std::move(v);
    return *this;
  }
};

struct ExtractedProgram {
  std::string code;
  uint32_t offset = 0;  // byte offset of code[0] in the completion
  ExtractionKind kind = ExtractionKind::kWhole;
  int32_t fence_count = 0;  // fenced blocks found (of any language)
  // Leading whitespace removed from every line: code inside a fence nested in a list item,
  // or a completion indented as a whole, is an IndentationError as it stands. 0 when the
  // code is a verbatim substring of the completion.
  uint32_t dedent = 0;

  // Byte offset in the completion of byte `code_byte` of `code` (code.size() maps to the
  // end of the extracted region). Exact with or without dedent.
  uint32_t ToCompletionByte(uint32_t code_byte) const;

  // (start of a code line, completion byte of the same character); only when dedent > 0.
  std::vector<std::pair<uint32_t, uint32_t>> line_map;
};

// Which fenced block: among blocks whose info string is empty or python/py/python3/py3
// (any case), the last one that defines `def <entry_point>(` if an entry point is given,
// else the last one with a top-level def/class, else the longest; blocks in other languages
// only if there is no Python-looking block. An opening fence with a language inside an open
// block closes it (LLMs forget closing fences), and so does a closing fence glued to the
// end of a code line ("    return x```": the code before it is kept). Without fence lines,
// a glued closing fence ends the code the same way. Without fences: the completion as is if it
// parses; otherwise from the first line that starts a Python statement (def/class/import/
// from/@/async/if __name__, after any common indentation) to the longest following prefix
// that parses, cutting at most 64 trailing lines of prose; if nothing parses, from that
// line to the end. Finally, whitespace common to every non-blank line is removed.
ExtractedProgram ExtractProgram(std::string_view completion, const ExtractOptions& options = {});

}  // namespace egca::cfg
