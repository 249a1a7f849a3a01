#!/usr/bin/env bash
# Builds baton and runs every benchmark found as build/bin/baton-bench-*, then prints each
# one's last JSON line (the figures; keys in DESIGN.md "Benchmarks").
#   scripts/bench.sh                 every benchmark
#   scripts/bench.sh checkpoint      only those whose name contains "checkpoint"
#   scripts/bench.sh '' --reps=5     arguments after the filter go to every benchmark
# BUILD_DIR (default build/) holds the build; BATON_JOBS sets the build parallelism.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${BATON_JOBS:-$(nproc)}
FILTER=${1:-}
shift || true

cmake -S . -B "$BUILD_DIR" -G Ninja -DBATON_WERROR=ON >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS"

results=()
failed=0
shopt -s nullglob
for bin in "$BUILD_DIR"/bin/baton-bench-*; do
  [ -x "$bin" ] || continue
  name=$(basename "$bin")
  [[ -z "$FILTER" || "$name" == *"$FILTER"* ]] || continue
  echo "== $name" >&2
  out=$(mktemp)
  if "$bin" "$@" | tee "$out"; then
    json=$(grep '^{' "$out" | tail -n 1 || true)
    results+=("$name ${json:-(no JSON line)}")
  else
    results+=("$name FAILED (exit $?)")
    failed=1
  fi
  rm -f "$out"
done

if [ ${#results[@]} -eq 0 ]; then
  echo "bench.sh: no benchmark matches '$FILTER' in $BUILD_DIR/bin" >&2
  exit 1
fi
echo "== results"
printf '%s\n' "${results[@]}"
exit $failed
