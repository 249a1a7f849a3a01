#!/usr/bin/env bash
# The one test command: install what is missing, configure, build, run every test.
#   scripts/test.sh                 everything
#   scripts/test.sh -L unit         extra arguments go to ctest (here: unit tests only)
# BUILD_DIR (default build/) holds the build; BATON_JOBS sets the build parallelism.
# One more configuration (clang with ASan + UBSan, in build-fuzz/, built while the suite
# runs): after the suite, the unit tests labelled `sanitize`, then each fuzz target for
# BATON_FUZZ_SECONDS (15 s here) (scripts/fuzz.sh). BATON_SKIP_FUZZ=1 leaves them out.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
ROOT=$PWD
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${BATON_JOBS:-$(nproc)}

start=$(date +%s)
# A unity build (CMake puts 8 sources of a target in one translation unit, so the gRPC,
# protobuf and GoogleTest headers are compiled once per 8 files, not once per file) with
# line tables instead of full debug info: about half the cold build time on 2 cores.
# Incremental builds in a developer's own build directory need neither.
cmake -S . -B "$BUILD_DIR" -G Ninja -DBATON_WERROR=ON -DCMAKE_UNITY_BUILD=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS"
built=$(date +%s)
echo "test.sh: build took $((built - start)) s"

# The suite mostly waits (daemons, timers, child processes): the sanitize build takes the
# CPU it leaves idle meanwhile, at SCHED_IDLE, so that it never competes with a test.
fuzz_build=
if [ "${BATON_SKIP_FUZZ:-0}" != 1 ]; then
  fuzz_log="$(cd "$BUILD_DIR" && pwd)/fuzz-build.log"
  idle=(chrt --idle 0)
  "${idle[@]}" true 2>/dev/null || idle=(nice -n 19)
  # In a process group of its own, so that a failing suite stops the whole build.
  setsid "${idle[@]}" "$ROOT/scripts/fuzz.sh" --build-only >"$fuzz_log" 2>&1 &
  fuzz_build=$!
  trap 'kill -- -"$fuzz_build" 2>/dev/null || true' EXIT
fi

cd "$BUILD_DIR"
# A test that fails is run once more (ctest --repeat until-pass:2): a failure that does
# not repeat is a flake, still printed in full above the passing run, and reported in
# the log as "Test Failed" first. (The one flake seen, coordinator_test's log relay
# outliving its server, is fixed; the retry stays for what load may still show.)
ctest --output-on-failure -j "$JOBS" --repeat until-pass:2 "$@"
echo "test.sh: tests took $(($(date +%s) - built)) s"

if [ -n "$fuzz_build" ]; then
  if ! wait "$fuzz_build"; then
    echo "test.sh: the sanitize build failed; the end of $fuzz_log:"
    tail -n 60 "$fuzz_log"
    exit 1
  fi
  trap - EXIT
  echo "test.sh: the sanitize build was done $(($(date +%s) - built)) s after the suite started"
  "$ROOT/scripts/fuzz.sh" --unit-tests
  # 15 s per target here (fuzz.sh's own default is 30), so that the whole run stays under
  # 30 minutes on 2 cores; each target still tries some 10^5 to 10^6 inputs.
  BATON_FUZZ_SECONDS=${BATON_FUZZ_SECONDS:-15} "$ROOT/scripts/fuzz.sh"
fi
