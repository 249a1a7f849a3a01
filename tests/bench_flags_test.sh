#!/usr/bin/env bash
# Every benchmark refuses a flag it does not know, or a value out of range, with exit 2 and
# the flag named, before it runs anything; --help prints its flags and exits 0.
#   tests/bench_flags_test.sh BIN_DIR
set -uo pipefail
bin_dir=$1
fail=0
ran=0
# expect NAME CODE PATTERN ARGS...: BIN_DIR/NAME ARGS exits CODE and prints PATTERN.
expect() {
  local name=$1 code=$2 pattern=$3
  shift 3
  local out rc
  out=$(timeout 20 "$bin_dir/$name" "$@" 2>&1)
  rc=$?
  if [[ $rc -ne $code ]]; then
    echo "FAIL: $name $*: exit $rc, expected $code; output: ${out:0:400}"
    fail=1
  elif ! grep -qF -- "$pattern" <<<"$out"; then
    echo "FAIL: $name $*: output lacks '$pattern': ${out:0:400}"
    fail=1
  fi
}
for path in "$bin_dir"/baton-bench-*; do
  [[ -x $path ]] || continue
  name=$(basename "$path")
  ran=$((ran + 1))
  expect "$name" 2 "no-such-flag" --no-such-flag
  expect "$name" 0 "--" --help
  case $name in
    baton-bench-isolation) expect "$name" 2 "--rounds must be at least 1" --rounds=0 ;;
    baton-bench-submit) expect "$name" 2 "--agents must be at least 1" --agents=0 ;;
    baton-bench-sim) expect "$name" 2 "--days must be above 0" --days=-1
       expect "$name" 2 "--topology-jobs must be at least 0" --topology-jobs=-1
       expect "$name" 2 "--sharing-tasks must be at least 0" --sharing-tasks=-1 ;;
    baton-bench-checkpoint) ;;  # its own sizes are checked by its parser
    baton-bench-web) expect "$name" 2 "--jobs must be at least 1" --jobs=0
       expect "$name" 2 "streams" --streams=many ;;
    *) expect "$name" 2 "--reps must be at least 1" --reps=0
       expect "$name" 2 "reps" --reps=many ;;
  esac
done
if [[ $ran -eq 0 ]]; then
  echo "FAIL: no baton-bench-* in $bin_dir"
  exit 1
fi
[[ $fail -eq 0 ]] && echo "$ran benchmarks refuse bad flags"
exit $fail
