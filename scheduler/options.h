#pragma once

// The flags of vgpu-scheduler that decide who can reach what (docs/security.md): its listeners,
// and what the admission webhook lets pods set of vgpu's own. main.cpp registers the others.

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/sched/control_overrides.h"
#include "core/sched/webhook_mutation.h"
#include "scheduler/server.h"

namespace vgpu::scheduler {

struct AccessFlags {
  // The binary's defaults: the extender (verbs for loopback peers only) and /healthz, /readyz on
  // every interface for the kubelet's probes; metrics on :9395 (HAMi's); no TLS listener.
  ServerOptions server = [] {
    ServerOptions o;
    o.http_bind = ":8888";
    return o;
  }();
  std::string hami_http_bind;  // HAMi's --http_bind: everything on one listener
  std::vector<std::string> allow_overrides;
  std::vector<std::string> override_namespaces;
  // <namespace>:<name> of the ServiceAccounts that may change vgpu's own pod annotations on
  // UPDATE (the scheduler's and the device plugin's).
  std::vector<std::string> system_accounts;
  std::string webhook_mode = "enforce";  // --webhook-mode: enforce or audit
};

// Registers the flags (each with --help text) on `app`, writing into `flags`.
void AddAccessFlags(CLI::App& app, AccessFlags& flags);

struct Access {
  ServerOptions server;
  sched::OverridePolicy overrides;
  std::vector<std::string> system_users;  // usernames of --webhook-system-accounts
  sched::WebhookMode webhook_mode = sched::WebhookMode::kEnforce;
};

// Combines and checks the flags: malformed addresses, a TLS listener without its files, override
// names the webhook does not guard, malformed accounts and an unknown webhook mode are errors
// naming the flag.
Result<Access> ResolveAccess(const AccessFlags& flags);

}  // namespace vgpu::scheduler
