// One warm tracer::Executor (one fork server) shared by every test of a suite: derive the
// suite's fixture from SharedExecutorTest and use `executor_`.
#pragma once

#include <gtest/gtest.h>

#include <utility>

#include "egca/tracer/executor.h"

namespace egca::testing {

class SharedExecutorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto created = tracer::Executor::Create({});
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    executor_ = std::move(created).value().release();
  }
  static void TearDownTestSuite() {
    delete executor_;
    executor_ = nullptr;
  }
  static inline tracer::Executor* executor_ = nullptr;
};

}  // namespace egca::testing
