// The snapshot runtime placed before an instrumented candidate (see
// cpp/instrument/main.cpp): typed printers for the values of locals and a bounded event
// stream written to the result channel (fd 3) as text lines
//   "T <kind> <line> <parent lo> <parent hi>\t<name>=<value>\t...\n"
// kind B (before a statement), A (after it), R (a return value, name "return").
// Printers: integers, floating point (%.17g), bool, char, std::string, pairs, tuples of
// two, and any range (vector, deque, list, set, map, unordered_*: unordered ones sorted
// by their printed element so equal contents print equally); other types print as "?".
// Values are cut at 200 bytes and containers at 64 elements; after `kMaxEvents` events
// the stream stops with a "T stop" line.
#pragma once

namespace egca::cpp::internal {

inline constexpr const char kSnapshotRuntime[] = R"egca(
#include <algorithm>
#include <cstdio>
#include <iterator>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>
#include <unistd.h>
namespace egca_rt {
static long long g_events = 0;
static const long long kMaxEvents = EGCA_MAX_EVENTS;
template <class T, class = void> struct IsRange : std::false_type {};
template <class T> struct IsRange<T, std::void_t<decltype(std::begin(std::declval<const T&>())),
                                                 decltype(std::end(std::declval<const T&>()))>>
    : std::true_type {};
template <class T, class = void> struct IsUnordered : std::false_type {};
template <class T> struct IsUnordered<T, std::void_t<typename T::hasher>> : std::true_type {};
template <class T> struct IsPair : std::false_type {};
template <class A, class B> struct IsPair<std::pair<A, B>> : std::true_type {};
template <class T> void Put(std::string& o, const T& v, int depth);
inline void Escape(std::string& o, const std::string& s) {
  o += '"';
  for (size_t i = 0; i < s.size() && i < 200; ++i) {
    char c = s[i];
    if (c == '\n') o += "\\n"; else if (c == '\t') o += "\\t"; else if (c == '"') o += "\\\"";
    else if (c == '\\') o += "\\\\"; else o += c;
  }
  o += '"';
}
template <class T> void Put(std::string& o, const T& v, int depth) {
  using U = std::decay_t<T>;
  char buf[64];
  if constexpr (std::is_same_v<U, bool>) {
    o += v ? "true" : "false";
  } else if constexpr (std::is_same_v<U, char>) {
    o += '\''; o += v; o += '\'';
  } else if constexpr (std::is_enum_v<U>) {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v)); o += buf;
  } else if constexpr (std::is_integral_v<U> && std::is_signed_v<U>) {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v)); o += buf;
  } else if constexpr (std::is_integral_v<U>) {
    std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(v)); o += buf;
  } else if constexpr (std::is_floating_point_v<U>) {
    std::snprintf(buf, sizeof buf, "%.17g", static_cast<double>(v)); o += buf;
  } else if constexpr (std::is_same_v<U, std::string>) {
    Escape(o, v);
  } else if constexpr (IsPair<U>::value) {
    o += '('; Put(o, v.first, depth + 1); o += ','; Put(o, v.second, depth + 1); o += ')';
  } else if constexpr (IsRange<U>::value) {
    if (depth > 3) { o += "[...]"; return; }
    std::vector<std::string> items;
    size_t n = 0;
    for (const auto& x : v) {
      if (++n > 64) { items.push_back("..."); break; }
      std::string s; Put(s, x, depth + 1); items.push_back(std::move(s));
    }
    if constexpr (IsUnordered<U>::value) std::sort(items.begin(), items.end());
    o += '[';
    for (size_t i = 0; i < items.size(); ++i) { if (i) o += ','; o += items[i]; }
    o += ']';
  } else {
    o += '?';
  }
}
inline void Write(const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    ssize_t n = ::write(3, s.data() + done, s.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}
inline bool Begin(std::string& o, char kind, int line, int lo, int hi) {
  if (g_events > kMaxEvents) return false;
  if (++g_events > kMaxEvents) { Write("T stop\n"); return false; }
  char buf[96];
  std::snprintf(buf, sizeof buf, "T %c %d %d %d", kind, line, lo, hi);
  o += buf;
  return true;
}
inline void Vars(std::string&) {}
template <class T, class... Rest> void Vars(std::string& o, const char* name, const T& v, const Rest&... rest) {
  o += '\t'; o += name; o += '=';
  Put(o, v, 0);
  Vars(o, rest...);
}
template <class... A> void Before(int line, int lo, int hi, const A&... a) {
  std::string o;
  if (!Begin(o, 'B', line, lo, hi)) return;
  Vars(o, a...); o += '\n'; Write(o);
}
template <class... A> void After(int line, int lo, int hi, const A&... a) {
  std::string o;
  if (!Begin(o, 'A', line, lo, hi)) return;
  Vars(o, a...); o += '\n'; Write(o);
}
template <class T> T&& Ret(int line, int lo, int hi, T&& v) {
  std::string o;
  if (Begin(o, 'R', line, lo, hi)) { o += "\treturn="; Put(o, v, 0); o += '\n'; Write(o); }
  return std::forward<T>(v);
}
}  // namespace egca_rt
)egca";

}  // namespace egca::cpp::internal
