#pragma once

// A whole number given by a person or another program (a flag, an annotation field), checked
// within bounds with a message that names the value and the bound it broke, so that a number past
// the type's range reads "too large", never "negative" or "not a number". Pure: no I/O.

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/base/status.h"

namespace vgpu {

// Decimal digits with an optional leading '-', within [min, max]: "'-3' is too small (min 1)",
// "'99999999999' is too large (max 20000)", "'1.5' is not a whole number (accepted: 1..20000)",
// "empty value (accepted: 1..20000)". Hex, '+', spaces and exponents are not whole numbers here.
inline Result<int64_t> ParseWholeNumber(std::string_view text, int64_t min, int64_t max) {
  const std::string quoted = "'" + std::string(text) + "'";
  const std::string accepted =
      "(accepted: " + std::to_string(min) + ".." + std::to_string(max) + ")";
  if (text.empty()) return InvalidArgument("empty value " + accepted);
  const bool negative = text.front() == '-';
  const std::string_view digits = negative ? text.substr(1) : text;
  bool all_digits = !digits.empty();
  for (const char c : digits) all_digits = all_digits && c >= '0' && c <= '9';
  if (!all_digits) return InvalidArgument(quoted + " is not a whole number " + accepted);
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  (void)end;  // digits only: from_chars reads them all or reports a value beyond int64
  const bool beyond = ec == std::errc::result_out_of_range;
  if ((beyond && !negative) || (!beyond && value > max)) {
    return InvalidArgument(quoted + " is too large (max " + std::to_string(max) + ")");
  }
  if (beyond || value < min) {
    return InvalidArgument(quoted + " is too small (min " + std::to_string(min) + ")");
  }
  return value;
}

}  // namespace vgpu
