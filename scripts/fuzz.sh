#!/usr/bin/env bash
# Adversarial inputs, in one clang build with ASan + UBSan (BATON_FUZZ=ON):
#   scripts/fuzz.sh                    runs every libFuzzer target of tests/fuzz/
#   scripts/fuzz.sh manifest progress  runs the ones named
#   scripts/fuzz.sh --unit-tests       runs the unit tests labelled `sanitize` instead
#   scripts/fuzz.sh --unit-tests -R x  (extra arguments go to ctest)
# Each target runs for BATON_FUZZ_SECONDS (default 30) over a copy of its seed corpus. A
# crash, a sanitizer report, a failed FUZZ_CHECK, a leak, a slow input (10 s) or going over
# the memory limit fails the run; the input that did it is kept in
# <build>/artifacts/<target>/ (replay it: <build>/bin/fuzz_<target> FILE). The working
# corpus (<build>/corpus/<target>/) is kept, so that local runs build on each other.
# FUZZ_BUILD_DIR (default build-fuzz/); BATON_JOBS: the build parallelism and how many
# targets run at once (default nproc).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
JOBS=${BATON_JOBS:-$(nproc)}
SECONDS_EACH=${BATON_FUZZ_SECONDS:-30}
ALL=(spec_yaml policy_yaml manifest progress shard_header)
# Longest input per target: room for the seeds (policy.example.yaml is ~6 KiB).
declare -A MAX_LEN=([spec_yaml]=4096 [policy_yaml]=8192 [manifest]=4096 [progress]=512
                    [shard_header]=4096)

# A unity build at -O1 with line tables (what ASan's own documentation suggests: fast
# enough, symbolized reports), as scripts/test.sh's build: about half the build time.
configure() {
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_C_COMPILER=clang-14 \
    -DCMAKE_CXX_COMPILER=clang++-14 -DBATON_FUZZ=ON -DBATON_WERROR=ON -DCMAKE_UNITY_BUILD=ON \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" >/dev/null
}

unit_tests() {
  local start built
  start=$(date +%s)
  configure
  cmake --build "$BUILD_DIR" -j "$JOBS" --target sanitize_tests
  built=$(date +%s)
  echo "fuzz.sh --unit-tests: build took $((built - start)) s"
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:check_initialization_order=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
  (cd "$BUILD_DIR" && ctest --output-on-failure -j "$JOBS" -L sanitize "$@")
  echo "fuzz.sh --unit-tests: tests took $(($(date +%s) - built)) s"
}

run_one() {
  local t=$1 corpus="$BUILD_DIR/corpus/$1" artifacts="$BUILD_DIR/artifacts/$1/"
  mkdir -p "$corpus" "$artifacts"
  cp tests/fuzz/"$t"/* "$corpus"/
  # The shipped example policy is a seed too (kept in one place).
  [ "$t" != policy_yaml ] || cp scripts/policy.example.yaml "$corpus"/
  "$BUILD_DIR/bin/fuzz_$t" "$corpus" -dict=tests/fuzz/"$t".dict \
    -max_total_time="$SECONDS_EACH" -max_len="${MAX_LEN[$t]}" -timeout=10 \
    -rss_limit_mb=2048 -malloc_limit_mb=512 -artifact_prefix="$artifacts" \
    -print_final_stats=1 >"$BUILD_DIR/fuzz_$t.log" 2>&1
}

fuzz() {
  local targets=("$@") start built t failed=()
  [ $# -gt 0 ] || targets=("${ALL[@]}")
  for t in "${targets[@]}"; do
    [ -n "${MAX_LEN[$t]:-}" ] || { echo "fuzz.sh: no target '$t' (${ALL[*]})"; exit 2; }
  done
  start=$(date +%s)
  configure
  cmake --build "$BUILD_DIR" -j "$JOBS" --target "${targets[@]/#/fuzz_}"
  built=$(date +%s)
  echo "fuzz.sh: build took $((built - start)) s"

  # JOBS targets at a time (libFuzzer runs on one core); each leaves its status in a file.
  for t in "${targets[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
    { run_one "$t" && echo 0 || echo $?; } >"$BUILD_DIR/fuzz_$t.rc" &
  done
  wait
  for t in "${targets[@]}"; do
    if [ "$(cat "$BUILD_DIR/fuzz_$t.rc")" = 0 ]; then
      echo "fuzz.sh: $t: $(grep -o 'number_of_executed_units: *[0-9]*' \
        "$BUILD_DIR/fuzz_$t.log" | grep -o '[0-9]*$') inputs, no failure"
    else
      failed+=("$t")
      echo "fuzz.sh: $t FAILED; the end of $BUILD_DIR/fuzz_$t.log:"
      tail -n 40 "$BUILD_DIR/fuzz_$t.log"
    fi
  done
  echo "fuzz.sh: runs took $(($(date +%s) - built)) s"
  [ ${#failed[@]} -eq 0 ] || { echo "fuzz.sh: failed: ${failed[*]}"; exit 1; }
}

if [ "${1:-}" = --unit-tests ]; then
  shift
  unit_tests "$@"
else
  fuzz "$@"
fi
