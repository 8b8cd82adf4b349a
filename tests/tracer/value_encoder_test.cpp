// Canonical value encoding: exact scalars, bounded containers with structural hashes,
// order-independent sets, cycle safety, user objects encoded without running their code.
#include "value_encoder.h"

#include <gtest/gtest.h>

#include <string>

#include "trace_test_util.h"

namespace egca::tracer::hook {
namespace {

class ValueEncoderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::EnsurePython();
    if (globals_ == nullptr) {
      globals_ = PyDict_New();
      PyDict_SetItemString(globals_, "__builtins__", PyEval_GetBuiltins());
    }
  }

  // Runs `setup` (statements) then evaluates `expr`; returns a new reference.
  PyObject* Eval(const std::string& expr, const std::string& setup = "") {
    if (!setup.empty()) {
      PyObject* r = PyRun_String(setup.c_str(), Py_file_input, globals_, globals_);
      EXPECT_NE(r, nullptr) << setup;
      if (r == nullptr) PyErr_Print();
      Py_XDECREF(r);
    }
    PyObject* v = PyRun_String(expr.c_str(), Py_eval_input, globals_, globals_);
    if (v == nullptr) PyErr_Print();
    EXPECT_NE(v, nullptr) << expr;
    return v;
  }

  proto::Value Encode(const std::string& expr, const std::string& setup = "",
                      TraceOptions options = TraceOptions()) {
    PyObject* v = Eval(expr, setup);
    proto::Value out;
    if (v != nullptr) {
      ValueEncoder(options).Encode(v, &out);
      Py_DECREF(v);
    }
    EXPECT_FALSE(PyErr_Occurred());
    return out;
  }

  std::string Text(const std::string& expr, const std::string& setup = "") {
    return Encode(expr, setup).text();
  }

  static PyObject* globals_;
};

PyObject* ValueEncoderTest::globals_ = nullptr;

TEST_F(ValueEncoderTest, ScalarsAreExact) {
  EXPECT_EQ(Text("None"), "None");
  EXPECT_EQ(Text("True"), "True");
  EXPECT_EQ(Text("-12345678901234"), "-12345678901234");
  EXPECT_EQ(Text("2**70"), "1180591620717411303424");
  EXPECT_EQ(Text("0.1 + 0.2"), "0.30000000000000004");
  EXPECT_EQ(Text("1e308 * 10"), "inf");
  EXPECT_EQ(Text("-0.0"), "-0.0");
  EXPECT_EQ(Text("2.0"), "2.0");
  EXPECT_EQ(Text("'it\\'s\\n'"), "'it\\'s\\n'");
  EXPECT_EQ(Text("b'\\x00a'"), "b'\\x00a'");
  EXPECT_EQ(Text("'héllo'"), "'héllo'");
}

TEST_F(ValueEncoderTest, EqualValuesEqualHashesDifferentValuesDiffer) {
  EXPECT_EQ(Encode("[1, 2, [3]]").hash(), Encode("list((1, 2, [3]))").hash());
  EXPECT_NE(Encode("[1, 2, 3]").hash(), Encode("[1, 2, 4]").hash());
  EXPECT_NE(Encode("[1]").hash(), Encode("(1,)").hash());
  EXPECT_NE(Encode("1").hash(), Encode("True").hash());
  EXPECT_NE(Encode("1").hash(), Encode("1.0").hash());
  EXPECT_NE(Encode("'1'").hash(), Encode("1").hash());
  EXPECT_NE(Encode("0.0").hash(), Encode("-0.0").hash());
  EXPECT_NE(Encode("2**100").hash(), Encode("2**100 + 1").hash());
}

TEST_F(ValueEncoderTest, SetsAreSortedAndOrderIndependent) {
  proto::Value a = Encode("{10, 2, 1}");
  proto::Value b = Encode("set([1, 10, 2])");
  EXPECT_EQ(a.text(), "{1, 2, 10}");
  EXPECT_EQ(a.hash(), b.hash());
  EXPECT_EQ(Text("{'b', 'a'}"), "{'a', 'b'}");
  EXPECT_EQ(Text("set()"), "set()");
  EXPECT_EQ(Text("frozenset({3, 1})"), "frozenset({1, 3})");
  EXPECT_EQ(Text("frozenset()"), "frozenset()");
  // Strings hash with a per-process seed in CPython; our hash must not.
  EXPECT_EQ(Encode("{'x', 'y', 'z'}").hash(), Encode("{'z', 'y', 'x'}").hash());
}

