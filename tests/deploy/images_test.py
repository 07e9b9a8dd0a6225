#!/usr/bin/env python3
"""Tests of scripts/build-images.sh (the container images of charts/vgpu), one CTest test per case.

    images_test.py --list
    images_test.py CASE --bin NAME=PATH ...   (NAME: vgpu-device-plugin, vgpu-scheduler,
                                                vgpu-monitor, vgpu, libvgpu.so)

The images are assembled from the binaries given (CTest passes the build's own, so CI checks the
dev build's binaries; scripts/build-images.sh makes release ones). Each image case checks the
archive independently of scripts/oci-image.py:
- the OCI layout: oci-layout, index.json (io.containerd.image.name = docker.io/<repo>:<appVersion>,
  ref name = appVersion, platform linux/amd64), every blob's sha256 and size against its
  descriptor, the config's diff_id against the uncompressed layer, the docker-archive
  manifest.json naming the same blobs and <repo>:<appVersion>;
- the layer: relative names without "..", sorted, one mtime, root-owned but /home/nonroot, no shell;
- what the chart runs: each command of the chart's template (vgpu-...) is an executable found on
  the image's PATH, devicePlugin.libvgpu (values.yaml) is in the device plugin's image;
- every ELF in /usr/local/bin: its interpreter and every DT_NEEDED library, transitively, are in
  the layer (readelf, resolved inside the extracted root, symlinks included);
- the config's Entrypoint exists and is executable, User as intended (the scheduler non-root,
  with a passwd entry and a home);
- the binaries run from the extracted root: `--help` / `--version` exit 0. As root in a private
  mount and PID namespace with /proc (unshare + chroot, as the image's user); otherwise through the
  image's own dynamic loader with --library-path on the image's library folder.
Case `reproducible`: two builds of the same inputs give byte-identical archives.
"""

import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SKIP = 77
NONROOT = "65532:65532"

IMAGES = {
    "device-plugin": {"repo": "vgpu/device-plugin", "user": "0:0",
                      "template": "device-plugin/daemonset.yaml",
                      "run": [["vgpu-device-plugin", "--help"]]},
    "scheduler": {"repo": "vgpu/scheduler", "user": NONROOT,
                  "template": "scheduler/deployment.yaml",
                  "run": [["vgpu-scheduler", "--help"]]},
    "monitor": {"repo": "vgpu/monitor", "user": "0:0", "template": "monitor/daemonset.yaml",
                "run": [["vgpu-monitor", "--help"], ["vgpu", "--version"],
                        ["vgpu", "top", "--help"]]},
}
CASES = sorted(IMAGES) + ["reproducible"]


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def app_version():
    text = (ROOT / "charts/vgpu/Chart.yaml").read_text()
    m = re.search(r'^appVersion:\s*"?([^"\s]+)"?\s*$', text, re.M)
    check(m, "no appVersion in charts/vgpu/Chart.yaml")
    return m.group(1)


def chart_libvgpu():
    text = (ROOT / "charts/vgpu/values.yaml").read_text()
    m = re.search(r"^  libvgpu:\s*(\S+)\s*$", text, re.M)
    check(m, "no devicePlugin.libvgpu in charts/vgpu/values.yaml")
    return m.group(1)


def chart_commands(template):
    """The vgpu binaries the chart's template runs (command[0] of its containers)."""
    text = (ROOT / "charts/vgpu/templates" / template).read_text()
    cmds = re.findall(r"command:\s*\n\s*- (vgpu[\w-]*)", text)
    check(cmds, f"no vgpu command in charts/vgpu/templates/{template}")
    return cmds


