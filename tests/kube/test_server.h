#pragma once

// A simulated API server plus a client pointed at it, for the kube client tests.

#include <gtest/gtest.h>

#include "kube/client.h"
#include "sim/apiserver/api_server.h"

namespace vgpu::kube {

class ClientFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = sim::ApiServer::Start();
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(server).value();
    ClientConfig config;
    config.server = server_->url();
    config.qps = 0;  // tests count requests, they do not wait
    auto client = Client::New(config);
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(client).value();
  }
  void TearDown() override {
    client_.reset();
    server_.reset();
  }

  static nlohmann::json Pod(const std::string& name, const std::string& node = "",
                            nlohmann::json labels = nlohmann::json::object()) {
    nlohmann::json p = {
        {"metadata", {{"name", name}, {"namespace", "default"}, {"labels", labels}}},
        {"spec", {{"containers", {{{"name", "main"}, {"image", "x"}}}}}},
        {"status", {{"phase", "Pending"}}}};
    if (!node.empty()) p["spec"]["nodeName"] = node;
    return p;
  }

  std::unique_ptr<sim::ApiServer> server_;
  std::unique_ptr<Client> client_;
};

}  // namespace vgpu::kube
