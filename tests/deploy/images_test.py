#!/usr/bin/env python3
"""Tests of scripts/build-images.sh (the container images of charts/vgpu), one CTest test per case.

    images_test.py --list
    images_test.py CASE --bin NAME=PATH ...   (NAME: vgpu-device-plugin, vgpu-scheduler,
                                                vgpu-monitor, vgpu, libvgpu.so)

The images are assembled from the binaries given (CTest passes the build's own, so CI checks the
dev build's binaries; scripts/build-images.sh makes release ones). Each image case checks the
archive independently of scripts/oci-image.py:
- the OCI layout: oci-layout, index.json (io.containerd.image.name = localhost/<repo>:<appVersion>,
  ref name = appVersion, platform linux/amd64), every blob's sha256 and size against its
  descriptor, the config's diff_id against the uncompressed layer, the docker-archive
  manifest.json naming the same blobs and localhost/<repo>:<appVersion> (the chart's default names);
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
Case `scan`: the three images, as a scanner and a licence review read them (check_scannable):
/etc/os-release and /etc/debian_version say Debian 12; /var/lib/dpkg/status holds installed records
that dpkg-query --admindir reads back; every file of the layer is vgpu's own or listed by a recorded
package (info/<package>.list, md5sum as in info/<package>.md5sums); every ELF's interpreter and
DT_NEEDED libraries, resolved inside the image, are vgpu's or a recorded package's (the build
host's dpkg -S agrees); each package's /usr/share/doc/<package>/copyright and the
/usr/share/common-licenses texts it names are there; vgpu's LICENSE is the repository's, Apache 2.0,
as every image's org.opencontainers.image.licenses label, deploy/images/Dockerfile's and the README
say. Then the same check must fail on the extracted image with a library's record removed, and with
a library added that no record lists.
"""

