// ValuesEqual (tracer/src/plain_value.h) against Python's own ==: a corpus of value pairs
// generated with a fixed seed (nested containers, int/float/bool mixes, big ints, NaN,
// -0.0, sets against lists and frozensets, dict keys of several types, tuples against
// lists), each pair written as two Python expressions and judged by /usr/bin/python3.
// With zero float tolerance every answer must be Python's. With the default tolerance
// (rel 1e-5, abs 1e-8) the only disagreement allowed is the documented one: a pair
// Python finds unequal that is equal within the float tolerance (and unequal without it).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "plain_value.h"

namespace egca::tracer {
namespace {

using Type = PlainValue::Type;

constexpr const char* kPython = "/usr/bin/python3";

PlainValue Int(int64_t v) {
  PlainValue p;
  p.type = Type::kInt;
  p.integer = v;
  return p;
}

PlainValue Big(const std::string& digits) {
  PlainValue p;
  p.type = Type::kBigInt;
  p.text = digits;
  return p;
}

PlainValue Float(double d) {
  PlainValue p;
  p.type = Type::kFloat;
  p.real = d;
  return p;
}

PlainValue Bool(bool b) {
  PlainValue p;
  p.type = Type::kBool;
  p.boolean = b;
  return p;
}

PlainValue Text(Type type, const std::string& s) {
  PlainValue p;
  p.type = type;
  p.text = s;
  return p;
}

PlainValue Complex(double re, double im) {
  PlainValue p;
  p.type = Type::kComplex;
  p.real = re;
  p.imag = im;
  return p;
}

std::string PyFloat(double d) {
  if (std::isnan(d)) return "float('nan')";  // a new object each time: NaN != NaN
  if (std::isinf(d)) return d > 0 ? "float('inf')" : "-float('inf')";
  return PythonRepr(Float(d));
}

// The value as a Python expression that builds it.
std::string Py(const PlainValue& v) {
  switch (v.type) {
    case Type::kFloat:
      return PyFloat(v.real);
    case Type::kComplex:
      return "complex(" + PyFloat(v.real) + ", " + PyFloat(v.imag) + ")";
    case Type::kList:
    case Type::kTuple:
    case Type::kSet:
    case Type::kFrozenSet: {
      std::string out = v.type == Type::kList    ? "["
                        : v.type == Type::kTuple ? "("
                        : v.type == Type::kSet   ? "set(["
                                                 : "frozenset([";
      for (size_t i = 0; i < v.items.size(); ++i) out += (i ? ", " : "") + Py(v.items[i]);
      if (v.type == Type::kTuple && v.items.size() == 1) out += ",";
      out += v.type == Type::kList ? "]" : v.type == Type::kTuple ? ")" : "])";
      return out;
    }
    case Type::kDict: {
      std::string out = "{";
      for (size_t i = 0; i + 1 < v.items.size(); i += 2) {
        out += (i ? ", " : "") + Py(v.items[i]) + ": " + Py(v.items[i + 1]);
      }
      return out + "}";
    }
    default:
      return PythonRepr(v);
  }
}

bool IsHashable(const PlainValue& v) {
  if (v.type == Type::kList || v.type == Type::kSet || v.type == Type::kDict) return false;
  for (const PlainValue& x : v.items) {
    if (!IsHashable(x)) return false;
  }
  return true;
}

class Corpus {
 public:
  explicit Corpus(uint64_t seed) : rng_(seed) {}

  int Pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }

