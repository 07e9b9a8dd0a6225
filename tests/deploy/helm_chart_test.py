#!/usr/bin/env python3
"""Tests of the Helm chart charts/vgpu: helm lint, then `helm template` for several Kubernetes
versions and values files, checked document by document.

    helm_chart_test.py CASE     (CASE: one of CASES below; `--list` prints them)

What is checked: every document is a YAML mapping with apiVersion, kind and a name; the kinds the
case expects are there (and no others); the kube-scheduler configuration's apiVersion matches the
cluster version; the resource names, scheduler name, policies and ports of the values reach the
device plugin's and the scheduler's arguments, the device config and kube-scheduler's extender;
each flag passed to vgpu-scheduler, vgpu-device-plugin and vgpu-monitor exists in that binary's
CLI11 option parsing (read from the sources); the generated webhook certificate verifies against
the CA the webhook trusts; cert-manager mode renders Issuer + Certificate instead of a Secret;
ServiceMonitors render only when enabled and the cluster serves them; bad values fail with a message
naming the key.

helm: $VGPU_HELM, else /opt/vgpu-tools/bin/helm (scripts/install-deps.sh installs it there), else
`helm` on PATH. Without helm or PyYAML the test reports itself skipped (exit 77), as the metrics
tests do without promtool.
"""

import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
CHART = os.environ.get("VGPU_CHART") or os.path.join(ROOT, "charts", "vgpu")  # a copy, to test the test
TESTDATA = os.path.join(HERE, "testdata")
HAMI_VALUES = os.path.join(TESTDATA, "hami-values.yaml")
HAMI_V26_VALUES = os.path.join(TESTDATA, "hami-v2.6-values.yaml")
# HAMi v2.10.0's complete values.yaml, less the image overrides (as docs/install.md's migration says).
HAMI_FULL_VALUES = os.path.join(TESTDATA, "hami-v2.10.0-values.yaml")
SERVICE_MONITOR_API = "monitoring.coreos.com/v1/ServiceMonitor"

try:
    import yaml
except ImportError:
    yaml = None


def find_helm():
    for candidate in (os.environ.get("VGPU_HELM"), "/opt/vgpu-tools/bin/helm", shutil.which("helm")):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


HELM = find_helm()


class Failures:
    def __init__(self):
        self.items = []

    def check(self, cond, message):
        if not cond:
            self.items.append(message)
        return cond

    def equal(self, got, want, what):
        return self.check(got == want, f"{what}: got {got!r}, want {want!r}")


F = Failures()


# ---------------------------------------------------------------------------------------------
# Rendering and lookups


def helm(*args, expect_fail=False):
    p = subprocess.run([HELM, *args], capture_output=True, text=True)
    if expect_fail:
        return p
    if p.returncode != 0:
        raise SystemExit(f"FAIL: helm {' '.join(args)} exited {p.returncode}:\n{p.stderr}")
    return p


def render(kube="1.30.0", values=(), sets=(), api_versions=(), namespace="kube-system", release="vgpu",
           show_only=None):
    args = ["template", release, CHART, "--namespace", namespace, "--kube-version", kube]
    for v in values:
        args += ["-f", v]
    for s in sets:
        args += ["--set", s]
    for a in api_versions:
        args += ["--api-versions", a]
    if show_only:
        args += ["--show-only", show_only]
    out = helm(*args).stdout
    docs = []
    for i, d in enumerate(yaml.safe_load_all(out)):
        if d is None:
            continue
        if not isinstance(d, dict):
            F.check(False, f"document {i} is not a mapping: {d!r:.80}")
            continue
        docs.append(d)
    for d in docs:
        what = f"{d.get('kind')}/{(d.get('metadata') or {}).get('name')}"
        F.check(isinstance(d.get("apiVersion"), str) and d["apiVersion"], f"{what}: no apiVersion")
        F.check(isinstance(d.get("kind"), str) and d["kind"], f"{what}: no kind")
        F.check(isinstance((d.get("metadata") or {}).get("name"), str), f"{what}: no metadata.name")
    for d in docs:
        check_security_contexts(d)
    keys = [(d.get("kind"), d["metadata"].get("name"), d["metadata"].get("namespace")) for d in docs]
    dups = {k for k in keys if keys.count(k) > 1}
    F.check(not dups, f"duplicate objects: {sorted(dups)}")
    return docs


def check_security_contexts(d):
    """What Kubernetes' API validation refuses in a container's securityContext (ValidateSecurityContext):
    allowPrivilegeEscalation false together with privileged true or with capabilities.add CAP_SYS_ADMIN."""
    spec = ((d.get("spec") or {}).get("template") or {}).get("spec") or {}
    for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        sc = c.get("securityContext") or {}
        if sc.get("allowPrivilegeEscalation") is not False:
            continue
        what = f"{d['kind']}/{d['metadata'].get('name')} container {c.get('name')}"
        F.check(sc.get("privileged") is not True,
                f"{what}: privileged: true with allowPrivilegeEscalation: false (Kubernetes refuses it): {sc}")
        F.check("CAP_SYS_ADMIN" not in ((sc.get("capabilities") or {}).get("add") or []),
                f"{what}: allowPrivilegeEscalation: false with capabilities.add CAP_SYS_ADMIN (Kubernetes refuses it)")


