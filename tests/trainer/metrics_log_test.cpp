#include "egca/trainer/rl/metrics_log.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model_test_util.h"

namespace egca::trainer {
namespace {

// The CRC-32C check value of the standard test vector (RFC 3720 B.4 / the CRC catalogue).
TEST(Crc32c, CheckValue) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32c(""), 0u);
  const uint32_t crc = Crc32c("abc");
  EXPECT_EQ(MaskedCrc32c("abc"), ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
}

TEST(MetricsLog, JsonlAndTensorBoardReadBack) {
  testing::ScratchDir dir("metrics_log");
  {
    auto log = MetricsLog::Open(dir.path());
    ASSERT_TRUE(log.ok());
    ASSERT_TRUE((*log)->Log(1, "train", {{"reward", 0.25}, {"kl", 0.001}}).ok());
    ASSERT_TRUE((*log)->Log(2, "train", {{"reward", 0.5}, {"kl", 0.002}}).ok());
    ASSERT_TRUE((*log)->Log(2, "eval", {{"pass@1", 0.125}}).ok());
  }
  std::ifstream in(dir.file("metrics.jsonl"));
  std::vector<nlohmann::json> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(nlohmann::json::parse(l));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1]["step"], 2);
  EXPECT_EQ(lines[1]["kind"], "train");
  EXPECT_DOUBLE_EQ(lines[1]["reward"].get<double>(), 0.5);

  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir.file("tensorboard"))) files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u);
  EXPECT_NE(files[0].find("events.out.tfevents."), std::string::npos);
  auto scalars = ReadTensorBoardScalars(files[0]);
  ASSERT_TRUE(scalars.ok()) << scalars.status().ToString();
  ASSERT_EQ(scalars->size(), 5u);
  EXPECT_EQ((*scalars)[0].tag, "train/kl");
  EXPECT_EQ((*scalars)[3].tag, "train/reward");
  EXPECT_EQ((*scalars)[3].step, 2);
  EXPECT_FLOAT_EQ((*scalars)[3].value, 0.5f);
  EXPECT_EQ((*scalars)[4].tag, "eval/pass@1");

  // A flipped byte fails the CRC, naming the file.
  std::string bytes;
  {
    std::ifstream f(files[0], std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(f), {});
  }
  bytes[bytes.size() - 6] ^= 0x40;
  std::ofstream(files[0], std::ios::binary) << bytes;
  auto bad = ReadTensorBoardScalars(files[0]);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("CRC"), std::string::npos);
}

TEST(MetricsLog, ResumeDropsStepsAfterTheCheckpoint) {
  testing::ScratchDir dir("metrics_log_resume");
  {
    auto log = MetricsLog::Open(dir.path());
    for (int s = 1; s <= 3; ++s) ASSERT_TRUE((*log)->Log(s, "train", {{"reward", s * 0.1}}).ok());
  }
  {
    auto log = MetricsLog::Open(dir.path(), /*resume_after_step=*/2);
    ASSERT_TRUE(log.ok());
    ASSERT_TRUE((*log)->Log(3, "train", {{"reward", 0.9}}).ok());
  }
  std::ifstream in(dir.file("metrics.jsonl"));
  std::vector<double> rewards;
  for (std::string l; std::getline(in, l);) rewards.push_back(nlohmann::json::parse(l)["reward"].get<double>());
  EXPECT_EQ(rewards, (std::vector<double>{0.1, 0.2, 0.9}));
}

}  // namespace
}  // namespace egca::trainer
