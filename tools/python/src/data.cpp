// Data sets: load_problems (every loader egca-batch has), samples (the egca sample JSONL and
// the converters of published sample files), and the Problem / ProblemSet / Sample objects.
#include <fmt/format.h>

#include "data.h"
#include "egca/tracer/test_case.h"

namespace egca::python {

size_t ProblemSetData::Find(const std::string& id) const {
  auto it = index.find(id);
  if (it != index.end()) return it->second;
  std::vector<std::string> ids;
  ids.reserve(problems.size());
  for (const auto& p : problems) ids.push_back(p.id);
  std::string nearest = datasets::NearestProblemId(id, ids);
  Raise(PyExc_KeyError,
        fmt::format("unknown problem id \"{}\" in {}{}", id, path,
                    nearest.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", nearest)));
}

namespace {

py::dict TestDict(const tracer::TestCase& t) {
  py::dict d;
  d["kind"] = tracer::TestKindName(t.kind);
  d["name"] = t.name;
  switch (t.kind) {
    case tracer::TestKind::kCall:
      d["function"] = t.function;
      d["args"] = t.args_json;
      d["expected"] = t.has_expected ? py::object(py::str(t.expected_json)) : py::none();
      break;
    case tracer::TestKind::kStdio:
      d["stdin"] = t.stdin_data;
      d["expected_stdout"] = t.has_expected ? py::object(py::str(t.expected_stdout)) : py::none();
      break;
    case tracer::TestKind::kAssert:
      d["setup_code"] = t.setup_code;
      d["test_code"] = t.test_code;
      d["entry_point"] = t.entry_point;
      break;
  }
  return d;
}

std::string BadString(const datasets::BadRecord& b) { return b.ToString(); }

ProblemSet LoadProblemSet(const std::string& path, const std::string& format,
                          const std::string& id_prefix, int64_t limit, bool mbpp_challenge_tests,
                          const std::string& mapcoder_call_tests) {
  datasets::DatasetOptions options;
  options.format = Unwrap(datasets::ParseDatasetFormat(format), "format");
  options.id_prefix = id_prefix;
  options.limit = limit;
  options.mbpp_challenge_tests = mbpp_challenge_tests;
  if (mapcoder_call_tests == "call") {
    options.mapcoder_call_tests = datasets::MapCoderCallTests::kCall;
  } else if (mapcoder_call_tests != "stdio") {
    Raise(PyExc_ValueError, "mapcoder_call_tests: expected \"stdio\" or \"call\", got \"" +
                                mapcoder_call_tests + "\"");
  }
  auto data = std::make_shared<ProblemSetData>();
  data->path = path;
  datasets::LoadReport report;
  StatusOr<std::vector<datasets::ProblemRecord>> loaded = [&] {
    py::gil_scoped_release release;
    return datasets::LoadProblems(path, options, &report);
  }();
  data->problems = Unwrap(std::move(loaded));
  data->bad = report.bad;
  for (size_t i = 0; i < data->problems.size(); ++i) data->index.emplace(data->problems[i].id, i);
  return ProblemSet{std::move(data)};
}

}  // namespace

void BindData(py::module_& m) {
  py::class_<Problem>(m, "Problem", "One problem of a loaded data set (read-only).")
      .def_property_readonly("id", [](const Problem& p) { return p.record().id; })
      .def_property_readonly("dataset", [](const Problem& p) { return p.record().dataset; })
      .def_property_readonly("prompt", [](const Problem& p) { return p.record().prompt; })
      .def_property_readonly("entry_point", [](const Problem& p) { return p.record().entry_point; })
      .def_property_readonly("starter_code",
                             [](const Problem& p) { return p.record().starter_code; })
      .def_property_readonly("difficulty", [](const Problem& p) { return p.record().difficulty; })
      .def_property_readonly("language", [](const Problem& p) { return p.record().language; })
      .def_property_readonly("origin", [](const Problem& p) { return p.record().origin; })
      .def_property_readonly("references", [](const Problem& p) { return p.record().references; })
      .def_property_readonly("tests",
                             [](const Problem& p) {
                               py::list out;
                               for (const auto& t : p.record().tests) out.append(TestDict(t));
                               return out;
                             })
      .def("__repr__", [](const Problem& p) {
        return fmt::format("<egca.Problem {} ({} tests, {} references)>", p.record().id,
                           p.record().tests.size(), p.record().references.size());
      });

  py::class_<ProblemSet>(m, "ProblemSet", "The problems of one data-set file.")
      .def("__len__", [](const ProblemSet& s) { return s.data->problems.size(); })
      .def("__contains__",
           [](const ProblemSet& s, const py::object& id) {
             return py::isinstance<py::str>(id) &&
                    s.data->index.count(id.cast<std::string>()) > 0;
           })
      .def("__getitem__",
           [](const ProblemSet& s, const py::object& key) {
             if (py::isinstance<py::str>(key)) {
               return Problem{s.data, s.data->Find(key.cast<std::string>())};
             }
             if (py::isinstance<py::int_>(key) && !py::isinstance<py::bool_>(key)) {
               int64_t i = key.cast<int64_t>();
               int64_t n = static_cast<int64_t>(s.data->problems.size());
               if (i < 0) i += n;
               if (i < 0 || i >= n) Raise(PyExc_IndexError, "problem index out of range");
               return Problem{s.data, static_cast<size_t>(i)};
             }
             Raise(PyExc_TypeError, "problem key must be an id (str) or a position (int), not " +
                                        std::string(Py_TYPE(key.ptr())->tp_name));
           })
      .def("ids",
           [](const ProblemSet& s) {
             std::vector<std::string> ids;
             for (const auto& p : s.data->problems) ids.push_back(p.id);
             return ids;
           })
      .def_property_readonly("path", [](const ProblemSet& s) { return s.data->path; })
      .def_property_readonly("bad_records",
                             [](const ProblemSet& s) {
                               std::vector<std::string> out;
                               for (const auto& b : s.data->bad) out.push_back(BadString(b));
                               return out;
                             })
      .def("__repr__", [](const ProblemSet& s) {
        return fmt::format("<egca.ProblemSet {} ({} problems, {} bad records)>", s.data->path,
                           s.data->problems.size(), s.data->bad.size());
      });

  m.def("load_problems", &LoadProblemSet, py::arg("path"), py::arg("format") = "auto",
        py::arg("id_prefix") = "", py::arg("limit") = -1,
        py::arg("mbpp_challenge_tests") = false, py::arg("mapcoder_call_tests") = "stdio",
        "Loads a data set with egca-batch's loaders (format: one of dataset_formats()).");
  m.def("dataset_formats", &datasets::DatasetFormatNames);
  m.def("sample_sources", &datasets::SampleSourceNames);

  py::class_<datasets::Sample>(m, "Sample", "One completion for one problem.")
      .def(py::init([](const std::string& problem_id, const py::object& completion,
                       const py::object& completion_is_body, const std::string& model,
                       const std::string& sample_id) {
             datasets::Sample s;
             s.problem_id = problem_id;
             s.completion = Utf8Argument(completion, "completion");
             if (completion_is_body.is_none()) {
               s.detect_body = true;
             } else {
               s.completion_is_body = completion_is_body.cast<bool>();
             }
             s.model = model;
             s.sample_id = sample_id;
             return s;
           }),
           py::arg("problem_id"), py::arg("completion"), py::arg("completion_is_body") = py::none(),
           py::arg("model") = "", py::arg("sample_id") = "")
      .def_readonly("problem_id", &datasets::Sample::problem_id)
      .def_readonly("completion", &datasets::Sample::completion)
      .def_readonly("completion_is_body", &datasets::Sample::completion_is_body)
      .def_readonly("detect_body", &datasets::Sample::detect_body)
      .def_readonly("model", &datasets::Sample::model)
      .def_readonly("sample_id", &datasets::Sample::sample_id)
      .def_readonly("origin", &datasets::Sample::origin)
      .def("__repr__", [](const datasets::Sample& s) {
        return fmt::format("<egca.Sample {} {} bytes{}>", s.problem_id, s.completion.size(),
                           s.completion_is_body ? " (body)" : "");
      });

  m.def(
      "load_samples",
      [](const std::string& path) {
        datasets::LoadReport report;
        StatusOr<std::vector<datasets::Sample>> samples = [&] {
          py::gil_scoped_release release;
          return datasets::LoadSamples(path, &report);
        }();
        auto out = Unwrap(std::move(samples));
        std::vector<std::string> bad;
        for (const auto& b : report.bad) bad.push_back(b.ToString());
        return py::make_tuple(out, bad);
      },
      py::arg("path"), "Reads an egca sample JSONL file: (samples, bad records).");
  m.def(
      "convert_samples",
      [](const std::string& path, const std::string& source, const ProblemSet& problems,
         const std::string& model, const std::string& dataset, const std::string& run_filter,
         bool all_attempts, bool raw_responses) {
        datasets::SampleSource src = Unwrap(datasets::ParseSampleSource(source), "source");
        datasets::ConvertOptions options;
        options.model = model;
        options.dataset = dataset;
        options.run_filter = run_filter;
        options.all_attempts = all_attempts;
        options.raw_responses = raw_responses;
        datasets::LoadReport report;
        StatusOr<std::vector<datasets::Sample>> samples = [&] {
          py::gil_scoped_release release;
          return datasets::ConvertSamples(path, src, problems.data->problems, options, &report);
        }();
        auto out = Unwrap(std::move(samples));
        std::vector<std::string> bad;
        for (const auto& b : report.bad) bad.push_back(b.ToString());
        return py::make_tuple(out, bad);
      },
      py::arg("path"), py::arg("source"), py::arg("problems"), py::arg("model") = "",
      py::arg("dataset") = "", py::arg("run_filter") = "", py::arg("all_attempts") = false,
      py::arg("raw_responses") = false,
      "Converts a published sample file (source: one of sample_sources()): (samples, bad).");
}

}  // namespace egca::python
