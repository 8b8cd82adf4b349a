// DecodePositions (our reader of CPython 3.11's location table) against co_positions(),
// CPython's own decoder, on every code object of the golden programs and QuixBugs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "python_compat.h"
#include "trace_test_util.h"

namespace egca::tracer::hook {
namespace {

namespace fs = std::filesystem;

// Expands per-range positions to one entry per code unit, like co_positions().
std::vector<std::vector<int>> Ours(PyCodeObject* code) {
  std::vector<PositionRange> ranges;
  DecodePositions(code, &ranges);
  std::vector<std::vector<int>> out;
  for (const PositionRange& r : ranges) {
    for (int u = r.begin; u < r.end; ++u) {
      out.push_back({r.line, r.end_line, r.column, r.end_column});
    }
  }
  return out;
}

std::vector<std::vector<int>> Reference(PyCodeObject* code) {
  std::vector<std::vector<int>> out;
  PyObject* it = PyObject_CallMethod(reinterpret_cast<PyObject*>(code), "co_positions", nullptr);
  PyObject* item;
  while ((item = PyIter_Next(it)) != nullptr) {
    std::vector<int> row;
    for (int i = 0; i < 4; ++i) {
      PyObject* o = PyTuple_GET_ITEM(item, i);
      row.push_back(o == Py_None ? -1 : static_cast<int>(PyLong_AsLong(o)));
    }
    out.push_back(row);
    Py_DECREF(item);
  }
  Py_DECREF(it);
  return out;
}

int CompareAll(PyCodeObject* code, const std::string& where) {
  int checked = 1;
  EXPECT_EQ(Ours(code), Reference(code)) << where;
  PyObject* consts = code->co_consts;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(consts); ++i) {
    PyObject* c = PyTuple_GET_ITEM(consts, i);
    if (PyCode_Check(c)) checked += CompareAll(reinterpret_cast<PyCodeObject*>(c), where);
  }
  return checked;
}

int CheckSource(const std::string& source, const std::string& where) {
  PyObject* code = Py_CompileString(source.c_str(), "<candidate>", Py_file_input);
  if (code == nullptr) {
    PyErr_Clear();
    return 0;
  }
  int n = CompareAll(reinterpret_cast<PyCodeObject*>(code), where);
  Py_DECREF(code);
  return n;
}

TEST(DecodePositions, MatchesCoPositionsOnGoldenPrograms) {
  testing::EnsurePython();
  int checked = 0;
  for (const auto& e : fs::directory_iterator(fs::path(EGCA_SOURCE_DIR) / "tests/tracer/golden")) {
    if (e.path().extension() != ".py") continue;
    std::ifstream in(e.path());
    std::stringstream s;
    s << in.rdbuf();
    checked += CheckSource(s.str(), e.path().string());
  }
  EXPECT_GT(checked, 30);
}

TEST(DecodePositions, MatchesCoPositionsOnQuixBugs) {
  testing::EnsurePython();
  std::ifstream in(std::string(EGCA_DATA_DIR) + "/quixbugs/quixbugs_python.jsonl");
  if (!in) GTEST_SKIP() << "QuixBugs data not found";
  PyObject* json = PyImport_ImportModule("json");
  std::string line;
  int checked = 0;
  while (std::getline(in, line)) {
    PyObject* rec = PyObject_CallMethod(json, "loads", "s", line.c_str());
    ASSERT_NE(rec, nullptr);
    for (const char* field : {"buggy_program", "solution", "tests"}) {
      PyObject* src = PyDict_GetItemString(rec, field);
      if (src != nullptr && PyUnicode_Check(src)) {
        checked += CheckSource(PyUnicode_AsUTF8(src), field);
      }
    }
    Py_DECREF(rec);
  }
  Py_DECREF(json);
  EXPECT_GT(checked, 100);
}

}  // namespace
}  // namespace egca::tracer::hook
