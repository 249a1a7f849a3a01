#!/usr/bin/env bash
# scripts/gpu-check.sh where there is no GPU (this machine, CI): it exits 0 at once with a
# "skipped" JSON line and builds nothing. Then its read-only inventory and MIG checks
# (--only … --no-build) against a stand-in nvidia-smi and the stand-in NVML library: pass
# where the two agree, fail naming the difference where they do not.
#   gpu_check_test.sh SOURCE_DIR BIN_DIR FAKE_NVML_LIBRARY
set -uo pipefail
SRC=$1 BIN=$2 FAKE_NVML=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
# run NAME ARGS...: the script's exit code in $rc, its last stdout line in $json.
run() {
  local name=$1
  shift
  "$SRC/scripts/gpu-check.sh" "$@" >"$T/$name.out" 2>"$T/$name.err"
  rc=$?
  json=$(tail -n 1 "$T/$name.out")
  [ "$(grep -c . "$T/$name.out")" = 1 ] || fail "$name: stdout is not one line: $(cat "$T/$name.out")"
}
expect() {  # expect NAME RC JSON-SUBSTRING...
  local name=$1 want_rc=$2 s
  shift 2
  [ "$rc" = "$want_rc" ] || fail "$name: exit $rc, not $want_rc ($(tail -n 3 "$T/$name.err"))"
  for s in "$@"; do [[ "$json" == *"$s"* ]] || fail "$name: no '$s' in $json"; done
}

# No nvidia-smi at all.
GPU_BUILD_DIR=$T/build-never BATON_NVIDIA_SMI=$T/no/nvidia-smi run none
expect none 0 '{"gpu_check":null,"skipped":"no NVIDIA GPU: '"$T"'/no/nvidia-smi not found","seconds":'
[ ! -e "$T/build-never" ] || fail "none: it made a build directory"

# An nvidia-smi that lists no GPU, and one that fails (no driver).
mkdir -p "$T/smi"
printf '#!/bin/sh\nexit 0\n' >"$T/smi/empty"
printf '#!/bin/sh\necho "NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver."\nexit 9\n' >"$T/smi/broken"
chmod +x "$T/smi/empty" "$T/smi/broken"
GPU_BUILD_DIR=$T/build-never BATON_NVIDIA_SMI=$T/smi/empty run empty
expect empty 0 '"skipped":"no NVIDIA GPU: '"$T"'/smi/empty -L lists none"'
GPU_BUILD_DIR=$T/build-never BATON_NVIDIA_SMI=$T/smi/broken run broken
expect broken 0 '"skipped":"no NVIDIA GPU: '"$T"'/smi/broken -L failed: NVIDIA-SMI has failed'
[ ! -e "$T/build-never" ] || fail "empty/broken: it made a build directory"

# A stand-in nvidia-smi for the stand-in NVML: GPU 0 whole (141 GiB = 144384 MiB), GPU 1 in
# MIG mode with a 1g.18gb and a 3g.71gb instance. $1 of fake_smi: what to get wrong.
fake_smi() {
  local mem0=144384 slice_b="  MIG 3g.71gb     Device  1: (UUID: MIG-fake-1-slice-b)"
  [ "$1" != memory ] || mem0=80000
  [ "$1" != slice ] || slice_b=
  cat >"$T/smi/$1" <<SMI
#!/bin/sh
case "\$1" in
  -L) cat <<'L'
GPU 0: NVIDIA H200 (UUID: GPU-fake-0000)
GPU 1: NVIDIA H200 (UUID: GPU-fake-0001)
  MIG 1g.18gb     Device  0: (UUID: MIG-fake-1-slice-a)
$slice_b
L
  ;;
  --query-gpu=index,uuid,name,memory.total,mig.mode.current)
    printf '0, GPU-fake-0000, NVIDIA H200, $mem0, Disabled\n1, GPU-fake-0001, NVIDIA H200, 144384, Enabled\n' ;;
  *) echo "unexpected: \$*" >&2; exit 1 ;;
esac
SMI
  chmod +x "$T/smi/$1"
}
mkdir -p "$T/build"
ln -s "$BIN" "$T/build/bin"
check() {  # check CASE: the two read-only checks against fake_smi CASE
  fake_smi "$1"
  GPU_BUILD_DIR=$T/build BATON_NVIDIA_SMI=$T/smi/$1 BATON_NVML_LIBRARY=$FAKE_NVML \
    run "$1" --only nvml_inventory,mig --no-build
}
check agree
expect agree 0 '{"gpu_check":true,"gpus":2,"model":"NVIDIA H200","nvml_inventory":"pass","nvml_gpus":3' \
  '"mig":"pass","mig_modes":"0=Disabled,1=Enabled","mig_instances":2' \
  '"nvml_utilization_sampled":1'
check memory
expect memory 1 '"gpu_check":false' '"nvml_inventory":"fail"' \
  '"nvml_inventory_error":"GPU-fake-0000: memory 144384 MiB (inventory) vs 80000 MiB (nvidia-smi)"' \
  '"mig":"pass"'
check slice
expect slice 1 '"nvml_inventory":"pass"' '"mig":"fail"' \
  '"mig_error":"inventory only: GPU-fake-0001\tMIG-fake-1-slice-b\t3g.71gb"'

if [ "$fails" = 0 ]; then echo "gpu_check_test: all passed"; else exit 1; fi
