#!/usr/bin/env python3
"""Assembles vgpu's container images without a container engine (scripts/build-images.sh runs it).

Each image is one layer: a minimal root filesystem with the image's binaries in /usr/local/bin, the
Debian shared libraries they load (resolved with ldd on the build host, dynamic loader and glibc
included, with the host's symlinks: /lib -> usr/lib, the SONAME links), /etc/passwd and /etc/group
(root and nonroot, uid 65532), /etc/nsswitch.conf, Debian's /etc/ld.so.conf, the CA bundle and
empty /tmp, /proc, /sys, /dev. For scanners and licence reviews: the dpkg records of every Debian
package it ships files of (add_debian_metadata), their copyright files, /etc/os-release and
/etc/debian_version, and vgpu's LICENSE in /usr/share/doc/vgpu. It is written as an OCI image layout (oci-layout, index.json,
blobs/sha256/...) in one tar, with a docker-archive manifest.json beside it: `ctr images import`
(the index's io.containerd.image.name annotation names the image) and `docker load` both read it.

Reproducible: every tar entry has the same mtime (--epoch), owner root (the nonroot home excepted)
and normalised modes, entries are sorted, gzip has no name and mtime 0, JSON is key-sorted. Same
binaries, libraries and epoch give byte-identical archives.
"""

import argparse
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
from datetime import datetime, timezone

NONROOT = 65532
PATH_ENV = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# The images the chart (charts/vgpu) runs. `bins` go to /usr/local/bin (the chart's commands name
# them by PATH); `files` are (name in the binaries folder, path in the image). The device plugin
# installs libvgpu.so itself at start from devicePlugin.libvgpu (--libvgpu), so its image needs no
# shell or cp. The device plugin and the monitor need root (host paths, NVML, other processes'
# /proc); the scheduler runs as nonroot and needs its HTTPS port >= 1024 (docs/install.md).
IMAGES = {
    "device-plugin": {
        "repository": "vgpu/device-plugin",
        "bins": ["vgpu-device-plugin"],
        "files": [("libvgpu.so", "/opt/vgpu/lib/libvgpu.so")],
        "user": "0:0",
        "title": "vgpu device plugin (installs libvgpu.so on GPU nodes)",
    },
    "scheduler": {
        "repository": "vgpu/scheduler",
        "bins": ["vgpu-scheduler"],
        "files": [],
        "user": f"{NONROOT}:{NONROOT}",
        "title": "vgpu scheduler extender and admission webhook",
    },
    "monitor": {
        "repository": "vgpu/monitor",
        "bins": ["vgpu-monitor", "vgpu"],
        "files": [],
        "user": "0:0",
        "title": "vgpu node monitor (and `vgpu top`)",
    },
}

PASSWD = (
    "root:x:0:0:root:/root:/usr/sbin/nologin\n"
    f"nonroot:x:{NONROOT}:{NONROOT}:nonroot:/home/nonroot:/usr/sbin/nologin\n"
)
GROUP = f"root:x:0:\nnonroot:x:{NONROOT}:\n"
NSSWITCH = "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\nnetworks: files\n"
# Debian 12's, so that ldconfig run in the container (the NVIDIA container toolkit's hook after it
# mounts libnvidia-ml.so) sees the multiarch directories.
LD_SO_CONF = "include /etc/ld.so.conf.d/*.conf\n"
LD_SO_CONF_MULTIARCH = (
    "# Multiarch support\n/usr/local/lib/x86_64-linux-gnu\n/lib/x86_64-linux-gnu\n"
    "/usr/lib/x86_64-linux-gnu\n"
)
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
# The images' default names, localhost/vgpu/...: as the chart's default registry (charts/vgpu), a
# name no one else can publish under. A node that lacks the imported image fails to pull it from
# itself instead of pulling docker.io/vgpu/..., a Docker Hub namespace this project does not own.
DEFAULT_REGISTRY = "localhost"
DEFAULT_LICENSE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "LICENSE")
# SPDX identifier of vgpu's licence (LICENSE): the org.opencontainers.image.licenses label.
LICENSE_ID = "Apache-2.0"