TEST_F(ValueEncoderTest, DictsKeepInsertionOrder) {
  EXPECT_EQ(Text("{'b': 1, 'a': [2]}"), "{'b': 1, 'a': [2]}");
  EXPECT_NE(Encode("{'a': 1, 'b': 2}").hash(), Encode("{'b': 2, 'a': 1}").hash());
  EXPECT_EQ(Text("__import__('collections').Counter('aab')"), "collections.Counter({'a': 2, 'b': 1})");
  EXPECT_EQ(Text("__import__('collections').deque([1, 2])"), "collections.deque([1, 2])");
}

TEST_F(ValueEncoderTest, ContainersAreBoundedWithLengthAndHash) {
  proto::Value v = Encode("list(range(100))");
  EXPECT_EQ(v.text().rfind("[0, 1, 2, 3, 4, 5, 6, 7, …](len=100)#", 0), 0u) << v.text();
  EXPECT_FALSE(v.partial());
  // A change past the rendered prefix still changes the hash and the text.
  proto::Value w = Encode("list(range(99)) + [1000]");
  EXPECT_NE(v.hash(), w.hash());
  EXPECT_NE(v.text(), w.text());
  // Nesting beyond max_render_depth (3) is summarized, and the text gets a short hash.
  EXPECT_EQ(Text("[[[[1]]]]").rfind("[[[[…](len=1)]]]#", 0), 0u);
}

TEST_F(ValueEncoderTest, HashBudgetMarksPartial) {
  TraceOptions options;
  options.hash_budget = 10;
  proto::Value v = Encode("list(range(50))", "", options);
  EXPECT_TRUE(v.partial());
  proto::Value small = Encode("list(range(5))", "", options);
  EXPECT_FALSE(small.partial());
}

TEST_F(ValueEncoderTest, LongStringsAreCutButFullyHashed) {
  proto::Value v = Encode("'a' * 1000");
  EXPECT_EQ(v.text().rfind("'" + std::string(64, 'a') + "…'(len=1000)#", 0), 0u) << v.text();
  EXPECT_NE(v.hash(), Encode("'a' * 999 + 'b'").hash());
  EXPECT_FALSE(v.partial());
}

TEST_F(ValueEncoderTest, CyclesAreSafe) {
  proto::Value v = Encode("x", "x = [1]\nx.append(x)");
  EXPECT_EQ(v.text(), "[1, <cycle>]");
  proto::Value d = Encode("d", "d = {}\nd['me'] = d");
  EXPECT_EQ(d.text(), "{'me': <cycle>}");
}

TEST_F(ValueEncoderTest, UserObjectsNeverRunUserCode) {
  const char* setup =
      "calls = []\n"
      "class P:\n"
      "    def __init__(self, x): self.x = x; self.tags = ['a']\n"
      "    def __repr__(self): calls.append('repr'); raise RuntimeError('no')\n"
      "    def __eq__(self, o): calls.append('eq'); return True\n"
      "    def __hash__(self): calls.append('hash'); return 1\n"
      "    def __getattribute__(self, n): calls.append('getattr'); return object.__getattribute__(self, n)\n"
      "class S:\n"
      "    __slots__ = ('a', 'b')\n"
      "    def __init__(self): self.a = 1\n"
      "p = P(3)\n"
      "ps = {p}\n"
      "calls.clear()\n";
  EXPECT_EQ(Text("p", setup), "P(x=3, tags=['a'])");
  EXPECT_EQ(Text("ps"), "{P(x=3, tags=['a'])}");
  EXPECT_EQ(Text("S()"), "S(a=1)");
  EXPECT_EQ(Text("calls"), "[]");
  EXPECT_NE(Encode("P(3)").hash(), Encode("P(4)").hash());
}

