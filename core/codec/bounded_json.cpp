#include "core/codec/bounded_json.h"

#include <string>

namespace vgpu::codec {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

enum class Over { kNone, kDepth, kValues, kString };

// nlohmann's own DOM builder, behind a gate that stops the parse at the first value over a limit:
// the parse is iterative and the DOM grows one value at a time, so nothing past a limit is built.
template <typename Json>
class BoundedDomSax {
 public:
  BoundedDomSax(Json& root, const JsonLimits& limits) : dom_(root, false), limits_(limits) {}

  bool null() { return Value() && dom_.null(); }
  bool boolean(bool v) { return Value() && dom_.boolean(v); }
  bool number_integer(typename Json::number_integer_t v) {
    return Value() && dom_.number_integer(v);
  }
  bool number_unsigned(typename Json::number_unsigned_t v) {
    return Value() && dom_.number_unsigned(v);
  }
  bool number_float(typename Json::number_float_t v, const typename Json::string_t& s) {
    return Value() && dom_.number_float(v, s);
  }
  bool string(typename Json::string_t& v) { return Value() && Fits(v) && dom_.string(v); }
  bool binary(typename Json::binary_t& v) { return Value() && dom_.binary(v); }
  bool key(typename Json::string_t& v) { return Fits(v) && dom_.key(v); }
  bool start_object(size_t n) { return Value() && Enter() && dom_.start_object(n); }
  bool start_array(size_t n) { return Value() && Enter() && dom_.start_array(n); }
  bool end_object() {
    --depth_;
    return dom_.end_object();
  }
  bool end_array() {
    --depth_;
    return dom_.end_array();
  }
  template <class Exception>
  bool parse_error(size_t /*position*/, const std::string& /*token*/, const Exception& e) {
    // "[json.exception.parse_error.101] parse error at line 1, ...": the bracketed id is the
    // library's, not the reader's; the rest says where and what.
    syntax_error_ = e.what();
    if (syntax_error_.starts_with("[json.exception.")) {
      const size_t end = syntax_error_.find("] ");
      if (end != std::string::npos) syntax_error_.erase(0, end + 2);
    }
    return dom_.parse_error(0, "", e);
  }

  Over over() const { return over_; }
  const std::string& syntax_error() const { return syntax_error_; }

 private:
  bool Value() {
    if (++values_ <= limits_.max_values) return true;
    over_ = Over::kValues;
    return false;
  }
  bool Enter() {
    if (++depth_ <= limits_.max_depth) return true;
    over_ = Over::kDepth;
    return false;
  }
  bool Fits(const typename Json::string_t& s) {
    if (s.size() <= limits_.max_string_bytes) return true;
    over_ = Over::kString;
    return false;
  }

  nlohmann::detail::json_sax_dom_parser<Json> dom_;
  const JsonLimits& limits_;
  int depth_ = 0;
  size_t values_ = 0;
  Over over_ = Over::kNone;
  std::string syntax_error_;
};

// Follows `path` through the events of a parse; stops the parse (false) once the string is found.
class PathFinderSax {
 public:
  explicit PathFinderSax(std::initializer_list<std::string_view> path) : path_(path) {}

  bool null() { return Other(); }
  bool boolean(bool /*v*/) { return Other(); }
  bool number_integer(json::number_integer_t /*v*/) { return Other(); }
  bool number_unsigned(json::number_unsigned_t /*v*/) { return Other(); }
  bool number_float(json::number_float_t /*v*/, const json::string_t& /*s*/) { return Other(); }
  bool binary(json::binary_t& /*v*/) { return Other(); }
  bool string(json::string_t& v) {
    if (pending_ && matched_ + 1 == path_.size()) {
      found_ = std::move(v);
      return false;
    }
    return Other();
  }
  bool key(json::string_t& v) {
    // A key of the object the matched keys lead to.
    pending_ = depth_ == matched_ + 1 && matched_ < path_.size() && v == path_.begin()[matched_];
    return true;
  }
  bool start_object(size_t /*n*/) {
    if (pending_ && matched_ + 1 < path_.size()) ++matched_;
    pending_ = false;
    ++depth_;
    return true;
  }
  bool start_array(size_t /*n*/) {
    pending_ = false;
    ++depth_;
    return true;
  }
  bool end_object() { return End(); }
  bool end_array() { return End(); }
  template <class Exception>
  bool parse_error(size_t /*position*/, const std::string& /*token*/, const Exception& /*e*/) {
    return false;
  }

  std::string found() && { return std::move(found_); }

 private:
  bool Other() {
    pending_ = false;
    return true;
  }
  bool End() {
    if (depth_ == matched_ + 1 && matched_ > 0) --matched_;
    --depth_;
    pending_ = false;
    return true;
  }

  std::initializer_list<std::string_view> path_;
  size_t depth_ = 0;    // containers open
  size_t matched_ = 0;  // keys of the path matched by the containers open
  bool pending_ = false;
  std::string found_;
};

std::string Bytes(size_t n) {
  return std::to_string(n) + " bytes";
}

// nlohmann's message quotes the last token read, raw: the sender's bytes, of any length and
// encoding. Cut short and kept to printable ASCII, so that it fits in a log line and in a JSON
// answer (whose writer refuses bytes that are not UTF-8).
std::string Printable(std::string_view text) {
  constexpr size_t kMax = 240;
  std::string out;
  for (const char c : text.substr(0, kMax)) {
    const auto u = static_cast<unsigned char>(c);
    out += u >= 0x20 && u < 0x7f ? c : '?';
  }
  if (text.size() > kMax) out += "...";
  return out;
}

template <typename Json>
Result<Json> Parse(std::string_view text, const JsonLimits& limits, std::string_view what) {
  const std::string name(what);
  if (text.size() > limits.max_bytes) {
    return ResourceExhausted(name + " is " + Bytes(text.size()) + " of JSON, over the limit of " +
                             Bytes(limits.max_bytes));
  }
  Json root;
  BoundedDomSax<Json> sax(root, limits);
  if (Json::sax_parse(text.begin(), text.end(), &sax)) return root;
  switch (sax.over()) {
    case Over::kDepth:
      return ResourceExhausted(name + " nests arrays and objects deeper than " +
                               std::to_string(limits.max_depth) +
                               " levels, the limit for one document");
    case Over::kValues:
      return ResourceExhausted(name + " holds more than " + std::to_string(limits.max_values) +
                               " JSON values, over the limit for one document");
    case Over::kString:
      return ResourceExhausted(name + " holds a string over " + Bytes(limits.max_string_bytes));
    case Over::kNone:
      break;
  }
  return InvalidArgument(name + " is not valid JSON: " + Printable(sax.syntax_error()));
}

}  // namespace

Result<json> ParseJsonWithin(std::string_view text, const JsonLimits& limits,
                             std::string_view what) {
  return Parse<json>(text, limits, what);
}

Result<ordered_json> ParseOrderedJsonWithin(std::string_view text, const JsonLimits& limits,
                                            std::string_view what) {
  return Parse<ordered_json>(text, limits, what);
}

std::string FindJsonString(std::string_view text, std::initializer_list<std::string_view> path,
                           size_t max_bytes) {
  if (text.size() > max_bytes || path.size() == 0) return "";
  PathFinderSax sax(path);
  (void)json::sax_parse(text.begin(), text.end(), &sax);
  return std::move(sax).found();
}

}  // namespace vgpu::codec
