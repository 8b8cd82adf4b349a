// A route as Python sees it: the record egca-batch stores for the sample (spans in program
// and completion bytes) plus the full gates::RouteResult (per-test verdicts, the divergence
// with states), the tests and the reference it was routed with.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "egca/batch/result.h"
#include "egca/gates/router.h"
#include "egca/tracer/test_case.h"

namespace egca::python {

struct Route {
  batch::SampleRecord record;  // what `egca-batch run` writes for this sample
  std::shared_ptr<const gates::RouteResult> result;
  std::shared_ptr<const std::vector<tracer::TestCase>> tests;  // the route's tests
  std::string reference;                                       // the program compared with
  std::string completion;
};

}  // namespace egca::python
