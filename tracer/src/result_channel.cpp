#include "result_channel.h"

#include <cstring>

namespace egca::tracer {
namespace {

constexpr char kMagic[4] = {'E', 'G', 'R', '1'};
constexpr size_t kHeader = 8;

// The frame at *at: its payload, and *at moved past it. False if there is no whole frame.
bool NextFrame(std::string_view channel, size_t* at, std::string_view* payload) {
  if (channel.size() - *at < kHeader) return false;
  if (std::memcmp(channel.data() + *at, kMagic, sizeof(kMagic)) != 0) return false;
  uint32_t size = 0;
  for (int i = 0; i < 4; ++i) {
    size |= static_cast<uint32_t>(static_cast<unsigned char>(channel[*at + 4 + i])) << (8 * i);
  }
  if (size > channel.size() - *at - kHeader || size > static_cast<uint32_t>(INT32_MAX)) {
    return false;
  }
  *payload = channel.substr(*at + kHeader, size);
  *at += kHeader + size;
  return true;
}

}  // namespace

void AppendResultFrame(std::string_view payload, std::string* out) {
  const auto size = static_cast<uint32_t>(payload.size());
  out->append(kMagic, sizeof(kMagic));
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((size >> (8 * i)) & 0xff));
  out->append(payload);
}

ResultChannel ParseResultChannel(std::string_view channel) {
  ResultChannel out;
  size_t at = 0;
  std::string_view payload;
  if (!NextFrame(channel, &at, &payload) ||
      !out.prepared.ParseFromArray(payload.data(), static_cast<int>(payload.size())) ||
      (out.prepared.outcome() != proto::EXEC_PREPARED &&
       out.prepared.outcome() != proto::EXEC_TEST_ERROR)) {
    out.prepared.Clear();
    return out;
  }
  out.has_prepared = true;
  if (out.prepared.outcome() != proto::EXEC_PREPARED) return out;
  if (NextFrame(channel, &at, &payload) &&
      out.completion.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    // A completion record cannot claim what only the preparation record may say.
    if (out.completion.outcome() == proto::EXEC_TEST_ERROR ||
        out.completion.outcome() == proto::EXEC_PREPARED) {
      out.completion.set_outcome(proto::EXEC_OUTCOME_UNSPECIFIED);
    }
    out.has_completion = true;
    if (out.completion.retrace_follows() && NextFrame(channel, &at, &payload) &&
        out.retrace.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
      out.has_retrace = true;
    }
  } else {
    out.completion.Clear();
  }
  return out;
}

}  // namespace egca::tracer
