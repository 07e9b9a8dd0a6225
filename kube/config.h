#pragma once

// Where and how to reach the Kubernetes API: in-cluster service account or a kubeconfig file.

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/base/status.h"

namespace vgpu::kube {

struct ClientConfig {
  std::string server;  // "https://10.0.0.1:443" or "http://127.0.0.1:8080"
  std::string bearer_token;
  // When set, the token is read from this file and re-read whenever the file changes (projected
  // service-account tokens rotate); it wins over bearer_token.
  std::string token_file;
  std::string ca_pem;  // PEM of the CA bundle that signs the server; empty = system CAs
  std::string client_cert_pem;
  std::string client_key_pem;
  bool insecure_skip_tls_verify = false;
  std::string default_namespace = "default";

  double qps = 100;  // client-side rate limit; <= 0 disables it
  int burst = 200;
  std::chrono::milliseconds request_timeout{30000};
  std::chrono::milliseconds connect_timeout{5000};
  std::string user_agent = "vgpu";
  size_t max_idle_connections = 16;  // pooled keep-alive connections
};

// Environment lookup, injectable for tests.
using GetEnv = std::function<std::optional<std::string>(const char* name)>;
std::optional<std::string> ProcessEnv(const char* name);

inline constexpr std::string_view kServiceAccountDir =
    "/var/run/secrets/kubernetes.io/serviceaccount";

// In-cluster: KUBERNETES_SERVICE_HOST/PORT, and token, ca.crt, namespace under `sa_dir`.
Result<ClientConfig> InClusterConfig(const GetEnv& env = ProcessEnv,
                                     std::string_view sa_dir = kServiceAccountDir);

// A kubeconfig's `context` (empty = current-context). Relative file paths in it are resolved
// against `base_dir` (the kubeconfig's folder). Users may have token / tokenFile and
// client-certificate(-data) + client-key(-data); clusters certificate-authority(-data) and
// insecure-skip-tls-verify. exec/auth-provider plugins are not supported (clear error).
Result<ClientConfig> ParseKubeconfig(std::string_view yaml, std::string_view base_dir,
                                     std::string_view context = "");
Result<ClientConfig> LoadKubeconfig(const std::string& path, std::string_view context = "");

// `explicit_path` if given, else $KUBECONFIG (first entry), else in-cluster, else ~/.kube/config.
Result<ClientConfig> DefaultConfig(const std::string& explicit_path = "",
                                   const GetEnv& env = ProcessEnv);

}  // namespace vgpu::kube
