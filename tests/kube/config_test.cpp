#include "kube/config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "core/codec/base64.h"

namespace vgpu::kube {
namespace {

const char* kCertPem = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n";
const char* kKeyPem = "-----BEGIN PRIVATE KEY-----\nMIIEfake\n-----END PRIVATE KEY-----\n";

using codec::Base64Encode;

class KubeConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/vgpu-kubeconfig-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    std::string path = dir_ + "/" + name;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path) << text;
    return path;
  }
  std::string dir_;
};

TEST_F(KubeConfigTest, TokenUserInlineCaCurrentContext) {
  std::string yaml = R"(apiVersion: v1
kind: Config
current-context: prod
clusters:
- name: dev-cluster
  cluster: {server: "http://127.0.0.1:1"}
- name: prod-cluster
  cluster:
    server: https://10.0.0.1:6443/
    certificate-authority-data: )" +
                     Base64Encode(kCertPem) + R"(
contexts:
- name: dev
  context: {cluster: dev-cluster, user: dev-user}
- name: prod
  context: {cluster: prod-cluster, user: prod-user, namespace: gpu}
users:
- name: dev-user
  user: {token: dev-token}
- name: prod-user
  user: {token: prod-token}
)";
  auto c = ParseKubeconfig(yaml, dir_);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->server, "https://10.0.0.1:6443");
  EXPECT_EQ(c->ca_pem, kCertPem);
  EXPECT_EQ(c->bearer_token, "prod-token");
  EXPECT_EQ(c->default_namespace, "gpu");
  EXPECT_FALSE(c->insecure_skip_tls_verify);
  auto dev = ParseKubeconfig(yaml, dir_, "dev");
  ASSERT_TRUE(dev.ok());
  EXPECT_EQ(dev->server, "http://127.0.0.1:1");
  EXPECT_EQ(dev->bearer_token, "dev-token");
  EXPECT_EQ(dev->default_namespace, "default");
}

TEST_F(KubeConfigTest, ClientCertificateFilesRelativeToKubeconfig) {
  Write("certs/ca.crt", kCertPem);
  Write("certs/client.crt", kCertPem);
  Write("certs/client.key", kKeyPem);
  Write("token", "file-token\n");
  std::string path = Write("config", R"(
current-context: c
clusters:
- name: k
  cluster: {server: "https://k:443", certificate-authority: certs/ca.crt}
contexts:
- name: c
  context: {cluster: k, user: u}
users:
- name: u
  user:
    client-certificate: certs/client.crt
    client-key: )" + dir_ + R"(/certs/client.key
    tokenFile: token
)");
  auto c = LoadKubeconfig(path);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->ca_pem, kCertPem);
  EXPECT_EQ(c->client_cert_pem, kCertPem);
  EXPECT_EQ(c->client_key_pem, kKeyPem);
  EXPECT_EQ(c->token_file, dir_ + "/token");
}

TEST_F(KubeConfigTest, InlineClientCertDataAndInsecure) {
  auto c = ParseKubeconfig(R"(
current-context: c
clusters:
- name: k
  cluster: {server: "https://k:443", insecure-skip-tls-verify: true}
contexts:
- name: c
  context: {cluster: k, user: u}
users:
- name: u
  user: {client-certificate-data: )" +
                               Base64Encode(kCertPem) +
                               ", client-key-data: " + Base64Encode(kKeyPem) + "}\n",
                           "");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->insecure_skip_tls_verify);
  EXPECT_EQ(c->client_cert_pem, kCertPem);
  EXPECT_EQ(c->client_key_pem, kKeyPem);
  EXPECT_TRUE(c->ca_pem.empty());
}

TEST_F(KubeConfigTest, ErrorsAreSpecific) {
  struct Case {
    std::string yaml;
    std::string context;
    const char* want;
  };
  const std::string base = R"(
clusters:
- name: k
  cluster: {server: "https://k:443"}
contexts:
- name: c
  context: {cluster: k, user: u}
- name: nocluster
  context: {cluster: missing, user: u}
users:
- name: u
  user: {exec: {command: aws}}
)";
  const Case cases[] = {
      {"[", "", "not valid YAML"},
      {base, "", "no current-context"},
      {base, "other", "context \"other\" not found"},
      {base, "nocluster", "cluster \"missing\" of context \"nocluster\" not found"},
      {base, "c", "exec or auth-provider plugin"},
      {"current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\nclusters: [{name: k, "
       "cluster: {certificate-authority: /nonexistent/ca}}]\n",
       "", "has no server"},
      {"current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\nclusters: [{name: k, "
       "cluster: {server: 'https://x', certificate-authority: /nonexistent/ca}}]\n",
       "", "/nonexistent/ca"},
  };
  for (const auto& c : cases) {
    auto r = ParseKubeconfig(c.yaml, "", c.context);
    ASSERT_FALSE(r.ok()) << c.want;
    EXPECT_NE(r.status().message().find(c.want), std::string::npos) << r.status().message();
  }
}

TEST_F(KubeConfigTest, InCluster) {
  Write("sa/token", "sa-token\n");
  Write("sa/ca.crt", kCertPem);
  Write("sa/namespace", "hami-system\n");
  std::map<std::string, std::string> env{{"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
                                         {"KUBERNETES_SERVICE_PORT", "443"}};
  GetEnv get = [&](const char* n) -> std::optional<std::string> {
    auto it = env.find(n);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  auto c = InClusterConfig(get, dir_ + "/sa");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->server, "https://10.96.0.1:443");
  EXPECT_EQ(c->token_file, dir_ + "/sa/token");
  EXPECT_EQ(c->ca_pem, kCertPem);
  EXPECT_EQ(c->default_namespace, "hami-system");
  env["KUBERNETES_SERVICE_HOST"] = "fd00::1";
  EXPECT_EQ(InClusterConfig(get, dir_ + "/sa")->server, "https://[fd00::1]:443");
  env.clear();
  auto none = InClusterConfig(get, dir_ + "/sa");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("KUBERNETES_SERVICE_HOST"), std::string::npos);
  env = {{"KUBERNETES_SERVICE_HOST", "h"}, {"KUBERNETES_SERVICE_PORT", "1"}};
  auto missing = InClusterConfig(get, dir_ + "/nothing");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("service account token"), std::string::npos);
  // DefaultConfig: $KUBECONFIG wins over in-cluster.
  std::string kc = Write("kc",
                         "current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
                         "clusters: [{name: k, cluster: {server: 'http://from-kubeconfig'}}]\n");
  env["KUBECONFIG"] = kc;
  EXPECT_EQ(DefaultConfig("", get)->server, "http://from-kubeconfig");
}

}  // namespace
}  // namespace vgpu::kube
