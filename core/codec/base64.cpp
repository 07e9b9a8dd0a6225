#include "core/codec/base64.h"

#include <array>
#include <cstdint>

namespace vgpu::codec {
namespace {

constexpr int kBad = -1;
constexpr std::string_view kAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<int, 256> MakeTable() {
  std::array<int, 256> t{};
  t.fill(kBad);
  for (size_t i = 0; i < kAlphabet.size(); ++i) {
    t[static_cast<unsigned char>(kAlphabet[i])] = static_cast<int>(i);
  }
  return t;
}

constexpr std::array<int, 256> kTable = MakeTable();

}  // namespace

std::string Base64Encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = bytes.size() - i < 3 ? bytes.size() - i : 3;
    uint32_t group = 0;
    for (size_t k = 0; k < 3; ++k) {
      group = (group << 8) | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0U);
    }
    // n bytes give n + 1 characters; '=' fills the group up to 4.
    for (size_t k = 0; k < 4; ++k) {
      out.push_back(k <= n ? kAlphabet[(group >> (18 - 6 * k)) & 63] : '=');
    }
  }
  return out;
}

Result<std::string> Base64Decode(std::string_view text) {
  std::string unfolded;
  if (text.find_first_of("\r\n") != std::string_view::npos) {
    for (const char c : text) {
      if (c != '\r' && c != '\n') unfolded.push_back(c);
    }
    text = unfolded;
  }
  if (text.size() % 4 != 0) {
    return InvalidArgument("base64 text of " + std::to_string(text.size()) +
                           " characters is not a multiple of 4 long");
  }
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    // '=' may end only the last group, as its last one or two characters.
    size_t pad = 0;
    if (last && text[i + 3] == '=') {
      pad = text[i + 2] == '=' ? 2 : 1;
    }
    uint32_t group = 0;
    for (size_t k = 0; k < 4; ++k) {
      const bool padding = k >= 4 - pad;
      const int v = padding ? 0 : kTable[static_cast<unsigned char>(text[i + k])];
      if (v == kBad) {
        return InvalidArgument("character " + std::to_string(i + k) + " ('" +
                               std::string(1, text[i + k]) + "') is not base64");
      }
      group = (group << 6) | static_cast<uint32_t>(v);
    }
    out.push_back(static_cast<char>((group >> 16) & 0xff));
    if (pad < 2) {
      out.push_back(static_cast<char>((group >> 8) & 0xff));
    }
    if (pad < 1) {
      out.push_back(static_cast<char>(group & 0xff));
    }
  }
  return out;
}

}  // namespace vgpu::codec
