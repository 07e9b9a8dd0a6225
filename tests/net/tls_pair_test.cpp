#include "net/tls_pair.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace vgpu::net {
namespace {

class TlsPairTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* base = std::getenv("VGPU_TEST_TMP");
    dir_ = std::string(base != nullptr ? base : "/tmp") + "/tls-pair-" + std::to_string(getpid());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A self-signed certificate and its key as <name>.crt and <name>.key.
  void MakePair(const std::string& name) {
    const std::string cmd = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=" + name +
                            " -keyout " + Path(name + ".key") + " -out " + Path(name + ".crt") +
                            " >/dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  std::string dir_;
};

TEST_F(TlsPairTest, AMatchingPairIsOk) {
  MakePair("a");
  EXPECT_TRUE(CheckTlsPair(Path("a.crt"), Path("a.key")).ok());
}

TEST_F(TlsPairTest, AKeyOfAnotherCertificateIsRefusedByName) {
  MakePair("a");
  MakePair("b");
  const Status s = CheckTlsPair(Path("a.crt"), Path("b.key"));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("is not the private key of certificate " + Path("a.crt")),
            std::string::npos)
      << s.message();
}

TEST_F(TlsPairTest, MissingOrGarbledFilesSayWhichFile) {
  MakePair("a");
  std::ofstream(Path("junk")) << "not pem\n";
  const Status missing = CheckTlsPair(Path("none.crt"), Path("a.key"));
  EXPECT_NE(missing.message().find(Path("none.crt")), std::string::npos) << missing.message();
  const Status bad_cert = CheckTlsPair(Path("junk"), Path("a.key"));
  EXPECT_NE(bad_cert.message().find("is not a PEM certificate"), std::string::npos)
      << bad_cert.message();
  const Status bad_key = CheckTlsPair(Path("a.crt"), Path("junk"));
  EXPECT_NE(bad_key.message().find("is not an unencrypted PEM private key"), std::string::npos)
      << bad_key.message();
}

}  // namespace
}  // namespace vgpu::net
