#include "cli/flag_values.h"

#include <charconv>
#include <utility>

#include "core/base/strings.h"

namespace vgpu::cli {

namespace {

std::string Quoted(std::string_view text) {
  return "'" + std::string(text) + "'";
}

std::string Range(int64_t min, int64_t max) {
  return std::to_string(min) + ".." + std::to_string(max);
}

}  // namespace

Result<uint64_t> ParseMemoryMiB(std::string_view text, uint64_t max_mib) {
  const std::string forms =
      " (accepted: MiB as a whole number, e.g. 4096, or with a unit: 3000m, 3g, 3Gi, 3GiB, 1t; "
      "1 MiB.." +
      std::to_string(max_mib) + " MiB)";
  if (text.empty()) return InvalidArgument("empty value" + forms);
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) {
    if (text.front() == '-') return InvalidArgument(Quoted(text) + " is negative" + forms);
    return InvalidArgument(Quoted(text) + " is not a size" + forms);
  }
  // The unit, spelled as libvgpu reads it: a letter, then an optional "i", then an optional "b".
  std::string unit = Lower(text.substr(digits));
  unsigned shift = 0;
  if (!unit.empty()) {
    static constexpr std::pair<char, unsigned> kUnits[] = {{'m', 0}, {'g', 10}, {'t', 20}};
    bool known = false;
    for (const auto& [letter, s] : kUnits) {
      if (unit.front() == letter) {
        shift = s;
        known = true;
      }
    }
    std::string_view rest = std::string_view(unit).substr(1);
    if (!rest.empty() && rest.front() == 'i') rest.remove_prefix(1);
    if (!rest.empty() && rest.front() == 'b') rest.remove_prefix(1);
    if (!known || !rest.empty()) {
      if (unit.front() == '.') {
        return InvalidArgument(Quoted(text) + " is not a whole number of units" + forms);
      }
      return InvalidArgument(Quoted(text) + " has an unknown unit '" +
                             std::string(text.substr(digits)) + "'" + forms);
    }
  }
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + digits, value);
  const bool too_large = ec == std::errc::result_out_of_range ||
                         (shift != 0 && value > (max_mib >> shift)) || (value << shift) > max_mib;
  if (too_large) {
    return InvalidArgument(Quoted(text) + " is too large (max " + std::to_string(max_mib) +
                           " MiB)");
  }
  if (value == 0) return InvalidArgument(Quoted(text) + " is too small (min 1 MiB)");
  return value << shift;
}

CLI::Validator WholeNumber(int64_t min, int64_t max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        auto value = ParseWholeNumber(text, min, max);
        return value.ok() ? std::string() : value.status().message();
      },
      Range(min, max));
}

CLI::Validator NotEmpty() {
  return CLI::Validator(
      [](std::string& text) -> std::string { return text.empty() ? "empty value" : ""; }, "");
}

CLI::Validator OneOf(std::vector<std::string> words) {
  std::string list;
  for (const std::string& w : words) list += (list.empty() ? "" : ", ") + w;
  return CLI::Validator(
      [words = std::move(words), list](std::string& text) -> std::string {
        for (const std::string& w : words) {
          if (text == w) return "";
        }
        return Quoted(text) + " is not one of " + list;
      },
      "one of " + list);
}

}  // namespace vgpu::cli