def notes(values=(), sets=()):
    """NOTES.txt as `helm install --dry-run=client` prints it (helm template leaves it out); no cluster."""
    args = ["install", "vgpu", CHART, "--namespace", "kube-system", "--dry-run=client"]
    for v in values:
        args += ["-f", v]
    for s in sets:
        args += ["--set", s]
    env = dict(os.environ, KUBECONFIG=os.path.join(tempfile.gettempdir(), "vgpu-helm-test-no-cluster"))
    p = subprocess.run([HELM, *args], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise SystemExit(f"FAIL: helm {' '.join(args)} exited {p.returncode}:\n{p.stderr}")
    return p.stdout.split("\nNOTES:\n", 1)[-1] if "\nNOTES:\n" in p.stdout else ""


def render_fails(sets=(), values=(), kube="1.30.0", values_text=None):
    args = ["template", "vgpu", CHART, "--namespace", "kube-system", "--kube-version", kube]
    for v in values:
        args += ["-f", v]
    for s in sets:
        args += ["--set", s]
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
        if values_text is not None:
            f.write(values_text)
            f.flush()
            args += ["-f", f.name]
        return helm(*args, expect_fail=True)


def kinds(docs):
    counts = {}
    for d in docs:
        counts[d["kind"]] = counts.get(d["kind"], 0) + 1
    return counts


def by_kind(docs, kind):
    return [d for d in docs if d["kind"] == kind]


def one(docs, kind, name_suffix=""):
    found = [d for d in by_kind(docs, kind) if d["metadata"]["name"].endswith(name_suffix)]
    if len(found) != 1:
        raise SystemExit(f"FAIL: want one {kind} named *{name_suffix}, found "
                         f"{[d['metadata']['name'] for d in found]}")
    return found[0]


def pod_spec(workload):
    return workload["spec"]["template"]["spec"]


def container(workload, name):
    for c in pod_spec(workload)["containers"]:
        if c["name"] == name:
            return c
    raise SystemExit(f"FAIL: {workload['metadata']['name']} has no container {name}")


def has_container(workload, name):
    return any(c["name"] == name for c in pod_spec(workload)["containers"])


def flag_values(args, flag):
    """Values of --flag=value in args (also `--flag value`)."""
    out = []
    for i, a in enumerate(args):
        if a.startswith(flag + "="):
            out.append(a[len(flag) + 1:])
        elif a == flag and i + 1 < len(args) and not args[i + 1].startswith("-"):
            out.append(args[i + 1])
    return out


def flag_value(args, flag, what):
    v = flag_values(args, flag)
    F.check(len(v) == 1, f"{what}: want one {flag}, args {args}")
    return v[0] if v else None


def volume_for_mount(workload, c, mount_path):
    for m in c.get("volumeMounts", []):
        if m["mountPath"] == mount_path:
            for v in pod_spec(workload).get("volumes", []):
                if v["name"] == m["name"]:
                    return v
    return None


def file_volume(workload, c, file_path):
    """The volume that holds file_path in container c (mounted at its directory)."""
    return volume_for_mount(workload, c, os.path.dirname(file_path)), os.path.basename(file_path)


def configmap_data(docs, name):
    for d in by_kind(docs, "ConfigMap"):
        if d["metadata"]["name"] == name:
            return d.get("data") or {}
    return None


def env_of(c):
    return {e["name"]: e.get("value") for e in c.get("env", []) if "value" in e}


# ---------------------------------------------------------------------------------------------
# The binaries' flags, read from their CLI11 option parsing

FLAG_SOURCES = {
    "vgpu-scheduler": ["scheduler/main.cpp", "scheduler/options.cpp"],
    "vgpu-device-plugin": ["deviceplugin/options.cpp"],
    "vgpu-monitor": ["monitor/main.cpp"],
}
# The flags every daemon shares are registered by the helpers of this file (daemon::Add...).
COMMON_FLAG_SOURCE = "core/base/daemon_flags.cpp"


def registered_flags(text):
    names = set()
    for m in re.finditer(r'add_(?:option|flag)\(\s*"([^"]+)"', text):
        for n in m.group(1).split(","):
            names.add(n.strip())
    return names


def common_flag_helpers():
    """{helper name: flags it registers}, from the helpers' definitions."""
    with open(os.path.join(ROOT, COMMON_FLAG_SOURCE)) as f:
        text = f.read()
    return {m.group(1): registered_flags(m.group(2))
            for m in re.finditer(r'^void (Add\w+)\(.*?\{(.*?)^\}', text, re.M | re.S)}


def binary_flags(binary):
    names = set()
    helpers = common_flag_helpers()
    for rel in FLAG_SOURCES[binary]:
        with open(os.path.join(ROOT, rel)) as f:
            text = f.read()
        names |= registered_flags(text)
        for m in re.finditer(r'daemon::(Add\w+)\(', text):
            names |= helpers.get(m.group(1), set())
    if len(names) < 5:
        raise SystemExit(f"FAIL: found only {sorted(names)} as flags of {binary} in {FLAG_SOURCES[binary]}")
    return names


def check_flags_exist(binary, args, what):
    known = binary_flags(binary)
    for a in args:
        if not a.startswith("-"):
            continue
        name = a.split("=", 1)[0]
        if not name.startswith("--") and len(name) > 2:
            name = "-" + name  # Go spelling (-metrics-bind-address): core/base/daemon_flags.h
        F.check(name in known, f"{what}: {binary} has no flag {name} (argument {a!r}; its flags: "
                               f"{sorted(known)})")


# ---------------------------------------------------------------------------------------------
# Checks shared by the cases

DEFAULT_NAMES = {
    "resourceName": "nvidia.com/gpu",
    "resourceMem": "nvidia.com/gpumem",
    "resourceMemPercentage": "nvidia.com/gpumem-percentage",
    "resourceCores": "nvidia.com/gpucores",
    "resourcePriority": "nvidia.com/priority",
}


def expected_config_api(kube):
    minor = int(re.match(r"v?1\.(\d+)", kube).group(1))
    if minor >= 25:
        return "kubescheduler.config.k8s.io/v1"
    if minor >= 23:
        return "kubescheduler.config.k8s.io/v1beta3"
    if minor == 22:
        return "kubescheduler.config.k8s.io/v1beta2"
    return "kubescheduler.config.k8s.io/v1beta1"


def check_kinds(docs, want, what):
    F.equal(kinds(docs), want, f"{what}: kinds")


def scheduler_config(docs, fullname="vgpu"):
    data = configmap_data(docs, f"{fullname}-scheduler")
    if not F.check(data is not None and "config.yaml" in data, "no kube-scheduler ConfigMap with config.yaml"):
        return {}
    cfg = yaml.safe_load(data["config.yaml"])
    F.check(isinstance(cfg, dict), "kube-scheduler config.yaml is not a mapping")
    return cfg


def check_system(docs, kube, names, scheduler_name, what, namespace="kube-system", fullname="vgpu", replicas=1):
    """Everything that must hold whatever the values: flags exist, files and ports line up."""
    for d in docs:
        ns = d["metadata"].get("namespace")
        if d["kind"] in ("ClusterRole", "ClusterRoleBinding", "MutatingWebhookConfiguration"):
            F.check(ns is None, f"{what}: cluster-scoped {d['kind']}/{d['metadata']['name']} has a namespace")
        elif d["kind"] == "RoleBinding" and d["metadata"]["name"].endswith("-auth-reader"):
            F.equal(ns, "kube-system", f"{what}: {d['metadata']['name']} namespace")
        else:
            F.equal(ns, namespace, f"{what}: {d['kind']}/{d['metadata']['name']} namespace")

    dep = one(docs, "Deployment", "-scheduler")
    F.equal(dep["spec"]["replicas"], replicas, f"{what}: scheduler replicas")
    sched = container(dep, "vgpu-scheduler")
    sargs = sched["command"][1:]
    F.equal(sched["command"][0], "vgpu-scheduler", f"{what}: scheduler command")
    check_flags_exist("vgpu-scheduler", sargs, what)
    F.equal(flag_value(sargs, "--scheduler-name", what), scheduler_name, f"{what}: --scheduler-name")
    sports = {p["name"]: p["containerPort"] for p in sched.get("ports", [])}

    # The device config the scheduler reads carries the resource names.
    dc_path = flag_value(sargs, "--device-config", what)
    vol, fname = file_volume(dep, sched, dc_path)
    dc = None
    if F.check(vol is not None and "configMap" in vol, f"{what}: --device-config {dc_path} not on a ConfigMap volume"):
        data = configmap_data(docs, vol["configMap"]["name"])
        if F.check(data is not None and fname in data, f"{what}: ConfigMap {vol['configMap']['name']} lacks {fname}"):
            dc = yaml.safe_load(data[fname])["nvidia"]
            F.equal(dc.get("resourceCountName"), names["resourceName"], f"{what}: device config resourceCountName")
            F.equal(dc.get("resourceMemoryName"), names["resourceMem"], f"{what}: device config resourceMemoryName")
            F.equal(dc.get("resourceMemoryPercentageName"), names["resourceMemPercentage"],
                    f"{what}: device config resourceMemoryPercentageName")
            F.equal(dc.get("resourceCoreName"), names["resourceCores"], f"{what}: device config resourceCoreName")
            F.equal(dc.get("resourcePriorityName"), names["resourcePriority"],
                    f"{what}: device config resourcePriorityName")

    # kube-scheduler: config API of the cluster, profile, extender on the scheduler's plain port.
    if has_container(dep, "kube-scheduler"):
        ks = container(dep, "kube-scheduler")
        F.equal(ks["command"][0], "kube-scheduler", f"{what}: kube-scheduler command")
        cfg_args = [a for a in ks["command"] if a.startswith("--config")]
        F.equal(cfg_args, ["--config=/config/config.yaml"], f"{what}: kube-scheduler --config")
        vol = volume_for_mount(dep, ks, "/config")
        F.check(vol is not None and vol.get("configMap", {}).get("name") == f"{fullname}-scheduler",
                f"{what}: kube-scheduler /config is not ConfigMap {fullname}-scheduler")
        cfg = scheduler_config(docs, fullname)
        F.equal(cfg.get("apiVersion"), expected_config_api(kube), f"{what}: kube-scheduler config apiVersion")
        F.equal(cfg.get("kind"), "KubeSchedulerConfiguration", f"{what}: kube-scheduler config kind")
        F.equal([p.get("schedulerName") for p in cfg.get("profiles", [])], [scheduler_name],
                f"{what}: kube-scheduler profiles")
        ext = (cfg.get("extenders") or [{}])[0]
        F.equal(len(cfg.get("extenders") or []), 1, f"{what}: extenders")
        http_bind = flag_value(sargs, "--http-bind", what) or ""
        port = http_bind.rsplit(":", 1)[-1]
        F.equal(ext.get("urlPrefix"), f"http://127.0.0.1:{port}", f"{what}: extender urlPrefix")
        for verb in ("filter", "prioritize", "bind"):
            F.equal(ext.get(verb + "Verb"), verb, f"{what}: extender {verb}Verb")
        F.equal(ext.get("nodeCacheCapable"), True, f"{what}: extender nodeCacheCapable")
        F.check(isinstance(ext.get("weight"), int) and ext["weight"] > 0, f"{what}: extender weight {ext.get('weight')}")
        F.equal(sorted(r["name"] for r in ext.get("managedResources", [])), sorted(names.values()),
                f"{what}: extender managedResources")
        F.check(all(r.get("ignoredByScheduler") is True for r in ext.get("managedResources", [])),
                f"{what}: managedResources not all ignoredByScheduler")
        F.equal(cfg.get("leaderElection", {}).get("resourceName"), scheduler_name, f"{what}: lease name")
        # 1.19-1.21: no kube-scheduler preemption for the profile (1.20.2 panics in it for vGPU pods)
        # unless scheduler.kubeScheduler.preemption says otherwise (case kube-scheduler-preemption).
        minor = int(kube.split(".")[1])
        post = (((cfg.get("profiles") or [{}])[0].get("plugins") or {}).get("postFilter") or {})
        off = [p.get("name") for p in post.get("disabled", [])]
        F.equal(off, ["DefaultPreemption"] if minor < 22 else [], f"{what}: postFilter plugins disabled")
        F.equal(ext.get("preemptVerb"), "preempt", f"{what}: extender preemptVerb")

    # Metrics: the Service's monitor port reaches the --metrics-bind port.
    metrics_port = int((flag_value(sargs, "--metrics-bind", what) or "0").rsplit(":", 1)[-1])
    F.equal(sports.get("metrics"), metrics_port, f"{what}: scheduler metrics containerPort")
    svc = one(docs, "Service", "-scheduler")
    F.equal(svc["spec"]["selector"], dep["spec"]["selector"]["matchLabels"], f"{what}: scheduler Service selector")
    ports = {p["name"]: p for p in svc["spec"]["ports"]}
    F.check("monitor" in ports and ports["monitor"]["targetPort"] == "metrics", f"{what}: Service monitor port")

    # Webhook: Service port -> named https port -> --https-bind; the TLS files come from the Secret.
    hooks = by_kind(docs, "MutatingWebhookConfiguration")
    if hooks:
        wh = hooks[0]["webhooks"][0]
        https_bind = flag_value(sargs, "--https-bind", what) or ""
        F.equal(sports.get("https"), int(https_bind.rsplit(":", 1)[-1] or 0), f"{what}: https containerPort")
        cc = wh["clientConfig"]
        if "service" in cc:
            F.equal(cc["service"]["name"], svc["metadata"]["name"], f"{what}: webhook service name")
            F.equal(cc["service"]["namespace"], namespace, f"{what}: webhook service namespace")
            F.equal(cc["service"]["path"], "/webhook", f"{what}: webhook path")
            F.check("http" in ports and ports["http"]["port"] == cc["service"]["port"]
                    and ports["http"]["targetPort"] == "https",
                    f"{what}: webhook port {cc['service']['port']} is not the Service's https port {ports.get('http')}")
        for flag in ("--tls-cert", "--tls-key"):
            path = flag_value(sargs, flag, what)
            vol, _ = file_volume(dep, sched, path)
            F.check(vol is not None and vol.get("secret", {}).get("secretName") == f"{fullname}-scheduler-tls",
                    f"{what}: {flag} {path} is not in Secret {fullname}-scheduler-tls")
    else:
        F.check(not flag_values(sargs, "--https-bind"), f"{what}: --https-bind without a webhook")

    # Device plugin: resource name, config files, host paths.
    dss = {d["metadata"]["name"]: d for d in by_kind(docs, "DaemonSet")}
    dp_ds = dss.get(f"{fullname}-device-plugin")
    if dp_ds:
        dp = container(dp_ds, "device-plugin")
        F.equal(dp["command"][0], "vgpu-device-plugin", f"{what}: device plugin command")
        dargs = dp["command"][1:]
        check_flags_exist("vgpu-device-plugin", dargs, what)
        F.equal(flag_value(dargs, "--resource-name", what), names["resourceName"], f"{what}: --resource-name")
        dc_path = flag_value(dargs, "--device-config", what)
        vol, _ = file_volume(dp_ds, dp, dc_path)
        F.check(vol is not None and vol.get("configMap", {}).get("name") == f"{fullname}-scheduler-device",
                f"{what}: device plugin --device-config is not the scheduler's device ConfigMap")
        nc_path = flag_value(dargs, "--node-config", what)
        vol, _ = file_volume(dp_ds, dp, nc_path)
        F.check(vol is not None and "configMap" in vol, f"{what}: --node-config {nc_path} not on a ConfigMap volume")
        hook = flag_value(dargs, "--hook-path", what)
        vol = volume_for_mount(dp_ds, dp, f"{hook}/vgpu")
        F.check(vol is not None and vol.get("hostPath", {}).get("path") == f"{hook}/vgpu",
                f"{what}: <hook>/vgpu is not the same host path in the plugin ({vol})")
        lock = flag_value(dargs, "--lock-dir", what)
        vol = volume_for_mount(dp_ds, dp, lock)
        F.check(lock == "/tmp/vgpulock" and vol is not None and vol.get("hostPath", {}).get("path") == lock,
                f"{what}: /tmp/vgpulock not mounted from the host ({lock}, {vol})")
        plugin_path = flag_value(dargs, "--device-plugin-path", what)
        vol = volume_for_mount(dp_ds, dp, plugin_path)
        F.check(vol is not None and vol.get("hostPath", {}).get("path") == plugin_path,
                f"{what}: kubelet's device-plugins directory not mounted at {plugin_path}")
        pr_socket = flag_value(dargs, "--pod-resources-socket", what)
        if pr_socket:
            pr_dir = os.path.dirname(pr_socket)
            vol = volume_for_mount(dp_ds, dp, pr_dir)
            F.check(vol is not None and vol.get("hostPath", {}).get("path") == pr_dir,
                    f"{what}: kubelet's pod-resources directory not mounted at {pr_dir}")
        F.check(flag_values(dargs, "--libvgpu") != [], f"{what}: device plugin does not install libvgpu.so")
        F.check(any(e["name"] == "NODE_NAME" and e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "spec.nodeName"
                    for e in dp.get("env", [])), f"{what}: device plugin NODE_NAME")
        F.equal(pod_spec(dp_ds)["serviceAccountName"],
                f"{fullname}-device-plugin", f"{what}: device plugin ServiceAccount")
        F.equal(dp_ds["spec"]["template"]["metadata"]["labels"].get("hami.io/webhook"), "ignore",
                f"{what}: device plugin pods not excluded from the webhook")

    mon_ds = dss.get(f"{fullname}-monitor")
    if mon_ds:
        mon = container(mon_ds, "vgpu-monitor")
        F.equal(mon["command"][0], "vgpu-monitor", f"{what}: monitor command")
        margs = mon["command"][1:]
        check_flags_exist("vgpu-monitor", margs, what)
        F.equal(pod_spec(mon_ds).get("hostPID"), True, f"{what}: monitor hostPID")
        F.equal({p["name"]: p["containerPort"] for p in mon.get("ports", [])}.get("metrics"), 9394,
                f"{what}: monitor port")
        hook_env = env_of(mon).get("HOOK_PATH")
        vol = volume_for_mount(mon_ds, mon, f"{hook_env}/containers")
        F.check(vol is not None and vol.get("hostPath", {}).get("path") == f"{hook_env}/containers",
                f"{what}: monitor's {hook_env}/containers is not the host's")
        msvc = one(docs, "Service", "-device-plugin-monitor")
        F.equal(msvc["spec"]["selector"], mon_ds["spec"]["selector"]["matchLabels"], f"{what}: monitor Service selector")
        F.equal([p["targetPort"] for p in msvc["spec"]["ports"]], ["metrics"], f"{what}: monitor Service targetPort")
        if dp_ds:
            F.equal(pod_spec(mon_ds).get("nodeSelector"), pod_spec(dp_ds).get("nodeSelector"),
                    f"{what}: monitor and device plugin node selectors")

    # ServiceAccounts referenced exist, and every ClusterRoleBinding's subject is one of them.
    sas = {d["metadata"]["name"] for d in by_kind(docs, "ServiceAccount")}
    for w in by_kind(docs, "Deployment") + by_kind(docs, "DaemonSet"):
        F.check(pod_spec(w)["serviceAccountName"] in sas, f"{what}: {w['metadata']['name']} uses a missing ServiceAccount")
    for b in by_kind(docs, "ClusterRoleBinding") + by_kind(docs, "RoleBinding"):
        for s in b["subjects"]:
            F.check(s["name"] in sas and s["namespace"] == namespace, f"{what}: {b['metadata']['name']} subject {s}")
    return dc


def openssl_verify(ca_pem, crt_pem, dns_name=None, ip=None):
    if not shutil.which("openssl"):
        print("NOTE: openssl not installed; certificate not verified")
        return
    with tempfile.TemporaryDirectory() as d:
        ca, crt = os.path.join(d, "ca.crt"), os.path.join(d, "tls.crt")
        with open(ca, "wb") as f:
            f.write(ca_pem)
        with open(crt, "wb") as f:
            f.write(crt_pem)
        args = ["openssl", "verify", "-CAfile", ca, "-purpose", "sslserver"]
        if dns_name:
            args += ["-verify_hostname", dns_name]
        if ip:
            args += ["-verify_ip", ip]
        p = subprocess.run(args + [crt], capture_output=True, text=True)
        F.check(p.returncode == 0, f"openssl verify ({dns_name or ip}): {p.stdout}{p.stderr}")


# ---------------------------------------------------------------------------------------------
# Cases

DEFAULT_KINDS = {
    "ServiceAccount": 3, "ClusterRole": 3, "ClusterRoleBinding": 5, "RoleBinding": 1, "ConfigMap": 3,
    "Secret": 1, "Service": 2, "DaemonSet": 2, "Deployment": 1, "MutatingWebhookConfiguration": 1,
}


def case_lint():
    p = helm("lint", CHART, "--strict", expect_fail=True)
    F.check(p.returncode == 0, f"helm lint --strict:\n{p.stdout}{p.stderr}")
    for vf in (HAMI_VALUES, HAMI_V26_VALUES, HAMI_FULL_VALUES):
        p = helm("lint", CHART, "-f", vf, expect_fail=True)
        F.check(p.returncode == 0, f"helm lint -f {os.path.basename(vf)}:\n{p.stdout}{p.stderr}")


def case_default(kube):
    docs = render(kube=kube)
    check_kinds(docs, DEFAULT_KINDS, f"default {kube}")
    dc = check_system(docs, kube, DEFAULT_NAMES, "hami-scheduler", f"default {kube}")
    F.equal(dc, {"resourceCountName": "nvidia.com/gpu", "resourceMemoryName": "nvidia.com/gpumem",
                 "resourceMemoryPercentageName": "nvidia.com/gpumem-percentage",
                 "resourceCoreName": "nvidia.com/gpucores", "resourcePriorityName": "nvidia.com/priority",
                 "defaultMemory": 0, "defaultCores": 0, "defaultGPUNum": 1, "deviceSplitCount": 10,
                 "deviceMemoryScaling": 1, "deviceCoreScaling": 1, "disableCoreLimit": False,
                 "gpuCorePolicy": "default"}, f"default {kube}: device-config.yaml")
    dep = one(docs, "Deployment", "-scheduler")
    ks = container(dep, "kube-scheduler")
    version = re.match(r"v?(\d+\.\d+\.\d+)", kube).group(1)
    F.equal(ks["image"], f"registry.k8s.io/kube-scheduler:v{version}", f"default {kube}: kube-scheduler image")
    sargs = container(dep, "vgpu-scheduler")["command"][1:]
    F.equal(flag_value(sargs, "--node-scheduler-policy", "default"), "binpack", "default: node policy")
    F.equal(flag_value(sargs, "--gpu-scheduler-policy", "default"), "spread", "default: gpu policy")
    # A combined GPU policy (HAMi's comma-separated list) reaches the flag whole.
    combined = render(kube=kube, sets=["scheduler.defaultSchedulerPolicy.gpuSchedulerPolicy=binpack\\,mutex"])
    cargs = container(one(combined, "Deployment", "-scheduler"), "vgpu-scheduler")["command"][1:]
    F.equal(flag_value(cargs, "--gpu-scheduler-policy", "combined"), "binpack,mutex", "combined gpu policy")
    F.check("--legacy-metrics" not in sargs, "default: --legacy-metrics")
    F.check(not flag_values(sargs, "--node-lock-expiry"), "default: --node-lock-expiry passed")
    # docs/security.md: the verbs answer kube-scheduler beside them only; the webhook lets pods set
    # none of vgpu's own names.
    F.equal(flag_value(sargs, "--http-bind", "default"), "0.0.0.0:8888", "default: --http-bind")
    for flag in ("--extender-allow-remote", "--webhook-allow-overrides", "--webhook-override-namespaces"):
        F.check(not any(a.split("=", 1)[0] == flag for a in sargs), f"default: {flag} passed: {sargs}")
    # localhost/: what scripts/build-images.sh names the images it builds for import, never a
    # Docker Hub name (docker.io/vgpu/... is a namespace this project does not own).
    F.equal(container(dep, "vgpu-scheduler")["image"], "localhost/vgpu/scheduler:0.1.0", "default: scheduler image")
    dss = {d["metadata"]["name"]: d for d in by_kind(docs, "DaemonSet")}
    F.equal(container(dss["vgpu-device-plugin"], "device-plugin")["image"], "localhost/vgpu/device-plugin:0.1.0",
            "default: device plugin image")
    F.equal(container(dss["vgpu-monitor"], "vgpu-monitor")["image"], "localhost/vgpu/monitor:0.1.0",
            "default: monitor image")
    F.equal(pod_spec(dss["vgpu-device-plugin"]).get("nodeSelector"), {"gpu": "on"}, "default: node selector")
    nc = json.loads(configmap_data(docs, "vgpu-device-plugin")["config.json"])
    F.equal(nc, {"nodeconfig": []}, "default: config.json")
    cfg = scheduler_config(docs)
    F.equal(cfg.get("leaderElection", {}).get("leaderElect"), False, "default: leaderElect")

    # Webhook certificate: generated, trusted by the webhook, valid for the Service's DNS name.
    secret = one(docs, "Secret", "-scheduler-tls")
    F.equal(secret["type"], "kubernetes.io/tls", "default: Secret type")
    wh = one(docs, "MutatingWebhookConfiguration", "-webhook")["webhooks"][0]
    F.equal(wh["clientConfig"].get("caBundle"), secret["data"]["ca.crt"], "default: webhook caBundle = Secret ca.crt")
    F.equal(wh["failurePolicy"], "Ignore", "default: failurePolicy")
    F.equal(wh["name"], "vgpu.hami.io", "default: webhook name")
    F.equal(wh["objectSelector"]["matchExpressions"][0], {"key": "hami.io/webhook", "operator": "NotIn", "values": ["ignore"]},
            "default: objectSelector")
    # issue 42: UPDATE too, so that only the scheduler's and the device plugin's ServiceAccounts
    # may change the annotations Allocate trusts between the bind and Allocate.
    F.equal(wh["rules"][0]["operations"], ["CREATE", "UPDATE"], "default: webhook operations")
    F.equal(flag_value(sargs, "--webhook-system-accounts", "default"),
            "kube-system:vgpu-scheduler,kube-system:vgpu-device-plugin", "default: --webhook-system-accounts")
    F.equal(pod_spec(dep)["serviceAccountName"], "vgpu-scheduler", "default: scheduler ServiceAccount")
    F.equal(pod_spec(dss["vgpu-device-plugin"])["serviceAccountName"], "vgpu-device-plugin",
            "default: device plugin ServiceAccount")
    openssl_verify(base64.b64decode(secret["data"]["ca.crt"]), base64.b64decode(secret["data"]["tls.crt"]),
                   dns_name="vgpu-scheduler.kube-system.svc")
    svc = one(docs, "Service", "-scheduler")
    F.equal(svc["spec"]["type"], "NodePort", "default: scheduler Service type")
    F.equal(sorted((p["name"], p.get("nodePort")) for p in svc["spec"]["ports"]),
            [("http", 31998), ("monitor", 31993)], "default: scheduler NodePorts")
    msvc = one(docs, "Service", "-device-plugin-monitor")
    F.equal([(p["port"], p.get("nodePort")) for p in msvc["spec"]["ports"]], [(31992, 31992)], "default: monitor NodePort")


def case_hami(kube):
    what = f"hami-values {kube}"
    docs = render(kube=kube, values=[HAMI_VALUES], api_versions=[SERVICE_MONITOR_API])
    want = dict(DEFAULT_KINDS, ServiceMonitor=2)
    check_kinds(docs, want, what)
    names = {
        "resourceName": "example.com/vgpu", "resourceMem": "example.com/vgpu-memory",
        "resourceMemPercentage": "example.com/vgpu-memory-percentage",
        "resourceCores": "example.com/vgpu-cores", "resourcePriority": "example.com/vgpu-priority",
    }
    dc = check_system(docs, kube, names, "team-gpu-scheduler", what)
    for key, want_v in (("defaultMemory", 2048), ("defaultCores", 10), ("deviceSplitCount", 4),
                        ("deviceMemoryScaling", 1.5), ("disableCoreLimit", True), ("gpuCorePolicy", "force")):
        F.equal((dc or {}).get(key), want_v, f"{what}: device config {key}")
    dep = one(docs, "Deployment", "-scheduler")
    sched = container(dep, "vgpu-scheduler")
    sargs = sched["command"][1:]
    F.equal(flag_value(sargs, "--node-scheduler-policy", what), "spread", f"{what}: node policy")
    F.equal(flag_value(sargs, "--gpu-scheduler-policy", what), "binpack", f"{what}: gpu policy")
    F.equal(flag_value(sargs, "--metrics-bind", what), ":9495", f"{what}: --metrics-bind")
    F.equal(flag_value(sargs, "--node-lock-expiry", what), "300", f"{what}: nodeLockExpire 5m")
    F.equal(flag_value(sargs, "--https-bind", what), "0.0.0.0:9443", f"{what}: --https-bind")
    F.check("--legacy-metrics" in sargs, f"{what}: legacyMetrics not passed to the scheduler")
    F.equal([a for a in sargs if a.startswith(("-v", "--v", "--debug"))], ["-v=4"],
            f"{what}: HAMi's -v=4 reaches vgpu-scheduler as written, --debug is dropped")
    ks = container(dep, "kube-scheduler")
    F.equal(ks["image"], "registry.cn-hangzhou.aliyuncs.com/google_containers/kube-scheduler:v1.27.16",
            f"{what}: kube-scheduler image")
    F.equal(ks["imagePullPolicy"], "Always", f"{what}: kube-scheduler pull policy")
    F.check("-v=4" in ks["command"], f"{what}: extraNewArgs not passed to kube-scheduler")
    F.check(not any("policy-config-file" in a for a in ks["command"]), f"{what}: HAMi's pre-1.22 extraArgs used")
    cfg = scheduler_config(docs)
    F.equal(cfg.get("leaderElection", {}).get("leaderElect"), True, f"{what}: leaderElect")
    F.equal(cfg.get("leaderElection", {}).get("resourceNamespace"), "kube-system", f"{what}: lease namespace")
    F.equal(pod_spec(dep).get("nodeSelector"), {"node-role.kubernetes.io/control-plane": ""}, f"{what}: scheduler nodeSelector")
    F.equal(pod_spec(dep).get("tolerations", [{}])[0].get("key"), "node-role.kubernetes.io/control-plane",
            f"{what}: scheduler tolerations")
    F.equal(dep["metadata"]["labels"].get("team"), "ml-platform", f"{what}: global.labels")

    dss = {d["metadata"]["name"]: d for d in by_kind(docs, "DaemonSet")}
    dp = container(dss["vgpu-device-plugin"], "device-plugin")
    dargs = dp["command"][1:]
    F.equal(flag_value(dargs, "--libcuda-log-level", what), "2", f"{what}: libCudaLogLevel")
    F.check("-v=4" in dargs, f"{what}: HAMi's -v=4 not passed: {dargs}")
    for name, ds in dss.items():
        F.equal(pod_spec(ds).get("nodeSelector"), {"nvidia.com/gpu.present": "true"}, f"{what}: {name} nodeSelector")
        F.equal(pod_spec(ds).get("tolerations", [{}])[0].get("key"), "nvidia.com/gpu", f"{what}: {name} tolerations")
    for w in by_kind(docs, "DaemonSet") + [dep]:
        F.equal([s["name"] for s in pod_spec(w).get("imagePullSecrets", [])], ["regcred"],
                f"{what}: {w['metadata']['name']} imagePullSecrets")
    mon = container(dss["vgpu-monitor"], "vgpu-monitor")
    F.check("-v=4" in mon["command"], f"{what}: monitor extraArgs")
    F.check("--legacy-metrics" in mon["command"], f"{what}: legacyMetrics not passed to the monitor")
    F.equal(env_of(mon).get("HAMI_RESYNC_INTERVAL"), "10m", f"{what}: resyncInterval")
    nc = json.loads(configmap_data(docs, "vgpu-device-plugin")["config.json"])
    F.equal([n["name"] for n in nc["nodeconfig"]], ["gpu-node-a"], f"{what}: nodeConfiguration")

    wh = one(docs, "MutatingWebhookConfiguration", "-webhook")["webhooks"][0]
    F.equal(wh["failurePolicy"], "Fail", f"{what}: failurePolicy")
    F.equal(wh["reinvocationPolicy"], "IfNeeded", f"{what}: reinvocationPolicy")
    F.equal(wh["clientConfig"]["service"]["port"], 8443, f"{what}: webhook port")
    F.check({"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", "istio-system"]}
            in wh["namespaceSelector"]["matchExpressions"], f"{what}: whitelistNamespaces")
    svc = one(docs, "Service", "-scheduler")
    F.equal(svc["spec"]["type"], "ClusterIP", f"{what}: scheduler Service type")
    F.check(all("nodePort" not in p for p in svc["spec"]["ports"]), f"{what}: nodePort on a ClusterIP Service")
    sms = {d["metadata"]["name"]: d for d in by_kind(docs, "ServiceMonitor")}
    for sm in sms.values():
        port = sm["spec"]["endpoints"][0]["port"]
        target = [s for s in by_kind(docs, "Service")
                  if all(s["metadata"]["labels"].get(k) == v for k, v in sm["spec"]["selector"]["matchLabels"].items())]
        F.check(len(target) == 1 and port in [p["name"] for p in target[0]["spec"]["ports"]],
                f"{what}: ServiceMonitor {sm['metadata']['name']} selects {[t['metadata']['name'] for t in target]} port {port}")