MT_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MT_INDEX = "application/vnd.oci.image.index.v1+json"
MT_CONFIG = "application/vnd.oci.image.config.v1+json"
MT_LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"


def die(msg):
    print(f"oci-image: {msg}", file=sys.stderr)
    sys.exit(1)


def canonical_json(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


class RootFS:
    """Entries of the layer: path (absolute, normalised) -> dict(type, mode, uid, gid, ...)."""

    def __init__(self):
        self.entries = {}
        self.add_dir("/", 0o755)

    def _parents(self, path):
        parent = os.path.dirname(path)
        if parent != path and parent not in self.entries:
            self._parents(parent)
            self.entries[parent] = {"type": "dir", "mode": 0o755, "uid": 0, "gid": 0}

    def add_dir(self, path, mode, uid=0, gid=0):
        path = os.path.normpath(path)
        self._parents(path)
        self.entries[path] = {"type": "dir", "mode": mode, "uid": uid, "gid": gid}

    def add_bytes(self, path, data, mode=0o644):
        self._parents(path)
        self.entries[path] = {"type": "file", "mode": mode, "uid": 0, "gid": 0, "data": data}

    def add_file(self, path, source, mode, origin=None):
        """origin "host": the build host's own file at the same path (a Debian package's)."""
        self._parents(path)
        self.entries[path] = {"type": "file", "mode": mode, "uid": 0, "gid": 0, "source": source,
                              "origin": origin}

    def add_symlink(self, path, target, origin=None):
        self._parents(path)
        old = self.entries.get(path)
        if old and (old["type"] != "symlink" or old["target"] != target):
            die(f"{path}: symlink to {target} clashes with an entry already in the image")
        self.entries[path] = {"type": "symlink", "mode": 0o777, "uid": 0, "gid": 0,
                              "target": target, "origin": origin}

    def add_host_path(self, host_path):
        """Copies host_path into the image at the same path, following the host's symlinks one
        component at a time and recreating them (e.g. /lib -> usr/lib, libfoo.so.1 ->
        libfoo.so.1.2.3), so that the image resolves the path exactly as the host does."""
        seen = 0
        pending = [host_path]
        while pending:
            path = os.path.normpath(pending.pop())
            seen += 1
            if seen > 64:
                die(f"{host_path}: too many symlinks")
            parts = path.strip("/").split("/")
            current = "/"
            redirected = False
            for i, part in enumerate(parts):
                current = os.path.join(current, part)
                st = os.lstat(current)
                if stat.S_ISLNK(st.st_mode):
                    target = os.readlink(current)
                    self.add_symlink(current, target, origin="host")
                    resolved = target if os.path.isabs(target) else os.path.join(
                        os.path.dirname(current), target)
                    pending.append(os.path.join(resolved, *parts[i + 1:]))
                    redirected = True
                    break
                if i < len(parts) - 1:
                    if not stat.S_ISDIR(st.st_mode):
                        die(f"{current}: not a directory (in {host_path})")
                    if current not in self.entries:
                        self.add_dir(current, 0o755)
            if not redirected:
                st = os.stat(current)
                if not stat.S_ISREG(st.st_mode):
                    die(f"{current}: not a regular file")
                mode = 0o755 if st.st_mode & 0o111 else 0o644
                self.add_file(current, current, mode, origin="host")


def ldd(path):
    """The shared libraries path loads (absolute host paths), the dynamic loader included."""
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
    env["LC_ALL"] = "C"
    out = subprocess.run(["ldd", path], capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        die(f"ldd {path} failed: {out.stdout}{out.stderr}")
    libs = []
    for line in out.stdout.splitlines():
        line = line.strip()
        if "not found" in line:
            die(f"{path}: {line}")
        if "=>" in line:
            target = line.split("=>", 1)[1].strip().split(" (")[0].strip()
            if target.startswith("/"):
                libs.append(target)
        elif line.startswith("/"):
            libs.append(line.split(" (")[0].strip())  # the dynamic loader
        elif line.startswith("statically linked"):
            pass
    return libs


# The Debian records of what an image ships, for scanners (Trivy, Grype/Syft, Clair, ...) and for
# the licences. One /var/lib/dpkg/status file rather than distroless's status.d/<package>: dpkg
# itself reads it (dpkg-query --admindir=<root>/var/lib/dpkg), and every scanner that knows Debian
# reads it, status.d only the newer ones. Beside it info/<package>.list and .md5sums name the
# package's files that the image holds (Trivy and Syft tie files to packages with them), and
# /etc/os-release and /etc/debian_version say Debian 12 (Grype reads the first, Trivy the second).
DPKG_ADMIN = "/var/lib/dpkg"
OS_RELEASE = ("/etc/os-release", "/usr/lib/os-release")
DEBIAN_VERSION = "/etc/debian_version"
COMMON_LICENSES = "/usr/share/common-licenses"
VGPU_DOC = "/usr/share/doc/vgpu"
# merged /usr: dpkg lists /lib/x86_64-linux-gnu/libc.so.6, ldd and the image reach it through
# /usr/lib/... (or the other way round).
USR_MERGED = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


def dpkg_query(*args, ok=(0,)):
    env = dict(os.environ, LC_ALL="C")
    r = subprocess.run(["dpkg-query", *args], capture_output=True, text=True, env=env,
                       check=False)
    if r.returncode not in ok:
        die(f"dpkg-query {' '.join(args[:3])} ...: exit {r.returncode}: {r.stderr.strip()}")
    return r.stdout


def path_aliases(path):
    """path, then the same file's other name under merged /usr."""
    out = [path]
    for d in USR_MERGED:
        if path.startswith(f"/usr{d}/"):
            out.append(path[4:])
        elif path.startswith(f"{d}/"):
            out.append("/usr" + path)
    return out


def dpkg_owners(paths):
    """{path: (packages, the path as dpkg lists it)} for those of paths a package owns (dpkg -S).
    Packages are named as dpkg's info files are: libc6:amd64 (Multi-Arch: same), base-files."""
    queries = sorted({a for p in paths for a in path_aliases(p)})
    if not queries:
        return {}
    # Exact paths, not patterns: escape what dpkg-query would take as a wildcard.
    patterns = [re.sub(r"([*?\[\\])", r"\\\1", q) for q in queries]
    found = {}
    for line in dpkg_query("-S", *patterns, ok=(0, 1)).splitlines():
        if line.startswith("diversion ") or ": " not in line:
            continue
        pkgs, _, path = line.partition(": ")
        found[path] = sorted(p.strip() for p in pkgs.split(","))
    owners = {}
    for p in paths:
        for a in path_aliases(p):
            if a in found:
                owners[p] = (found[a], a)
                break
    return owners


def shipped_host_paths(fs, owners, folder_links=False):
    """Files and links of the image copied from the host, not yet mapped to a package; with
    folder_links, the links to folders instead (/lib -> usr/lib, /usr/share/doc/libstdc++6 ->
    gcc-12-base), which name no package of their own: every package with a file under /lib
    lists /lib."""
    return [p for p, e in sorted(fs.entries.items())
            if e.get("origin") == "host" and e["type"] != "dir" and p not in owners
            and (e["type"] == "symlink" and os.path.isdir(p)) == folder_links]


def add_debian_metadata(fs, generated):
    """Adds the Debian records of every package whose files fs holds: the dpkg status records,
    info/<package>.list and .md5sums limited to the files shipped, each package's
    /usr/share/doc/<package>/copyright and the /usr/share/common-licenses texts those name,
    /etc/os-release and /etc/debian_version. generated: {image path: package} for files made from
    a package's data rather than shipped by it (the CA bundle). Returns the records' packages."""
    for path in OS_RELEASE + (DEBIAN_VERSION,):
        if os.path.lexists(path):
            fs.add_host_path(path)
    if "/usr/lib/os-release" not in fs.entries:
        die("the build host has no /usr/lib/os-release (not Debian 12?)")
    owners = {}
    packages = set(generated.values())
    documented = set()
    while True:
        todo = shipped_host_paths(fs, owners)
        found = dpkg_owners(todo)
        for p in todo:
            if p in found:
                owners[p] = found[p]
                packages.update(found[p][0])
            elif fs.entries[p]["type"] == "file":
                die(f"{p}: no Debian package owns it (dpkg -S); the image would ship it "
                    "without a record")
            else:
                owners[p] = ([], None)  # an ldconfig link: the file it names is checked
        if not todo and documented == packages:
            break
        for pkg in sorted(packages - documented):
            documented.add(pkg)
            name = pkg.split(":")[0]
            copyright_path = f"/usr/share/doc/{name}/copyright"
            if not os.path.isfile(copyright_path):
                die(f"{copyright_path} missing on the build host: {pkg}'s licence would not ship")
            fs.add_host_path(copyright_path)
            with open(copyright_path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            for lic in re.findall(re.escape(COMMON_LICENSES) + r"/([A-Za-z0-9][\w.+-]*)", text):
                lic_path = f"{COMMON_LICENSES}/{lic.rstrip('.')}"
                if os.path.isfile(lic_path):
                    fs.add_host_path(lic_path)

    # What each package ships here, as dpkg names the paths; links to folders go to the lists of
    # packages already recorded that list them, and record none.
    for p, (pkgs, dpkg_path) in dpkg_owners(shipped_host_paths(fs, owners, True)).items():
        owners[p] = ([pkg for pkg in pkgs if pkg in packages], dpkg_path)
    shipped = {pkg: set() for pkg in packages}
    for pkgs, dpkg_path in owners.values():
        for pkg in pkgs:
            shipped[pkg].add(dpkg_path)

    everything_shipped = set().union(*shipped.values())
    status = dpkg_query("-s", *sorted(packages))
    records = []
    for record in status.strip("\n").split("\n\n"):
        lines, in_conffiles = [], False
        for line in record.splitlines():
            if line[:1] in (" ", "\t"):
                # Conffiles: " <path> <md5>" (the md5sums files leave conffiles out); only those
                # the image holds (/etc/debian_version), the field dropped if none.
                if not in_conffiles or line.split()[0] in everything_shipped:
                    lines.append(line)
                continue
            in_conffiles = line.startswith("Conffiles:")
            lines.append(line)
        if lines and lines[-1] == "Conffiles:":
            lines.pop()
        lines = [ln for i, ln in enumerate(lines) if not (
            ln == "Conffiles:" and (i + 1 == len(lines) or lines[i + 1][:1] not in (" ", "\t")))]
        fields = dict(ln.split(": ", 1) for ln in lines if ln[:1] not in (" ", "\t") and ": " in ln)
        if fields.get("Status") != "install ok installed":
            die(f"{fields.get('Package')}: Status {fields.get('Status')!r} on the build host")
        records.append(((fields["Package"], fields.get("Architecture", "")), "\n".join(lines)))
    if len(records) != len(packages):
        die(f"dpkg-query -s gave {len(records)} records for {len(packages)} packages")
    records.sort()
    fs.add_bytes(f"{DPKG_ADMIN}/status", ("\n\n".join(r for _, r in records) + "\n").encode())
    # The database layout with <package>:<arch>.list names (dpkg's own "1"), so that dpkg-query
    # --admindir finds the lists of Multi-Arch: same packages.
    fs.add_bytes(f"{DPKG_ADMIN}/info/format", b"1\n")

    for pkg in sorted(packages):
        mine = shipped[pkg]
        listing = [ln for ln in dpkg_query("-L", pkg).splitlines()
                   if ln == "/." or ln in mine or any(m.startswith(ln + "/") for m in mine)]
        fs.add_bytes(f"{DPKG_ADMIN}/info/{pkg}.list", ("\n".join(listing) + "\n").encode())
        md5_path = dpkg_query("--control-path", pkg, "md5sums").strip()
        if md5_path:
            with open(md5_path, encoding="utf-8") as f:
                sums = [ln for ln in f.read().splitlines()
                        if len(ln.split("  ", 1)) == 2 and "/" + ln.split("  ", 1)[1] in mine]
            if sums:
                fs.add_bytes(f"{DPKG_ADMIN}/info/{pkg}.md5sums", ("\n".join(sums) + "\n").encode())
    return sorted(packages)


def staged_binary(src, dest_dir, strip, shared):
    """src copied into dest_dir, stripped unless strip is False. Returns the copy's path."""
    dst = os.path.join(dest_dir, os.path.basename(src))
    if strip:
        flag = "--strip-unneeded" if shared else "--strip-all"
        subprocess.run(["strip", flag, "-o", dst, src], check=True)
    else:
        shutil.copyfile(src, dst)
    return dst


def build_rootfs(spec, bin_dir, stage, strip, ca_bundle, license_file):
    fs = RootFS()
    for d, mode in (("/etc", 0o755), ("/proc", 0o555), ("/sys", 0o555), ("/dev", 0o755),
                    ("/tmp", 0o1777), ("/root", 0o700), ("/usr/local/bin", 0o755)):
        fs.add_dir(d, mode)
    fs.add_dir("/home/nonroot", 0o755, NONROOT, NONROOT)
    fs.add_bytes("/etc/passwd", PASSWD.encode())
    fs.add_bytes("/etc/group", GROUP.encode())
    fs.add_bytes("/etc/nsswitch.conf", NSSWITCH.encode())
    fs.add_bytes("/etc/ld.so.conf", LD_SO_CONF.encode())
    fs.add_bytes("/etc/ld.so.conf.d/x86_64-linux-gnu.conf", LD_SO_CONF_MULTIARCH.encode())
    generated = {}
    if ca_bundle:
        # Kubernetes API calls use the service account's CA; the system bundle is for kubeconfigs
        # without one. update-ca-certificates writes it from ca-certificates' certificates, so the
        # image carries that package's record and copyright (unless --ca-bundle names another).
        fs.add_file(CA_BUNDLE, os.path.realpath(ca_bundle), 0o644)
        if os.path.realpath(ca_bundle) == os.path.realpath(CA_BUNDLE) and dpkg_query(
                "-W", "-f", "${db:Status-Abbrev}", "ca-certificates", ok=(0, 1)).startswith("ii"):
            generated[CA_BUNDLE] = "ca-certificates"
    # vgpu's own licence (the org.opencontainers.image.licenses label) beside Debian's copyrights.
    fs.add_file(f"{VGPU_DOC}/LICENSE", os.path.realpath(license_file), 0o644)
    libs = []
    for name in spec["bins"]:
        src = os.path.join(bin_dir, name)
        if not os.path.isfile(src):
            die(f"{src}: missing (binary of image {spec['repository']})")
        staged = staged_binary(os.path.realpath(src), stage, strip, shared=False)
        fs.add_file(f"/usr/local/bin/{name}", staged, 0o755)
        libs += ldd(src)
    for name, dest in spec["files"]:
        src = os.path.join(bin_dir, name)
        if not os.path.isfile(src):
            die(f"{src}: missing (for {dest} in image {spec['repository']})")
        staged = staged_binary(os.path.realpath(src), stage, strip, shared=True)
        fs.add_file(dest, staged, 0o755)
    for lib in sorted(set(libs)):
        fs.add_host_path(lib)
    packages = add_debian_metadata(fs, generated)
    return fs, packages


def write_layer(fs, epoch, path):
    """The layer's tar at path (uncompressed); entries sorted, owners and times fixed."""
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tar:
        for p in sorted(fs.entries):
            e = fs.entries[p]
            if p == "/":
                continue  # no entry for the root itself, as docker build writes none
            info = tarfile.TarInfo(p[1:])
            info.mtime = epoch
            info.uid, info.gid = e["uid"], e["gid"]
            info.uname = info.gname = ""
            info.mode = e["mode"]
            if e["type"] == "dir":
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            elif e["type"] == "symlink":
                info.type = tarfile.SYMTYPE
                info.linkname = e["target"]
                tar.addfile(info)
            elif "data" in e:
                info.size = len(e["data"])
                tar.addfile(info, io.BytesIO(e["data"]))
            else:
                info.size = os.path.getsize(e["source"])
                with open(e["source"], "rb") as f:
                    tar.addfile(info, f)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def gzip_file(src, dst, level):
    with open(src, "rb") as fin, open(dst, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=level,
                           mtime=0) as gz:
            shutil.copyfileobj(fin, gz, 1 << 20)


def write_rootfs_dir(fs, dest):
    """The image's files as a directory tree (for the Dockerfile's final COPY)."""
    is_root = os.geteuid() == 0
    for p in sorted(fs.entries):
        e = fs.entries[p]
        target = os.path.join(dest, p.lstrip("/"))
        if e["type"] == "dir":
            os.makedirs(target, exist_ok=True)
        elif e["type"] == "symlink":
            os.symlink(e["target"], target)
        elif "data" in e:
            with open(target, "wb") as f:
                f.write(e["data"])
        else:
            shutil.copyfile(e["source"], target)
        if e["type"] != "symlink":
            os.chmod(target, e["mode"])
        if is_root:
            os.lchown(target, e["uid"], e["gid"])


def build_image(key, args, tmp):
    spec = IMAGES[key]
    stage = os.path.join(tmp, key)
    os.makedirs(stage)
    fs, packages = build_rootfs(spec, args.binaries, stage, args.strip, args.ca_bundle,
                                args.license)
    if args.rootfs:
        write_rootfs_dir(fs, os.path.join(args.rootfs, key))

    layer_tar = os.path.join(stage, "layer.tar")
    write_layer(fs, args.epoch, layer_tar)
    diff_id = sha256_file(layer_tar)
    uncompressed = os.path.getsize(layer_tar)
    layer_gz = os.path.join(stage, "layer.tar.gz")
    gzip_file(layer_tar, layer_gz, args.gzip_level)
    os.unlink(layer_tar)
    layer_digest = sha256_file(layer_gz)

    created = datetime.fromtimestamp(args.epoch, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    labels = {
        "org.opencontainers.image.title": spec["repository"],
        "org.opencontainers.image.description": spec["title"],
        "org.opencontainers.image.version": args.tag,
        "org.opencontainers.image.revision": args.revision,
        "org.opencontainers.image.created": created,
        "org.opencontainers.image.licenses": LICENSE_ID,
    }
    config = {
        "architecture": "amd64",
        "os": "linux",
        "created": created,
        "config": {
            "User": spec["user"],
            "Env": [PATH_ENV],
            "Entrypoint": [f"/usr/local/bin/{spec['bins'][0]}"],
            "WorkingDir": "/",
            "Labels": labels,
        },
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{diff_id}"]},
        "history": [{"created": created,
                     "created_by": "scripts/build-images.sh (scripts/oci-image.py)"}],
    }
    config_bytes = canonical_json(config)
    config_digest = hashlib.sha256(config_bytes).hexdigest()
    manifest = {
        "schemaVersion": 2,
        "mediaType": MT_MANIFEST,
        "config": {"mediaType": MT_CONFIG, "digest": f"sha256:{config_digest}",
                   "size": len(config_bytes)},
        "layers": [{"mediaType": MT_LAYER_GZIP, "digest": f"sha256:{layer_digest}",
                    "size": os.path.getsize(layer_gz)}],
        "annotations": {"org.opencontainers.image.created": created},
    }
    manifest_bytes = canonical_json(manifest)
    manifest_digest = hashlib.sha256(manifest_bytes).hexdigest()
    repo = spec["repository"]
    ref = f"{args.registry}/{repo}"
    # containerd's normalised name: what kubelet asks for when a pod names the image.
    first = ref.split("/", 1)[0]
    has_registry = "." in first or ":" in first or first == "localhost"
    full_name = ref if has_registry else f"docker.io/{ref}"
    index = {
        "schemaVersion": 2,
        "mediaType": MT_INDEX,
        "manifests": [{
            "mediaType": MT_MANIFEST,
            "digest": f"sha256:{manifest_digest}",
            "size": len(manifest_bytes),
            "platform": {"architecture": "amd64", "os": "linux"},
            "annotations": {
                "io.containerd.image.name": f"{full_name}:{args.tag}",
                "org.opencontainers.image.ref.name": args.tag,
            },
        }],
    }
    docker_manifest = [{
        "Config": f"blobs/sha256/{config_digest}",
        "RepoTags": [f"{ref}:{args.tag}"],
        "Layers": [f"blobs/sha256/{layer_digest}"],
    }]

    out = os.path.join(args.out, f"{key}.tar")
    blobs = [(config_digest, config_bytes), (layer_digest, layer_gz),
             (manifest_digest, manifest_bytes)]
    tmp_out = out + ".tmp"
    with tarfile.open(tmp_out, "w", format=tarfile.PAX_FORMAT) as tar:
        def add(name, data=None, source=None, directory=False):
            info = tarfile.TarInfo(name)
            info.mtime = args.epoch
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if directory:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
                return
            info.mode = 0o644
            if source:
                info.size = os.path.getsize(source)
                with open(source, "rb") as f:
                    tar.addfile(info, f)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))

        add("blobs/", directory=True)
        add("blobs/sha256/", directory=True)
        for digest, content in sorted(blobs):
            if isinstance(content, bytes):
                add(f"blobs/sha256/{digest}", data=content)
            else:
                add(f"blobs/sha256/{digest}", source=content)
        add("index.json", data=canonical_json(index))
        add("manifest.json", data=canonical_json(docker_manifest))
        add("oci-layout", data=canonical_json({"imageLayoutVersion": "1.0.0"}))
    os.replace(tmp_out, out)
    files = sum(1 for e in fs.entries.values() if e["type"] == "file")
    print(f"{out}: {full_name}:{args.tag} manifest sha256:{manifest_digest} "
          f"archive {os.path.getsize(out)} B, layer {os.path.getsize(layer_gz)} B gzip / "
          f"{uncompressed} B tar, {files} files, {len(packages)} Debian packages recorded, "
          f"user {spec['user']}")


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--binaries", required=True,
                   help="folder with vgpu-device-plugin, vgpu-scheduler, vgpu-monitor, vgpu, "
                        "libvgpu.so")
    p.add_argument("--out", required=True, help="folder for <image>.tar")
    p.add_argument("--tag", required=True)
    p.add_argument("--only", action="append", choices=sorted(IMAGES),
                   help="build only this image (repeatable)")
    p.add_argument("--epoch", type=int, default=0, help="mtime of every entry, image created")
    p.add_argument("--revision", default="unknown", help="org.opencontainers.image.revision")
    p.add_argument("--registry", default=DEFAULT_REGISTRY,
                   help="registry in front of the repository names (default: localhost, the "
                        "chart's default for images imported into the nodes)")
    p.add_argument("--no-strip", dest="strip", action="store_false",
                   help="keep symbols and debug information")
    p.add_argument("--ca-bundle", default=CA_BUNDLE if os.path.exists(CA_BUNDLE) else "",
                   help=f"CA certificates for {CA_BUNDLE} ('' = none)")
    p.add_argument("--license", default=DEFAULT_LICENSE,
                   help=f"vgpu's licence text, shipped as {VGPU_DOC}/LICENSE (default: the "
                        "repository's LICENSE)")
    p.add_argument("--gzip-level", type=int, default=6)
    p.add_argument("--rootfs", help="also write each image's files as <ROOTFS>/<image>/")
    args = p.parse_args()
    # amd64 only: the config's architecture, /etc/ld.so.conf.d and the libraries (ldd, dpkg -S on
    # this host's packages) are the build host's, written for x86_64 (docs/install.md, "arm64").
    if not shutil.which("dpkg-query"):
        die("dpkg-query not found: the images are built on Debian 12 (docs/install.md, Images)")
    host_arch = dpkg_query("-W", "-f", "${Architecture}", "dpkg").strip()
    if host_arch != "amd64":
        die(f"the build host is {host_arch}: the images are built on Debian 12 amd64 only "
            "(docs/install.md, Images, arm64)")
    if not args.registry:
        die("--registry '': the images would be docker.io/vgpu/..., a Docker Hub namespace this "
            "project does not own; name your registry, or localhost for images to import")
    if not os.path.isfile(args.license):
        die(f"{args.license}: no licence file (the images ship vgpu's LICENSE)")
    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="vgpu-images-") as tmp:
        for key in args.only or sorted(IMAGES):
            build_image(key, args, tmp)


if __name__ == "__main__":
    main()
