// The bounded JSON parser every decoder of outside input uses (core/codec/bounded_json.h), under
// limits the first byte picks (depth 1-16, values 1-256, strings 0-63 bytes). Properties, against
// nlohmann's own validator and a DOM-less count of the same document: text that is not JSON is
// refused; JSON within every limit is parsed, and JSON over one is refused as ResourceExhausted;
// what is parsed dumps and parses back to itself; FindJsonString reads any text without harm.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/codec/bounded_json.h"
#include "fuzz_check.h"

namespace {

using nlohmann::json;
using vgpu::fuzz::Check;

// What the document holds, counted by events (no DOM, no recursion).
struct Counter {
  int depth = 0;
  int max_depth = 0;
  size_t values = 0;
  size_t longest = 0;

  bool null() { return Value(); }
  bool boolean(bool /*v*/) { return Value(); }
  bool number_integer(json::number_integer_t /*v*/) { return Value(); }
  bool number_unsigned(json::number_unsigned_t /*v*/) { return Value(); }
  bool number_float(json::number_float_t /*v*/, const std::string& /*s*/) { return Value(); }
  bool string(std::string& s) {
    longest = std::max(longest, s.size());
    return Value();
  }
  bool binary(json::binary_t& /*v*/) { return Value(); }
  bool key(std::string& s) {
    longest = std::max(longest, s.size());
    return true;
  }
  bool start_object(size_t /*n*/) { return Enter(); }
  bool start_array(size_t /*n*/) { return Enter(); }
  bool end_object() {
    --depth;
    return true;
  }
  bool end_array() {
    --depth;
    return true;
  }
  template <class E>
  bool parse_error(size_t /*p*/, const std::string& /*t*/, const E& /*e*/) {
    return false;
  }

 private:
  bool Value() {
    ++values;
    return true;
  }
  bool Enter() {
    max_depth = std::max(max_depth, ++depth);
    return Value();
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t pick = data[0];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  const vgpu::codec::JsonLimits limits{.max_bytes = 1 << 16,
                                       .max_depth = 1 + pick % 16,
                                       .max_values = 1 + (pick * 7u) % 256,
                                       .max_string_bytes = pick % 64u};
  const vgpu::Result<json> r = vgpu::codec::ParseJsonWithin(text, limits, "input");
  Counter count;
  const bool valid = json::sax_parse(text.begin(), text.end(), &count);
  if (!valid) {
    Check(!r.ok(), "text that is not JSON parsed", text);
  } else {
    const bool within = text.size() <= limits.max_bytes && count.max_depth <= limits.max_depth &&
                        count.values <= limits.max_values &&
                        count.longest <= limits.max_string_bytes;
    Check(r.ok() == within, within ? "JSON within the limits refused" : "JSON over a limit parsed",
          text);
    if (!r.ok()) {
      Check(r.status().code() == vgpu::StatusCode::kResourceExhausted,
            "JSON over a limit refused as something else", r.status().message());
    }
  }
  if (r.ok()) {
    const vgpu::Result<json> again = vgpu::codec::ParseJsonWithin(r->dump(), limits, "dump");
    Check(again.ok() && *again == *r, "a parsed document does not dump to itself", text);
  }
  (void)vgpu::codec::FindJsonString(text, {"request", "uid"}, limits.max_bytes);
  return 0;
}