def case_hami_full(kube):
    """HAMi v2.10.0's whole values.yaml (images removed, as the migration steps say): renders, every
    container passes Kubernetes' securityContext validation (render() checks it), and the HAMi
    values arrive where vgpu has them."""
    what = f"hami-v2.10.0 values {kube}"
    docs = render(kube=kube, values=[HAMI_FULL_VALUES])
    check_kinds(docs, DEFAULT_KINDS, what)
    dc = check_system(docs, kube, DEFAULT_NAMES, "hami-scheduler", what)
    F.equal((dc or {}).get("deviceSplitCount"), 10, f"{what}: deviceSplitCount")
    # HAMi's enableNumaTopology: false goes where HAMi's chart writes it, for the device plugin.
    F.equal((dc or {}).get("enableNumaTopology"), False, f"{what}: enableNumaTopology")
    dep = one(docs, "Deployment", "-scheduler")
    sargs = container(dep, "vgpu-scheduler")["command"][1:]
    F.equal(flag_value(sargs, "--node-lock-expiry", what), "300", f"{what}: nodeLockExpire 5m")
    F.equal([a for a in sargs if a.startswith(("-v", "--v", "--debug"))], ["-v=4"], f"{what}: scheduler -v / --debug")
    F.equal(container(dep, "kube-scheduler")["image"].rsplit(":", 1)[0],
            "registry.cn-hangzhou.aliyuncs.com/google_containers/kube-scheduler", f"{what}: kube-scheduler image")
    dss = {d["metadata"]["name"]: d for d in by_kind(docs, "DaemonSet")}
    dargs = container(dss["vgpu-device-plugin"], "device-plugin")["command"][1:]
    F.check("-v=4" in dargs, f"{what}: device plugin -v=4 dropped: {dargs}")
    F.equal(pod_spec(dss["vgpu-device-plugin"]).get("hostPID"), True, f"{what}: device plugin hostPID")
    mon = container(dss["vgpu-monitor"], "vgpu-monitor")
    # The issue-46 failure: HAMi's monitor context (allowPrivilegeEscalation: false, capabilities)
    # merged with the chart's privileged: true. Privileged wins; the contradiction is left out.
    F.equal(mon.get("securityContext"), {"privileged": True, "capabilities": {"drop": ["ALL"], "add": ["SYS_ADMIN"]}},
            f"{what}: monitor securityContext")
    F.equal(container(dss["vgpu-device-plugin"], "device-plugin").get("securityContext"),
            {"privileged": True, "allowPrivilegeEscalation": True,
             "capabilities": {"drop": ["ALL"], "add": ["SYS_ADMIN"]}}, f"{what}: device plugin securityContext")
    # What the install prints about the HAMi keys vgpu honours differently.
    text = notes(values=[HAMI_FULL_VALUES])
    for words in ("devicePlugin.monitor.securityContext: allowPrivilegeEscalation",
                  "scheduler.extender.extraArgs: --debug is dropped"):
        F.check(words in text, f"{what}: NOTES lack {words!r}:\n{text}")
    for key in ("migStrategy", "deviceListStrategy", "passDeviceSpecsEnabled", "nvidiaDriverRoot",
                "gpuOperatorToolkitReady", "preConfiguredDeviceMemory", "createRuntimeClass",
                "enableNumaTopology"):
        F.check(key not in text, f"{what}: NOTES warn about {key} at HAMi's default:\n{text}")