import gzip
import hashlib
import io
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
CASES = sorted(IMAGES) + ["reproducible", "scan"]


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
    check(ann.get("io.containerd.image.name") == f"localhost/{spec['repo']}:{tag}",
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
                      "RepoTags": [f"localhost/{spec['repo']}:{tag}"],
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


# ---- case scan -----------------------------------------------------------------------------------
LICENSE_ID = "Apache-2.0"
DPKG = "/var/lib/dpkg"
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
USR_MERGED = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# The files vgpu writes itself (not a Debian package's): binaries, users, loader configuration,
# its licence, the dpkg database. Anything else in a layer must be a recorded package's.
OWN_FILES = {"/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/ld.so.conf",
             "/etc/ld.so.conf.d/x86_64-linux-gnu.conf", "/opt/vgpu/lib/libvgpu.so"}
OWN_DIRS = ("/usr/local/bin/", "/usr/share/doc/vgpu/", DPKG + "/")


def aliases(path):
    out = [path]
    for d in USR_MERGED:
        if path.startswith(f"/usr{d}/"):
            out.append(path[4:])
        elif path.startswith(f"{d}/"):
            out.append("/usr" + path)
    return out


def parse_deb822(text):
    """Stanzas of a dpkg status file: [{field: value}] (continuation lines joined)."""
    stanzas = []
    for block in text.split("\n\n"):
        fields, last = {}, None
        for line in block.splitlines():
            if line[:1] in (" ", "\t") and last:
                fields[last] += "\n" + line.strip()
            elif ":" in line:
                last, _, value = line.partition(":")
                fields[last] = value.strip()
        if fields:
            stanzas.append(fields)
    return stanzas


def image_path(root, host_path):
    return "/" + str(Path(host_path).relative_to(root))


def image_realpath(root, path):
    """path inside the image with every symlink followed (None if it does not resolve)."""
    hit = resolve_in_root(root, path)
    return image_path(root, hit) if hit is not None else None


def needed_closure(root, elf_path):
    """{resolved image path of the interpreter and every DT_NEEDED library, transitively}."""
    out = set()
    host = resolve_in_root(root, elf_path)
    phdrs = readelf("-l", host)
    interp = re.search(r"Requesting program interpreter: ([^\]]+)\]", phdrs)
    if interp:
        real = image_realpath(root, interp.group(1))
        if real is None:
            return out, [f"{elf_path}: interpreter {interp.group(1)} not in the image"]
        out.add(real)
    problems, todo, seen = [], [host], set()
    while todo:
        elf = todo.pop()
        for lib in re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", readelf("-d", elf)):
            if lib in seen:
                continue
            seen.add(lib)
            for d in LIB_DIRS:
                hit = resolve_in_root(root, f"{d}/{lib}")
                if hit and hit.is_file():
                    out.add(image_realpath(root, f"{d}/{lib}"))
                    todo.append(hit)
                    break
            else:
                problems.append(f"{elf_path} needs {lib}: not in the image")
    return out, problems


def check_scannable(root, host_dpkg=True):
    """Problems a scanner or a licence review would have with the extracted image at root (empty
    list: none). Summary printed for the log."""
    root = Path(root)
    problems = []

    def read(path):
        hit = resolve_in_root(root, path)
        return hit.read_text(errors="replace") if hit and hit.is_file() else None

    # The distribution.
    os_release = read("/etc/os-release")
    if os_release is None:
        problems.append("no /etc/os-release")
    else:
        kv = dict(ln.split("=", 1) for ln in os_release.splitlines() if "=" in ln)
        ident = (kv.get("ID"), kv.get("VERSION_ID", "").strip('"'))
        if ident != ("debian", "12"):
            problems.append(f"/etc/os-release says {ident}, not Debian 12")
        if read("/usr/lib/os-release") != os_release:
            problems.append("/usr/lib/os-release differs from /etc/os-release")
    debian_version = read("/etc/debian_version")
    if not debian_version or not debian_version.startswith("12."):
        problems.append(f"/etc/debian_version: {debian_version!r} (Trivy reads Debian's release "
                        "from it)")

    # The records.
    status = read(f"{DPKG}/status")
    if status is None:
        return problems + [f"no {DPKG}/status"]
    if read(f"{DPKG}/info/format") != "1\n":
        problems.append(f"{DPKG}/info/format is not dpkg's multiarch layout 1")
    records = {}
    for st in parse_deb822(status):
        name, arch = st.get("Package"), st.get("Architecture")
        if not name or not st.get("Version") or not arch:
            problems.append(f"status record without Package/Version/Architecture: {st}")
            continue
        if st.get("Status") != "install ok installed":
            problems.append(f"{name}: Status {st.get('Status')!r}")
        stem = f"{name}:{arch}" if st.get("Multi-Arch") == "same" else name
        if stem in records:
            problems.append(f"{stem}: two records")
        records[stem] = st
    owner_of = {}  # dpkg path -> stems
    for stem in records:
        listing = read(f"{DPKG}/info/{stem}.list")
        if listing is None:
            problems.append(f"{stem}: no {DPKG}/info/{stem}.list")
            continue
        for line in listing.splitlines():
            owner_of.setdefault(line, set()).add(stem)
    md5 = {}  # info/<package>.md5sums, and the Conffiles of the records (conffiles are not there)
    for stem, st in records.items():
        for line in (read(f"{DPKG}/info/{stem}.md5sums") or "").splitlines():
            digest, _, path = line.partition("  ")
            md5["/" + path] = digest
        for line in st.get("Conffiles", "").splitlines():
            if len(line.split()) >= 2:
                md5[line.split()[0]] = line.split()[1]

    def owners(path):
        for a in aliases(path):
            if a in owner_of:
                return owner_of[a]
        return set()

    def own(path):
        return path in OWN_FILES or path.startswith(OWN_DIRS)

    # Every file of the layer: vgpu's, or a recorded package's with Debian's md5sum.
    debian_files = 0
    for host in sorted(root.rglob("*")):
        if host.is_dir() and not host.is_symlink():
            continue
        path = image_path(root, host)
        if own(path) or path.startswith(("/proc/", "/sys/", "/dev/", "/tmp/")):
            continue
        if path == CA_BUNDLE:
            if not any(st["Package"] == "ca-certificates" for st in records.values()):
                problems.append(f"{CA_BUNDLE} without the ca-certificates record")
            continue
        if host.is_symlink():
            real = image_realpath(root, path)
            if real is None:
                problems.append(f"{path}: dangling link")
            # A link to a folder (/lib -> usr/lib) is layout; a link to a file (an ldconfig
            # SONAME link) is covered by the file's own check.
            continue
        who = owners(path)
        if not who:
            problems.append(f"{path}: no recorded package lists it (added without its record?)")
            continue
        debian_files += 1
        digest = next((md5[a] for a in aliases(path) if a in md5), None)
        if digest is None:
            problems.append(f"{path} ({', '.join(sorted(who))}): no md5sum recorded")
        elif hashlib.md5(host.read_bytes()).hexdigest() != digest:
            problems.append(f"{path}: content differs from {', '.join(sorted(who))}'s md5sum")

    # Shared libraries: the interpreter and DT_NEEDED closure of vgpu's ELF files. libvgpu.so is
    # a payload: the device plugin copies it to the node and GPU containers load it with their own
    # C library, nothing in this image loads it.
    libs = {}
    for host in sorted(root.rglob("*")):
        if host.is_file() and not host.is_symlink() and is_elf(host):
            path = image_path(root, host)
            if not own(path) or path == "/opt/vgpu/lib/libvgpu.so":
                continue
            closure, missing = needed_closure(root, path)
            problems += missing
            for lib in closure:
                libs.setdefault(lib, set()).add(path)
    for lib, users in sorted(libs.items()):
        if own(lib):
            continue
        if not owners(lib):
            problems.append(f"{lib} (loaded by {', '.join(sorted(users))}): no recorded package")

    # Copyrights and the licence texts they name.
    for stem, st in sorted(records.items()):
        text = read(f"/usr/share/doc/{st['Package']}/copyright")
        if not text:
            problems.append(f"{stem}: no /usr/share/doc/{st['Package']}/copyright")
            continue
        for lic in re.findall(r"/usr/share/common-licenses/([A-Za-z0-9][\w.+-]*)", text):
            lic = lic.rstrip(".")
            if Path(f"/usr/share/common-licenses/{lic}").is_file() and not read(
                    f"/usr/share/common-licenses/{lic}"):
                problems.append(f"{stem}'s copyright names /usr/share/common-licenses/{lic}: "
                                "not in the image")

    # dpkg itself reads the database back, and the build host's dpkg agrees on the libraries.
    if host_dpkg and shutil.which("dpkg-query"):
        env = dict(os.environ, LC_ALL="C")
        r = subprocess.run(["dpkg-query", f"--admindir={root}{DPKG}", "-W",
                            "-f", "${binary:Package} ${Version}\\n"],
                           capture_output=True, text=True, env=env, check=False)
        listed = {ln.split()[0]: ln.split()[1] for ln in r.stdout.splitlines() if ln.strip()}
        want = {stem: st["Version"] for stem, st in records.items()}
        if r.returncode != 0 or r.stderr.strip() or listed != want:
            problems.append(f"dpkg-query --admindir read {listed} ({r.stderr.strip()[:300]}), "
                            f"records say {want}")
        debian_libs = sorted(lib for lib in libs if not own(lib))
        r = subprocess.run(["dpkg-query", "-S", *[a for lib in debian_libs for a in aliases(lib)]],
                           capture_output=True, text=True, env=env, check=False)
        host_owner = {}
        for line in r.stdout.splitlines():
            pkgs, _, path = line.partition(": ")
            host_owner[path] = {p.strip() for p in pkgs.split(",")}
        for lib in debian_libs:
            theirs = next((host_owner[a] for a in aliases(lib) if a in host_owner), None)
            if theirs is not None and not theirs & owners(lib):
                problems.append(f"{lib}: the build host's dpkg -S says {sorted(theirs)}, the "
                                f"image's records {sorted(owners(lib))}")

    # vgpu's licence.
    shipped = resolve_in_root(root, "/usr/share/doc/vgpu/LICENSE")
    if not shipped or not shipped.is_file():
        problems.append("no /usr/share/doc/vgpu/LICENSE")
    elif shipped.read_bytes() != (ROOT / "LICENSE").read_bytes():
        problems.append("/usr/share/doc/vgpu/LICENSE is not the repository's LICENSE")
    print(f"  {len(records)} Debian packages recorded, {debian_files} of their files, "
          f"{len(libs)} shared libraries loaded, {os_release and os_release.splitlines()[0]}")
    return problems


def check_license_claims():
    """The repository's LICENSE, the labels of deploy/images/Dockerfile and the README agree."""
    text = (ROOT / "LICENSE").read_text()
    check("Apache License" in text and "Version 2.0, January 2004" in text
          and "END OF TERMS AND CONDITIONS" in text, "LICENSE is not the Apache License 2.0 text")
    labels = re.findall(r"org\.opencontainers\.image\.licenses=(\S+)",
                        (ROOT / "deploy/images/Dockerfile").read_text())
    check(len(labels) == len(IMAGES) and set(labels) == {LICENSE_ID},
          f"deploy/images/Dockerfile licence labels {labels}, expected {LICENSE_ID} per image")
    readme = (ROOT / "README.md").read_text()
    m = re.search(r"^## Licen[cs]e\n+(.*?)(?:\n## |\Z)", readme, re.M | re.S)
    check(m and LICENSE_ID in m.group(1) and "LICENSE" in m.group(1),
          f"README.md has no License section naming {LICENSE_ID} and LICENSE")


def extract_image(archive, dest):
    """(config, rootfs) of the one-layer image in archive, extracted under dest."""
    with tarfile.open(archive) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isreg()}
    index = json.loads(members["index.json"])
    manifest = json.loads(members["blobs/" + index["manifests"][0]["digest"].replace(":", "/")])
    config = json.loads(members["blobs/" + manifest["config"]["digest"].replace(":", "/")])
    layer = gzip.decompress(members["blobs/" + manifest["layers"][0]["digest"].replace(":", "/")])
    rootfs = Path(dest)
    rootfs.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(layer)) as tar:
        for m in tar.getmembers():
            check(not m.name.startswith("/") and ".." not in m.name.split("/"),
                  f"layer: unsafe name {m.name}")
        extra = {"filter": "fully_trusted"} if hasattr(tarfile, "fully_trusted_filter") else {}
        tar.extractall(rootfs, numeric_owner=os.geteuid() == 0, **extra)
    return config, rootfs


