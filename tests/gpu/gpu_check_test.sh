#!/usr/bin/env bash
# scripts/gpu-check.sh where there is no GPU (this machine, CI): it exits 0 at once with a
# "skipped" JSON line and builds nothing. Then its read-only inventory and MIG checks
# (--only … --no-build) against a stand-in nvidia-smi and the stand-in NVML library: pass
# where the two agree, fail naming the difference where they do not. And its mps check:
# skipped, running nothing, where MPS cannot run; against stand-ins for
# nvidia-cuda-mps-control and mps_client, every figure in the JSON and the daemon gone after.
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

# The mps check. A stand-in nvidia-smi with GPU 0's MIG mode ($2) and compute mode ($3);
# any other call (a setting) is an error the check would show.
mps_smi() {
  cat >"$T/smi/$1" <<SMI
#!/bin/sh
case "\$*" in
  -L) echo "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-fake-mps)" ;;
  "--query-gpu=index,uuid,name,memory.total,mig.mode.current --format=csv,noheader,nounits")
    echo "0, GPU-fake-mps, NVIDIA H100 80GB HBM3, 81559, $2" ;;
  "--query-gpu=compute_mode --format=csv,noheader") echo "$3" ;;
  *) echo "unexpected: \$*" >&2; exit 1 ;;
esac
SMI
  chmod +x "$T/smi/$1"
}
# A stand-in nvidia-cuda-mps-control: -d starts a "daemon" (this program with -f, running
# until quit) that records its pid in the pipe directory; otherwise it answers one command
# on stdin, keeping the limits it is given in the pipe directory. Every call is logged.
mkdir -p "$T/mps/bin" "$T/build-mps/bin"
cat >"$T/mps/bin/nvidia-cuda-mps-control" <<'CTL'
#!/usr/bin/env bash
P=${CUDA_MPS_PIPE_DIRECTORY:?}
echo "${*:-(stdin)} CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-}" >>"$FAKE_MPS_CALLS"
case ${1:-} in
  -d) touch "$P/running"; "$0" -f </dev/null >/dev/null 2>&1 &
      echo $! >"$P/nvidia-cuda-mps-control.pid"; exit 0 ;;
  -f) while [ -e "$P/running" ]; do sleep 0.05; done; exit 0 ;;
esac
[ -e "$P/running" ] || { echo "Cannot find MPS control daemon process"; exit 1; }
read -r cmd a b
echo "  $cmd $a $b" >>"$FAKE_MPS_CALLS"
case $cmd in
  quit) rm -f "$P/running" ;;
  set_default_active_thread_percentage) echo "$a" >"$P/pct"; echo "$a.0" ;;
  set_default_device_pinned_mem_limit) echo "${b%M}" >"$P/mem" ;;
  get_default_active_thread_percentage) echo "$(cat "$P/pct").0" ;;
  get_default_device_pinned_mem_limit) echo "$(cat "$P/mem")M" ;;
esac
CTL
# A stand-in mps_client: the daemon's limits where one runs (a client's own variables only
# lower them, as NVIDIA documents), 100% and 80 GiB where none does; 256 MiB of a client's
# limit go to its context; a spinning client fails once another has faulted.
cat >"$T/build-mps/bin/mps_client" <<'CLIENT'
#!/usr/bin/env bash
P=$CUDA_MPS_PIPE_DIRECTORY pct=100 mem=81920 alloc= spin= fault= ready=
if [ -e "$P/running" ]; then
  pct=$(cat "$P/pct") mem=$(cat "$P/mem")
  own=${CUDA_MPS_ACTIVE_THREAD_PERCENTAGE:-100}; [ "$own" -ge "$pct" ] || pct=$own
fi
while [ $# -gt 0 ]; do
  case $1 in
    --alloc-mib) alloc=$2; shift ;; --spin-ms) spin=$2; shift ;; --hold-ms) shift ;;
    --fault) fault=1 ;; --wait-ready) ready=$2; shift ;;
  esac
  shift
done
if [ -n "$ready" ]; then
  echo "mps_client: ready" >&2
  while [ ! -e "$ready" ]; do sleep 0.02; done
fi
json="{\"device\":\"NVIDIA H100 80GB HBM3\",\"sms\":$((132 * pct / 100)),\"mem_total_mib\":$mem"
if [ -n "$alloc" ]; then
  got=$(((mem - 256) / 256 * 256)) err="cudaMalloc: cudaErrorMemoryAllocation: out of memory"
  [ "$got" -lt "$alloc" ] || { got=$alloc err=; }
  json+=",\"asked_mib\":$alloc,\"alloc_mib\":$got,\"alloc_error\":\"$err\""
fi
if [ -n "$spin" ]; then
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    if [ -e "$P/faulted" ]; then
      echo "$json,\"ok\":false,\"error\":\"spin kernel: cudaErrorMpsClientTerminated: terminated\"}"
      exit 1
    fi
    sleep 0.05
  done
  json+=",\"blocks_per_s\":$((40000 * pct))"
