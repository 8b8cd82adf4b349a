#include "egca/core/status.h"

#include <gtest/gtest.h>

namespace egca {
namespace {

StatusOr<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgument("odd");
  return x / 2;
}

Status Quarter(int x, int* out) {
  EGCA_ASSIGN_OR_RETURN(int h, Half(x));
  EGCA_ASSIGN_OR_RETURN(*out, Half(h));
  return Status::Ok();
}

TEST(Status, CreateAndClassify) {
  EXPECT_TRUE(Status::Ok().ok());
  Status s = NotFound("a.py: no such file");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ToString(), "NOT_FOUND: a.py: no such file");
  EXPECT_EQ(s.WithContext("loading").message(), "loading: a.py: no such file");
}

TEST(Status, AssignOrReturnPropagates) {
  int out = 0;
  EXPECT_TRUE(Quarter(8, &out).ok());
  EXPECT_EQ(out, 2);
  Status s = Quarter(6, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
}

TEST(StatusOr, OkStatusIsAnError) {
  StatusOr<int> v = Status::Ok();
  EXPECT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace egca
