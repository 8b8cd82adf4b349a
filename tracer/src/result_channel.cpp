#include "result_channel.h"

#include <cstring>

namespace egca::tracer {
namespace {

constexpr char kMagic[4] = {'E', 'G', 'R', '1'};
constexpr size_t kHeader = 8;

}  // namespace

void AppendResultFrame(std::string_view payload, std::string* out) {
  const auto size = static_cast<uint32_t>(payload.size());
  out->append(kMagic, sizeof(kMagic));
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((size >> (8 * i)) & 0xff));
  out->append(payload);
}

bool ParseResultChannel(std::string_view channel, uint64_t key, proto::ExecResult* out) {
  bool found = false;
  size_t at = 0;
  while (at + kHeader <= channel.size()) {
    const size_t magic = channel.find(std::string_view(kMagic, sizeof(kMagic)), at);
    if (magic == std::string_view::npos || magic + kHeader > channel.size()) break;
    uint32_t size = 0;
    for (int i = 0; i < 4; ++i) {
      size |= static_cast<uint32_t>(static_cast<unsigned char>(channel[magic + 4 + i])) << (8 * i);
    }
    proto::ExecResult record;
    if (size <= channel.size() - magic - kHeader &&
        record.ParseFromArray(channel.data() + magic + kHeader, static_cast<int>(size)) &&
        record.record_key() == key) {
      out->MergeFrom(record);
      found = true;
      at = magic + kHeader + size;
    } else {
      at = magic + 1;  // not a frame of ours: look further
    }
  }
  return found;
}

}  // namespace egca::tracer