def case_hami_keys():
    """Each HAMi key vgpu does not implement as HAMi does: refused with what to do, or reported after
    the install (NOTES.txt), or supported; nothing is dropped without a word."""
    # Refused: values that would change which GPUs or how much memory a container gets.
    for sets, words in (
        (["devicePlugin.migStrategy=mixed"], "devicePlugin.migStrategy \"mixed\": vgpu shares whole GPUs"),
        (["devicePlugin.migStrategy=single"], "set it to none"),
        (["devicePlugin.deviceListStrategy=volume-mounts"], "devicePlugin.deviceListStrategy \"volume-mounts\""),
        (["devicePlugin.deviceListStrategy=cdi-cri"], "set it to envvar"),
        (["devicePlugin.preConfiguredDeviceMemory=131072"], "devicePlugin.preConfiguredDeviceMemory 131072"),
        (["devicePlugin.createRuntimeClass=true"], "devicePlugin.runtimeClassName is empty"),
        (["devicePlugin.monitor.securityContext.privileged=false",
          "devicePlugin.monitor.securityContext.allowPrivilegeEscalation=false",
          "devicePlugin.monitor.securityContext.capabilities.add={CAP_SYS_ADMIN}"],
         "devicePlugin.monitor.securityContext: Kubernetes refuses allowPrivilegeEscalation: false together with"),
    ):
        p = render_fails(sets=sets)
        F.check(p.returncode != 0 and words in p.stderr,
                f"values {sets}: want a failure with {words!r}; exit {p.returncode}, stderr {p.stderr.strip()[:300]!r}")
    # HAMi's defaults of the refused keys pass.
    render(sets=["devicePlugin.migStrategy=none", "devicePlugin.deviceListStrategy=envvar",
                 "devicePlugin.preConfiguredDeviceMemory=0", "devicePlugin.createRuntimeClass=false"])

    # Supported: createRuntimeClass renders the RuntimeClass the pods name (v1beta1 before 1.20).
    for kube, api in (("1.19.16", "node.k8s.io/v1beta1"), ("1.20.2", "node.k8s.io/v1"), ("1.30.0", "node.k8s.io/v1")):
        docs = render(kube=kube, sets=["devicePlugin.createRuntimeClass=true", "devicePlugin.runtimeClassName=nvidia"])
        rc = one(docs, "RuntimeClass")
        F.equal((rc["apiVersion"], rc["metadata"]["name"], rc.get("handler")), (api, "nvidia", "nvidia"),
                f"createRuntimeClass {kube}")
        for ds in by_kind(docs, "DaemonSet"):
            F.equal(pod_spec(ds).get("runtimeClassName"), "nvidia", f"createRuntimeClass: {ds['metadata']['name']}")
    F.equal(kinds(render(sets=["devicePlugin.runtimeClassName=nvidia"])).get("RuntimeClass", 0), 0,
            "RuntimeClass rendered without createRuntimeClass")

    # Supported: -v=N reaches every daemon as written (each reads Go's spelling,
    # core/base/daemon_flags.h); only --debug is taken out.
    docs = render(sets=["devicePlugin.extraArgs={-v=3}", "scheduler.extender.extraArgs={--debug,-v=2}",
                        "devicePlugin.monitor.extraArgs={-v=4}"])
    dss = {d["metadata"]["name"]: d for d in by_kind(docs, "DaemonSet")}
    for args, want, who in ((container(dss["vgpu-device-plugin"], "device-plugin")["command"], "-v=3", "device plugin"),
                            (container(one(docs, "Deployment", "-scheduler"), "vgpu-scheduler")["command"], "-v=2", "scheduler"),
                            (container(dss["vgpu-monitor"], "vgpu-monitor")["command"], "-v=4", "monitor")):
        F.equal([a for a in args[1:] if a.lstrip("-").startswith(("v", "debug"))], [want], f"-v: {who} {args}")

    # Supported: enableNumaTopology goes into device-config.yaml (as in HAMi's chart), which the
    # device plugin reads: false = no NUMA node to kubelet. Unset: no key, vgpu's default (on).
    for sets, want in (([], None), (["devicePlugin.enableNumaTopology=false"], False),
                       (["devicePlugin.enableNumaTopology=true"], True)):
        docs = render(sets=sets)
        ds = one(docs, "DaemonSet", "-device-plugin")
        dp = container(ds, "device-plugin")
        vol, fname = file_volume(ds, dp, flag_value(dp["command"][1:], "--device-config", "enableNumaTopology"))
        if F.check(vol is not None and "configMap" in vol, f"values {sets}: the device plugin's --device-config"):
            dc = yaml.safe_load(configmap_data(docs, vol["configMap"]["name"])[fname])["nvidia"]
            F.equal(dc.get("enableNumaTopology"), want, f"values {sets}: device-config.yaml enableNumaTopology")
        F.check("WARNING" not in notes(sets=sets), f"values {sets}: NOTES warn")

    # Reported after the install: vgpu runs differently but safely.
    F.equal(notes().strip().count("WARNING"), 0, "the chart's own defaults: NOTES warn")
    for sets, words in (
        (["devicePlugin.passDeviceSpecsEnabled=true"], "devicePlugin.passDeviceSpecsEnabled is not used"),
        (["devicePlugin.nvidiaDriverRoot=/run/nvidia/driver"], "devicePlugin.nvidiaDriverRoot (/run/nvidia/driver) is not used"),
        (["devicePlugin.nvidiaHookPath=/usr/bin/nvidia-cdi-hook"], "devicePlugin.nvidiaHookPath"),
        (["devicePlugin.gdsEnabled=true"], "devicePlugin.gdsEnabled (true) is not used"),
        (["devicePlugin.gpuOperatorToolkitReady.enabled=true"], "devicePlugin.gpuOperatorToolkitReady.enabled"),
        (["devicePlugin.monitor.securityContext.allowPrivilegeEscalation=false"],
         "devicePlugin.monitor.securityContext: allowPrivilegeEscalation: false"),
        (["devicePlugin.extraArgs={--debug}"], "devicePlugin.extraArgs: --debug is dropped"),
        (["scheduler.extender.extraArgs={--debug,-v=4}"], "scheduler.extender.extraArgs: --debug is dropped"),
    ):
        text = notes(sets=sets)
        F.check("WARNING" in text and words in text, f"values {sets}: NOTES lack {words!r}:\n{text}")
    for sets in (["devicePlugin.passDeviceSpecsEnabled=false"],
                 ["devicePlugin.gpuOperatorToolkitReady.enabled=false"]):
        F.check("WARNING" not in notes(sets=sets), f"values {sets}: NOTES warn")


