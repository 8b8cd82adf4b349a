#include "egca/trainer/policy/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "egca/core/files.h"
#include "model_test_util.h"

namespace egca::trainer {
namespace {

using testing::ScratchDir;

std::string Slurp(const std::string& path) { return ReadFile(path).value(); }

void Spit(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// A raw file image: 8-byte length, header text, data bytes.
std::string Image(const std::string& header, const std::string& data) {
  uint64_t n = header.size();
  std::string out(reinterpret_cast<const char*>(&n), 8);
  return out + header + data;
}

TEST(Safetensors, RoundTripsDtypesShapesAndMetadata) {
  ScratchDir dir("st_roundtrip");
  std::vector<float> f32 = {1.5f, -2.25f, 3.0f, 0.0f, 7.0f, -1e-3f};
  std::vector<uint16_t> half = {0x3C00, 0xC000, 0x7BFF};  // 1, -2, 65504 in f16
  std::vector<int64_t> i64 = {-5, 1ll << 40};
  std::vector<uint8_t> u8 = {1, 2, 3};  // odd length: the next tensor must still line up
  ASSERT_TRUE(WriteSafetensors(dir.file("a.safetensors"),
                               {{"w.f32", SafetensorsDtype::kF32, {2, 3}, f32.data()},
                                {"b.half", SafetensorsDtype::kF16, {3}, half.data()},
                                {"c.i64", SafetensorsDtype::kI64, {2}, i64.data()},
                                {"a.u8", SafetensorsDtype::kU8, {3}, u8.data()},
                                {"empty", SafetensorsDtype::kF32, {0, 4}, nullptr}},
                               {{"format", "pt"}})
                  .ok());
  auto file = SafetensorsFile::Open(dir.file("a.safetensors"));
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  const auto& f = **file;
  EXPECT_EQ(f.metadata().at("format"), "pt");
  ASSERT_EQ(f.tensors().size(), 5u);
  EXPECT_EQ(f.tensors()[0].name, "a.u8");  // sorted by name

  const SafetensorsTensor* w = f.Find("w.f32");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->dtype, SafetensorsDtype::kF32);
  EXPECT_EQ(w->shape, (std::vector<int64_t>{2, 3}));
  ASSERT_EQ(w->num_bytes, 24u);
  std::vector<float> back(6);
  std::memcpy(back.data(), w->data, 24);
  EXPECT_EQ(back, f32);

  const SafetensorsTensor* h = f.Find("b.half");
  ASSERT_NE(h, nullptr);
  std::vector<uint16_t> half_back(3);
  std::memcpy(half_back.data(), h->data, 6);
  EXPECT_EQ(half_back, half);

  const SafetensorsTensor* c = f.Find("c.i64");
  std::vector<int64_t> i64_back(2);
  std::memcpy(i64_back.data(), c->data, 16);
  EXPECT_EQ(i64_back, i64);
  EXPECT_EQ(f.Find("empty")->numel(), 0);
  EXPECT_EQ(f.Find("missing"), nullptr);

  // Header length is a multiple of 8, so the data section starts 8-byte aligned.
  std::string bytes = Slurp(dir.file("a.safetensors"));
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);
  EXPECT_EQ(header_len % 8, 0u);
  EXPECT_EQ(bytes.size(), 8 + header_len + 24 + 6 + 16 + 3);
}

TEST(Safetensors, ReadsAHandWrittenFile) {
  // Independent of the writer: bytes laid out by hand per the published format.
  ScratchDir dir("st_hand");
  float values[2] = {0.5f, -4.0f};
  std::string data(reinterpret_cast<const char*>(values), 8);
  Spit(dir.file("h.safetensors"),
       Image(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", data));
  auto file = SafetensorsFile::Open(dir.file("h.safetensors"));
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  const SafetensorsTensor* x = (*file)->Find("x");
  ASSERT_NE(x, nullptr);
  float back[2];
  std::memcpy(back, x->data, 8);
  EXPECT_EQ(back[0], 0.5f);
  EXPECT_EQ(back[1], -4.0f);
}

struct BadFile {
  const char* label;
  std::string bytes;
  StatusCode code;
  const char* message_part;
};

TEST(Safetensors, CorruptFilesGiveClearErrors) {
  ScratchDir dir("st_bad");
  const std::string eight(8, '\0');
  std::vector<BadFile> cases = {
      {"too short", std::string("abc"), StatusCode::kDataLoss, "truncated"},
      {"header past end",
       Image(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", "").substr(0, 30),
       StatusCode::kDataLoss, "truncated"},
      {"absurd header length", std::string("\xff\xff\xff\xff\xff\xff\x00\x00", 8) + "{}",
       StatusCode::kDataLoss, "not plausible"},
      {"malformed json", Image("{\"x\": [1, 2", ""), StatusCode::kInvalidArgument,
       "not a valid JSON"},
      {"data truncated", Image(R"({"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", eight),
       StatusCode::kDataLoss, "tensor \"x\": data_offsets [0, 16) run past the end"},
      {"size mismatch", Image(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", eight),
       StatusCode::kInvalidArgument, "shape x dtype needs 12"},
      {"unsupported dtype",
       Image(R"({"x":{"dtype":"F8_E4M3","shape":[8],"data_offsets":[0,8]}})", eight),
       StatusCode::kUnimplemented, "dtype \"F8_E4M3\" is not supported"},
      {"overlap",
       Image(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
             R"("y":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
             eight),
       StatusCode::kInvalidArgument, "overlap"},
      {"missing offsets", Image(R"({"x":{"dtype":"F32","shape":[2]}})", eight),
       StatusCode::kInvalidArgument, "data_offsets"},
      {"bad metadata", Image(R"({"__metadata__":{"format":3}})", ""), StatusCode::kInvalidArgument,
       "__metadata__"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.label);
    const std::string path = dir.file("bad.safetensors");
    Spit(path, c.bytes);
    auto file = SafetensorsFile::Open(path);
    ASSERT_FALSE(file.ok());
    EXPECT_EQ(file.status().code(), c.code) << file.status().ToString();
    EXPECT_NE(file.status().message().find(path), std::string::npos)
        << "error must name the file: " << file.status().message();
    EXPECT_NE(file.status().message().find(c.message_part), std::string::npos)
        << file.status().message();
  }
}

TEST(Safetensors, MissingFileIsNotFound) {
  auto file = SafetensorsFile::Open("/nonexistent/dir/x.safetensors");
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kNotFound);
}

TEST(Safetensors, WriterRejectsDuplicateNames) {
  ScratchDir dir("st_dup");
  float v = 1;
  Status s = WriteSafetensors(
      dir.file("d.safetensors"),
      {{"x", SafetensorsDtype::kF32, {1}, &v}, {"x", SafetensorsDtype::kF32, {1}, &v}}, {});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace egca::trainer
