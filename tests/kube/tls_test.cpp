// HTTPS against a real TLS server (cpp-httplib's SSLServer) with certificates made by the openssl
// CLI: server verification through the configured CA, client-certificate authentication, and
// insecure-skip-tls-verify.

#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "kube/client.h"

namespace vgpu::kube {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class TlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/vgpu-tls-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    // EC keys: fast to generate. One CA signs the server (SAN 127.0.0.1) and the client.
    std::string script = "cd " + dir_ + R"( && set -e
      key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -out $1 2>/dev/null; }
      key ca.key; key server.key; key client.key; key other-ca.key
      openssl req -x509 -new -key ca.key -out ca.crt -days 2 -subj /CN=vgpu-test-ca 2>/dev/null
      openssl req -x509 -new -key other-ca.key -out other-ca.crt -days 2 -subj /CN=other-ca 2>/dev/null
      openssl req -new -key server.key -out server.csr -subj /CN=127.0.0.1 2>/dev/null
      printf 'subjectAltName=IP:127.0.0.1\n' > san.ext
      openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 2 -extfile san.ext 2>/dev/null
      openssl req -new -key client.key -out client.csr -subj /CN=vgpu-client 2>/dev/null
      openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out client.crt -days 2 2>/dev/null
    )";
    ok_ = std::system(("bash -ec '" + Escape(script) + "'").c_str()) == 0;
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }

  static std::string Escape(const std::string& s) {
    std::string out;
    for (char c : s) {
      if (c == '\'') {
        out += "'\\''";
      } else {
        out += c;
      }
    }
    return out;
  }

  void SetUp() override {
    if (!ok_) GTEST_SKIP() << "openssl CLI could not create test certificates";
    server_ = std::make_unique<httplib::SSLServer>(
        (dir_ + "/server.crt").c_str(), (dir_ + "/server.key").c_str(), (dir_ + "/ca.crt").c_str());
    ASSERT_TRUE(server_->is_valid());
    server_->Get("/api/v1/nodes", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"kind":"NodeList","items":[{"metadata":{"name":"tls-node"}}]})",
                      "application/json");
    });
    port_ = server_->bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    thread_ = std::thread([this] { server_->listen_after_bind(); });
  }
  void TearDown() override {
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
  }

  ClientConfig Base() {
    ClientConfig c;
    c.server = "https://127.0.0.1:" + std::to_string(port_);
    c.qps = 0;
    c.connect_timeout = std::chrono::milliseconds(10000);
    return c;
  }

  static inline std::string dir_;
  static inline bool ok_ = false;
  std::unique_ptr<httplib::SSLServer> server_;
  std::thread thread_;
  int port_ = 0;
};

TEST_F(TlsTest, VerifiedServerAndClientCertificate) {
  ClientConfig c = Base();
  c.ca_pem = Slurp(dir_ + "/ca.crt");
  c.client_cert_pem = Slurp(dir_ + "/client.crt");
  c.client_key_pem = Slurp(dir_ + "/client.key");
  auto client = Client::New(c);
  ASSERT_TRUE(client.ok());
  auto list = (*client)->List(kNodes, "");
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ((*list)["items"][0]["metadata"]["name"], "tls-node");
}

TEST_F(TlsTest, WrongCaIsRejectedUnlessInsecure) {
  ClientConfig c = Base();
  c.ca_pem = Slurp(dir_ + "/other-ca.crt");
  c.client_cert_pem = Slurp(dir_ + "/client.crt");
  c.client_key_pem = Slurp(dir_ + "/client.key");
  auto strict = Client::New(c);
  auto r = (*strict)->List(kNodes, "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  c.insecure_skip_tls_verify = true;
  auto insecure = Client::New(c);
  EXPECT_TRUE((*insecure)->List(kNodes, "").ok());
}

TEST_F(TlsTest, ServerRequiresClientCertificate) {
  ClientConfig c = Base();
  c.ca_pem = Slurp(dir_ + "/ca.crt");
  auto client = Client::New(c);
  auto r = (*client)->List(kNodes, "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().ToString();
}

}  // namespace
}  // namespace vgpu::kube