def case_hami_v26():
    what = "hami-v2.6-values"
    docs = render(kube="1.20.15", values=[HAMI_V26_VALUES])
    check_kinds(docs, DEFAULT_KINDS, what)
    check_system(docs, "1.20.15", DEFAULT_NAMES, "hami-scheduler", what)
    dep = one(docs, "Deployment", "-scheduler")
    ks = container(dep, "kube-scheduler")
    F.equal(ks["image"], "mirror.example.com/kube-scheduler:v1.20.15", f"{what}: kube-scheduler image")
    F.equal(ks["imagePullPolicy"], "Always", f"{what}: kube-scheduler pull policy")
    for w in by_kind(docs, "DaemonSet") + [dep]:
        F.equal([s["name"] for s in pod_spec(w).get("imagePullSecrets", [])], ["oldcred"],
                f"{what}: {w['metadata']['name']} imagePullSecrets")
    for ds in by_kind(docs, "DaemonSet"):
        F.equal(pod_spec(ds).get("nodeSelector"), {"accelerator": "nvidia"}, f"{what}: nvidianodeSelector")


def case_config_api():
    for kube in ("1.19.0", "1.20.2", "1.21.14", "1.22.17", "1.23.0", "1.24.17", "1.25.0", "1.28.3", "1.30.0",
                 "1.34.1", "v1.20.4-eks-6b7464", "v1.27.3+k3s1"):
        docs = render(kube=kube, show_only="templates/scheduler/configmap.yaml")
        cfg = yaml.safe_load(docs[0]["data"]["config.yaml"]) if docs else {}
        F.equal(cfg.get("apiVersion"), expected_config_api(kube), f"Kubernetes {kube}: kube-scheduler config apiVersion")
        dep = render(kube=kube, show_only="templates/scheduler/deployment.yaml")[0]
        version = re.match(r"v?(\d+\.\d+\.\d+)", kube).group(1)
        F.equal(container(dep, "kube-scheduler")["image"], f"registry.k8s.io/kube-scheduler:v{version}",
                f"Kubernetes {kube}: kube-scheduler image")
    p = render_fails(kube="1.18.20")
    F.check(p.returncode != 0, "Kubernetes 1.18 rendered; want a failure")


