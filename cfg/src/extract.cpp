#include "egca/cfg/extract.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <vector>

#include "egca/cfg/cfg.h"

namespace egca::cfg {
namespace {

struct Line {
  uint32_t begin;  // first byte
  uint32_t end;    // byte after the line's text (the '\n' or end of input)
  uint32_t next;   // first byte of the next line
};

std::vector<Line> SplitLines(std::string_view text) {
  std::vector<Line> lines;
  uint32_t pos = 0;
  const uint32_t n = static_cast<uint32_t>(text.size());
  while (pos < n) {
    size_t nl = text.find('\n', pos);
    uint32_t end = nl == std::string_view::npos ? n : static_cast<uint32_t>(nl);
    uint32_t next = nl == std::string_view::npos ? n : end + 1;
    lines.push_back(Line{pos, end, next});
    pos = next;
  }
  return lines;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// A fence line: optional indentation, then ``` or ~~~ (3 or more). Returns the marker
// character and the info string.
bool IsFence(std::string_view line, char* marker, std::string_view* info) {
  std::string_view t = line;
  while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
  if (t.size() < 3) return false;
  char c = t.front();
  if (c != '`' && c != '~') return false;
  size_t k = 0;
  while (k < t.size() && t[k] == c) ++k;
  if (k < 3) return false;
  *marker = c;
  *info = Trim(t.substr(k));
  return true;
}

// A closing fence glued to the end of a code line ("    return lst2```"): the byte where
// the marker run starts in `line` (relative), or npos. The line must hold code before it.
size_t GluedFence(std::string_view line, char marker) {
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) {
    line.remove_suffix(1);
  }
  size_t k = line.size();
  while (k > 0 && line[k - 1] == marker) --k;
  if (line.size() - k < 3) return std::string_view::npos;
  if (line.substr(0, k).find_first_not_of(" \t") == std::string_view::npos) {
    return std::string_view::npos;  // a fence line of its own, not a glued one
  }
  return k;
}

bool IsPythonInfo(std::string_view info) {
  std::string lang;
  for (char ch : info) {
    if (std::isspace(static_cast<unsigned char>(ch)) || ch == '{') break;
    lang += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  return lang.empty() || lang == "python" || lang == "py" || lang == "python3" || lang == "py3";
}

// Parses and passes the compile-time checks (tree-sitter alone accepts, e.g., an indented
// module).
bool Parses(std::string_view code) {
  StatusOr<ProgramCfg> p = ProgramCfg::Build(code);
  return p.ok() && p->parsed();
}

bool StartsStatement(std::string_view line) {
  for (std::string_view p :
       {"def ", "class ", "import ", "from ", "@", "async def ", "if __name__"}) {
    if (StartsWith(line, p)) return true;
  }
  return false;
}

bool DefinesTopLevel(std::string_view code, std::string_view entry_point) {
  for (const Line& l : SplitLines(code)) {
    std::string_view line = code.substr(l.begin, l.end - l.begin);
    if (!entry_point.empty()) {
      std::string_view t = Trim(line);
      if (StartsWith(t, "async ")) t = Trim(t.substr(6));
      if (StartsWith(t, "def ") && Trim(t.substr(4)).substr(0, entry_point.size()) == entry_point) {
        std::string_view rest = Trim(t.substr(4)).substr(entry_point.size());
        if (!rest.empty() && (rest.front() == '(' || rest.front() == ' ')) return true;
      }
    } else if (StartsWith(line, "def ") || StartsWith(line, "class ") ||
               StartsWith(line, "async def ")) {
      return true;
    }
  }
  return false;
}

// The region [begin, end) of the completion as a result; whitespace common to all its
// non-blank lines is removed (and recorded so that bytes map back).
ExtractedProgram MakeResult(std::string_view completion, uint32_t begin, uint32_t end,
                            ExtractionKind kind) {
  ExtractedProgram r;
  r.offset = begin;
  r.kind = kind;
  std::string_view region = completion.substr(begin, end - begin);
  std::vector<Line> lines = SplitLines(region);
  std::optional<std::string_view> common;
  for (const Line& l : lines) {
    std::string_view t = region.substr(l.begin, l.end - l.begin);
    size_t ws = t.find_first_not_of(" \t");
    if (ws == std::string_view::npos || t[ws] == '\r' || t[ws] == '#') {
      continue;  // blank or comment-only: its indentation does not matter to Python
    }
    std::string_view indent = t.substr(0, ws);
    if (!common) {
      common = indent;
    } else {
      size_t k = 0;
      while (k < common->size() && k < indent.size() && (*common)[k] == indent[k]) ++k;
      common = common->substr(0, k);
    }
  }
  if (!common || common->empty()) {
    r.code = std::string(region);
    return r;
  }
  r.dedent = static_cast<uint32_t>(common->size());
  for (const Line& l : lines) {
    std::string_view t = region.substr(l.begin, l.next - l.begin);
    size_t cut = 0;
    while (cut < r.dedent && cut < t.size() && (t[cut] == ' ' || t[cut] == '\t')) ++cut;
    r.line_map.emplace_back(static_cast<uint32_t>(r.code.size()), begin + l.begin + cut);
    r.code.append(t.substr(cut));
  }
  r.offset = r.line_map.front().second;
  return r;
}

struct Fenced {
  uint32_t begin, end;
  bool closed;
  bool python;
};

}  // namespace

const char* ExtractionKindName(ExtractionKind kind) {
  switch (kind) {
    case ExtractionKind::kWhole:
      return "whole";
    case ExtractionKind::kFence:
      return "fence";
    case ExtractionKind::kUnclosedFence:
      return "unclosed-fence";
    case ExtractionKind::kProseTrimmed:
      return "prose-trimmed";
  }
  return "?";
}

ExtractedProgram ExtractProgram(std::string_view completion, const ExtractOptions& options) {
  ExtractedProgram out;
  std::vector<Line> lines = SplitLines(completion);
  auto text = [&](const Line& l) { return completion.substr(l.begin, l.end - l.begin); };

  // Fenced blocks.
  std::vector<Fenced> blocks;
  for (size_t i = 0; i < lines.size(); ++i) {
    char marker;
    std::string_view info;
    if (!IsFence(text(lines[i]), &marker, &info)) continue;
    Fenced f{lines[i].next, static_cast<uint32_t>(completion.size()), false, IsPythonInfo(info)};
    size_t j = i + 1;
    for (; j < lines.size(); ++j) {
      char m2;
      std::string_view info2;
      if (IsFence(text(lines[j]), &m2, &info2) && m2 == marker) {
        f.end = lines[j].begin;
        f.closed = info2.empty();
        break;
      }
      // "    return lst2```": the block ends at the marker; the line's code is kept.
      size_t glued = GluedFence(text(lines[j]), marker);
      if (glued != std::string_view::npos) {
        f.end = lines[j].begin + static_cast<uint32_t>(glued);
        f.closed = true;
        break;
      }
    }
    blocks.push_back(f);
    // Continue after the closing fence; an opening fence ("```python") met inside the block
    // means the previous one was never closed: it opens the next block.
    i = (j < lines.size() && !f.closed) ? j - 1 : j;
  }
  out.fence_count = static_cast<int32_t>(blocks.size());
  if (!blocks.empty()) {
    std::vector<const Fenced*> pool;
    for (const Fenced& f : blocks) {
      if (f.python) pool.push_back(&f);
    }
    if (pool.empty()) {
      for (const Fenced& f : blocks) pool.push_back(&f);
    }
    const Fenced* chosen = nullptr;
    auto body = [&](const Fenced* f) { return completion.substr(f->begin, f->end - f->begin); };
    if (!options.entry_point.empty()) {
      for (const Fenced* f : pool) {
        if (DefinesTopLevel(body(f), options.entry_point)) chosen = f;
      }
    }
    if (!chosen) {
      for (const Fenced* f : pool) {
        if (DefinesTopLevel(body(f), "")) chosen = f;
      }
    }
    if (!chosen) {
      for (const Fenced* f : pool) {
        if (!chosen || f->end - f->begin > chosen->end - chosen->begin) chosen = f;
      }
    }
    ExtractedProgram r =
        MakeResult(completion, chosen->begin, chosen->end,
                   chosen->closed ? ExtractionKind::kFence : ExtractionKind::kUnclosedFence);
    r.fence_count = out.fence_count;
    return r;
  }

  // No fence line, but a closing fence glued to a code line ("    return x```" followed by
  // prose): the code ends there, the prefix is extracted as it stands (same offsets).
  for (const Line& l : lines) {
    for (char marker : {'`', '~'}) {
      size_t glued = GluedFence(text(l), marker);
      if (glued != std::string_view::npos) {
        return ExtractProgram(completion.substr(0, l.begin + glued), options);
      }
    }
  }

  // No fence.
  const uint32_t n = static_cast<uint32_t>(completion.size());
  out.code = std::string(completion);
  if (Parses(completion)) return out;
  ExtractedProgram whole = MakeResult(completion, 0, n, ExtractionKind::kWhole);
  if (whole.dedent > 0 && Parses(whole.code)) return whole;
  size_t start = lines.size();
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view t = text(lines[i]);
    while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
    if (StartsStatement(t)) {
      start = i;
      break;
    }
  }
  if (start == lines.size()) return whole;  // nothing recognizably Python: leave it whole
  uint32_t begin = lines[start].begin;
  uint32_t end = n;
  constexpr size_t kMaxTrailingCut = 64;
  for (size_t last = lines.size(); last > start && lines.size() - last <= kMaxTrailingCut; --last) {
    uint32_t e = lines[last - 1].next;
    if (Parses(MakeResult(completion, begin, e, ExtractionKind::kProseTrimmed).code)) {
      end = e;
      break;
    }
  }
  return MakeResult(completion, begin, end, ExtractionKind::kProseTrimmed);
}

uint32_t ExtractedProgram::ToCompletionByte(uint32_t code_byte) const {
  if (line_map.empty()) return offset + code_byte;
  auto it = std::upper_bound(
      line_map.begin(), line_map.end(), code_byte,
      [](uint32_t b, const std::pair<uint32_t, uint32_t>& l) { return b < l.first; });
  if (it == line_map.begin()) return offset + code_byte;
  --it;
  return it->second + (code_byte - it->first);
}

}  // namespace egca::cfg
