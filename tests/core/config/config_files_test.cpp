#include "core/config/config_files.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace vgpu::config {
namespace {

class ConfigFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/vgpu-config-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  std::string dir_;
};

TEST_F(ConfigFilesTest, LoadsBothFiles) {
  auto dc = LoadDeviceConfigFile(Write("device-config.yaml", "nvidia:\n  deviceSplitCount: 3\n"));
  ASSERT_TRUE(dc.ok()) << dc.status().ToString();
  EXPECT_EQ(dc->device_split_count, 3);
  auto nc = LoadNodeConfigFile(Write("config.json", R"({"nodeconfig":[{"name":"n1"}]})"));
  ASSERT_TRUE(nc.ok());
  EXPECT_EQ(nc->at(0).name, "n1");
}

TEST_F(ConfigFilesTest, ErrorsNameThePath) {
  auto missing = LoadDeviceConfigFile(dir_ + "/nope.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("nope.yaml"), std::string::npos);
  std::string bad = Write("bad.json", "{\"nodeconfig\":7}");
  auto r = LoadNodeConfigFile(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(bad + ": config.json: nodeconfig"), std::string::npos);
}

}  // namespace
}  // namespace vgpu::config
