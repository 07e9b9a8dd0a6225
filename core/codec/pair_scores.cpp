#include "core/codec/pair_scores.h"

#include <nlohmann/json.hpp>

#include "core/base/strings.h"
#include "core/codec/bounded_json.h"

namespace vgpu::codec {
namespace {

// Document order is kept: Go decodes members in order, the last one naming a field wins.
using json = nlohmann::ordered_json;

// A JSON string as Go's encoding/json writes it (HTML-safe escaping).
void AppendGoString(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      default:
        break;
    }
    if (c < 0x20 || c == '<' || c == '>' || c == '&') {
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    } else if (c == 0xE2 && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
               (static_cast<unsigned char>(s[i + 2]) == 0xA8 ||
                static_cast<unsigned char>(s[i + 2]) == 0xA9)) {
      out += static_cast<unsigned char>(s[i + 2]) == 0xA8 ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
}

// The member of `obj` Go would decode into the field `name`: member names match fields in any
// letter case (ASCII folding), and the last member naming the field wins.
const json* Field(const json& obj, std::string_view name) {
  const json* found = nullptr;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (Lower(it.key()) == name) found = &*it;
  }
  return found;
}

}  // namespace

std::string EncodePairScores(const DevicePairScores& scores) {
  std::string out = "[";
  for (size_t i = 0; i < scores.size(); ++i) {
    if (i > 0) out += ',';
    const DevicePairScore& d = scores[i];
    out += '{';
    bool first = true;
    if (!d.uuid.empty()) {
      out += "\"uuid\":";
      AppendGoString(out, d.uuid);
      first = false;
    }
    if (!d.scores.empty()) {
      if (!first) out += ',';
      out += "\"score\":{";
      bool first_peer = true;
      for (const auto& [peer, score] : d.scores) {  // std::map: byte order, as Go sorts keys
        if (!first_peer) out += ',';
        first_peer = false;
        AppendGoString(out, peer);
        out += ':';
        out += std::to_string(score);
      }
      out += '}';
    }
    out += '}';
  }
  out += ']';
  return out;
}

Result<DevicePairScores> DecodePairScores(std::string_view text) {
  Result<json> parsed = ParseOrderedJsonWithin(text, kAnnotationJson, "pair scores");
  if (!parsed.ok()) {
    if (parsed.status().code() != StatusCode::kInvalidArgument) return parsed.status();
    return InvalidArgument("pair scores are not JSON");
  }
  const json& doc = *parsed;
  DevicePairScores out;
  if (doc.is_null()) return out;
  if (!doc.is_array()) return InvalidArgument("pair scores are not a JSON array");
  for (const json& e : doc) {
    DevicePairScore d;
    if (e.is_null()) {
      out.push_back(std::move(d));
      continue;
    }
    if (!e.is_object())
      return InvalidArgument("pair score entry " + e.dump() + " is not an object");
    if (const json* uuid = Field(e, "uuid"); uuid != nullptr && !uuid->is_null()) {
      if (!uuid->is_string()) {
        return InvalidArgument("pair score entry " + e.dump() + ": uuid is not a string");
      }
      d.uuid = uuid->get<std::string>();
    }
    if (const json* score = Field(e, "score"); score != nullptr && !score->is_null()) {
      if (!score->is_object()) {
        return InvalidArgument("pair score entry " + e.dump() + ": score is not an object");
      }
      for (auto it = score->begin(); it != score->end(); ++it) {
        const bool fits =
            it->is_number_integer() &&
            (!it->is_number_unsigned() || it->get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX));
        if (!fits) {
          return InvalidArgument("pair score of " + d.uuid + " for " + it.key() + " is " +
                                 it->dump() + ", not an integer");
        }
        d.scores[it.key()] = it->get<int64_t>();
      }
    }
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace vgpu::codec
