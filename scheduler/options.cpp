#include "scheduler/options.h"

#include "core/base/daemon_flags.h"
#include "core/base/listen_address.h"

namespace vgpu::scheduler {

void AddAccessFlags(CLI::App& app, AccessFlags& f) {
  app.add_option("--http-bind", f.server.http_bind,
                 "address of the extender and plain-HTTP webhook; empty disables")
      ->capture_default_str();
  app.add_option("--https-bind", f.server.https_bind,
                 "address of the HTTPS webhook (needs --tls-cert/--tls-key)");
  app.add_option("--tls-cert,--cert_file", f.server.tls_cert,
                 "PEM certificate of the HTTPS listener, reloaded when it changes");
  app.add_option("--tls-key,--key_file", f.server.tls_key,
                 "PEM private key of the HTTPS listener, reloaded when it changes");
  // HAMi's spelling: one listener for everything, over TLS when a certificate is given.
  app.add_option("--http_bind", f.hami_http_bind,
                 "HAMi's chart: the extender and the webhook on this address, over TLS when "
                 "--cert_file/--key_file are given (then --http-bind is off)");
  app.add_flag("--extender-allow-remote", f.server.extender_allow_remote,
               "answer /filter, /prioritize and /bind from any address, not only from "
               "kube-scheduler on this host (127.0.0.1, ::1); for a kube-scheduler elsewhere");
  daemon::AddMetricsBindFlag(app, f.server.metrics_bind, "address of /metrics; empty disables");
  app.add_option("--webhook-allow-overrides", f.allow_overrides,
                 "comma list of vgpu's own pod annotations and enforcement variables "
                 "(CUDA_DISABLE_CONTROL, ...) the webhook lets pods set; * = all "
                 "(docs/security.md)")
      ->delimiter(',');
  app.add_option("--webhook-override-namespaces", f.override_namespaces,
                 "comma list of namespaces whose pods may set all of them")
      ->delimiter(',');
  app.add_option("--webhook-system-accounts", f.system_accounts,
                 "comma list of <namespace>:<name> ServiceAccounts that may change vgpu's own pod "
                 "annotations after creation (the scheduler's and the device plugin's); the "
                 "webhook refuses such pod updates from anyone else (docs/security.md)")
      ->delimiter(',');
  app.add_option("--webhook-mode", f.webhook_mode,
                 "enforce: refuse pods the webhook's checks refuse; audit: admit the ones whose "
                 "values, variables or quota it refuses (the scheduler and the device plugin "
                 "still hold them), with a warning kubectl prints, a log line and "
                 "vgpu_scheduler_webhook_would_deny_total; for finding such workloads during a "
                 "migration from HAMi (docs/security.md)")
      ->capture_default_str();
}

Result<Access> ResolveAccess(const AccessFlags& f) {
  Access a;
  a.server = f.server;
  if (!f.hami_http_bind.empty()) {
    if (!f.server.tls_cert.empty() || !f.server.tls_key.empty()) {
      a.server.https_bind = f.hami_http_bind;
      a.server.extender_over_https = true;
      a.server.http_bind = "";
    } else {
      a.server.http_bind = f.hami_http_bind;
    }
  }
  const std::pair<const char*, const std::string*> binds[] = {
      {f.hami_http_bind.empty() ? "--http-bind" : "--http_bind", &a.server.http_bind},
      {f.hami_http_bind.empty() ? "--https-bind" : "--http_bind", &a.server.https_bind},
      {"--metrics-bind", &a.server.metrics_bind}};
  for (const auto& [flag, text] : binds) {
    if (text->empty()) continue;
    if (Result<ListenAddress> at = ParseListenAddress(*text); !at.ok()) {
      return at.status().WithContext(flag);
    }
  }
  if (!a.server.https_bind.empty() && (a.server.tls_cert.empty() || a.server.tls_key.empty())) {
    return InvalidArgument("--https-bind " + a.server.https_bind +
                           " needs --tls-cert and --tls-key (the webhook is served over TLS)");
  }
  a.overrides.allowed = f.allow_overrides;
  VGPU_RETURN_IF_ERROR(
      sched::ValidateOverridePolicy(a.overrides).WithContext("--webhook-allow-overrides"));
  a.overrides.namespaces = f.override_namespaces;
  VGPU_RETURN_IF_ERROR(sched::ValidateOverridePolicy({.namespaces = f.override_namespaces})
                           .WithContext("--webhook-override-namespaces"));
  for (const std::string& account : f.system_accounts) {
    Result<std::string> user = sched::ServiceAccountUser(account);
    if (!user.ok()) return user.status().WithContext("--webhook-system-accounts");
    a.system_users.push_back(std::move(*user));
  }
  Result<sched::WebhookMode> mode = sched::ParseWebhookMode(f.webhook_mode);
  if (!mode.ok()) return mode.status().WithContext("--webhook-mode");
  a.webhook_mode = *mode;
  return a;
}

}  // namespace vgpu::scheduler