def build(bin_dir, out, only, extra_env=None):
    env = dict(os.environ)
    env.update(extra_env or {})
    cmd = [str(ROOT / "scripts/build-images.sh"), "--binaries", str(bin_dir), "--only", only,
           str(out)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    print(r.stdout, end="")
    check(r.returncode == 0, f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr}")
    return Path(out) / f"{only}.tar"


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def resolve_in_root(root, path, hops=0):
    """path (absolute inside the image) resolved inside root, following symlinks the way the
    container would see them; None if it does not exist."""
    check(hops < 40, f"symlink loop at {path}")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    current = Path(root)
    for i, part in enumerate(parts):
        if part == "..":
            current = current.parent if current != Path(root) else current
            continue
        nxt = current / part
        if nxt.is_symlink():
            target = os.readlink(nxt)
            inside = "/" + str(current.relative_to(root))
            base = target if target.startswith("/") else os.path.join(inside, target)
            rest = "/".join(parts[i + 1:])
            return resolve_in_root(root, os.path.join(base, rest) if rest else base, hops + 1)
        if not nxt.exists() and not nxt.is_symlink():
            return None
        current = nxt
    return current


def readelf(flag, path):
    r = subprocess.run(["readelf", flag, "-W", str(path)], capture_output=True, text=True,
                       check=False)
    check(r.returncode == 0, f"readelf {flag} {path}: {r.stderr}")
    return r.stdout


def is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


LIB_DIRS = ["/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib", "/usr/lib"]


def check_libraries(root, binary_in_image):
    """The interpreter and every DT_NEEDED (transitively) of binary_in_image are in root."""
    host = resolve_in_root(root, binary_in_image)
    interp = re.search(r"Requesting program interpreter: ([^\]]+)\]",
                       readelf("-l", host))
    check(interp, f"{binary_in_image}: no program interpreter (not dynamically linked?)")
    loader = resolve_in_root(root, interp.group(1))
    check(loader and loader.is_file(), f"{binary_in_image}: interpreter {interp.group(1)} "
          "is not in the image")
    seen, todo, found = set(), [host], []
    while todo:
        elf = todo.pop()
        for lib in re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]",
                              readelf("-d", elf)):
            if lib in seen:
                continue
            seen.add(lib)
            hit = None
            for d in LIB_DIRS:
                hit = resolve_in_root(root, f"{d}/{lib}")
                if hit and hit.is_file():
                    break
                hit = None
            check(hit, f"{binary_in_image} needs {lib} (through {elf.name}): not in the image's "
                  f"{', '.join(LIB_DIRS)}")
            found.append(lib)
            todo.append(hit)
    return interp.group(1), sorted(found)


