#!/usr/bin/env bash
# Builds baton and runs every benchmark found as build/bin/baton-bench-* and
# bench/torch_checkpoint_bench.py (where the Python package is built), then prints each
# one's last JSON line (the figures; keys in docs/benchmarks.md).
#   scripts/bench.sh                 every benchmark
#   scripts/bench.sh checkpoint      only those whose name contains "checkpoint"
#   scripts/bench.sh scheduler --reps=3  arguments after the filter go to each benchmark it
#                                    runs (each refuses a flag it does not know: --help)
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
# run_bench NAME COMMAND...: runs one benchmark if NAME matches the filter.
run_bench() {
  local name=$1
  shift
  [[ -z "$FILTER" || "$name" == *"$FILTER"* ]] || return 0
  echo "== $name" >&2
  local out
  out=$(mktemp)
  if "$@" | tee "$out"; then
    json=$(grep '^{' "$out" | tail -n 1 || true)
    results+=("$name ${json:-(no JSON line)}")
  else
    results+=("$name FAILED (exit $?)")
    failed=1
  fi
  rm -f "$out"
}

shopt -s nullglob
for bin in "$BUILD_DIR"/bin/baton-bench-*; do
  [ -x "$bin" ] || continue
  run_bench "$(basename "$bin")" "$bin" "$@"
done
# The Python package's benchmark, with the interpreter it was built for.
PY=$(sed -n 's/^BATON_PYTHON_EXECUTABLE:INTERNAL=//p' "$BUILD_DIR/CMakeCache.txt")
if [ -n "$PY" ] && [ -d "$BUILD_DIR/python/baton" ]; then
  run_bench torch_checkpoint_bench env PYTHONPATH="$BUILD_DIR/python" "$PY" \
    bench/torch_checkpoint_bench.py "$@"
fi

if [ ${#results[@]} -eq 0 ]; then
  echo "bench.sh: no benchmark matches '$FILTER' in $BUILD_DIR/bin" >&2
  exit 1
fi
echo "== results"
printf '%s\n' "${results[@]}"
exit $failed