def case_kube_scheduler_preemption():
    """scheduler.kubeScheduler.preemption: auto turns kube-scheduler's DefaultPreemption off for the
    profile before 1.22 (stock 1.20.2 panics in it for vGPU pods), true and false hold on every
    version (true: a kube-scheduler with the fixes, as the e2e cluster's); the preempt verb stays."""
    for kube in ("1.19.0", "1.20.2", "1.21.14", "1.22.17", "1.30.0"):
        minor = int(kube.split(".")[1])
        for value, want_on in ((None, minor >= 22), ("auto", minor >= 22), ("true", True), ("false", False)):
            sets = [] if value is None else [f"scheduler.kubeScheduler.preemption={value}"]
            what = f"Kubernetes {kube}, preemption {value or 'unset'}"
            docs = render(kube=kube, sets=sets, show_only="templates/scheduler/configmap.yaml")
            cfg = yaml.safe_load(docs[0]["data"]["config.yaml"]) if docs else {}
            profile = (cfg.get("profiles") or [{}])[0]
            post = ((profile.get("plugins") or {}).get("postFilter") or {})
            off = [p.get("name") for p in post.get("disabled") or []]
            F.equal(off, [] if want_on else ["DefaultPreemption"], f"{what}: postFilter plugins disabled")
            F.equal((cfg.get("extenders") or [{}])[0].get("preemptVerb"), "preempt", f"{what}: preemptVerb")
    # A values file's YAML boolean is the same as the string.
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
        f.write("scheduler:\n  kubeScheduler:\n    preemption: true\n")
        f.flush()
        docs = render(kube="1.20.2", values=[f.name], show_only="templates/scheduler/configmap.yaml")
        cfg = yaml.safe_load(docs[0]["data"]["config.yaml"])
        F.check("plugins" not in cfg["profiles"][0], f"preemption: true (YAML bool) on 1.20: {cfg['profiles'][0]}")


def case_certmanager():
    what = "cert-manager"
    docs = render(sets=["scheduler.certManager.enabled=true"])
    want = dict(DEFAULT_KINDS, Issuer=1, Certificate=1)
    del want["Secret"]
    check_kinds(docs, want, what)
    check_system(docs, "1.30.0", DEFAULT_NAMES, "hami-scheduler", what)
    cert = one(docs, "Certificate", "-serving-cert")
    issuer = one(docs, "Issuer", "-selfsigned-issuer")
    F.equal(cert["apiVersion"], "cert-manager.io/v1", f"{what}: Certificate apiVersion")
    F.equal(cert["spec"]["issuerRef"], {"kind": "Issuer", "name": issuer["metadata"]["name"]}, f"{what}: issuerRef")
    F.equal(cert["spec"]["secretName"], "vgpu-scheduler-tls", f"{what}: Certificate secretName")
    F.check("vgpu-scheduler.kube-system.svc" in cert["spec"]["dnsNames"], f"{what}: dnsNames {cert['spec']['dnsNames']}")
    hook = one(docs, "MutatingWebhookConfiguration", "-webhook")
    F.equal(hook["metadata"].get("annotations", {}).get("cert-manager.io/inject-ca-from"),
            f"kube-system/{cert['metadata']['name']}", f"{what}: inject-ca-from")
    F.check("caBundle" not in hook["webhooks"][0]["clientConfig"], f"{what}: caBundle rendered")


def case_service_monitor():
    def count(sets, apis):
        return kinds(render(sets=sets, api_versions=apis)).get("ServiceMonitor", 0)

    F.equal(count([], []), 0, "ServiceMonitors, prometheus.enabled=false")
    F.equal(count([], [SERVICE_MONITOR_API]), 0, "ServiceMonitors, prometheus.enabled=false, CRD served")
    F.equal(count(["prometheus.enabled=true"], []), 0, "ServiceMonitors, enabled, CRD not served")
    F.equal(count(["prometheus.enabled=true"], [SERVICE_MONITOR_API]), 2, "ServiceMonitors, enabled, CRD served")
    F.equal(count(["prometheus.enabled=true", "devicePlugin.monitor.enabled=false"], [SERVICE_MONITOR_API]), 1,
            "ServiceMonitors, enabled, monitor off")


def case_images():
    """Where the vgpu images come from: localhost by default (imported), global.imageRegistry for
    all (kube-scheduler's too), a registry or a registry-qualified repository per image; a name
    without a registry host fails (case bad-values)."""
    what = "images"

    def images(docs):
        dep = one(docs, "Deployment", "-scheduler")
        dss = {d["metadata"]["name"]: d for d in by_kind(docs, "DaemonSet")}
        return [container(dep, "vgpu-scheduler")["image"], container(dep, "kube-scheduler")["image"],
                container(dss["vgpu-device-plugin"], "device-plugin")["image"],
                container(dss["vgpu-monitor"], "vgpu-monitor")["image"]]

    F.equal(images(render(sets=["global.imageRegistry=registry.example.com:5000"])),
            ["registry.example.com:5000/vgpu/scheduler:0.1.0", "registry.example.com:5000/kube-scheduler:v1.30.0",
             "registry.example.com:5000/vgpu/device-plugin:0.1.0", "registry.example.com:5000/vgpu/monitor:0.1.0"],
            f"{what}: global.imageRegistry")
    # Registries emptied, the global one given: every image takes it.
    F.equal(images(render(sets=["scheduler.extender.image.registry=", "devicePlugin.image.registry=",
                                "devicePlugin.monitor.image.registry=", "global.imageRegistry=mirror.example.com"]))[0],
            "mirror.example.com/vgpu/scheduler:0.1.0", f"{what}: global.imageRegistry over empty registries")
    F.equal(images(render(sets=["devicePlugin.image.registry=", "devicePlugin.image.repository=docker.io/myorg/dp",
                                "devicePlugin.image.tag=1.2"]))[2],
            "docker.io/myorg/dp:1.2", f"{what}: registry in the repository")
    F.equal(images(render(sets=["devicePlugin.monitor.image.registry=reg.example.com"]))[3],
            "reg.example.com/vgpu/monitor:0.1.0", f"{what}: one image's registry")
    # The e2e install's values (tests/e2e/lib/chart.sh) over HAMi's: the imported names.
    e2e_values = os.path.join(ROOT, "tests", "e2e", "testdata", "chart-values.yaml")
    F.equal(images(render(kube="1.20.2", values=[HAMI_FULL_VALUES, e2e_values])),
            ["localhost/vgpu/scheduler:0.1.0", "registry.k8s.io/kube-scheduler:v1.20.2",
             "localhost/vgpu/device-plugin:0.1.0", "localhost/vgpu/monitor:0.1.0"], f"{what}: e2e values")


