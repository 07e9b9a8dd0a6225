# Builds the two container images the run needs as OCI-layout tarballs (there is no registry):
# a busybox image for test pods and a pause image for pod sandboxes, both from busybox-static
# (chart.sh adds a kube-scheduler image the same way).

E2E_BUSYBOX_IMAGE=registry.e2e.local/busybox:e2e
E2E_PAUSE_IMAGE=registry.e2e.local/pause:e2e

# oci_blob <file> <blobs dir>: stores a file under its sha256 and prints "<digest> <size>".
oci_blob() {
  local sum size
  sum=$(sha256sum "$1" | cut -d' ' -f1)
  size=$(stat -c %s "$1")
  cp "$1" "$2/$sum"
  echo "sha256:$sum $size"
}

# build_oci_image <name:tag> <out.tar> <entrypoint JSON array> [<host file>:<path in image>...]
build_oci_image() {
  local ref=$1 out=$2 entrypoint=$3
  shift 3
  local dir
  dir=$(mktemp -d "$E2E_WORK/oci.XXXXXX")
  mkdir -p "$dir/root/bin" "$dir/root/tmp" "$dir/root/etc" "$dir/root/proc" "$dir/root/sys" \
    "$dir/root/dev" "$dir/layout/blobs/sha256"
  cp /bin/busybox "$dir/root/bin/busybox"
  local applet
  for applet in $(/bin/busybox --list); do
    [[ $applet == busybox ]] || ln -sf busybox "$dir/root/bin/$applet"
  done
  echo "root:x:0:0:root:/:/bin/sh" >"$dir/root/etc/passwd"
  local extra
  for extra in "$@"; do
    mkdir -p "$(dirname "$dir/root/${extra#*:}")"
    cp "${extra%%:*}" "$dir/root/${extra#*:}"
  done
  tar --numeric-owner --owner=0 --group=0 -C "$dir/root" -cf "$dir/layer.tar" .
  local layer layer_digest layer_size
  layer=$(oci_blob "$dir/layer.tar" "$dir/layout/blobs/sha256")
  read -r layer_digest layer_size <<<"$layer"
  jq -n --arg diff "$layer_digest" --argjson ep "$entrypoint" \
    '{architecture: "amd64", os: "linux", config: {Env: ["PATH=/bin"], Entrypoint: $ep},
      rootfs: {type: "layers", diff_ids: [$diff]}}' >"$dir/config.json"
  local config config_digest config_size
  config=$(oci_blob "$dir/config.json" "$dir/layout/blobs/sha256")
  read -r config_digest config_size <<<"$config"
  jq -n --arg cd "$config_digest" --argjson cs "$config_size" --arg ld "$layer_digest" \
    --argjson ls "$layer_size" \
    '{schemaVersion: 2, mediaType: "application/vnd.oci.image.manifest.v1+json",
      config: {mediaType: "application/vnd.oci.image.config.v1+json", digest: $cd, size: $cs},
      layers: [{mediaType: "application/vnd.oci.image.layer.v1.tar", digest: $ld, size: $ls}]}' \
    >"$dir/manifest.json"
  local manifest manifest_digest manifest_size
  manifest=$(oci_blob "$dir/manifest.json" "$dir/layout/blobs/sha256")
  read -r manifest_digest manifest_size <<<"$manifest"
  jq -n --arg md "$manifest_digest" --argjson ms "$manifest_size" --arg ref "$ref" \
    '{schemaVersion: 2, manifests: [{mediaType: "application/vnd.oci.image.manifest.v1+json",
      digest: $md, size: $ms, platform: {architecture: "amd64", os: "linux"},
      annotations: {"io.containerd.image.name": $ref,
                    "org.opencontainers.image.ref.name": ($ref | split(":") | last)}}]}' \
    >"$dir/layout/index.json"
  echo '{"imageLayoutVersion":"1.0.0"}' >"$dir/layout/oci-layout"
  tar -C "$dir/layout" -cf "$out" .
  rm -rf "$dir"
}

build_images() {
  mkdir -p "$E2E_WORK/images"
  build_oci_image "$E2E_BUSYBOX_IMAGE" "$E2E_WORK/images/busybox.tar" '["/bin/sh"]'
  # The sandbox's only job is to hold the namespaces until told to stop.
  build_oci_image "$E2E_PAUSE_IMAGE" "$E2E_WORK/images/pause.tar" \
    '["/bin/sh","-c","trap \"exit 0\" TERM INT; while true; do sleep 3600 & wait $!; done"]'
}

# import_images <containerd socket>
import_images() {
  local sock=$1 img
  for img in busybox pause; do
    ctr --address "$sock" -n k8s.io images import "$E2E_WORK/images/$img.tar" >/dev/null ||
      die "ctr could not import $img.tar into containerd at $sock"
  done
}
