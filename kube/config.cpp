#include "kube/config.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/codec/base64.h"

namespace vgpu::kube {

namespace {

Result<std::string> ReadFile(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return NotFound(std::string("cannot read ") + what + " " + path + ": " + std::strerror(errno));
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string Resolve(std::string_view base_dir, const std::string& path) {
  if (path.empty() || path[0] == '/' || base_dir.empty()) return path;
  return (std::filesystem::path(base_dir) / path).string();
}

std::string Str(const YAML::Node& map, const char* key) {
  YAML::Node n = map[key];
  if (!n.IsDefined() || !n.IsScalar()) return "";
  return n.Scalar();
}

// Reads `<key>-data` (base64) or `<key>` (a file path).
Result<std::string> DataOrFile(const YAML::Node& map, const std::string& key,
                               std::string_view base_dir, const std::string& where) {
  std::string data = Str(map, (key + "-data").c_str());
  if (!data.empty()) {
    auto decoded = codec::Base64Decode(data);
    if (!decoded.ok()) return decoded.status().WithContext(where + "." + key + "-data");
    return decoded;
  }
  std::string path = Str(map, key.c_str());
  if (path.empty()) return std::string();
  auto text = ReadFile(Resolve(base_dir, path), key.c_str());
  if (!text.ok()) return text.status().WithContext(where);
  return text;
}

YAML::Node FindNamed(const YAML::Node& list, const std::string& name, const char* inner) {
  if (!list.IsSequence()) return YAML::Node();
  for (const auto& e : list) {
    if (e.IsMap() && Str(e, "name") == name) return e[inner];
  }
  return YAML::Node();
}

}  // namespace

std::optional<std::string> ProcessEnv(const char* name) {
  const char* v = std::getenv(name);
  if (!v) return std::nullopt;
  return std::string(v);
}

Result<ClientConfig> InClusterConfig(const GetEnv& env, std::string_view sa_dir) {
  auto host = env("KUBERNETES_SERVICE_HOST");
  auto port = env("KUBERNETES_SERVICE_PORT");
  if (!host || host->empty() || !port || port->empty()) {
    return FailedPrecondition(
        "not running in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not "
        "set (use a kubeconfig instead)");
  }
  ClientConfig c;
  std::string h = host->find(':') != std::string::npos ? "[" + *host + "]" : *host;
  c.server = "https://" + h + ":" + *port;
  std::string dir(sa_dir);
  c.token_file = dir + "/token";
  auto token = ReadFile(c.token_file, "service account token");
  if (!token.ok()) return token.status();
  auto ca = ReadFile(dir + "/ca.crt", "service account CA");
  if (!ca.ok()) return ca.status();
  c.ca_pem = *ca;
  if (auto ns = ReadFile(dir + "/namespace", "namespace"); ns.ok() && !Trim(*ns).empty()) {
    c.default_namespace = Trim(*ns);
  }
  return c;
}

Result<ClientConfig> ParseKubeconfig(std::string_view yaml, std::string_view base_dir,
                                     std::string_view context) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return InvalidArgument(std::string("kubeconfig is not valid YAML: ") + e.what());
  }
  if (!root.IsMap()) return InvalidArgument("kubeconfig: top level must be a mapping");
  std::string ctx_name = context.empty() ? Str(root, "current-context") : std::string(context);
  if (ctx_name.empty())
    return InvalidArgument("kubeconfig: no current-context and no context given");
  YAML::Node ctx = FindNamed(root["contexts"], ctx_name, "context");
  if (!ctx.IsMap()) return NotFound("kubeconfig: context \"" + ctx_name + "\" not found");
  std::string cluster_name = Str(ctx, "cluster");
  std::string user_name = Str(ctx, "user");
  YAML::Node cluster = FindNamed(root["clusters"], cluster_name, "cluster");
  if (!cluster.IsMap()) {
    return NotFound("kubeconfig: cluster \"" + cluster_name + "\" of context \"" + ctx_name +
                    "\" not found");
  }
  ClientConfig c;
  c.server = Str(cluster, "server");
  if (c.server.empty())
    return InvalidArgument("kubeconfig: cluster \"" + cluster_name + "\" has no server");
  while (!c.server.empty() && c.server.back() == '/') c.server.pop_back();
  c.insecure_skip_tls_verify = Str(cluster, "insecure-skip-tls-verify") == "true";
  std::string where = "kubeconfig: cluster \"" + cluster_name + "\"";
  auto ca = DataOrFile(cluster, "certificate-authority", base_dir, where);
  if (!ca.ok()) return ca.status();
  c.ca_pem = *ca;
  if (std::string ns = Str(ctx, "namespace"); !ns.empty()) c.default_namespace = ns;

  if (!user_name.empty()) {
    YAML::Node user = FindNamed(root["users"], user_name, "user");
    if (!user.IsDefined()) return NotFound("kubeconfig: user \"" + user_name + "\" not found");
    if (user.IsMap()) {
      where = "kubeconfig: user \"" + user_name + "\"";
      if (user["exec"].IsDefined() || user["auth-provider"].IsDefined()) {
        return InvalidArgument(where +
                               " uses an exec or auth-provider plugin, which vgpu does not "
                               "support; use a token or a client certificate");
      }
      c.bearer_token = Str(user, "token");
      if (std::string tf = Str(user, "tokenFile"); !tf.empty())
        c.token_file = Resolve(base_dir, tf);
      auto cert = DataOrFile(user, "client-certificate", base_dir, where);
      if (!cert.ok()) return cert.status();
      auto key = DataOrFile(user, "client-key", base_dir, where);
      if (!key.ok()) return key.status();
      c.client_cert_pem = *cert;
      c.client_key_pem = *key;
      if (c.client_cert_pem.empty() != c.client_key_pem.empty()) {
        return InvalidArgument(where +
                               ": client-certificate and client-key must be given together");
      }
    }
  }
  return c;
}

Result<ClientConfig> LoadKubeconfig(const std::string& path, std::string_view context) {
  auto text = ReadFile(path, "kubeconfig");
  if (!text.ok()) return text.status();
  auto c = ParseKubeconfig(*text, std::filesystem::path(path).parent_path().string(), context);
  if (!c.ok()) return c.status().WithContext(path);
  return c;
}

Result<ClientConfig> DefaultConfig(const std::string& explicit_path, const GetEnv& env) {
  if (!explicit_path.empty()) return LoadKubeconfig(explicit_path);
  if (auto kc = env("KUBECONFIG"); kc && !kc->empty()) {
    return LoadKubeconfig(kc->substr(0, kc->find(':')));
  }
  auto in_cluster = InClusterConfig(env);
  if (in_cluster.ok()) return in_cluster;
  if (auto home = env("HOME"); home && std::filesystem::exists(*home + "/.kube/config")) {
    return LoadKubeconfig(*home + "/.kube/config");
  }
  return in_cluster.status().WithContext(
      "no kubeconfig given, none in $KUBECONFIG or ~/.kube/config");
}

}  // namespace vgpu::kube