fi
[ -z "$fault" ] || { touch "$P/faulted"; json+=",\"faulted\":true,\"fault_error\":\"fault kernel: cudaErrorIllegalAddress: an illegal memory access was encountered\""; }
echo "$json,\"ok\":true,\"error\":\"\"}"
CLIENT
chmod +x "$T/mps/bin/nvidia-cuda-mps-control" "$T/build-mps/bin/mps_client"
export FAKE_MPS_CALLS=$T/mps/calls
mps() {  # mps CASE MIG-MODE COMPUTE-MODE CONTROL: --only mps against those
  mps_smi "mps-$1" "$2" "$3"
  GPU_BUILD_DIR=$T/build-mps BATON_NVIDIA_SMI=$T/smi/mps-$1 BATON_MPS_CONTROL=$4 \
    run "mps-$1" --only mps --no-build
  ! grep -q unexpected "$T/mps-$1.err" || fail "mps-$1: $(grep unexpected "$T/mps-$1.err")"
}
mps nocontrol Disabled Default "$T/no/nvidia-cuda-mps-control"
expect mps-nocontrol 0 '{"gpu_check":true,"gpus":1,"model":"NVIDIA H100 80GB HBM3","mps":"skipped","mps_skipped":"MPS unavailable: '"$T"'/no/nvidia-cuda-mps-control not found","seconds":'
mps mig Enabled Default "$T/mps/bin/nvidia-cuda-mps-control"
expect mps-mig 0 '"gpu_check":true' '"mps":"skipped","mps_skipped":"GPU 0 is in MIG mode"'
mps prohibited Disabled Prohibited "$T/mps/bin/nvidia-cuda-mps-control"
expect mps-prohibited 0 '"gpu_check":true' \
  '"mps":"skipped","mps_compute_mode":"Prohibited","mps_skipped":"GPU 0'"'"'s compute mode is Prohibited"'
[ ! -e "$FAKE_MPS_CALLS" ] || fail "mps: a skipped check ran the control program: $(cat "$FAKE_MPS_CALLS")"
# The whole check against the stand-ins: the daemon started on GPU 0 with its limits, every
# figure recorded, the daemon gone after.
mps flow Disabled Default "$T/mps/bin/nvidia-cuda-mps-control"
expect mps-flow 0 '"gpu_check":true' '"mps":"pass","mps_compute_mode":"Default"' \
  '"mps_full_sms":132,"mps_full_blocks_per_s":4000000,"mps_daemon_started":true' \
  '"mps_default_thread_pct":"25.0","mps_default_mem_limit":"4096M","mps_mem_limit_mib":4096' \
  '"mps_mem_got_mib":3840,"mps_mem_total_mib":4096,"mps_mem_error":"cudaMalloc: cudaErrorMemoryAllocation: out of memory","mps_mem_limit_enforced":true' \
  '"mps_alone_sms":33,"mps_alone_blocks_per_s":1000000,"mps_alone_vs_full":0.250' \
  '"mps_raised_env_got_mib":3840,"mps_raised_env_sms":33,"mps_raised_env_blocks_per_s":1000000,"mps_raised_env_vs_alone":1.000,"mps_raised_env_held":true' \
  '"mps_two_clients":true,"mps_two_a_blocks_per_s":1000000,"mps_two_b_blocks_per_s":1000000,"mps_two_vs_alone":2.000' \
  '"mps_job_got_mib":"3072+3072","mps_second_process_counted":false' \
  '"mps_fault_effect":"other_client_failed","mps_fault_error":"fault kernel: cudaErrorIllegalAddress: an illegal memory access was encountered","mps_fault_other_error":"spin kernel: cudaErrorMpsClientTerminated: terminated"' \
  '"mps_answered_after_fault":true,"mps_client_after_fault":"ok","mps_daemon_stopped":true,"seconds":'
grep -q -- '-d CUDA_VISIBLE_DEVICES=GPU-fake-mps$' "$FAKE_MPS_CALLS" ||
  fail "mps-flow: the daemon did not start on GPU 0 alone: $(cat "$FAKE_MPS_CALLS")"
for c in "set_default_active_thread_percentage 25" "set_default_device_pinned_mem_limit 0 4096M" quit; do
  grep -q "^  $c" "$FAKE_MPS_CALLS" || fail "mps-flow: no '$c' sent: $(cat "$FAKE_MPS_CALLS")"
done
if pgrep -f "$T/mps/bin/nvidia-cuda-mps-control -f" >/dev/null; then
  fail "mps-flow: the stand-in daemon still runs"
fi

if [ "$fails" = 0 ]; then echo "gpu_check_test: all passed"; else exit 1; fi
