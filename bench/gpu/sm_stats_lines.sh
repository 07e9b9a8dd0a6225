#!/bin/bash
# The last VGPU_SM_STATS line (docs/sm-limit.md) of each limited tenant's stderr, one line each
# prefixed with the file's name, for a device call's script to keep beside its results:
#   bash bench/gpu/sm_stats_lines.sh FILE.err... >limited_stats.txt
for f in "$@"; do
  [ -f "$f" ] || continue
  grep -a 'sm-limit\]' "$f" | tail -1 | sed "s#^#$(basename "$f") #"
done