  PlainValue Scalar(bool hashable_only) {
    static const double kFloats[] = {0.0,
                                     -0.0,
                                     1.0,
                                     0.5,
                                     3.0,
                                     0.1,
                                     0.30000000000000004,
                                     0.3,
                                     1e300,
                                     9007199254740992.0,
                                     1e30,
                                     NAN,
                                     HUGE_VAL,
                                     -HUGE_VAL,
                                     123456.0,
                                     123456.5,
                                     2.0000001,
                                     2.0};
    static const int64_t kInts[] = {0,         1,        -1, 2, 3, 123456, 123457, 9007199254740993,
                                    INT64_MAX, INT64_MIN};
    static const char* kBigs[] = {"1000000000000000019884624838656", "10000000000000000000000",
                                  "-99999999999999999999999", "18446744073709551616"};
    switch (Pick(hashable_only ? 7 : 8)) {
      case 0:
        return PlainValue();
      case 1:
        return Bool(Pick(2) == 1);
      case 2:
        return Int(kInts[Pick(sizeof(kInts) / sizeof(kInts[0]))]);
      case 3:
        return Big(kBigs[Pick(sizeof(kBigs) / sizeof(kBigs[0]))]);
      case 4:
        return Float(kFloats[Pick(sizeof(kFloats) / sizeof(kFloats[0]))]);
      case 5:
        return Text(Type::kStr, std::vector<std::string>{"", "a", "1", "True"}[Pick(4)]);
      case 6:
        return Pick(2) ? Text(Type::kBytes, "a")
                       : Complex(Pick(2) ? 1.0 : 2.0, Pick(2) ? 0.0 : 1.0);
      default:
        return Text(Type::kStr, "b");
    }
  }

  PlainValue Hashable(int depth) {
    if (depth > 1 || Pick(3) > 0) return Scalar(true);
    PlainValue v;
    v.type = Pick(2) ? Type::kTuple : Type::kFrozenSet;
    const int n = Pick(3);
    for (int i = 0; i < n; ++i) v.items.push_back(Hashable(depth + 1));
    return v;
  }

  PlainValue Value(int depth) {
    if (depth > 2 || Pick(3) == 0) return Scalar(false);
    PlainValue v;
    const int n = Pick(4);
    switch (Pick(5)) {
      case 0:
      case 1:
        v.type = Pick(2) ? Type::kList : Type::kTuple;
        for (int i = 0; i < n; ++i) v.items.push_back(Value(depth + 1));
        return v;
      case 2:
        v.type = Pick(2) ? Type::kSet : Type::kFrozenSet;
        for (int i = 0; i < n; ++i) v.items.push_back(Hashable(depth + 1));
        return v;
      default:
        v.type = Type::kDict;
        for (int i = 0; i < n; ++i) {
          v.items.push_back(Hashable(depth + 1));
          v.items.push_back(Value(depth + 1));
        }
        return v;
    }
  }

  // A value close to `v`: the same, or with one change of the kinds that Python's ==
  // and a careless comparison judge differently.
  PlainValue Variant(const PlainValue& v, int depth = 0) {
    PlainValue out = v;
    const int choice = Pick(10);
    switch (v.type) {
      case Type::kInt:
        if (choice < 3) return Float(static_cast<double>(v.integer));
        if (choice < 4 && (v.integer == 0 || v.integer == 1)) return Bool(v.integer == 1);
        if (choice < 5) return Int(v.integer + 1);
        if (choice < 6) return Text(Type::kStr, std::to_string(v.integer));
        return out;
      case Type::kBool:
        if (choice < 4) return Int(v.boolean ? 1 : 0);
        if (choice < 6) return Float(v.boolean ? 1.0 : 0.0);
        return out;
      case Type::kBigInt:
        if (choice < 4) return Float(std::strtod(v.text.c_str(), nullptr));
        return out;
      case Type::kFloat:
        if (choice < 2) return Float(v.real * (1 + 1e-7));  // within the tolerance
        if (choice < 3) return Float(v.real + 1e-9);
        if (choice < 4) return Float(-v.real);
        if (choice < 6 && std::isfinite(v.real) && v.real == std::floor(v.real) &&
            std::fabs(v.real) < 1e18) {
          return Int(static_cast<int64_t>(v.real));
        }
        if (choice < 7) return Complex(v.real, 0.0);
        return out;
      case Type::kList:
      case Type::kTuple:
        if (choice < 2) out.type = v.type == Type::kList ? Type::kTuple : Type::kList;
        if (choice == 2 && !out.items.empty()) out.items.pop_back();
        if (choice == 3) {
          // The same elements as a set (when they are hashable, Python builds it).
          bool hashable = true;
          for (const auto& x : v.items) hashable = hashable && IsHashable(x);
          if (hashable) out.type = Type::kSet;
          return out;
        }
        for (auto& x : out.items) {
          if (Pick(2) && depth < 3) x = Variant(x, depth + 1);
        }
        return out;
      case Type::kSet:
      case Type::kFrozenSet:
        if (choice < 3) out.type = v.type == Type::kSet ? Type::kFrozenSet : Type::kSet;
        if (choice == 3) out.type = Type::kList;
        if (choice == 4 && out.items.size() > 1) std::swap(out.items[0], out.items[1]);
        if (choice == 5 && !out.items.empty()) out.items.push_back(out.items[0]);  // duplicate
        if (choice == 6 && !out.items.empty()) {
          const PlainValue x = Variant(out.items[0], depth + 1);
          if (IsHashable(x)) out.items[0] = x;
        }
        return out;
      case Type::kDict:
        if (choice < 3 && out.items.size() >= 4) {  // another key order
          std::swap(out.items[0], out.items[2]);
          std::swap(out.items[1], out.items[3]);
        }
        if (choice == 3 && !out.items.empty()) {  // a key as its str
          out.items[0] = Text(Type::kStr, PythonRepr(out.items[0]));
        }
        if (choice == 4 && !out.items.empty()) {
          const PlainValue k = Variant(out.items[0], depth + 1);
          if (IsHashable(k)) out.items[0] = k;
        }
        for (size_t i = 1; i < out.items.size(); i += 2) {
          if (Pick(2) && depth < 3) out.items[i] = Variant(out.items[i], depth + 1);
        }
        return out;
      default:
        return out;
    }
  }