TEST_F(ValueEncoderTest, CallablesAndTypesByQualname) {
  const char* setup = "def outer():\n    def inner(): pass\n    return inner\nclass K:\n    def m(self): pass\n";
  EXPECT_EQ(Text("outer()", setup), "<function outer.<locals>.inner>");
  EXPECT_EQ(Text("K"), "<class K>");
  EXPECT_EQ(Text("K().m"), "<method K.m>");
  EXPECT_EQ(Text("len"), "<builtin len>");
  EXPECT_EQ(Text("__import__('math')"), "<module math>");
  EXPECT_EQ(Text("ValueError('bad', 2)"), "ValueError('bad', 2)");
  EXPECT_EQ(Text("KeyError('k')"), "KeyError('k')");
  // Address-free: iterators are opaque but canonical.
  EXPECT_EQ(Text("iter([1])"), "<list_iterator>");
  EXPECT_EQ(Text("range(2, 9, 3)"), "range(2, 9, 3)");
  EXPECT_EQ(Text("{'a': 1}.keys()"), "dict_keys(['a'])");
}

TEST_F(ValueEncoderTest, DictVersionCacheSeesEveryChange) {
  // One encoder across calls, as in a trace: all-immutable dicts are cached by version tag.
  ValueEncoder encoder{TraceOptions()};
  PyObject* d = Eval("d", "d = {'a': 1, (1, 2): 'x'}");
  uint64_t h1 = encoder.Hash(d).hash;
  EXPECT_EQ(encoder.Hash(d).hash, h1);
  Py_XDECREF(Eval("None", "d['a'] = 2"));
  uint64_t h2 = encoder.Hash(d).hash;
  EXPECT_NE(h2, h1);
  Py_XDECREF(Eval("None", "d['a'] = 1"));
  EXPECT_EQ(encoder.Hash(d).hash, h1);
  Py_DECREF(d);
  // A list inside changes without touching the dict's version: never cached.
  PyObject* n = Eval("n", "n = {'a': [1]}");
  uint64_t m1 = encoder.Hash(n).hash;
  Py_XDECREF(Eval("None", "n['a'].append(2)"));
  EXPECT_NE(encoder.Hash(n).hash, m1);
  Py_DECREF(n);
}

TEST_F(ValueEncoderTest, SharedStructureHashesOncePerSnapshotAndStaysEqual) {
  const char* setup =
      "class N:\n"
      "    def __init__(self, kids): self.kids = kids\n"
      "leaf = N([])\n"
      "level = [N([leaf, leaf]) for _ in range(2)]\n"
      "for _ in range(30):\n"
      "    level = [N(level), N(level)]\n"
      "root = level[0]\n";
  // 2^30 paths, 60 distinct nodes: only identity memoization makes this finish.
  PyObject* root = Eval("root", setup);
  ValueEncoder encoder{TraceOptions()};
  encoder.BeginSnapshot();
  ValueDigest a = encoder.Hash(root);
  proto::Value v;
  encoder.Encode(root, &v);
  encoder.EndSnapshot();
  EXPECT_EQ(a.hash, v.hash());
  // Rendering stops at max_render_depth (3): instance, list, instance, then "[…]".
  EXPECT_EQ(v.text().rfind("N(kids=[N(kids=[…](len=2)), N(kids=[…](len=2))])#", 0), 0u)
      << v.text();
  Py_DECREF(root);
}

TEST_F(ValueEncoderTest, HashBytesIsStable) {
  // Fixed values: the hash must not change between builds or processes.
  EXPECT_EQ(HashBytes("", 0, 0), HashBytes("", 0, 0));
  EXPECT_NE(HashBytes("ab", 2, 0), HashBytes("ba", 2, 0));
  EXPECT_NE(HashBytes("abcdefgh1", 9, 0), HashBytes("abcdefgh2", 9, 0));
  EXPECT_NE(HashBytes("a", 1, 1), HashBytes("a", 1, 2));
}

}  // namespace
}  // namespace egca::tracer::hook
