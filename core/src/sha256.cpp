#include "egca/core/sha256.h"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define EGCA_SHA_NI 1
#endif

namespace egca {
namespace {

constexpr uint32_t kRound[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2};

uint32_t Rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

void Compress(uint32_t state[8], const unsigned char block[64]) {
  uint32_t w[64];
  for (int i = 0; i < 16; ++i) {
    w[i] = (uint32_t{block[4 * i]} << 24) | (uint32_t{block[4 * i + 1]} << 16) |
           (uint32_t{block[4 * i + 2]} << 8) | uint32_t{block[4 * i + 3]};
  }
  for (int i = 16; i < 64; ++i) {
    uint32_t s0 = Rotr(w[i - 15], 7) ^ Rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = Rotr(w[i - 2], 17) ^ Rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
  uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
  for (int i = 0; i < 64; ++i) {
    uint32_t s1 = Rotr(e, 6) ^ Rotr(e, 11) ^ Rotr(e, 25);
    uint32_t ch = (e & f) ^ (~e & g);
    uint32_t t1 = h + s1 + ch + kRound[i] + w[i];
    uint32_t s0 = Rotr(a, 2) ^ Rotr(a, 13) ^ Rotr(a, 22);
    uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
    uint32_t t2 = s0 + maj;
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  state[0] += a; state[1] += b; state[2] += c; state[3] += d;
  state[4] += e; state[5] += f; state[6] += g; state[7] += h;
}

void CompressBlocks(uint32_t state[8], const unsigned char* data, size_t blocks) {
  for (size_t i = 0; i < blocks; ++i) Compress(state, data + 64 * i);
}

#ifdef EGCA_SHA_NI
// The same compression with the x86 SHA extensions (about 10x faster: the digest is taken
// on every traced run, and a 1 KiB source cost ~6 us with the portable rounds). The state
// lives in two registers as ABEF / CDGH; each sha256rnds2 does two rounds; the message
// schedule for words 16..63 is sha256msg1 (W[t-16] + s0(W[t-15])), plus W[t-7], then
// sha256msg2 (+ s1(W[t-2])).
__attribute__((target("sha,sse4.1,ssse3"))) void CompressBlocksShaNi(uint32_t state[8],
                                                                    const unsigned char* data,
                                                                    size_t blocks) {
  const __m128i kByteSwap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
  __m128i tmp = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&state[0]));     // ABCD
  __m128i state1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&state[4]));  // EFGH
  tmp = _mm_shuffle_epi32(tmp, 0xB1);                                              // CDAB
  state1 = _mm_shuffle_epi32(state1, 0x1B);                                        // HGFE
  __m128i state0 = _mm_alignr_epi8(tmp, state1, 8);                                // ABEF
  state1 = _mm_blend_epi16(state1, tmp, 0xF0);                                     // CDGH
  for (size_t b = 0; b < blocks; ++b, data += 64) {
    const __m128i abef = state0, cdgh = state1;
    __m128i w[16];
    for (int g = 0; g < 16; ++g) {
      if (g < 4) {
        w[g] = _mm_shuffle_epi8(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + 16 * g)), kByteSwap);
      } else {
        __m128i t = _mm_sha256msg1_epu32(w[g - 4], w[g - 3]);
        t = _mm_add_epi32(t, _mm_alignr_epi8(w[g - 1], w[g - 2], 4));
        w[g] = _mm_sha256msg2_epu32(t, w[g - 1]);
      }
      __m128i m = _mm_add_epi32(
          w[g], _mm_loadu_si128(reinterpret_cast<const __m128i*>(&kRound[4 * g])));
      state1 = _mm_sha256rnds2_epu32(state1, state0, m);
      m = _mm_shuffle_epi32(m, 0x0E);
      state0 = _mm_sha256rnds2_epu32(state0, state1, m);
    }
    state0 = _mm_add_epi32(state0, abef);
    state1 = _mm_add_epi32(state1, cdgh);
  }
  tmp = _mm_shuffle_epi32(state0, 0x1B);        // FEBA
  state1 = _mm_shuffle_epi32(state1, 0xB1);     // DCHG
  state0 = _mm_blend_epi16(tmp, state1, 0xF0);  // DCBA
  state1 = _mm_alignr_epi8(state1, tmp, 8);     // HGFE
  _mm_storeu_si128(reinterpret_cast<__m128i*>(&state[0]), state0);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(&state[4]), state1);
}

bool HaveShaNi() {
  static const bool have = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
    bool sse = (c & bit_SSE4_1) && (c & bit_SSSE3);
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    return sse && (b & (1u << 29)) != 0;  // CPUID.(EAX=7,ECX=0):EBX.SHA[bit 29]
  }();
  return have;
}
#endif

std::string Digest(std::string_view data, bool allow_sha_ni) {
  auto compress = &CompressBlocks;
#ifdef EGCA_SHA_NI
  if (allow_sha_ni && HaveShaNi()) compress = &CompressBlocksShaNi;
#else
  (void)allow_sha_ni;
#endif
  uint32_t state[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                       0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  size_t full = data.size() / 64;
  compress(state, reinterpret_cast<const unsigned char*>(data.data()), full);
  unsigned char tail[128] = {};
  size_t rest = data.size() - 64 * full;
  std::memcpy(tail, data.data() + 64 * full, rest);
  tail[rest] = 0x80;
  size_t tail_len = rest + 1 + 8 <= 64 ? 64 : 128;
  uint64_t bits = static_cast<uint64_t>(data.size()) * 8;
  for (int i = 0; i < 8; ++i) tail[tail_len - 1 - i] = static_cast<unsigned char>(bits >> (8 * i));
  compress(state, tail, tail_len / 64);
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(64);
  for (uint32_t word : state) {
    for (int shift = 28; shift >= 0; shift -= 4) out.push_back(kHex[(word >> shift) & 15]);
  }
  return out;
}

}  // namespace

std::string Sha256Hex(std::string_view data) { return Digest(data, true); }

std::string Sha256HexPortable(std::string_view data) { return Digest(data, false); }

bool Sha256UsesCpuExtensions() {
#ifdef EGCA_SHA_NI
  return HaveShaNi();
#else
  return false;
#endif
}

}  // namespace egca