def case_variants():
    # The webhook off: no certificate, no HTTPS listener, no webhook port on the Service.
    what = "webhook off"
    docs = render(sets=["scheduler.admissionWebhook.enabled=false"])
    want = dict(DEFAULT_KINDS)
    del want["Secret"], want["MutatingWebhookConfiguration"]
    check_kinds(docs, want, what)
    check_system(docs, "1.30.0", DEFAULT_NAMES, "hami-scheduler", what)
    dep = one(docs, "Deployment", "-scheduler")
    F.check(not any(v["name"] == "tls" for v in pod_spec(dep)["volumes"]), f"{what}: tls volume")
    F.equal([p["name"] for p in one(docs, "Service", "-scheduler")["spec"]["ports"]], ["monitor"], f"{what}: Service ports")

    # Leader election: two replicas, vgpu-scheduler's own Lease following kube-scheduler's.
    what = "leader election"
    docs = render(sets=["scheduler.leaderElect=true", "scheduler.replicas=2"])
    check_system(docs, "1.30.0", DEFAULT_NAMES, "hami-scheduler", what, replicas=2)
    dep = one(docs, "Deployment", "-scheduler")
    F.equal(dep["spec"]["strategy"]["type"], "RollingUpdate", f"{what}: strategy")
    sargs = container(dep, "vgpu-scheduler")["command"][1:]
    check_flags_exist("vgpu-scheduler", sargs, what)
    F.equal(flag_value(sargs, "--leader-elect", what), "true", f"{what}: --leader-elect")
    lease = flag_value(sargs, "--leader-elect-resource-name", what)
    F.check(lease not in (None, "hami-scheduler"), f"{what}: vgpu-scheduler's Lease must not be kube-scheduler's ({lease})")
    F.equal(flag_value(sargs, "--leader-elect-kube-scheduler-lease", what), "hami-scheduler", f"{what}: follows kube-scheduler's Lease")
    # One timing for both elections, so that the pair fails over together.
    cfg = scheduler_config(docs)["leaderElection"]
    for key, flag in (("leaseDuration", "--leader-elect-lease-duration"),
                      ("renewDeadline", "--leader-elect-renew-deadline"),
                      ("retryPeriod", "--leader-elect-retry-period")):
        F.equal(flag_value(sargs, flag, what), cfg.get(key), f"{what}: {flag} vs kube-scheduler's {key}")
    F.equal(cfg.get("leaseDuration"), "10s", f"{what}: default leaseDuration")
    F.equal(container(dep, "vgpu-scheduler").get("securityContext"), None, f"{what}: non-root at port 8443")
    # HAMi's webhook port 443: that container runs as root (the image's user cannot bind it).
    dep = one(render(sets=["scheduler.service.httpTargetPort=443"]), "Deployment", "-scheduler")
    F.equal(container(dep, "vgpu-scheduler").get("securityContext", {}).get("runAsUser"), 0, "port 443: runAsUser")

    # The webhook by URL: the certificate is valid for the URL's host.
    what = "customURL"
    docs = render(sets=["scheduler.admissionWebhook.customURL.enabled=true",
                        "scheduler.admissionWebhook.customURL.host=10.0.0.5"])
    check_system(docs, "1.30.0", DEFAULT_NAMES, "hami-scheduler", what)
    wh = one(docs, "MutatingWebhookConfiguration", "-webhook")["webhooks"][0]
    F.equal(wh["clientConfig"].get("url"), "https://10.0.0.5:31998/webhook", f"{what}: url")
    secret = one(docs, "Secret", "-scheduler-tls")
    openssl_verify(base64.b64decode(secret["data"]["ca.crt"]), base64.b64decode(secret["data"]["tls.crt"]), ip="10.0.0.5")

    # A certificate of one's own: no Secret rendered, the CA bundle from the values.
    what = "own certificate"
    docs = render(sets=["scheduler.patch.enabled=false", "scheduler.admissionWebhook.caBundle=Q0E="])
    F.equal(kinds(docs).get("Secret", 0), 0, f"{what}: Secret rendered")
    F.equal(one(docs, "MutatingWebhookConfiguration", "-webhook")["webhooks"][0]["clientConfig"].get("caBundle"),
            "Q0E=", f"{what}: caBundle")

    # An existing per-node ConfigMap, no monitor, the device-config verbatim, another release.
    what = "variants"
    docs = render(sets=["devicePlugin.nodeConfiguration.externalConfigName=my-node-config",
                        "devicePlugin.monitor.enabled=false",
                        "device-config.content=nvidia:\n  resourceCountName: nvidia.com/gpu\n  deviceSplitCount: 3\n"],
                  namespace="gpu-system", release="gpu")
    F.check(configmap_data(docs, "gpu-vgpu-device-plugin") is None, f"{what}: node ConfigMap rendered")
    dss = {d["metadata"]["name"]: d for d in by_kind(docs, "DaemonSet")}
    F.equal(sorted(dss), ["gpu-vgpu-device-plugin"], f"{what}: DaemonSets")
    dp_ds = dss["gpu-vgpu-device-plugin"]
    vol, _ = file_volume(dp_ds, container(dp_ds, "device-plugin"), "/node-config/config.json")
    F.equal((vol or {}).get("configMap", {}).get("name"), "my-node-config", f"{what}: external node ConfigMap")
    dc = yaml.safe_load(configmap_data(docs, "gpu-vgpu-scheduler-device")["device-config.yaml"])
    F.equal(dc, {"nvidia": {"resourceCountName": "nvidia.com/gpu", "deviceSplitCount": 3}}, f"{what}: device-config content")
    F.equal(kinds(docs).get("ServiceAccount"), 2, f"{what}: ServiceAccounts without the monitor")
    for d in docs:
        ns = d["metadata"].get("namespace")
        F.check(ns in (None, "gpu-system", "kube-system"), f"{what}: {d['kind']}/{d['metadata']['name']} in {ns}")
    wh = one(docs, "MutatingWebhookConfiguration", "-webhook")["webhooks"][0]
    F.equal(wh["clientConfig"]["service"], {"name": "gpu-vgpu-scheduler", "namespace": "gpu-system", "path": "/webhook",
                                            "port": 443}, f"{what}: webhook service")

    # The kube-scheduler container off: the extender alone (a kube-scheduler configured elsewhere),
    # whose verbs must then answer peers other than loopback.
    docs = render(sets=["scheduler.kubeScheduler.enabled=false"])
    dep = one(docs, "Deployment", "-scheduler")
    F.equal([c["name"] for c in pod_spec(dep)["containers"]], ["vgpu-scheduler"], "kubeScheduler off: containers")
    F.check("--extender-allow-remote" in container(dep, "vgpu-scheduler")["command"],
            "kubeScheduler off: --extender-allow-remote not passed")
    F.check(configmap_data(docs, "vgpu-scheduler") is None, "kubeScheduler off: kube-scheduler ConfigMap rendered")


def case_overrides():
    # What the webhook lets pods set of vgpu's own (docs/security.md): the values' names, plus
    # CUDA_DISABLE_CONTROL where the device plugin honours it; namespaces that may set everything.
    what = "overrides"
    docs = render(sets=["scheduler.admissionWebhook.allowOverrides={hami.io/vgpu-devices-allocated,CUDA_DEVICE_SM_LIMIT}",
                        "scheduler.admissionWebhook.overrideNamespaces={gpu-admins,ml-ops}",
                        "devicePlugin.allowDisableControl=true"])
    check_system(docs, "1.30.0", DEFAULT_NAMES, "hami-scheduler", what)
    sargs = container(one(docs, "Deployment", "-scheduler"), "vgpu-scheduler")["command"][1:]
    F.equal(flag_value(sargs, "--webhook-allow-overrides", what),
            "hami.io/vgpu-devices-allocated,CUDA_DEVICE_SM_LIMIT,CUDA_DISABLE_CONTROL", f"{what}: --webhook-allow-overrides")
    F.equal(flag_value(sargs, "--webhook-override-namespaces", what), "gpu-admins,ml-ops",
            f"{what}: --webhook-override-namespaces")
    dp = container(one(docs, "DaemonSet", "-device-plugin"), "device-plugin")
    F.check("--allow-disable-control" in dp["command"], f"{what}: device plugin --allow-disable-control")
    # The device plugin's opt-out alone reaches the webhook too.
    docs = render(sets=["devicePlugin.allowDisableControl=true"])
    sargs = container(one(docs, "Deployment", "-scheduler"), "vgpu-scheduler")["command"][1:]
    F.equal(flag_value(sargs, "--webhook-allow-overrides", what), "CUDA_DISABLE_CONTROL",
            f"{what}: allowDisableControl alone")
    F.check(not flag_values(sargs, "--webhook-override-namespaces"), f"{what}: namespaces passed: {sargs}")
    # Who may change vgpu's own pod annotations on UPDATE: HAMi's device plugin in place of ours.
    docs = render(sets=["devicePlugin.enabled=false",
                        "scheduler.admissionWebhook.systemAccounts={hami-system:hami-device-plugin}"])
    sargs = container(one(docs, "Deployment", "-scheduler"), "vgpu-scheduler")["command"][1:]
    F.equal(flag_value(sargs, "--webhook-system-accounts", what),
            "kube-system:vgpu-scheduler,hami-system:hami-device-plugin", f"{what}: --webhook-system-accounts")
    # No webhook, no webhook flags.
    docs = render(sets=["scheduler.admissionWebhook.enabled=false"])
    sargs = container(one(docs, "Deployment", "-scheduler"), "vgpu-scheduler")["command"][1:]
    F.check(not flag_values(sargs, "--webhook-system-accounts"), f"{what}: webhook off, accounts passed: {sargs}")


def case_webhook_mode():
    # Audit mode is opt-in and visible: enforce unless the value says audit, passed explicitly in
    # both cases (kubectl describe shows it), and a WARNING in the install's notes only in audit.
    what = "webhook-mode"
    sargs = container(one(render(), "Deployment", "-scheduler"), "vgpu-scheduler")["command"][1:]
    F.equal(flag_value(sargs, "--webhook-mode", what), "enforce", f"{what}: default")
    F.check("AUDIT" not in notes(), f"{what}: the default's notes mention audit mode")
    docs = render(sets=["scheduler.admissionWebhook.mode=audit"])
    check_system(docs, "1.30.0", DEFAULT_NAMES, "hami-scheduler", what)
    sargs = container(one(docs, "Deployment", "-scheduler"), "vgpu-scheduler")["command"][1:]
    F.equal(flag_value(sargs, "--webhook-mode", what), "audit", f"{what}: audit")
    text = notes(sets=["scheduler.admissionWebhook.mode=audit"])
    for words in ("WARNING: the webhook runs in AUDIT mode", "vgpu_scheduler_webhook_would_deny_total",
                  "logs deploy/vgpu-scheduler -c vgpu-scheduler", "then set mode=enforce"):
        F.check(words in text, f"{what}: audit NOTES lack {words!r}:\n{text}")
    # A HAMi values file has no such key: it gets the default.
    docs = render(kube="1.20.2", values=[HAMI_VALUES])
    sargs = container(one(docs, "Deployment", "-scheduler"), "vgpu-scheduler")["command"][1:]
    F.equal(flag_value(sargs, "--webhook-mode", what), "enforce", f"{what}: HAMi values")
    # Without the webhook there is no mode to pass, and no warning about it.
    docs = render(sets=["scheduler.admissionWebhook.enabled=false", "scheduler.admissionWebhook.mode=audit"])
    sargs = container(one(docs, "Deployment", "-scheduler"), "vgpu-scheduler")["command"][1:]
    F.check(not flag_values(sargs, "--webhook-mode"), f"{what}: webhook off, mode passed: {sargs}")


def device_plugin_rules(docs, fullname="vgpu"):
    return one(docs, "ClusterRole", f"{fullname}-device-plugin")["rules"]


def case_extended_resources():
    # Off by default (and with HAMi's values, which have no such key); on, the flag reaches the
    # device plugin, and the names it advertises are device-config.yaml's, the values' names.
    what = "extended-resources"
    for docs, label in ((render(), "default"), (render(kube="1.20.2", values=[HAMI_FULL_VALUES]), "HAMi values")):
        dargs = container(one(docs, "DaemonSet", "-device-plugin"), "device-plugin")["command"][1:]
        F.check("--advertise-extended-resources" not in dargs, f"{what}: {label}: flag passed: {dargs}")
    names = ["resourceMem=example.com/vmem", "resourceCores=example.com/vcores"]
    docs = render(sets=["devicePlugin.advertiseExtendedResources=true", *names])
    check_system(docs, "1.30.0", dict(DEFAULT_NAMES, resourceMem="example.com/vmem", resourceCores="example.com/vcores"),
                 "hami-scheduler", what)
    dargs = container(one(docs, "DaemonSet", "-device-plugin"), "device-plugin")["command"][1:]
    F.equal(dargs.count("--advertise-extended-resources"), 1, f"{what}: on: flag")
    dc = yaml.safe_load(configmap_data(docs, "vgpu-scheduler-device")["device-config.yaml"])["nvidia"]
    F.equal((dc.get("resourceMemoryName"), dc.get("resourceCoreName")), ("example.com/vmem", "example.com/vcores"),
            f"{what}: the names the plugin reads (--device-config)")
    F.check("--device-config=/device-config/device-config.yaml" in dargs, f"{what}: device-config not passed: {dargs}")
    # kube-scheduler still leaves them to the extender (it would count node sums, not cards).
    managed = {r["name"]: r.get("ignoredByScheduler") for r in scheduler_config(docs)["extenders"][0]["managedResources"]}
    F.equal((managed.get("example.com/vmem"), managed.get("example.com/vcores")), (True, True),
            f"{what}: ignoredByScheduler")
    # RBAC: patch on nodes/status only while on (it lets the plugin change any node's status), and
    # the chart's rules are deploy/rbac's: the main file's, plus extended-resources/'s when on.
    def static_rules(*parts):
        rules = []
        for part in parts:
            with open(os.path.join(ROOT, "deploy", "rbac", *part)) as f:
                rules += [r for d in yaml.safe_load_all(f) if d and d.get("kind") == "ClusterRole" for r in d["rules"]]
        return sorted(rules, key=json.dumps)

    main = static_rules(("hami-device-plugin.yaml",))
    extra = static_rules(("hami-device-plugin.yaml",), ("extended-resources", "hami-device-plugin-node-status.yaml"))
    for docs, label, want_status, static in (
        (render(), "off", False, main),
        (render(kube="1.20.2", values=[HAMI_FULL_VALUES]), "HAMi values", False, main),
        (render(sets=["devicePlugin.advertiseExtendedResources=true"]), "on", True, extra),
    ):
        rules = device_plugin_rules(docs)
        has_status = any("nodes/status" in r.get("resources", []) for r in rules)
        F.equal(has_status, want_status, f"{what}: {label}: nodes/status rule: {rules}")
        F.equal(sorted(rules, key=json.dumps), static, f"{what}: {label}: chart rules vs deploy/rbac")