def check_image_scannable(archive, key, work):
    """The image's labels and what a scanner reads in it (check_scannable)."""
    spec = IMAGES[key]
    print(f"{key}:")
    config, rootfs = extract_image(archive, Path(work) / f"{key}-rootfs")
    labels = config["config"].get("Labels", {})
    want = {"org.opencontainers.image.licenses": LICENSE_ID,
            "org.opencontainers.image.title": spec["repo"],
            "org.opencontainers.image.version": app_version()}
    got = {k: labels.get(k) for k in want}
    check(got == want, f"{key}: labels {got}, expected {want}")
    problems = check_scannable(rootfs)
    check(not problems, f"{key}: " + "\n  ".join(problems))
    return rootfs


def case_scan(bin_dir, work):
    # Each image's own case (device-plugin, monitor, scheduler) checks that a scanner sees its
    # packages; this one checks the licence claims and that the check itself can fail, on the
    # scheduler's image only (building all three again here cost CI minutes for nothing new).
    check_license_claims()
    archive = build(bin_dir, Path(work) / "out", "scheduler")
    rootfs = check_image_scannable(archive, "scheduler", work)

    # The check must catch a library without its record: take the scheduler's image, drop the
    # record of the package that ships libstdc++ (every vgpu binary loads it), then put back the
    # records and add a library no record lists.
    status_path = rootfs / DPKG.lstrip("/") / "status"
    original = status_path.read_text()
    stanzas = original.strip("\n").split("\n\n")
    kept = [s for s in stanzas if not re.search(r"^Package: libstdc\+\+6$", s, re.M)]
    check(len(kept) == len(stanzas) - 1, "no libstdc++6 record in the scheduler's image")
    status_path.write_text("\n\n".join(kept) + "\n")
    problems = check_scannable(rootfs, host_dpkg=False)
    check(any("libstdc++.so.6" in p and "no recorded package" in p for p in problems),
          f"removing libstdc++6's record went unnoticed: {problems}")
    print(f"  without libstdc++6's record: {len(problems)} problems, e.g. {problems[0]}")
    status_path.write_text(original)
    donor = next((Path(d) / n for d in LIB_DIRS for n in ("libexpat.so.1", "libz.so.1",
                  "libbz2.so.1.0", "liblzma.so.5", "libpython3.11.so.1.0")
                  if (Path(d) / n).is_file()
                  and not (rootfs / d.lstrip("/") / n).exists()
                  and not (rootfs / "usr" / d.lstrip("/") / n).exists()), None)
    check(donor, "no host library outside the image to add")
    dest = rootfs / "usr/lib/x86_64-linux-gnu" / donor.name
    shutil.copyfile(donor.resolve(), dest)
    problems = check_scannable(rootfs, host_dpkg=False)
    check(any(donor.name in p and "no recorded package lists it" in p for p in problems),
          f"a library added without its record ({donor.name}) went unnoticed: {problems}")
    print(f"  with {donor.name} added: {problems}")


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
        if case == "scan":
            if not shutil.which("dpkg-query"):
                print("SKIP: dpkg-query not found (the images are built on Debian 12)")
                return SKIP
            case_scan(bin_dir, work)
        elif case == "reproducible":
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
            if shutil.which("dpkg-query"):
                check_image_scannable(archive, case, work)
            else:
                print("  scanner view not checked: no dpkg-query (the images are built on Debian 12)")
    print(f"PASS {case}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failure as e:
        print(f"FAIL: {e}", file=sys.stderr)
        sys.exit(1)