def run_in_image(root, config, argv):
    """Runs argv[0] (found on the image's PATH) with argv[1:] from the extracted image."""
    env_list = config["config"].get("Env", [])
    env = dict(e.split("=", 1) for e in env_list)
    path_dirs = env.get("PATH", "").split(":")
    exe = None
    for d in path_dirs:
        cand = resolve_in_root(root, f"{d}/{argv[0]}")
        if cand and cand.is_file():
            exe = f"{d}/{argv[0]}"
            break
    check(exe, f"{argv[0]} is not on the image's PATH ({env.get('PATH')})")
    env["ASAN_OPTIONS"] = "detect_leaks=0"  # the dev build's binaries: checking the image here
    env["HOME"] = "/"
    user = config["config"].get("User") or "0:0"
    attempts = []
    if os.geteuid() == 0 and shutil.which("chroot") and shutil.which("unshare"):
        attempts.append(("unshare+chroot as " + user,
                         ["unshare", "--mount", "--pid", "--fork", f"--mount-proc={root}/proc",
                          "chroot", f"--userspec={user}", str(root), exe] + argv[1:]))
    interp = re.search(r"Requesting program interpreter: ([^\]]+)\]",
                       readelf("-l", resolve_in_root(root, exe))).group(1)
    lib_path = ":".join(str(root) + d for d in LIB_DIRS[:2])
    attempts.append(("the image's loader",
                     [str(resolve_in_root(root, interp)), "--library-path", lib_path,
                      str(resolve_in_root(root, exe))] + argv[1:]))
    errors = []
    for how, cmd in attempts:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120,
                           check=False)
        if r.returncode == 0:
            print(f"  ran {' '.join(argv)} ({how}): exit 0, {len(r.stdout)} bytes of output")
            return
        errors.append(f"{how}: exit {r.returncode}\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
        # unshare refused (no privilege in this container): try the loader; anything else fails.
        if not (how.startswith("unshare") and "unshare:" in r.stderr):
            break
    raise Failure(f"{' '.join(argv)} in the image failed:\n" + "\n".join(errors))


def check_archive(archive, key, work):
    spec = IMAGES[key]
    tag = app_version()
    extract = Path(work) / "archive"
    members = {}
    with tarfile.open(archive) as tar:
        for m in tar.getmembers():
            check(m.isreg() or m.isdir(), f"{archive}: {m.name} is neither file nor folder")
            check(not m.name.startswith("/") and ".." not in m.name.split("/"),
                  f"{archive}: unsafe name {m.name}")
            if m.isreg():
                members[m.name] = tar.extractfile(m).read()
    check(json.loads(members["oci-layout"]) == {"imageLayoutVersion": "1.0.0"}, "oci-layout")
    blobs = {}
    for name, data in members.items():
        if name.startswith("blobs/"):
            algo, hexdigest = name.split("/")[1:]
            check(algo == "sha256" and sha256(data) == hexdigest,
                  f"{name}: content has sha256 {sha256(data)}")
            blobs[f"sha256:{hexdigest}"] = data

    def blob(desc, media_type):
        check(desc["mediaType"] == media_type, f"{desc['digest']}: media type {desc['mediaType']}")
        data = blobs.get(desc["digest"])
        check(data is not None, f"blob {desc['digest']} missing")
        check(len(data) == desc["size"], f"blob {desc['digest']}: size {len(data)} != "
              f"{desc['size']}")
        return data

    index = json.loads(members["index.json"])
    check(index["schemaVersion"] == 2 and len(index["manifests"]) == 1, "index.json manifests")
    mdesc = index["manifests"][0]
    ann = mdesc.get("annotations", {})
    check(ann.get("io.containerd.image.name") == f"docker.io/{spec['repo']}:{tag}",
          f"io.containerd.image.name {ann.get('io.containerd.image.name')}")
    check(ann.get("org.opencontainers.image.ref.name") == tag, "org.opencontainers.image.ref.name")
    check(mdesc.get("platform") == {"architecture": "amd64", "os": "linux"}, "platform")
    manifest = json.loads(blob(mdesc, "application/vnd.oci.image.manifest.v1+json"))
    config = json.loads(blob(manifest["config"], "application/vnd.oci.image.config.v1+json"))
    check(len(manifest["layers"]) == 1, "one layer")
    layer_gz = blob(manifest["layers"][0], "application/vnd.oci.image.layer.v1.tar+gzip")
    layer = gzip.decompress(layer_gz)
    check(config["rootfs"] == {"type": "layers", "diff_ids": [f"sha256:{sha256(layer)}"]},
          "config rootfs.diff_ids is not the uncompressed layer's digest")
    check(config["architecture"] == "amd64" and config["os"] == "linux", "config platform")
    docker = json.loads(members["manifest.json"])
    check(docker == [{"Config": f"blobs/sha256/{manifest['config']['digest'][7:]}",
                      "RepoTags": [f"{spec['repo']}:{tag}"],
                      "Layers": [f"blobs/sha256/{manifest['layers'][0]['digest'][7:]}"]}],
          f"docker manifest.json: {docker}")
    check(config["config"]["Labels"]["org.opencontainers.image.version"] == tag, "version label")

    # The layer.
    layer_path = Path(work) / "layer.tar"
    layer_path.write_bytes(layer)
    rootfs = Path(work) / "rootfs"
    rootfs.mkdir()
    with tarfile.open(layer_path) as tar:
        names = tar.getnames()
        check(names == sorted(names) and len(set(names)) == len(names),
              "layer entries are not sorted and unique")
        mtimes = set()
        for m in tar.getmembers():
            check(not m.name.startswith("/") and ".." not in m.name.split("/"),
                  f"layer: unsafe name {m.name}")
            check(m.isreg() or m.isdir() or m.issym(), f"layer: {m.name} has type {m.type}")
            owner = (m.uid, m.gid)
            want = (65532, 65532) if m.name.rstrip("/") == "home/nonroot" else (0, 0)
            check(owner == want, f"layer: {m.name} owned by {owner}, expected {want}")
            mtimes.add(m.mtime)
        check(len(mtimes) == 1, f"layer: several mtimes {sorted(mtimes)[:5]}")
        for shell in ("bin/sh", "usr/bin/sh", "bin/bash", "usr/bin/bash"):
            check(shell not in names, f"layer holds a shell ({shell})")
        # Names checked above; the absolute symlinks (/lib64/ld-linux-x86-64.so.2) are the image's.
        extra = {"filter": "fully_trusted"} if hasattr(tarfile, "fully_trusted_filter") else {}
        tar.extractall(rootfs, numeric_owner=True, **extra)

    # What the chart runs.
    for cmd in chart_commands(spec["template"]):
        check(any(c[0] == cmd for c in spec["run"]), f"chart command {cmd} not exercised here")
    if key == "device-plugin":
        lib = chart_libvgpu()
        host = resolve_in_root(rootfs, lib)
        check(host and host.is_file() and is_elf(host), f"devicePlugin.libvgpu {lib} missing")
        check("Shared object file" in readelf("-h", host) or "DYN" in readelf("-h", host),
              f"{lib}: not a shared object")
        print(f"  {lib}: {host.stat().st_size} bytes")

    # Entrypoint and user.
    entry = config["config"]["Entrypoint"]
    host = resolve_in_root(rootfs, entry[0])
    check(host and host.is_file() and os.access(host, os.X_OK) and host.stat().st_mode & 0o111,
          f"Entrypoint {entry[0]} is not an executable file of the layer")
    user = config["config"].get("User", "")
    check(user == spec["user"], f"User {user!r}, expected {spec['user']!r}")
    if user != "0:0":
        uid, gid = user.split(":")
        passwd = (rootfs / "etc/passwd").read_text()
        entry_line = [ln for ln in passwd.splitlines() if ln.split(":")[2:4] == [uid, gid]]
        check(entry_line, f"no /etc/passwd entry for {user}")
        home = resolve_in_root(rootfs, entry_line[0].split(":")[5])
        check(home and home.is_dir(), f"home of {user} missing")
        if os.geteuid() == 0:  # extracted with the layer's owners
            check(home.stat().st_uid == int(uid), f"home of {user} not owned by it")

    # Shared libraries of every ELF executable in /usr/local/bin.
    for exe in sorted((rootfs / "usr/local/bin").iterdir()):
        if is_elf(exe):
            interp, libs = check_libraries(rootfs, f"/usr/local/bin/{exe.name}")
            print(f"  /usr/local/bin/{exe.name}: {interp} + {len(libs)} libraries in the image")

    for argv in spec["run"]:
        run_in_image(rootfs, config, argv)
    size = sum(f.stat().st_size for f in rootfs.rglob("*") if f.is_file() and not f.is_symlink())
    print(f"  archive {archive.stat().st_size} bytes, layer {len(layer_gz)} gzip / {len(layer)} "
          f"tar, files {size} bytes")


def main():
    args = sys.argv[1:]
    if args == ["--list"]:
        print("\n".join(CASES))
        return 0
    if not args or args[0] not in CASES:
        print(f"usage: {sys.argv[0]} --list | CASE --bin NAME=PATH ...", file=sys.stderr)
        return 2
    case = args[0]
    bins = {}
    rest = args[1:]
    while rest:
        check(rest[0] == "--bin" and len(rest) > 1, f"unexpected argument {rest[0]}")
        name, path = rest[1].split("=", 1)
        bins[name] = path
        rest = rest[2:]
    for tool in ("readelf", "strip", "ldd"):
        if not shutil.which(tool):
            print(f"SKIP: {tool} not found (binutils, libc-bin)")
            return SKIP
    with tempfile.TemporaryDirectory(prefix=f"vgpu-images-{case}-") as work:
        bin_dir = Path(work) / "bin"
        bin_dir.mkdir()
        for name, path in bins.items():
            check(Path(path).is_file(), f"{path}: not built")
            (bin_dir / name).symlink_to(Path(path).resolve())
        if case == "reproducible":
            first = build(bin_dir, Path(work) / "a", "device-plugin")
            second = build(bin_dir, Path(work) / "b", "device-plugin")
            a, b = first.read_bytes(), second.read_bytes()
            check(a == b, "two builds of the same inputs differ")
            print(f"  identical: sha256 {sha256(a)}")
            other = build(bin_dir, Path(work) / "c", "device-plugin",
                          {"SOURCE_DATE_EPOCH": "1000000000"})
            check(other.read_bytes() != a, "SOURCE_DATE_EPOCH did not reach the archive")
        else:
            archive = build(bin_dir, Path(work) / "out", case)
            check_archive(archive, case, work)
    print(f"PASS {case}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failure as e:
        print(f"FAIL: {e}", file=sys.stderr)
        sys.exit(1)
