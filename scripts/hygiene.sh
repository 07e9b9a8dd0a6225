#!/usr/bin/env bash
# Hygiene gate, run by scripts/test.sh (the README's test command, so CI) before the build:
#   format  clang-format --dry-run -Werror on every C/C++ source and header of the project
#           (tracked and new files; build folders are git-ignored, nothing is vendored);
#   tidy    clang-tidy (the repository's .clang-tidy: its WarningsAsErrors fail the gate, the
#           other checks are advice) on the C++ files this change touches: those that differ from the merge base with origin/main (on a
#           branch), else from the previous commit (HEAD~1), uncommitted and new files included;
#           a changed header brings the .cpp of the same name. The dev build's
#           compile_commands.json gives the flags; its generated sources are made first.
#
# Usage: scripts/hygiene.sh [format|tidy|all] [--build DIR] [--all-files] [FILE...]
#   format | tidy | all  which check (default all)
#   --build DIR          configured build folder (default build/dev: `cmake --preset dev`)
#   --all-files          clang-tidy on every C++ file of the compile database
#   FILE...              clang-tidy on these files instead of the changed ones
# Fix formatting with `clang-format -i FILE...`.
set -euo pipefail
cd "$(dirname "$0")/.."

# Not the project's to format: nothing at present (vendored or generated files would go here).
EXCLUDED=()

SOURCES=('*.c' '*.h' '*.cc' '*.cpp' '*.hpp' '*.cu' '*.cuh')

check=all
build=build/dev
all_files=0
files=()
while [[ $# -gt 0 ]]; do
  case $1 in
    format | tidy | all) check=$1 ;;
    --build) build=$2; shift ;;
    --all-files) all_files=1 ;;
    -h | --help) sed -n '2,17p' "$0"; exit 0 ;;
    -*) echo "hygiene: unknown option $1" >&2; exit 2 ;;
    *) files+=("$1") ;;
  esac
  shift
done

pathspecs=("${SOURCES[@]}")
for p in "${EXCLUDED[@]}"; do pathspecs+=(":(exclude)$p"); done

# Tracked and new (not ignored) files matching the pathspecs that exist in the working tree.
project_files() {
  git ls-files --cached --others --exclude-standard -- "$@" | sort -u |
    while IFS= read -r f; do [[ -f $f ]] && printf '%s\n' "$f"; done
}

run_format() {
  local -a all
  mapfile -t all < <(project_files "${pathspecs[@]}")
  local out
  if ! out=$(printf '%s\0' "${all[@]}" | xargs -0 -n 50 clang-format --dry-run -Werror 2>&1); then
    echo "hygiene: clang-format: these files are not formatted (clang-format -i FILE):" >&2
    sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: .*/  \1/p' <<<"$out" | sort -u >&2
    return 1
  fi
  echo "hygiene: clang-format: ${#all[@]} files formatted"
}

# The commit to compare with: the merge base with origin/main, or the previous commit.
base_commit() {
  local base=""
  if git rev-parse -q --verify origin/main >/dev/null; then
    base=$(git merge-base HEAD origin/main 2>/dev/null || true)
    [[ $base == "$(git rev-parse HEAD)" ]] && base=""  # main itself: its last commit
  fi
  if [[ -z $base ]] && git rev-parse -q --verify HEAD~1 >/dev/null; then base=$(git rev-parse HEAD~1); fi
  printf '%s' "$base"
}

changed_files() {
  local base=$1
  {
    git diff --name-only --diff-filter=d "$base" -- "${pathspecs[@]}"
    git ls-files --others --exclude-standard -- "${pathspecs[@]}"
  } | sort -u | while IFS= read -r f; do
    if [[ ! -f $f ]]; then continue; fi
    case $f in
      *.h | *.hpp)
        for c in "${f%.*}.cpp" "${f%.*}.cc"; do
          if [[ -f $c ]]; then printf '%s\n' "$c"; fi
        done
        ;;
      *) printf '%s\n' "$f" ;;
    esac
  done | sort -u
}

run_tidy() {
  local db=$build/compile_commands.json
  if [[ ! -f $db ]]; then
    echo "hygiene: clang-tidy: no $db (configure first: cmake --preset dev)" >&2
    return 1
  fi
  local -a candidates
  if [[ ${#files[@]} -gt 0 ]]; then
    candidates=("${files[@]}")
  elif [[ $all_files -eq 1 ]]; then
    mapfile -t candidates < <(project_files "${pathspecs[@]}")
  else
    local base
    base=$(base_commit)
    if [[ -z $base ]]; then
      echo "hygiene: clang-tidy: no earlier commit to compare with (a clone of depth 1?);" \
        "skipped: fetch more history or pass --all-files" >&2
      return 0
    fi
    mapfile -t candidates < <(changed_files "$base")
    echo "hygiene: clang-tidy: C++ files changed since $(git rev-parse --short "$base")"
  fi
  # C++ files the build compiles (the database names them by absolute path).
  local -a targets
  mapfile -t targets < <(python3 - "$db" "$PWD" "${candidates[@]}" <<'EOF'
import json, os, sys
db, root, *cands = sys.argv[1:]
compiled = {os.path.realpath(e["file"]) for e in json.load(open(db))}
for c in cands:
    p = os.path.realpath(os.path.join(root, c))
    if p.endswith((".cpp", ".cc")) and p in compiled:
        print(os.path.relpath(p, root))
EOF
  )
  if [[ ${#targets[@]} -eq 0 ]]; then
    echo "hygiene: clang-tidy: no changed C++ file to check"
    return 0
  fi
  # Generated headers (protobuf/gRPC code, build info) must exist for the files to parse.
  cmake --build "$build" --target vgpu_codegen >/dev/null
  echo "hygiene: clang-tidy on ${#targets[@]} files: ${targets[*]}"
  local log
  log=$(mktemp)
  # -Wno-error: compiler warnings are the build's business (GCC, -Werror), not clang's.
  if ! printf '%s\0' "${targets[@]}" |
    xargs -0 -n 1 -P "$(nproc)" clang-tidy -p "$build" --quiet --extra-arg=-Wno-error \
      >"$log" 2>&1; then
    # The errors, each with its source line and caret; advice (warnings) is left out.
    grep -A2 -E ': error: |^Error' "$log" >&2 || cat "$log" >&2
    rm -f "$log"
    echo "hygiene: clang-tidy failed (fix it, or NOLINT(check) with the reason)" >&2
    return 1
  fi
  rm -f "$log"
  echo "hygiene: clang-tidy: no error (advice: clang-tidy -p $build FILE)"
}

status=0
if [[ $check == format || $check == all ]]; then run_format || status=1; fi
if [[ $check == tidy || $check == all ]]; then run_tidy || status=1; fi
exit $status
