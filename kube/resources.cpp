#include "kube/resources.h"

namespace vgpu::kube {

std::string ResourcePath(const ResourceType& type, std::string_view ns, std::string_view name,
                         std::string_view subresource) {
  std::string p(type.prefix);
  if (type.namespaced && !ns.empty()) {
    p += "/namespaces/";
    p += ns;
  }
  p += '/';
  p += type.plural;
  if (!name.empty()) {
    p += '/';
    p += name;
    if (!subresource.empty()) {
      p += '/';
      p += subresource;
    }
  }
  return p;
}

std::string UrlEncode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace vgpu::kube
