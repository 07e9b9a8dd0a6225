#include "scheduler/options.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/base/listen_address.h"
#include "core/sched/control_overrides.h"
#include "core/sched/webhook_mutation.h"

namespace vgpu::scheduler {
namespace {

// Parses `args` (in the order given) as vgpu-scheduler's access flags.
Result<Access> Parse(std::vector<std::string> args) {
  CLI::App app;
  AccessFlags flags;
  AddAccessFlags(app, flags);
  std::reverse(args.begin(), args.end());  // CLI11 takes them in reverse order
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return InvalidArgument(std::string("parse: ") + e.what());
  }
  return ResolveAccess(flags);
}

// What docs/security.md says each listener gets, from the flags the binary and the charts pass.
TEST(SchedulerOptions, ListenersFromFlags) {
  struct Case {
    const char* name;
    std::vector<std::string> args;
    const char* http;
    const char* https;
    bool extender_over_https;
    bool allow_remote;
    const char* metrics;
  };
  const Case cases[] = {
      // The binary's defaults: extender (loopback peers only) and probes on :8888, no TLS,
      // metrics on HAMi's :9395.
      {"defaults", {}, ":8888", "", false, false, "0.0.0.0:9395"},
      // vgpu's chart.
      {"vgpu chart",
       {"--http-bind=0.0.0.0:8888", "--https-bind=0.0.0.0:8443", "--tls-cert=/tls/tls.crt",
        "--tls-key=/tls/tls.key", "--metrics-bind=:9395"},
       "0.0.0.0:8888",
       "0.0.0.0:8443",
       false,
       false,
       ":9395"},
      {"vgpu chart, kube-scheduler elsewhere",
       {"--http-bind=0.0.0.0:8888", "--extender-allow-remote"},
       "0.0.0.0:8888",
       "",
       false,
       true,
       "0.0.0.0:9395"},
      // HAMi's chart: everything on one TLS listener (the extender too, still loopback-only).
      {"HAMi chart",
       {"--http_bind=0.0.0.0:443", "--cert_file=/tls/tls.crt", "--key_file=/tls/tls.key",
        "--metrics-bind-address=:9395"},
       "",
       "0.0.0.0:443",
       true,
       false,
       ":9395"},
      {"HAMi spelling without TLS",
       {"--http_bind=127.0.0.1:8080"},
       "127.0.0.1:8080",
       "",
       false,
       false,
       "0.0.0.0:9395"},
      // The e2e harness (tests/e2e/lib/vgpu.sh).
      {"e2e",
       {"--http-bind", "127.0.0.1:18888", "--https-bind", "127.0.0.1:18443", "--tls-cert", "c",
        "--tls-key", "k", "--metrics-bind", "127.0.0.1:19395"},
       "127.0.0.1:18888",
       "127.0.0.1:18443",
       false,
       false,
       "127.0.0.1:19395"},
      // An empty value turns a listener off (as separate arguments: CLI11 reads "--flag=" as a
      // flag whose value is the next argument).
      {"listeners off", {"--http-bind", "", "--metrics-bind", ""}, "", "", false, false, ""},
  };
  for (const Case& c : cases) {
    Result<Access> a = Parse(c.args);
    ASSERT_TRUE(a.ok()) << c.name << ": " << a.status().ToString();
    EXPECT_EQ(a->server.http_bind, c.http) << c.name;
    EXPECT_EQ(a->server.https_bind, c.https) << c.name;
    EXPECT_EQ(a->server.extender_over_https, c.extender_over_https) << c.name;
    EXPECT_EQ(a->server.extender_allow_remote, c.allow_remote) << c.name;
    EXPECT_EQ(a->server.metrics_bind, c.metrics) << c.name;
    EXPECT_TRUE(a->overrides.allowed.empty() && a->overrides.namespaces.empty()) << c.name;
  }
  // ":8888" is every interface: the kubelet's probes reach /healthz and /readyz on the pod IP.
  Result<ListenAddress> at = ParseListenAddress(AccessFlags{}.server.http_bind);
  ASSERT_TRUE(at.ok());
  EXPECT_EQ(at->host, "0.0.0.0");
  EXPECT_EQ(at->port, 8888);
}

TEST(SchedulerOptions, WebhookOverrides) {
  Result<Access> a = Parse({"--webhook-allow-overrides=CUDA_DISABLE_CONTROL,hami.io/bind-phase",
                            "--webhook-allow-overrides", "CUDA_DEVICE_SM_LIMIT",
                            "--webhook-override-namespaces=admins,ml-platform"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->overrides.allowed,
            (std::vector<std::string>{"CUDA_DISABLE_CONTROL", "hami.io/bind-phase",
                                      "CUDA_DEVICE_SM_LIMIT"}));
  EXPECT_EQ(a->overrides.namespaces, (std::vector<std::string>{"admins", "ml-platform"}));
  Result<Access> gaps = Parse({"--webhook-override-namespaces=a,,b"});
  ASSERT_TRUE(gaps.ok()) << gaps.status().ToString();
  EXPECT_EQ(gaps->overrides.namespaces, (std::vector<std::string>{"a", "b"}));
  Result<Access> all = Parse({"--webhook-allow-overrides=*"});
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(all->overrides.allowed, std::vector<std::string>{"*"});

  // The denial message tells admins the flags parsed here.
  const nlohmann::json pod = {
      {"metadata", {{"namespace", "team"}, {"annotations", {{"hami.io/bind-phase", "x"}}}}}};
  const std::string hint = sched::OverrideDenial(pod, {}, "", {});
  for (const char* flag :
       {"--webhook-allow-overrides=hami.io/bind-phase", "--webhook-override-namespaces=team"}) {
    ASSERT_NE(hint.find(flag), std::string::npos) << hint;
    EXPECT_TRUE(Parse({flag}).ok()) << flag;
  }
}

TEST(SchedulerOptions, BadFlagsAreErrorsNamingTheFlag) {
  const struct {
    std::vector<std::string> args;
    const char* want;
  } cases[] = {
      {{"--webhook-allow-overrides=CUDA_DISABLE_CONTRL"},
       "--webhook-allow-overrides: "
       "'CUDA_DISABLE_CONTRL' is not a name"},
      {{"--https-bind=:8443"}, "--https-bind :8443 needs --tls-cert and --tls-key"},
      {{"--http-bind=host:x"}, "--http-bind: listen address"},
      {{"--metrics-bind=:99999"}, "--metrics-bind: listen address"},
      {{"--http_bind=:x"}, "--http_bind: listen address"},
      {{"--webhook-system-accounts=vgpu/vgpu-scheduler"},
       "--webhook-system-accounts: 'vgpu/vgpu-scheduler' is not a ServiceAccount as "
       "<namespace>:<name>"},
  };
  for (const auto& c : cases) {
    Result<Access> a = Parse(c.args);
    ASSERT_FALSE(a.ok()) << c.args[0];
    EXPECT_NE(a.status().message().find(c.want), std::string::npos) << a.status().message();
  }
}

// The accounts that may change vgpu's own pod annotations on UPDATE, as kubectl spells them
// (<namespace>:<name>), become the usernames the API server sends in request.userInfo.
TEST(SchedulerOptions, WebhookSystemAccounts) {
  Result<Access> a =
      Parse({"--webhook-system-accounts=vgpu:vgpu-scheduler,vgpu:vgpu-device-plugin"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->system_users,
            (std::vector<std::string>{"system:serviceaccount:vgpu:vgpu-scheduler",
                                      "system:serviceaccount:vgpu:vgpu-device-plugin"}));
  Result<Access> none = Parse({});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->system_users.empty());
  // The denial without accounts names this flag.
  const std::string hint = sched::UpdateDenial(
      {}, {{"metadata", {{"annotations", {{"hami.io/bind-phase", "x"}}}}}}, "u", {}, {});
  EXPECT_NE(hint.find("--webhook-system-accounts="), std::string::npos) << hint;
}

// Audit mode is an explicit choice: the default enforces, and a misspelt mode stops the scheduler
// at start (a typo must not leave the cluster in either mode by accident).
TEST(SchedulerOptions, WebhookModeEnforcesUnlessAuditIsNamed) {
  Result<Access> none = Parse({});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->webhook_mode, sched::WebhookMode::kEnforce);
  Result<Access> audit = Parse({"--webhook-mode=audit"});
  ASSERT_TRUE(audit.ok()) << audit.status().ToString();
  EXPECT_EQ(audit->webhook_mode, sched::WebhookMode::kAudit);
  Result<Access> enforce = Parse({"--webhook-mode=enforce"});
  ASSERT_TRUE(enforce.ok());
  EXPECT_EQ(enforce->webhook_mode, sched::WebhookMode::kEnforce);
  // An empty value is CLI11's to refuse, naming the flag.
  Result<Access> empty = Parse({"--webhook-mode="});
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("--webhook-mode"), std::string::npos);
  for (const char* bad : {"--webhook-mode=warn", "--webhook-mode=Audit"}) {
    Result<Access> a = Parse({bad});
    ASSERT_FALSE(a.ok()) << bad;
    EXPECT_NE(a.status().message().find("--webhook-mode"), std::string::npos)
        << a.status().message();
    EXPECT_NE(a.status().message().find("enforce"), std::string::npos) << a.status().message();
  }
}

}  // namespace
}  // namespace vgpu::scheduler