 private:
  std::mt19937_64 rng_;
};

TEST(ValuesEqualOracle, AgreesWithPythonEqualityOnAGeneratedCorpus) {
  if (access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " is not installed";
  Corpus corpus(27);
  std::vector<std::pair<PlainValue, PlainValue>> pairs;
  for (int i = 0; i < 4000; ++i) {
    PlainValue a = corpus.Value(0);
    PlainValue b = corpus.Pick(4) == 0 ? corpus.Value(0) : corpus.Variant(a);
    if (corpus.Pick(2)) std::swap(a, b);
    pairs.emplace_back(std::move(a), std::move(b));
  }
  char dir_template[] = "/tmp/egca-values-oracle-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  {
    std::ofstream script(dir + "/pairs.py");
    script << "import sys\nout = []\n";
    for (const auto& [a, b] : pairs) {
      script << "out.append('1' if (" << Py(a) << ") == (" << Py(b) << ") else '0')\n";
    }
    script << "sys.stdout.write(''.join(out))\n";
  }
  const std::string command = std::string(kPython) + " -I " + dir + "/pairs.py";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string answers;
  char buffer[4096];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) answers.append(buffer, n);
  ASSERT_EQ(pclose(pipe), 0) << "python failed on " << dir << "/pairs.py";
  ASSERT_EQ(answers.size(), pairs.size());
  std::remove((dir + "/pairs.py").c_str());
  rmdir(dir.c_str());

  const NumberRule exact{0, 0, false};
  const NumberRule tolerant{1e-5, 1e-8, false};
  int equal = 0, tolerated = 0;
  for (size_t i = 0; i < pairs.size(); ++i) {
    const auto& [a, b] = pairs[i];
    const bool python = answers[i] == '1';
    equal += python;
    EXPECT_EQ(ValuesEqual(a, b, exact), python)
        << "pair " << i << ": " << Py(a) << " == " << Py(b) << " is " << python << " in Python";
    const bool with_tolerance = ValuesEqual(a, b, tolerant);
    if (with_tolerance != python) {
      // The one documented difference: two floats within the tolerance.
      EXPECT_TRUE(with_tolerance && !python && !ValuesEqual(a, b, exact))
          << "pair " << i << ": " << Py(a) << " == " << Py(b);
      ++tolerated;
    }
  }
  // The corpus exercises both answers and the tolerance.
  EXPECT_GT(equal, 800);
  EXPECT_LT(equal, 3200);
  EXPECT_GT(tolerated, 5);
  std::printf("pairs %zu, equal in Python %d, equal only within the float tolerance %d\n",
              pairs.size(), equal, tolerated);
}

}  // namespace
}  // namespace egca::tracer
