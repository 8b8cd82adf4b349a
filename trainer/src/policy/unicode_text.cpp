#include "unicode_text.h"

#include <unicode/bytestream.h>
#include <unicode/edits.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>

#include <algorithm>

#include "egca/core/files.h"

namespace egca::trainer {

NormalizedText::NormalizedText(std::string_view text) : text_(text) {}

uint32_t NormalizedText::ToOriginal(uint32_t pos) const {
  for (auto layer = layers_.rbegin(); layer != layers_.rend(); ++layer) {
    // Last change starting at or before pos.
    auto it = std::upper_bound(layer->begin(), layer->end(), pos,
                               [](uint32_t p, const Change& c) { return p < c.norm_begin; });
    if (it == layer->begin()) continue;  // before the first change: positions unchanged
    const Change& c = *std::prev(it);
    if (pos == c.norm_begin) {
      pos = c.orig_begin;
    } else if (pos < c.norm_end) {
      pos = c.orig_end;
    } else {
      pos = c.orig_end + (pos - c.norm_end);
    }
  }
  return pos;
}

namespace {

const icu::Normalizer2* Instance(NormalizationForm form, UErrorCode* ec) {
  switch (form) {
    case NormalizationForm::kNFC: return icu::Normalizer2::getNFCInstance(*ec);
    case NormalizationForm::kNFD: return icu::Normalizer2::getNFDInstance(*ec);
    case NormalizationForm::kNFKC: return icu::Normalizer2::getNFKCInstance(*ec);
    case NormalizationForm::kNFKD: return icu::Normalizer2::getNFKDInstance(*ec);
  }
  return nullptr;
}

}  // namespace

Status NormalizedText::Apply(NormalizationForm form) {
  if (FindInvalidUtf8(text_) >= 0) return Status::Ok();  // tokenized byte-wise, unnormalized
  UErrorCode ec = U_ZERO_ERROR;
  const icu::Normalizer2* norm = Instance(form, &ec);
  if (U_FAILURE(ec) || norm == nullptr) {
    return Internal(std::string("ICU normalizer unavailable: ") + u_errorName(ec));
  }
  icu::StringPiece source(text_.data(), static_cast<int32_t>(text_.size()));
  if (norm->isNormalizedUTF8(source, ec) && U_SUCCESS(ec)) return Status::Ok();
  ec = U_ZERO_ERROR;
  std::string out;
  out.reserve(text_.size() + 16);
  icu::StringByteSink<std::string> sink(&out);
  icu::Edits edits;
  norm->normalizeUTF8(0, source, sink, &edits, ec);
  if (U_FAILURE(ec)) return Internal(std::string("ICU normalization failed: ") + u_errorName(ec));
  std::vector<Change> layer;
  icu::Edits::Iterator it = edits.getFineIterator();
  while (it.next(ec)) {
    if (!it.hasChange()) continue;
    layer.push_back(Change{static_cast<uint32_t>(it.destinationIndex()),
                           static_cast<uint32_t>(it.destinationIndex() + it.newLength()),
                           static_cast<uint32_t>(it.sourceIndex()),
                           static_cast<uint32_t>(it.sourceIndex() + it.oldLength())});
  }
  if (U_FAILURE(ec)) return Internal(std::string("ICU edits failed: ") + u_errorName(ec));
  text_ = std::move(out);
  if (!layer.empty()) layers_.push_back(std::move(layer));
  return Status::Ok();
}

int DecodeUtf8(std::string_view s, size_t i, char32_t* cp) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  const size_t n = s.size();
  auto cont = [&](size_t k) { return k < n && (b(k) & 0xC0) == 0x80; };
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  if (c >= 0xC2 && c <= 0xDF && cont(i + 1)) {
    *cp = (char32_t(c & 0x1F) << 6) | (b(i + 1) & 0x3F);
    return 2;
  }
  if (c >= 0xE0 && c <= 0xEF && cont(i + 1) && cont(i + 2)) {
    const unsigned char c1 = b(i + 1);
    if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F)) {
      *cp = 0xFFFD;
      return 1;
    }
    *cp = (char32_t(c & 0x0F) << 12) | (char32_t(c1 & 0x3F) << 6) | (b(i + 2) & 0x3F);
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4 && cont(i + 1) && cont(i + 2) && cont(i + 3)) {
    const unsigned char c1 = b(i + 1);
    if ((c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 > 0x8F)) {
      *cp = 0xFFFD;
      return 1;
    }
    *cp = (char32_t(c & 0x07) << 18) | (char32_t(c1 & 0x3F) << 12) |
          (char32_t(b(i + 2) & 0x3F) << 6) | (b(i + 3) & 0x3F);
    return 4;
  }
  *cp = 0xFFFD;
  return 1;
}

int PreviousUtf8Length(std::string_view s, size_t end) {
  // Step back over at most 3 continuation bytes and check the lead decodes to exactly end.
  for (int len = 2; len <= 4 && static_cast<size_t>(len) <= end; ++len) {
    const size_t start = end - len;
    if ((static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) continue;
    char32_t cp;
    return DecodeUtf8(s, start, &cp) == len ? len : 1;
  }
  return 1;
}

bool IsWhiteSpace(char32_t cp) { return u_isUWhiteSpace(static_cast<UChar32>(cp)); }

bool IsWordChar(char32_t cp) {
  if (cp == '_') return true;
  const auto c = static_cast<UChar32>(cp);
  if (u_hasBinaryProperty(c, UCHAR_ALPHABETIC)) return true;
  const int8_t type = u_charType(c);
  return type == U_DECIMAL_DIGIT_NUMBER || type == U_LETTER_NUMBER || type == U_OTHER_NUMBER;
}

void AppendUtf8Lossy(std::string_view bytes, std::string* out) {
  size_t i = 0;
  const size_t n = bytes.size();
  while (i < n) {
    char32_t cp;
    const int len = DecodeUtf8(bytes, i, &cp);
    if (!(len == 1 && cp == 0xFFFD)) {  // DecodeUtf8 signals an invalid byte this way
      out->append(bytes.substr(i, len));
      i += len;
      continue;
    }
    // Invalid: skip the maximal subpart (a lead byte followed by the continuation bytes it
    // would accept), emit one replacement character.
    const unsigned char c = static_cast<unsigned char>(bytes[i]);
    size_t j = i + 1;
    int need = c >= 0xF0 && c <= 0xF4 ? 3 : c >= 0xE0 && c <= 0xEF ? 2 : c >= 0xC2 && c <= 0xDF ? 1 : 0;
    for (int k = 0; k < need && j < n; ++k, ++j) {
      const unsigned char d = static_cast<unsigned char>(bytes[j]);
      unsigned char lo = 0x80, hi = 0xBF;
      if (k == 0) {
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
      }
      if (d < lo || d > hi) break;
    }
    out->append("\xEF\xBF\xBD");
    i = j;
  }
}

}  // namespace egca::trainer