def case_bad_values():
    cases = [
        (["scheduler.defaultSchedulerPolicy.nodeSchedulerPolicy=fancy"], "nodeSchedulerPolicy"),
        (["scheduler.defaultSchedulerPolicy.gpuSchedulerPolicy=fancy"], "gpuSchedulerPolicy"),
        (["scheduler.defaultSchedulerPolicy.gpuSchedulerPolicy=binpack\\,mutx"], 'unknown word "mutx"'),
        (["scheduler.defaultSchedulerPolicy.gpuSchedulerPolicy=spread\\,binpack"], "opposite orders"),
        (["devices.nvidia.gpuCorePolicy=sometimes"], "gpuCorePolicy"),
        (["devicePlugin.inventoryFormat=xml"], "inventoryFormat"),
        (["scheduler.replicas=2"], "leaderElect"),
        (["devicePlugin.libPath=/opt/vgpu"], "devicePlugin.libPath"),
        (["devicePlugin.monitor.ctrPath=/var/vgpu/containers"], "ctrPath"),
        (["devicePlugin.image.repository=projecthami/hami"], "HAMi's image"),
        (["scheduler.extender.image.repository=docker.io/projecthami/hami"], "HAMi's image"),
        (["scheduler.nodeLockExpire=5 minutes"], "nodeLockExpire"),
        # A vgpu image without a registry host would come from Docker Hub's vgpu/ namespace.
        (["scheduler.extender.image.registry="], "scheduler.extender.image: vgpu/scheduler names no registry"),
        (["devicePlugin.image.registry="], "devicePlugin.image: vgpu/device-plugin names no registry"),
        (["devicePlugin.monitor.image.registry="], "devicePlugin.monitor.image: vgpu/monitor names no registry"),
        ("devicePlugin:\n  image: vgpu/device-plugin\n", "docker.io/vgpu/device-plugin"),
        (["scheduler.kubeScheduler.preemption=sometimes"], "scheduler.kubeScheduler.preemption"),
        (["scheduler.patch.enabled=false"], "caBundle"),
        (["scheduler.admissionWebhook.mode=warn"], "scheduler.admissionWebhook.mode"),
        ("devicePlugin:\n  nodeConfiguration:\n    config: '{\"nodeconfig\": ['\n", "not valid JSON"),
    ]
    for sets, words in cases:
        if isinstance(sets, str):
            p = render_fails(values_text=sets)
        else:
            p = render_fails(sets=sets)
        F.check(p.returncode != 0 and words in p.stderr,
                f"values {sets!r}: want a failure naming {words!r}; exit {p.returncode}, stderr {p.stderr.strip()[:300]!r}")


def case_mps():
    # docs/mps.md: off by default (no MPS flag, mount or compute capability); enabled puts every
    # node in MPS mode with the daemons' host directory at the same path in the plugin and the
    # shared /dev/shm; perNode leaves the mode to config.json (and keeps the plumbing); a node
    # config that asks mps without the plumbing, or a relative hostDir, fails the install.
    what = "mps"
    docs = render()
    ds = one(docs, "DaemonSet", "-device-plugin")
    dp = container(ds, "device-plugin")
    F.check(not flag_values(dp["command"], "--operating-mode"), f"{what}: default passes --operating-mode")
    F.check(not flag_values(dp["command"], "--mps-dir"), f"{what}: default passes --mps-dir")
    F.equal(env_of(dp).get("NVIDIA_DRIVER_CAPABILITIES"), "utility", f"{what}: default capabilities")
    F.check(volume_for_mount(ds, dp, "/dev/shm") is None, f"{what}: default mounts /dev/shm")

    for sets, want_mode in ((["devicePlugin.mps.enabled=true", "devicePlugin.mps.hostDir=/run/vgpu-mps/"], ["mps"]),
                            (["devicePlugin.mps.enabled=true", "devicePlugin.mps.perNode=true",
                              "devicePlugin.mps.hostDir=/run/vgpu-mps"], [])):
        docs = render(sets=sets)
        check_system(docs, "1.30.0", DEFAULT_NAMES, "hami-scheduler", f"{what} {sets}")
        ds = one(docs, "DaemonSet", "-device-plugin")
        dp = container(ds, "device-plugin")
        check_flags_exist("vgpu-device-plugin", dp["command"][1:], f"{what} {sets}")
        F.equal(flag_values(dp["command"], "--operating-mode"), want_mode, f"{what} {sets}: --operating-mode")
        F.equal(flag_value(dp["command"], "--mps-dir", what), "/run/vgpu-mps", f"{what} {sets}: --mps-dir")
        F.equal(env_of(dp).get("NVIDIA_DRIVER_CAPABILITIES"), "compute,utility",
                f"{what} {sets}: capabilities (the MPS programs come with compute)")
        mps = volume_for_mount(ds, dp, "/run/vgpu-mps")
        F.equal((mps or {}).get("hostPath"), {"path": "/run/vgpu-mps", "type": "DirectoryOrCreate"},
                f"{what} {sets}: MPS directory at the host's path")
        shm = volume_for_mount(ds, dp, "/dev/shm")
        F.equal((shm or {}).get("hostPath"), {"path": "/run/vgpu-mps/shm", "type": "DirectoryOrCreate"},
                f"{what} {sets}: the daemons' /dev/shm is the clients'")

    per_node = 'devicePlugin:\n  nodeConfiguration:\n    config: |\n      {"nodeconfig": [{"name": "gpu-1", "operatingmode": "mps"}]}\n'
    bad = render_fails(values_text=per_node)
    F.check(bad.returncode != 0 and "devicePlugin.mps.enabled is false" in bad.stderr,
            f"{what}: operatingmode mps without the plumbing: rc {bad.returncode}, {bad.stderr.strip()[-200:]}")
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
        f.write(per_node)
        f.flush()
        docs = render(values=[f.name], sets=["devicePlugin.mps.enabled=true", "devicePlugin.mps.perNode=true"])
        dp = container(one(docs, "DaemonSet", "-device-plugin"), "device-plugin")
        F.equal(flag_values(dp["command"], "--operating-mode"), [], f"{what}: perNode with a node entry")
    bad = render_fails(sets=["devicePlugin.mps.enabled=true", "devicePlugin.mps.hostDir=vgpu-mps"])
    F.check(bad.returncode != 0 and "devicePlugin.mps.hostDir" in bad.stderr,
            f"{what}: relative hostDir: rc {bad.returncode}, {bad.stderr.strip()[-200:]}")


CASES = {
    "lint": case_lint,
    "webhook-mode": case_webhook_mode,
    "default-1.20": lambda: case_default("1.20.2"),
    "default-1.22": lambda: case_default("1.22.17"),
    "default-1.24": lambda: case_default("1.24.17"),
    "default-1.30": lambda: case_default("1.30.0"),
    "hami-1.20": lambda: case_hami("1.20.2"),
    "hami-1.24": lambda: case_hami("1.24.17"),
    "hami-1.30": lambda: case_hami("1.30.0"),
    "hami-v2.6": case_hami_v26,
    "hami-full-1.20": lambda: case_hami_full("1.20.2"),
    "hami-full-1.30": lambda: case_hami_full("1.30.0"),
    "hami-keys": case_hami_keys,
    "config-api": case_config_api,
    "kube-scheduler-preemption": case_kube_scheduler_preemption,
    "cert-manager": case_certmanager,
    "service-monitor": case_service_monitor,
    "images": case_images,
    "variants": case_variants,
    "overrides": case_overrides,
    "mps": case_mps,
    "bad-values": case_bad_values,
    "extended-resources": case_extended_resources,
}


def main():
    if len(sys.argv) != 2 or (sys.argv[1] not in CASES and sys.argv[1] != "--list"):
        print(f"usage: {sys.argv[0]} CASE|--list  (cases: {' '.join(CASES)})", file=sys.stderr)
        return 2
    if sys.argv[1] == "--list":
        print("\n".join(CASES))
        return 0
    if yaml is None:
        print("SKIP: PyYAML not installed for this python3 (Debian package python3-yaml; "
              "scripts/install-deps.sh installs it)")
        return SKIP
    if HELM is None:
        print("SKIP: helm not found ($VGPU_HELM, /opt/vgpu-tools/bin/helm, PATH): scripts/install-deps.sh "
              "installs helm v4.1.4 into /opt/vgpu-tools/bin")
        return SKIP
    version = helm("version", "--short").stdout.strip()
    print(f"helm {version} ({HELM}); case {sys.argv[1]}")
    CASES[sys.argv[1]]()
    if F.items:
        print(f"FAIL: {len(F.items)} check(s) failed:")
        for m in F.items:
            print("  - " + m)
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
