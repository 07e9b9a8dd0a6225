#include "sim/apiserver/selectors.h"

namespace vgpu::sim {

namespace {

std::string Trim(std::string_view s) {
  size_t b = s.find_first_not_of(' ');
  if (b == std::string_view::npos) return "";
  size_t e = s.find_last_not_of(' ');
  return std::string(s.substr(b, e - b + 1));
}

// Splits on commas that are not inside parentheses.
std::vector<std::string> SplitTerms(std::string_view text) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : text) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(Trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(Trim(cur));
  return out;
}

const nlohmann::json* FieldAt(const nlohmann::json& obj, const std::string& path) {
  const nlohmann::json* cur = &obj;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string key =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(key);
    if (it == cur->end()) return nullptr;
    cur = &*it;
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

std::string AsText(const nlohmann::json* v) {
  if (!v || v->is_null()) return "";
  if (v->is_string()) return v->get<std::string>();
  return v->dump();
}

}  // namespace

Result<Selector> Selector::ParseLabels(std::string_view text) {
  Selector sel;
  if (Trim(text).empty()) return sel;
  for (const std::string& term : SplitTerms(text)) {
    auto bad = [&] { return InvalidArgument("invalid label selector term \"" + term + "\""); };
    if (term.empty()) return bad();
    Requirement r;
    size_t in_pos = term.find(" in ");
    size_t notin_pos = term.find(" notin ");
    if (notin_pos != std::string::npos || in_pos != std::string::npos) {
      bool notin = notin_pos != std::string::npos;
      size_t pos = notin ? notin_pos : in_pos;
      r.key = Trim(term.substr(0, pos));
      std::string rest = Trim(term.substr(pos + (notin ? 7 : 4)));
      if (rest.size() < 2 || rest.front() != '(' || rest.back() != ')') return bad();
      std::string inner = rest.substr(1, rest.size() - 2);
      size_t start = 0;
      while (true) {
        size_t comma = inner.find(',', start);
        r.values.push_back(Trim(inner.substr(start, comma - start)));
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
      r.op = notin ? Op::kNotIn : Op::kIn;
    } else if (size_t ne = term.find("!="); ne != std::string::npos) {
      r = {Trim(term.substr(0, ne)), Op::kNotEq, {Trim(term.substr(ne + 2))}};
    } else if (size_t eq = term.find('='); eq != std::string::npos) {
      size_t vstart = term.compare(eq, 2, "==") == 0 ? eq + 2 : eq + 1;
      r = {Trim(term.substr(0, eq)), Op::kEq, {Trim(term.substr(vstart))}};
    } else if (term[0] == '!') {
      r = {Trim(term.substr(1)), Op::kNotExists, {}};
    } else {
      r = {term, Op::kExists, {}};
    }
    if (r.key.empty() || r.key.find_first_of(" ()!=") != std::string::npos) return bad();
    sel.reqs_.push_back(std::move(r));
  }
  return sel;
}

Result<Selector> Selector::ParseFields(std::string_view text) {
  Selector sel;
  sel.fields_ = true;
  if (Trim(text).empty()) return sel;
  for (const std::string& term : SplitTerms(text)) {
    Requirement r;
    if (size_t ne = term.find("!="); ne != std::string::npos) {
      r = {Trim(term.substr(0, ne)), Op::kNotEq, {Trim(term.substr(ne + 2))}};
    } else if (size_t eq = term.find('='); eq != std::string::npos) {
      size_t vstart = term.compare(eq, 2, "==") == 0 ? eq + 2 : eq + 1;
      r = {Trim(term.substr(0, eq)), Op::kEq, {Trim(term.substr(vstart))}};
    } else {
      return InvalidArgument("invalid field selector term \"" + term +
                             "\": want <field>=<value> or <field>!=<value>");
    }
    if (r.key.empty()) return InvalidArgument("invalid field selector term \"" + term + "\"");
    sel.reqs_.push_back(std::move(r));
  }
  return sel;
}

bool Selector::Matches(const nlohmann::json& object) const {
  const nlohmann::json* labels = fields_ ? nullptr : FieldAt(object, "metadata.labels");
  for (const auto& r : reqs_) {
    const nlohmann::json* v = nullptr;
    if (fields_) {
      v = FieldAt(object, r.key);
    } else if (labels && labels->is_object()) {
      auto it = labels->find(r.key);
      if (it != labels->end()) v = &*it;
    }
    std::string text = AsText(v);
    bool present = v != nullptr;
    bool ok = true;
    switch (r.op) {
      case Op::kEq:
        ok = fields_ ? text == r.values[0] : present && text == r.values[0];
        break;
      case Op::kNotEq:
        ok = !(present && text == r.values[0]) && !(fields_ && text == r.values[0]);
        break;
      case Op::kExists:
        ok = present;
        break;
      case Op::kNotExists:
        ok = !present;
        break;
      case Op::kIn:
        ok = present && std::find(r.values.begin(), r.values.end(), text) != r.values.end();
        break;
      case Op::kNotIn:
        ok = !present || std::find(r.values.begin(), r.values.end(), text) == r.values.end();
        break;
    }
    if (!ok) return false;
  }
  return true;
}

}  // namespace vgpu::sim
