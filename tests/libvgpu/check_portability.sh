#!/bin/sh
# Asserts the portability contract of the built libvgpu.so (docs/libvgpu.md):
# NEEDED only libc/libdl/libpthread/librt (libdl and libpthread kept), every GLIBC version <= 2.17,
# no libstdc++ (GLIBCXX/CXXABI), only hooks exported (cu*, nvml*, dlsym) and all of exports.def,
# an optimised build, no text relocations.
set -eu
lib=$1
exports_def=$2
fail() { echo "FAIL: $*" >&2; exit 1; }

needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
for n in $needed; do
  case "$n" in libc.so.6|libdl.so.2|libpthread.so.0|librt.so.1) ;; *) fail "unexpected NEEDED $n";; esac
done
for n in libdl.so.2 libpthread.so.0; do
  echo " $needed " | grep -q " $n " || fail "$n missing from NEEDED (needed on glibc < 2.34)"
done

versions=$(objdump -T "$lib" | grep -o 'GLIBC_[0-9.]*' | sort -u -V)
max=$(printf '%s\n' $versions | sed 's/GLIBC_//' | sort -V | tail -1)
[ "$(printf '%s\n2.17\n' "$max" | sort -V | tail -1)" = "2.17" ] || fail "binds GLIBC_$max (> 2.17): $(objdump -T "$lib" | grep "GLIBC_$max")"
objdump -T "$lib" | grep -q -E 'GLIBCXX|CXXABI' && fail "depends on libstdc++"

exported=$(objdump -T "$lib" | awk '$0 !~ /\*UND\*/ && ($2 == "g" || $2 == "w") {print $NF}' | sort)
for s in $exported; do
  case "$s" in cu*|nvml*|dlsym) ;; *) fail "exports non-hook symbol $s";; esac
done
for s in $(sed -n 's/^VGPU_EXPORT(\([A-Za-z0-9_]*\),.*/\1/p' "$exports_def"); do
  echo "$exported" | grep -qx "$s" || fail "hook $s is not exported"
done
echo "$exported" | grep -qx dlsym || fail "dlsym override not exported"

readelf -p .comment "$lib" | grep -q 'libvgpu: optimized build' || fail "not an optimised build"
readelf -d "$lib" | grep -q TEXTREL && fail "has text relocations"

echo "portability ok: NEEDED=[$needed] max GLIBC_$max, $(echo "$exported" | wc -l) exported symbols"
