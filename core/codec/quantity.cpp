#include "core/codec/quantity.h"

#include <string>

#include "core/codec/parse_util.h"

namespace vgpu::codec {

using codec_internal::Quote;

namespace {

using Int128 = __int128;

struct Parsed {
  Int128 mantissa = 0;  // digits without the decimal point
  int frac_digits = 0;  // digits after the decimal point
  Int128 mult = 1;      // binary or positive decimal multiplier
  int dec_exp = 0;      // additional power of ten (may be negative)
  bool has_suffix = false;
};

Result<Parsed> Parse(std::string_view text) {
  auto bad = [&](const std::string& why) {
    return InvalidArgument("quantity " + Quote(text) + ": " + why +
                           " (examples: 3000, 3Gi, 500M, 1.5k, 100m)");
  };
  Parsed p;
  size_t i = 0;
  if (i < text.size() && text[i] == '+') ++i;
  if (i < text.size() && text[i] == '-') return bad("negative values are not allowed");
  int digits = 0;
  bool dot = false;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (c >= '0' && c <= '9') {
      if (++digits > 30) return bad("too many digits");
      p.mantissa = p.mantissa * 10 + (c - '0');
      if (dot) ++p.frac_digits;
    } else if (c == '.' && !dot) {
      dot = true;
    } else {
      break;
    }
  }
  if (digits == 0) return bad("no number");
  std::string_view suffix = text.substr(i);
  if (suffix.empty()) return p;
  p.has_suffix = true;
  static constexpr std::pair<std::string_view, int> kBinary[] = {
      {"Ki", 10}, {"Mi", 20}, {"Gi", 30}, {"Ti", 40}, {"Pi", 50}, {"Ei", 60}};
  for (auto [s, shift] : kBinary) {
    if (suffix == s) {
      p.mult = Int128(1) << shift;
      return p;
    }
  }
  static constexpr std::pair<std::string_view, int> kDecimal[] = {{"n", -9}, {"u", -6}, {"m", -3},
                                                                  {"k", 3},  {"M", 6},  {"G", 9},
                                                                  {"T", 12}, {"P", 15}, {"E", 18}};
  for (auto [s, exp] : kDecimal) {
    if (suffix == s) {
      p.dec_exp = exp;
      return p;
    }
  }
  if (suffix[0] == 'e' || suffix[0] == 'E') {
    auto e = codec_internal::ParseInt<int>(suffix.substr(1));
    if (!e || *e < -30 || *e > 30) return bad("bad exponent");
    p.dec_exp = *e;
    return p;
  }
  return bad("unknown suffix " + Quote(suffix));
}

// Values stay below 2^100, so that sums and products of two of them fit in an Int128.
constexpr Int128 kLimit = Int128(1) << 100;

// a * b for 0 <= a, b <= kLimit; false when the product exceeds kLimit.
bool MulLimited(Int128 a, Int128 b, Int128* out) {
  if (b != 0 && a > kLimit / b) return false;
  *out = a * b;
  return true;
}

Int128 Pow10(int n) {  // n <= 30
  Int128 r = 1;
  while (n-- > 0) r *= 10;
  return r;
}

// ceil(mantissa * mult * 10^(dec_exp - frac_digits) / divisor), or -1 on overflow; `*inexact`
// says whether the division left a remainder (the value was not a whole multiple of divisor).
// mantissa < 10^30 (at most 30 digits), mult <= 2^60, divisor <= 2^20, -60 <= exp <= 30.
Int128 Value(const Parsed& p, Int128 divisor, bool* inexact) {
  *inexact = false;
  Int128 mantissa = p.mantissa;
  int frac_digits = p.frac_digits;
  for (; frac_digits > 0 && mantissa % 10 == 0; --frac_digits) mantissa /= 10;  // "1.000Gi"
  Int128 num = 0;
  if (!MulLimited(mantissa, p.mult, &num)) return -1;  // 999...9Ei (found by fuzz_quantity)
  const int exp = p.dec_exp - frac_digits;
  if (exp > 0) {
    if (exp > 30 || !MulLimited(num, Pow10(exp), &num)) return -1;  // 1e30 * 10^30
    *inexact = num % divisor != 0;
    return (num + divisor - 1) / divisor;
  }
  // A negative exponent beyond the digits' reach (10^-31 .. 10^-60; only without a binary
  // suffix, so num < 10^30): a positive value below 1, rounded up.
  if (-exp > 30) {
    *inexact = num > 0;
    return num > 0 ? 1 : 0;
  }
  const Int128 den = divisor * Pow10(-exp);  // < 2^20 * 10^30 < 2^120: no overflow
  *inexact = num % den != 0;
  return (num + den - 1) / den;
}

Result<int64_t> ToInt64(std::string_view text, Int128 v) {
  if (v < 0 || v > Int128(INT64_MAX)) {
    return InvalidArgument("quantity " + Quote(text) + " is too large");
  }
  return static_cast<int64_t>(v);
}

// The quantity's own value must be whole under Fraction::kRefuse.
Status CheckWhole(std::string_view text, const Parsed& p, Fraction fraction) {
  if (fraction == Fraction::kRoundUp) return Status::Ok();
  bool inexact = false;
  (void)Value(p, 1, &inexact);
  if (!inexact) return Status::Ok();
  return InvalidArgument("quantity " + Quote(text) +
                         " is not a whole number; vGPU resources are counted in whole units "
                         "(Kubernetes accepts only whole numbers for them)");
}

}  // namespace

Result<int64_t> ParseQuantity(std::string_view text, Fraction fraction) {
  auto p = Parse(text);
  if (!p.ok()) return p.status();
  VGPU_RETURN_IF_ERROR(CheckWhole(text, *p, fraction));
  bool inexact = false;
  return ToInt64(text, Value(*p, 1, &inexact));
}

Result<int64_t> ParseMemoryMiB(std::string_view text, Fraction fraction) {
  auto p = Parse(text);
  if (!p.ok()) return p.status();
  VGPU_RETURN_IF_ERROR(CheckWhole(text, *p, fraction));
  // Only a binary suffix says "bytes". kube-apiserver canonicalises a plain "3000" to "3k", so
  // decimal suffixes and exponents must keep HAMi's meaning: a number of MiB.
  const bool binary_suffix = p->mult != 1;
  bool inexact = false;
  if (!binary_suffix) return ToInt64(text, Value(*p, 1, &inexact));
  return ToInt64(text, Value(*p, Int128(1) << 20, &inexact));
}

}  // namespace vgpu::codec
