// A trace comes from the candidate's process: ValidateTrace must reject every index or
// size that would make a reader (the router, diff) read out of bounds.
#include "egca/tracer/trace_validate.h"

#include <gtest/gtest.h>

#include "egca/tracer/trace.pb.h"

namespace egca::tracer {
namespace {

const char kSource[] = "def f(x):\n    return x + 1\n";

proto::Trace ValidTrace() {
  proto::Trace t;
  t.add_code()->set_qualname("f");
  t.mutable_code(0)->set_first_line(1);
  proto::Event* e = t.add_events();
  e->set_code(0);
  e->set_line(2);
  e->set_depth(1);
  e->mutable_span()->set_start_line(2);
  e->mutable_span()->set_end_line(2);
  e->mutable_span()->set_begin_byte(14);
  e->mutable_span()->set_end_byte(26);
  return t;
}

TEST(TraceValidate, AcceptsATraceOfTheSource) {
  EXPECT_TRUE(ValidateTrace(ValidTrace(), kSource).ok());
}

TEST(TraceValidate, RejectsForgedIndicesAndSizes) {
  auto bad = [](auto&& mutate) {
    proto::Trace t = ValidTrace();
    mutate(&t);
    return !ValidateTrace(t, kSource).ok();
  };
  EXPECT_TRUE(bad([](proto::Trace* t) { t->mutable_events(0)->set_code(1); }));
  EXPECT_TRUE(bad([](proto::Trace* t) { t->mutable_events(0)->set_code(0xffffffffu); }));
  EXPECT_TRUE(bad([](proto::Trace* t) { t->mutable_events(0)->set_depth(0xffffffffu); }));
  EXPECT_TRUE(bad([](proto::Trace* t) { t->mutable_events(0)->set_line(1000); }));
  EXPECT_TRUE(bad([](proto::Trace* t) { t->mutable_events(0)->set_prev_line(1000); }));
  EXPECT_TRUE(bad([](proto::Trace* t) { t->mutable_events(0)->mutable_span()->set_end_byte(9999); }));
  EXPECT_TRUE(bad([](proto::Trace* t) { t->mutable_events(0)->mutable_span()->set_begin_byte(20); t->mutable_events(0)->mutable_span()->set_end_byte(10); }));
  EXPECT_TRUE(bad([](proto::Trace* t) { t->mutable_code(0)->set_first_line(77); }));
  EXPECT_TRUE(bad([](proto::Trace* t) { t->clear_code(); }));
}

}  // namespace
}  // namespace egca::tracer
