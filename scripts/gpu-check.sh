#!/usr/bin/env bash
# What only an NVIDIA GPU can show, for the times a GPU machine is lent: builds the
# GPU-only configuration (BATON_GPU_ONLY=ON, just the targets the checks run) and runs
# each check under a timeout, the whole run in under 5 minutes:
#   nccl_allreduce        an NCCL all-reduce across the visible GPUs, every sum checked,
#                         with its bus bandwidth (tests/gpu/nccl_allreduce_check). One GPU:
#                         2 ranks on it, told apart by NCCL_HOSTID so that NCCL allows it
#                         (they then talk over its socket transport on loopback); if NCCL
#                         still refuses, 1 rank, and the JSON says so
#   nvml_inventory        baton's NVML inventory (tests/gpu/gpu_inventory, the agent's code)
#                         lists the GPUs nvidia-smi lists: UUIDs, models, memory
#   mig                   MIG mode per GPU, read-only; where enabled, the inventory lists
#                         the instances `nvidia-smi -L` lists (UUIDs, profiles)
#   train_mlp_2rank_nccl  train_mlp_direct on 2 ranks with NCCL ends with the weights hash
#                         and the losses of the same run summed on the CPUs
#   gpu_ctest             ctest -L gpu in that build: every test passes, none skipped
#   mps                   CUDA MPS on GPU 0 (tests/gpu/mps_client) under a private control
#                         daemon (its own pipe and log directories, limits on its side as
#                         the agent sets them: 25% of the threads, 4096 MiB a client), quit
#                         after, also on a failure or a signal: the memory limit enforced,
#                         two clients at 25% at once, a client that raises its own
#                         CUDA_MPS_* variables, two processes of one job, and a client's
#                         fault seen by another, as figures; "skipped" (mps_skipped: why)
#                         without nvidia-cuda-mps-control, with GPU 0 in MIG mode or its
#                         compute mode Prohibited. About 30 s; its steps' timeouts end
#                         within 60 s, stopping the daemon aside
# Progress goes to stderr, logs to <build>/gpu-check/; stdout ends with one JSON line:
#   {"gpu_check":true,"gpus":1,"model":"NVIDIA H200",…,"nccl_allreduce":"pass",
#    "nccl_busbw_gb_per_s":2.5,…,"seconds":87}
# where each check is "pass" or "fail" (with "<check>_error" saying why), or "skipped"
# (mps) or "disabled" (mig) where the machine cannot have it. Exit 0 when no check
# failed, 1 when one did. On a machine without an NVIDIA GPU (no nvidia-smi, or it lists
# none) it exits 0 at once, building nothing:
#   {"gpu_check":null,"skipped":"no NVIDIA GPU: nvidia-smi not found","seconds":0}
# Nothing changes the GPUs' settings: nvidia-smi and NVML are only queried, and the mps
# check starts and stops its own MPS daemon, setting that daemon's limits only.
#   scripts/gpu-check.sh                       every check
#   scripts/gpu-check.sh --only mig,nvml_inventory
#   scripts/gpu-check.sh --no-build            use GPU_BUILD_DIR as it is
#   scripts/gpu-check.sh --fetch-deps          (on a Debian 12 machine) put absl, GoogleTest
#                                              and xxhash.h under .deps/ for a GPU machine
#                                              without Debian's packages
# GPU_BUILD_DIR (default build-gpu/); BATON_JOBS: build parallelism (default nproc);
# BATON_DEPS (default .deps/): a prefix searched first for absl, GoogleTest and xxhash.h.
# BATON_NVIDIA_SMI, BATON_NVML_LIBRARY and BATON_MPS_CONTROL replace nvidia-smi,
# libnvidia-ml.so.1 and nvidia-cuda-mps-control (tests).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
export LC_ALL=C  # one collation for sort and comm

START=$(date +%s)
BUDGET_S=290  # the whole run, build included, stays under 5 minutes
BUILD_DIR=${GPU_BUILD_DIR:-build-gpu}
JOBS=${BATON_JOBS:-$(nproc)}
DEPS=${BATON_DEPS:-.deps}
SMI=${BATON_NVIDIA_SMI:-nvidia-smi}
MPS_CONTROL=${BATON_MPS_CONTROL:-nvidia-cuda-mps-control}
ALL_CHECKS=(nccl_allreduce nvml_inventory mig train_mlp_2rank_nccl mps gpu_ctest)
CHECKS=("${ALL_CHECKS[@]}")
BUILD=1
LOGS=

say() { echo "gpu-check: $*" >&2; }
elapsed() { echo $(($(date +%s) - START)); }

# The JSON line: keys in order, values already encoded.
KEYS=()
declare -A VALUES=()
put() {
  [ -n "${VALUES[$1]+x}" ] || KEYS+=("$1")
  VALUES[$1]=$2
}
json_str() {
  local s=$1
  s=${s//\\/\\\\}
  s=${s//\"/\\\"}
  s=${s//$'\n'/\\n}
  s=${s//$'\t'/\\t}
  s=${s//$'\r'/}
  printf '"%s"' "$(printf '%s' "$s" | tr -d '\000-\037')"
}
put_str() { put "$1" "$(json_str "$2")"; }
emit() {
  local line="{" k sep=""
  for k in "${KEYS[@]}"; do
    line+="$sep\"$k\":${VALUES[$k]}"
    sep=","
  done
  echo "$line}"
}

usage() {
  sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
}

fetch_deps() {
  # Debian 12's packages, unpacked (not installed) under $DEPS/: a copy of the working
  # tree then carries them to a machine that has CMake and a compiler but no Debian.
  local tmp
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get download libabsl-dev libabsl20220623 libgtest-dev libgmock-dev \
    libxxhash-dev) >&2 || { rm -rf "$tmp"; say "apt-get download failed"; exit 1; }
  mkdir -p "$DEPS"
  for deb in "$tmp"/*.deb; do dpkg -x "$deb" "$DEPS"; done
  rm -rf "$tmp"
  say "unpacked into $DEPS/: $(cd "$DEPS" && find usr/lib/*/cmake/absl usr/lib/*/cmake/GTest \
    usr/include/xxhash.h -maxdepth 0 | paste -sd " " -)"
  exit 0
}

while [ $# -gt 0 ]; do
  case $1 in
    --only)
      [ $# -ge 2 ] || usage
      IFS=, read -r -a CHECKS <<<"$2"
      for c in "${CHECKS[@]}"; do
        [[ " ${ALL_CHECKS[*]} " == *" $c "* ]] || { say "no check '$c' (${ALL_CHECKS[*]})"; exit 2; }
      done
      shift 2 ;;
    --no-build) BUILD=0; shift ;;
    --fetch-deps) fetch_deps ;;
    *) usage ;;
  esac
done
wanted() { [[ " ${CHECKS[*]} " == *" $1 "* ]]; }

# ---- Is there a GPU at all? If not, nothing is built. ----
skip() {
  put "gpu_check" null
  put_str "skipped" "$1"
  put "seconds" "$(elapsed)"
  say "skipped: $1"
  emit
  exit 0
}
command -v "$SMI" >/dev/null 2>&1 || skip "no NVIDIA GPU: $SMI not found"
SMI_LIST=$("$SMI" -L 2>&1) || skip "no NVIDIA GPU: $SMI -L failed: $(echo "$SMI_LIST" | head -n 1)"
GPUS=$(grep -cE '^GPU [0-9]+:' <<<"$SMI_LIST")
[ "$GPUS" -gt 0 ] || skip "no NVIDIA GPU: $SMI -L lists none"
SMI_QUERY=$("$SMI" --query-gpu=index,uuid,name,memory.total,mig.mode.current \
  --format=csv,noheader,nounits 2>&1) || SMI_QUERY=
MODEL=$(awk -F', ' 'NR == 1 { print $3 }' <<<"$SMI_QUERY")
put "gpu_check" false
put "gpus" "$GPUS"
put_str "model" "${MODEL:-unknown}"
say "$GPUS GPU(s): ${MODEL:-unknown}"
# The NVIDIA driver's libraries (NVML) where the loader may not look by itself.
for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"
done

FAILED=0
# result CHECK STATUS [ERROR]: records a check's outcome.
result() {
  put_str "$1" "$2"
  [ -z "${3:-}" ] || put_str "$1_error" "$3"
  if [ "$2" = pass ]; then say "$1: pass"; else say "$1: $2${3:+: $3}"; FAILED=1; fi
}
# left LIMIT: seconds a step may take, LIMIT at most, within what is left of the budget.
left() {
  local l=$((BUDGET_S - $(elapsed)))
  [ "$l" -ge 1 ] || l=1
  [ "$l" -lt "$1" ] && echo "$l" || echo "$1"
}
finish() {
  [ "$FAILED" = 1 ] || put "gpu_check" true
  put "seconds" "$(elapsed)"
  emit
  exit "$FAILED"
}

# ---- Build: GPU-only configuration, only what the checks run. ----
targets_for_checks() {
  local t=()
  wanted nccl_allreduce && t+=(nccl_allreduce_check)
  { wanted nvml_inventory || wanted mig; } && t+=(gpu_inventory)
  wanted train_mlp_2rank_nccl && t+=(train_mlp_direct)
  # mps_client exists where CMake found a working nvcc (tests/gpu/CMakeLists.txt).
  if wanted mps && grep -q '^CMAKE_CUDA_COMPILER:[A-Z]*=/' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null; then
    t+=(mps_client)
  fi
  if wanted gpu_ctest; then
    mapfile -t -O "${#t[@]}" t < <(ctest --test-dir "$BUILD_DIR" -N -L gpu 2>/dev/null |
      sed -n 's/^ *Test *#[0-9]*: *//p')
  fi
  echo "${t[@]}"
}
# NCCL where the CUDA toolkit has none: a Python wheel's (nvidia-nccl-cu*), as a CMake
# cache setting each for the header's folder and the library.
nccl_from_python() {
  local dir h l
  command -v python3 >/dev/null || return 0
  for dir in $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null); do
    [ -d "$dir/nvidia" ] || continue
    h=$(find "$dir/nvidia" -name nccl.h -path '*include*' 2>/dev/null | head -n 1)
    l=$(find "$dir/nvidia" -name 'libnccl.so*' 2>/dev/null | sort | head -n 1)
    if [ -n "$h" ] && [ -n "$l" ]; then
      echo "-DBATON_NCCL_INCLUDE=$(dirname "$h")"
      echo "-DBATON_NCCL_LIBRARY=$l"
      return 0
    fi
  done
}
build() {
  local log="$BUILD_DIR/gpu-check-build.log" args=() t
  mkdir -p "$BUILD_DIR"
  if [ -d "$DEPS" ]; then
    local deps
    deps=$(cd "$DEPS" && pwd)
    args+=("-DCMAKE_PREFIX_PATH=$deps/usr;$deps" "-DBATON_XXHASH_DIR=$deps/usr/include")
  fi
  say "configuring $BUILD_DIR (BATON_GPU_ONLY=ON)"
  local ok=1
  timeout "$(left 60)" cmake -S . -B "$BUILD_DIR" -G Ninja -DBATON_GPU_ONLY=ON \
    -DBATON_BUILD_PYTHON=OFF -DBATON_BUILD_BENCH=OFF "${args[@]}" >"$log" 2>&1 || ok=0
  local cache="$BUILD_DIR/CMakeCache.txt" nccl
  if [ "$ok" = 1 ] && grep -q '^BATON_NCCL_[A-Z]*:[A-Z]*=.*NOTFOUND' "$cache"; then
    nccl=$(nccl_from_python)
    if [ -n "$nccl" ]; then
      say "NCCL is not in the CUDA toolkit; from Python's packages: ${nccl//$'\n'/ }"
      mapfile -t -O "${#args[@]}" args <<<"$nccl"
      timeout "$(left 60)" cmake -S . -B "$BUILD_DIR" "${args[@]}" >>"$log" 2>&1 || ok=0
    fi
  fi
  if [ "$ok" = 0 ]; then
    tail -n 20 "$log" >&2
    result build fail "cmake: $(grep -m 1 -A 3 'CMake Error' "$log" | tr -s ' \n' ' ')"
    finish
  fi
  if ! grep -q '^BATON_NCCL_LIBRARY:' "$cache"; then
    result build fail "CMake found no CUDA toolkit (nvcc on PATH, or CUDAToolkit_ROOT)"
    finish
  elif grep -q '^BATON_NCCL_[A-Z]*:[A-Z]*=.*NOTFOUND' "$cache"; then
    result build fail "NCCL not found (nccl.h and libnccl.so, in the CUDA toolkit or a Python wheel)"
    finish
  fi
  t=$(targets_for_checks)
  say "building $t"
  # shellcheck disable=SC2086 # one word per target
  if ! timeout "$(left 180)" cmake --build "$BUILD_DIR" -j "$JOBS" --target $t >>"$log" 2>&1; then
    tail -n 30 "$log" >&2
    result build fail "$(grep -m 1 -E 'error|FAILED|Terminated' "$log" || echo "timed out")"
    finish
  fi
  put_str build pass
  say "built in $(elapsed) s"
}
if [ "$BUILD" = 1 ]; then build; fi
BIN="$BUILD_DIR/bin"
LOGS="$BUILD_DIR/gpu-check"
rm -rf "$LOGS"
mkdir -p "$LOGS"

# ranks TAG WORLD TIMEOUT COMMAND...: WORLD processes of COMMAND with torchrun-style
# variables on loopback, each logging to $LOGS/TAG-rank-R.log; 0 when every rank exits 0.
# More ranks than GPUs: each rank gets its own NCCL_HOSTID (NCCL refuses two ranks of one
# host on one GPU) and NCCL's socket transport on loopback.
ranks() {
  local tag=$1 world=$2 limit=$3 port=$((20000 + RANDOM % 10000)) r pids=() rc=0
  shift 3
  for ((r = 0; r < world; r++)); do
    local env=("RANK=$r" "WORLD_SIZE=$world" "LOCAL_RANK=$r" "MASTER_ADDR=127.0.0.1"
      "MASTER_PORT=$port")
    if [ "$world" -gt "$GPUS" ]; then
      env+=(NCCL_HOSTID="baton-gpu-check-$$-rank-$r" NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1)
    fi
    env "${env[@]}" timeout -k 5 "$limit" "$@" >"$LOGS/$tag-rank-$r.log" 2>&1 &
    pids+=($!)
  done
  for r in "${pids[@]}"; do wait "$r" || rc=1; done
  return $rc
}
# first_error TAG: the first line of a rank's log that says what went wrong.
first_error() {
  local line
  line=$(grep -h -m 1 -E '^(nccl_allreduce_check|train_mlp)' "$LOGS/$1"-rank-*.log | head -n 1)
  [ -n "$line" ] ||
    line=$(grep -h -m 1 -iE 'error|fail|refus|warn' "$LOGS/$1"-rank-*.log | head -n 1)
  echo "${line:-no output (timed out or killed)}"
}
# json_number JSON KEY: the number KEY holds, or null.
json_number() {
  local n
  n=$(sed -n "s/.*\"$2\":\\([0-9.]*\\).*/\\1/p" <<<"$1")
  echo "${n:-null}"
}

check_nccl_allreduce() {
  local limit world=$GPUS bytes=$((256 << 20)) out
  limit=$(left 90)
  # One GPU: two ranks on it (NCCL's socket transport is slower: a smaller buffer).
  [ "$GPUS" -ge 2 ] || { world=2; bytes=$((64 << 20)); }
  say "nccl_allreduce: $world ranks on $GPUS GPU(s)"
  local tag=nccl
  if ranks nccl "$world" "$limit" "$BIN/nccl_allreduce_check" --bytes "$bytes"; then
    :
  elif [ "$world" -gt "$GPUS" ] && grep -q 'ncclCommInitRank' "$LOGS"/nccl-rank-*.log; then
    # NCCL itself refused two ranks on one GPU: one rank, and the JSON says so.
    local refused
    refused=$(first_error nccl)
    say "nccl_allreduce: NCCL refused 2 ranks on one GPU ($refused); 1 rank"
    put_str nccl_allreduce_note "NCCL refused 2 ranks on one GPU ($refused): 1 rank"
    world=1
    tag="nccl-1rank"
    if ! ranks "$tag" 1 "$(left 60)" "$BIN/nccl_allreduce_check" --bytes "$bytes"; then
      result nccl_allreduce fail "$(first_error "$tag")"
      return
    fi
  else
    result nccl_allreduce fail "$(first_error nccl)"
    return
  fi
  out=$(grep '^{' "$LOGS/$tag-rank-0.log" | tail -n 1)
  [ -n "$out" ] || { result nccl_allreduce fail "no result line from rank 0"; return; }
  put nccl_allreduce_ranks "$world"
  put nccl_busbw_gb_per_s "$(json_number "$out" busbw_gb_per_s)"
  put nccl_checked_values "$(json_number "$out" checked_values)"
  if [ "$(json_number "$out" wrong_values)" = 0 ]; then
    result nccl_allreduce pass
  else
    result nccl_allreduce fail "$(json_number "$out" wrong_values) wrong sums: $out"
  fi
}

# The inventory as lines: index, uuid, model, memory_bytes, mig_profile, parent_uuid, bus id.
INVENTORY=
INVENTORY_ERROR=
read_inventory() {
  [ -z "$INVENTORY$INVENTORY_ERROR" ] || return 0
  local args=()
  [ -z "${BATON_NVML_LIBRARY:-}" ] || args=(--library "$BATON_NVML_LIBRARY")
  if ! INVENTORY=$(timeout "$(left 30)" "$BIN/gpu_inventory" "${args[@]}" 2>"$LOGS/inventory.err"); then
    INVENTORY_ERROR="gpu_inventory: $(head -n 1 "$LOGS/inventory.err")"
    INVENTORY=
  fi
  printf '%s\n' "$INVENTORY" >"$LOGS/inventory.tsv"
  printf '%s\n' "$SMI_QUERY" >"$LOGS/nvidia-smi-query.csv"
  printf '%s\n' "$SMI_LIST" >"$LOGS/nvidia-smi-L.txt"
}

# Every GPU not in MIG mode is in the inventory whole, with nvidia-smi's model and memory
# (MiB, as nvidia-smi rounds it); the inventory lists nothing nvidia-smi does not.
check_nvml_inventory() {
  read_inventory
  [ -z "$INVENTORY_ERROR" ] || { result nvml_inventory fail "$INVENTORY_ERROR"; return; }
  [ -n "$SMI_QUERY" ] || { result nvml_inventory fail "nvidia-smi --query-gpu failed"; return; }
  local errors
  errors=$(awk -F'\t' '
    FNR == NR {  # nvidia-smi: index, uuid, name, memory.total (MiB), mig.mode.current
      split($0, f, /, /)
      smi[f[2]] = 1; name[f[2]] = f[3]; mib[f[2]] = f[4]; mig[f[2]] = f[5]; n++
      next
    }
    $6 == "" {  # a whole GPU in the inventory
      whole++
      if (!($2 in smi)) { print $2 ": in the inventory, not in nvidia-smi"; next }
      seen[$2] = 1
      if ($3 != name[$2]) print $2 ": model " $3 " (inventory) vs " name[$2] " (nvidia-smi)"
      d = int($4 / 1048576) - mib[$2]
      if (d > 1 || d < -1)
        print $2 ": memory " int($4 / 1048576) " MiB (inventory) vs " mib[$2] " MiB (nvidia-smi)"
      next
    }
    { if (!($6 in smi)) print $2 ": a MIG instance of " $6 ", which nvidia-smi does not list" }
    END {
      for (u in smi) if (mig[u] != "Enabled" && !(u in seen)) print u ": not in the inventory"
      if (n == 0) print "nvidia-smi --query-gpu listed no GPU"
    }' <(printf '%s\n' "$SMI_QUERY") <(printf '%s\n' "$INVENTORY" | grep .) | sort)
  put nvml_gpus "$(printf '%s\n' "$INVENTORY" | grep -c .)"
  # The agent's utilisation sample (columns 8 and 9): how many whole GPUs gave a reading.
  put nvml_utilization_sampled "$(printf '%s\n' "$INVENTORY" | awk -F'\t' '$6 == "" && $8 != ""' | grep -c . || true)"
  if [ -z "$errors" ]; then result nvml_inventory pass; else
    result nvml_inventory fail "$(echo "$errors" | head -n 5 | paste -sd ';' -)"; fi
}

# MIG mode per GPU (read-only). Where enabled, the inventory's instances (parent, UUID,
# profile) are exactly those `nvidia-smi -L` lists under that GPU, and the GPU itself is
# not listed whole.
check_mig() {
  [ -n "$SMI_QUERY" ] || { result mig fail "nvidia-smi --query-gpu failed"; return; }
  local modes enabled
  modes=$(awk -F', ' '{ printf "%s%s=%s", (NR > 1 ? "," : ""), $1, $5 }' <<<"$SMI_QUERY")
  put_str mig_modes "$modes"
  enabled=$(awk -F', ' '$5 == "Enabled" { print $2 }' <<<"$SMI_QUERY")
  if [ -z "$enabled" ]; then
    put_str mig disabled
    say "mig: disabled on every GPU ($modes)"
    return
  fi
  read_inventory
  [ -z "$INVENTORY_ERROR" ] || { result mig fail "$INVENTORY_ERROR"; return; }
  local smi_slices ours whole diff
  # "GPU 0: NVIDIA H200 (UUID: GPU-…)" then "  MIG 1g.18gb  Device  0: (UUID: MIG-…)".
  smi_slices=$(awk '
    /^GPU [0-9]+:/ { match($0, /UUID: [^)]*/); gpu = substr($0, RSTART + 6, RLENGTH - 6) }
    /^[ \t]+MIG / { match($0, /UUID: [^)]*/)
                    print gpu "\t" substr($0, RSTART + 6, RLENGTH - 6) "\t" $2 }' \
    <<<"$SMI_LIST" | grep -F -f <(echo "$enabled") | sort)
  ours=$(awk -F'\t' '$6 != "" { print $6 "\t" $2 "\t" $5 }' <<<"$INVENTORY" | sort)
  whole=$(awk -F'\t' '$6 == "" { print $2 }' <<<"$INVENTORY" | grep -x -F -f <(echo "$enabled"))
  # comm -3: lines of nvidia-smi only, then (after a tab) lines of the inventory only.
  diff=$(comm -3 <(printf '%s\n' "$smi_slices" | grep .) <(printf '%s\n' "$ours" | grep .) |
    sed 's/^\t/inventory only: /; /^inventory only/!s/^/nvidia-smi only: /')
  [ -z "$whole" ] || diff+="${diff:+;}listed whole though in MIG mode: $whole"
  put mig_instances "$(echo "$ours" | grep -c .)"
  if [ -z "$diff" ]; then result mig pass; else
    result mig fail "$(echo "$diff" | head -n 5 | paste -sd ';' -)"; fi
}

# 2 ranks with NCCL vs the same run summed on the CPUs (TCP): with two ranks each sum is
# one addition, so NCCL must give the same bits — the hash and every loss line.
check_train_mlp() {
  local flags=(--steps 60 --save-every 20 --hidden 64) ref nccl
  say "train_mlp_2rank_nccl: reference run (host sums)"
  if ! ranks ref 2 "$(left 60)" "$BIN/train_mlp_direct" --reducer host \
    --checkpoint-dir "$LOGS/ckpt-ref" "${flags[@]}"; then
    result train_mlp_2rank_nccl fail "reference run: $(first_error ref)"
    return
  fi
  say "train_mlp_2rank_nccl: NCCL run"
  if ! ranks nccl-mlp 2 "$(left 60)" "$BIN/train_mlp_direct" --reducer nccl \
    --checkpoint-dir "$LOGS/ckpt-nccl" "${flags[@]}"; then
    result train_mlp_2rank_nccl fail "NCCL run: $(first_error nccl-mlp)"
    return
  fi
  ref=$LOGS/ref-rank-0.log
  nccl=$LOGS/nccl-mlp-rank-0.log
  local hash
  hash=$(sed -n 's/^final weights hash //p' "$nccl")
  put_str train_mlp_hash "$hash"
  if ! grep -q 'gradients all-reduced with nccl' "$nccl"; then
    result train_mlp_2rank_nccl fail "the NCCL run did not use NCCL: $(head -n 3 "$nccl" | paste -sd ' ' -)"
  elif [ -z "$hash" ] || [ "$hash" != "$(sed -n 's/^final weights hash //p' "$ref")" ]; then
    result train_mlp_2rank_nccl fail "weights hash ${hash:-none} (NCCL) vs $(sed -n 's/^final weights hash //p' "$ref") (host)"
  elif ! diff <(grep '^step ' "$ref") <(grep '^step ' "$nccl") >"$LOGS/loss.diff"; then
    result train_mlp_2rank_nccl fail "losses differ: $(grep -m 2 '^[<>]' "$LOGS/loss.diff" | paste -sd ' ' -)"
  else
    put_str train_mlp_final_loss "$(grep '^step ' "$nccl" | tail -n 1 | awk '{ print $4 }')"
    result train_mlp_2rank_nccl pass
  fi
}

# ctest -L gpu: at least one test, all passed, none skipped (a test that found no GPU
# skips, and ctest shows it as skipped).
check_gpu_ctest() {
  local log="$LOGS/ctest.log" skipped
  timeout "$(left 120)" ctest --test-dir "$BUILD_DIR" -L gpu --output-on-failure >"$log" 2>&1
  local rc=$?
  skipped=$(sed -n 's/^.*[0-9]* - \([^ ]*\) (Skipped)$/\1/p' "$log" | paste -sd ' ' -)
  put gpu_ctest_tests "$(grep -cE '^ *[0-9]+/[0-9]+ Test +#' "$log")"
  if ! grep -qE '^ *[0-9]+/[0-9]+ Test +#' "$log"; then
    result gpu_ctest fail "no test labelled gpu ran: $(tail -n 1 "$log")"
  elif [ -n "$skipped" ]; then
    result gpu_ctest fail "skipped: $skipped"
  elif [ "$rc" != 0 ]; then
    result gpu_ctest fail "$(grep -m 1 -E 'tests passed|Failed|Timeout|\*\*\*' "$log")"
  else
    result gpu_ctest pass
  fi
}

# ---- mps: CUDA MPS on GPU 0 under a private control daemon, stopped after. ----
# Its pipe and log directories are its own (under $LOGS), so no other daemon is touched,
# and only the daemon's own limits are set (as the agent's MpsPools sets them); the GPU's
# compute mode and MIG mode are only read.
MPS_PCT=25        # set_default_active_thread_percentage
MPS_MEM_MIB=4096  # set_default_device_pinned_mem_limit 0 <MiB>M
MPS_DIR='' MPS_PIPE='' MPS_LOG='' MPS_UUID='' MPS_DAEMON_PID='' MPS_END=0 MPS_PID=''
MPS_BG=()  # clients started in the background and not waited for yet
# mps_left LIMIT: seconds a step may take, LIMIT at most, within the check's own end.
mps_left() {
  local l=$((MPS_END - $(elapsed)))
  [ "$l" -ge 2 ] || l=2
  [ "$l" -lt "$1" ] && echo "$l" || echo "$1"
}
# mps_ctl COMMAND: one command to the private daemon; its answer on stdout (and in the log).
mps_ctl() {
  local out rc
  out=$(printf '%s\n' "$1" | CUDA_MPS_PIPE_DIRECTORY=$MPS_PIPE CUDA_MPS_LOG_DIRECTORY=$MPS_LOG \
    timeout -k 2 10 "$MPS_CONTROL" 2>&1)
  rc=$?
  printf '> %s\n%s\n(exit %s)\n' "$1" "$out" "$rc" >>"$MPS_DIR/control.txt"
  printf '%s\n' "$out"
  return $rc
}
# mps_answers: the private daemon answers a command (a client of none says it found none).
mps_answers() {
  local out
  out=$(mps_ctl get_server_list) && ! grep -qiE 'cannot|error|fail|not found' <<<"$out"
}
# mps_alive: the live (not zombie) processes of the private daemon: the pid it wrote, and
# any nvidia-cuda-mps-* process (its server), whose environment names its pipe directory.
mps_alive() {
  local p comm st
  for p in $MPS_DAEMON_PID /proc/[0-9]*; do
    p=${p#/proc/}
    read -r comm 2>/dev/null <"/proc/$p/comm" || continue
    [[ $comm == nvidia-cuda-mps* ]] || [ "$p" = "$MPS_DAEMON_PID" ] || continue
    { tr '\0' '\n' <"/proc/$p/environ"; } 2>/dev/null |
      grep -qxF "CUDA_MPS_PIPE_DIRECTORY=$MPS_PIPE" || continue
    st=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | cut -d ' ' -f 1)
    [ -z "$st" ] || [ "$st" = Z ] || echo "$p"
  done | sort -u
}
# mps_stop: `quit` to the private daemon, then up to 10 s for it and its server to go;
# mps_daemon_stopped says whether they went. What is still there after that is ours: it is
# killed by pid, and the check fails. Runs once (the EXIT trap calls it too).
mps_stop() {
  [ -n "$MPS_PIPE" ] || return 0
  local i alive
  # Clients still running (a signal came): their timeouts pass the TERM on.
  [ "${#MPS_BG[@]}" = 0 ] || kill "${MPS_BG[@]}" 2>/dev/null
  MPS_BG=()
  mps_ctl quit >/dev/null
  for ((i = 0; i < 50; i++)); do
    alive=$(mps_alive)
    [ -n "$alive" ] || break
    sleep 0.2
  done
  if [ -z "$alive" ]; then
    put mps_daemon_stopped true
  else
    put mps_daemon_stopped false
    put_str mps_daemon_left "$(echo "$alive" | paste -sd ' ' -)"
    # shellcheck disable=SC2086 # one word per pid
    kill $alive 2>/dev/null
  fi
  case $MPS_PIPE in /tmp/baton-mps.*) rm -rf "$MPS_PIPE" ;; esac
  MPS_PIPE=
  trap - EXIT INT TERM HUP
}
# mps_client [--bg] TAG LIMIT [VAR=VALUE...] -- ARGS...: $BIN/mps_client as a client of the
# private daemon, under LIMIT seconds; its JSON line in $MPS_DIR/TAG.json, its stderr in
# TAG.err. --bg: in the background, its pid in MPS_PID and MPS_BG.
mps_client() {
  local bg=0
  [ "$1" != --bg ] || { bg=1; shift; }
  local tag=$1 limit=$2
  local env=(CUDA_VISIBLE_DEVICES="${MPS_UUID:-0}" CUDA_MPS_PIPE_DIRECTORY="$MPS_PIPE"
    CUDA_MPS_LOG_DIRECTORY="$MPS_LOG")
  shift 2
  while [ $# -gt 0 ] && [ "$1" != -- ]; do env+=("$1"); shift; done
  shift
  local cmd=(env -u CUDA_MPS_ACTIVE_THREAD_PERCENTAGE -u CUDA_MPS_PINNED_DEVICE_MEM_LIMIT
    "${env[@]}" timeout -k 2 "$limit" "$BIN/mps_client" "$@")
  if [ "$bg" = 0 ]; then
    "${cmd[@]}" >"$MPS_DIR/$tag.json" 2>"$MPS_DIR/$tag.err"
  else
    "${cmd[@]}" >"$MPS_DIR/$tag.json" 2>"$MPS_DIR/$tag.err" &
    MPS_PID=$!
    MPS_BG+=("$MPS_PID")
  fi
}
# mps_wait PID: the client's exit status, once it is done.
mps_wait() {
  wait "$1"
  local rc=$?
  local p rest=()
  for p in "${MPS_BG[@]}"; do [ "$p" = "$1" ] || rest+=("$p"); done
  MPS_BG=("${rest[@]}")
  return $rc
}
# mps_num TAG KEY / mps_str TAG KEY: a value of the client's JSON line (null / "" if none).
mps_num() { json_number "$(grep '^{' "$MPS_DIR/$1.json" 2>/dev/null | tail -n 1)" "$2"; }
mps_str() { grep '^{' "$MPS_DIR/$1.json" 2>/dev/null | tail -n 1 | sed -n "s/.*\"$2\":\"\\([^\"]*\\)\".*/\\1/p"; }
mps_ok() { grep -q '"ok":true' "$MPS_DIR/$1.json" 2>/dev/null; }
# mps_why TAG: why a client failed: its error, else its stderr's first line.
mps_why() {
  local e
  e=$(mps_str "$1" error)
  [ -n "$e" ] || e=$(grep -m 1 . "$MPS_DIR/$1.err" 2>/dev/null)
  echo "$1: ${e:-no output (timed out or killed)}"
}
# mps_go FILE TAG...: FILE appears once each client is ready or done (20 s at most).
mps_go() {
  local file=$1 i t n
  shift
  for ((i = 0; i < 200; i++)); do
    n=0
    for t in "$@"; do
      if grep -q '^mps_client: ready' "$MPS_DIR/$t.err" 2>/dev/null || [ -s "$MPS_DIR/$t.json" ]; then
        n=$((n + 1))
      fi
    done
    [ "$n" -lt $# ] || break
    sleep 0.1
  done
  touch "$file"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "null" && b != "null" && b > 0) printf "%.3f", a / b; else print "null" }'; }

check_mps() {
  local why mode mig0
  MPS_UUID=$(awk -F', ' '$1 == 0 { print $2 }' <<<"$SMI_QUERY")
  mig0=$(awk -F', ' '$1 == 0 { print $5 }' <<<"$SMI_QUERY")
  if ! command -v "$MPS_CONTROL" >/dev/null 2>&1; then
    why="MPS unavailable: $MPS_CONTROL not found"
  elif [ "$mig0" = Enabled ]; then
    why="GPU 0 is in MIG mode"
  elif ! mode=$("$SMI" --query-gpu=compute_mode --format=csv,noheader 2>&1); then
    why="GPU 0's compute mode unknown: $(echo "$mode" | head -n 1)"
  else
    mode=$(echo "$mode" | head -n 1)
    put_str mps_compute_mode "$mode"
    [ "$mode" != Prohibited ] || why="GPU 0's compute mode is Prohibited"
  fi
  if [ -n "${why:-}" ]; then
    put_str mps skipped
    put_str mps_skipped "$why"
    say "mps: skipped: $why"
    return
  fi
  [ -x "$BIN/mps_client" ] || { result mps fail "$BIN/mps_client not built (no CUDA compiler?)"; return; }
  MPS_END=$(($(elapsed) + $(left 60) - 12))  # 12 s kept for stopping the daemon
  if ! MPS_DIR=$(mktemp -d "$LOGS/mps.XXXXXX"); then
    result mps fail "mktemp under $LOGS failed"
    return
  fi
  MPS_DIR=$(cd "$MPS_DIR" && pwd)
  MPS_LOG=$MPS_DIR/log
  MPS_PIPE=$MPS_DIR/pipe
  # The pipe directory holds UNIX sockets (108 bytes a path at most): a short one if need be.
  [ "${#MPS_PIPE}" -le 80 ] || MPS_PIPE=$(mktemp -d /tmp/baton-mps.XXXXXX)
  mkdir -p "$MPS_PIPE" "$MPS_LOG"
  local errors=() go

  # The whole GPU first, with no daemon (a pipe directory where none runs): the baseline.
  say "mps: one client on the whole GPU, without MPS"
  mps_client full "$(mps_left 10)" CUDA_MPS_PIPE_DIRECTORY="$MPS_DIR/no-daemon" -- --spin-ms 1500 ||
    say "mps: $(mps_why full)"
  local full
  full=$(mps_num full blocks_per_s)
  put mps_full_sms "$(mps_num full sms)"
  put mps_full_blocks_per_s "$full"

  # The private daemon, GPU 0 only, with the limits on its side.
  say "mps: private control daemon on GPU 0 (${MPS_UUID:-0}): ${MPS_PCT}% of the threads, ${MPS_MEM_MIB} MiB a client"
  trap 'mps_stop >/dev/null 2>&1' EXIT
  trap 'exit 129' HUP
  trap 'exit 130' INT
  trap 'exit 143' TERM
  CUDA_VISIBLE_DEVICES="${MPS_UUID:-0}" CUDA_MPS_PIPE_DIRECTORY=$MPS_PIPE \
    CUDA_MPS_LOG_DIRECTORY=$MPS_LOG timeout -k 2 10 "$MPS_CONTROL" -d >"$MPS_DIR/daemon.txt" 2>&1
  # Started: its pid written and its control pipe answering (5 s at most).
  local i up=0
  for ((i = 0; i < 50; i++)); do
    MPS_DAEMON_PID=$(cat "$MPS_PIPE/nvidia-cuda-mps-control.pid" 2>/dev/null)
    if [ -n "$MPS_DAEMON_PID" ] && mps_answers; then up=1; break; fi
    sleep 0.1
  done
  if [ "$up" = 0 ]; then
    local said
    said=$(cat "$MPS_DIR/daemon.txt" "$MPS_LOG/control.log" 2>/dev/null | grep . | tail -n 2 | paste -sd ' ' -)
    put mps_daemon_started false
    mps_stop
    result mps fail "the MPS control daemon did not start or answer: ${said:-no output}"
    return
  fi
  put mps_daemon_started true
  mps_ctl "set_default_active_thread_percentage $MPS_PCT" >/dev/null
  mps_ctl "set_default_device_pinned_mem_limit 0 ${MPS_MEM_MIB}M" >/dev/null
  put_str mps_default_thread_pct "$(mps_ctl get_default_active_thread_percentage | head -n 1)"
  put_str mps_default_mem_limit "$(mps_ctl 'get_default_device_pinned_mem_limit 0' | head -n 1)"
  put mps_mem_limit_mib "$MPS_MEM_MIB"

  # 1. The memory limit: a client asking 8192 MiB gets at most the limit.
  say "mps: a client asks for 8192 MiB"
  local got enforced=false
  mps_client mem "$(mps_left 15)" -- --alloc-mib 8192 || say "mps: $(mps_why mem)"
  got=$(mps_num mem alloc_mib)
  put mps_mem_got_mib "$got"
  put mps_mem_total_mib "$(mps_num mem mem_total_mib)"
  put_str mps_mem_error "$(mps_str mem alloc_error)"
  if ! mps_ok mem; then
    errors+=("$(mps_why mem)")
  elif [ "$got" != null ] && [ "$got" -ge 256 ] && [ "$got" -le "$MPS_MEM_MIB" ]; then
    enforced=true
  else
    errors+=("a client got $got MiB of 8192 asked under a $MPS_MEM_MIB MiB limit")
  fi
  put mps_mem_limit_enforced "$enforced"

  # 2. One client alone at the daemon's 25%, against the whole GPU.
  say "mps: one client at ${MPS_PCT}%"
  mps_client alone "$(mps_left 10)" -- --spin-ms 1500 || say "mps: $(mps_why alone)"
  local alone
  alone=$(mps_num alone blocks_per_s)
  put mps_alone_sms "$(mps_num alone sms)"
  put mps_alone_blocks_per_s "$alone"
  put mps_alone_vs_full "$(ratio "$alone" "$full")"

  # 3. A client that raises its own limits in its environment: held to the daemon's?
  say "mps: a client with CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100 CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=64G"
  mps_client raised "$(mps_left 15)" CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100 \
    CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=64G -- --alloc-mib 8192 --spin-ms 1000 ||
    say "mps: $(mps_why raised)"
  local rgot rbps rratio held=null note
  rgot=$(mps_num raised alloc_mib)
  rbps=$(mps_num raised blocks_per_s)
  rratio=$(ratio "$rbps" "$alone")
  put mps_raised_env_got_mib "$rgot"
  put mps_raised_env_sms "$(mps_num raised sms)"
  put mps_raised_env_blocks_per_s "$rbps"
  put mps_raised_env_vs_alone "$rratio"
  if ! mps_ok raised || [ "$rgot" = null ]; then
    note="not measured: $(mps_why raised)"
  else
    local mem=held thr="not compared"
    held=true
    [ "$rgot" -le "$MPS_MEM_MIB" ] || { mem="NOT held"; held=false; }
    # Held to 25%: well under twice the default client's rate (100% would be about 4x).
    if [ "$rratio" != null ]; then
      thr="held to ${MPS_PCT}%"
      awk -v r="$rratio" 'BEGIN { exit !(r < 1.5) }' || { thr="NOT held to ${MPS_PCT}%"; held=false; }
    fi
    note="memory: got $rgot MiB of 8192 asked, $mem to the daemon's $MPS_MEM_MIB MiB"
    note+="; threads: $rratio x the default client's rate, $thr"
    if [ "$held" = true ]; then
      note+=": a client's own CUDA_MPS_* variables only lower the daemon's limits"
    else
      note+=": a client's own CUDA_MPS_* variables went past the daemon's limits, so they are cooperative only"
    fi
  fi
  put mps_raised_env_held "$held"
  put_str mps_raised_env_note "$note"

  # 4. Two clients at 25% at once: both complete; their rates against one alone.
  say "mps: two clients at ${MPS_PCT}% at once"
  go=$MPS_DIR/go-two
  local pa pb two=false
  mps_client --bg two-a "$(mps_left 15)" -- --spin-ms 1500 --wait-ready "$go"
  pa=$MPS_PID
  mps_client --bg two-b "$(mps_left 15)" -- --spin-ms 1500 --wait-ready "$go"
  pb=$MPS_PID
  mps_go "$go" two-a two-b
  local ra rb
  mps_wait "$pa"
  ra=$?
  mps_wait "$pb"
  rb=$?
  [ "$ra" = 0 ] && [ "$rb" = 0 ] && mps_ok two-a && mps_ok two-b && two=true
  [ "$two" = true ] || errors+=("two clients: $(mps_why two-a); $(mps_why two-b)")
  local ta tb
  ta=$(mps_num two-a blocks_per_s)
  tb=$(mps_num two-b blocks_per_s)
  put mps_two_clients "$two"
  put mps_two_a_blocks_per_s "$ta"
  put mps_two_b_blocks_per_s "$tb"
  put mps_two_vs_alone "$(ratio "$(awk -v a="$ta" -v b="$tb" 'BEGIN { if (a == "null" || b == "null") print "null"; else print a + b }')" "$alone")"

  # 5. Two processes of one job, 3072 MiB each under the 4096 MiB limit, at once: is the
  # second refused (the limit counted per job) or not (per client process)?
  say "mps: two processes of one job, 3072 MiB each"
  go=$MPS_DIR/go-job
  mps_client --bg job-a "$(mps_left 15)" -- --alloc-mib 3072 --hold-ms 1500 --wait-ready "$go"
  pa=$MPS_PID
  mps_client --bg job-b "$(mps_left 15)" -- --alloc-mib 3072 --hold-ms 1500 --wait-ready "$go"
  pb=$MPS_PID
  mps_go "$go" job-a job-b
  mps_wait "$pa"
  mps_wait "$pb"
  local ja jb counted=null
  ja=$(mps_num job-a alloc_mib)
  jb=$(mps_num job-b alloc_mib)
  put_str mps_job_got_mib "$ja+$jb"
  if mps_ok job-a && mps_ok job-b && [ "$ja" != null ] && [ "$jb" != null ]; then
    if [ "$ja" -ge 3072 ] && [ "$jb" -ge 3072 ]; then
      counted=false
      note="both got 3072 MiB ($((ja + jb)) MiB together under a $MPS_MEM_MIB MiB limit): the pinned memory limit is per client process, not per job"
    else
      counted=true
      note="got $ja and $jb MiB of 3072 each: the second was held to what the first left of $MPS_MEM_MIB MiB"
    fi
  else
    note="not measured: $(mps_why job-a); $(mps_why job-b)"
  fi
  put mps_second_process_counted "$counted"
  put_str mps_second_process_note "$note"

  # 6. A client faults (an illegal address) while another spins: does the other fail too?
  say "mps: one client faults while another spins"
  go=$MPS_DIR/go-fault
  mps_client --bg victim "$(mps_left 15)" -- --spin-ms 3000 --wait-ready "$go"
  pa=$MPS_PID
  mps_client --bg fault "$(mps_left 15)" -- --fault --wait-ready "$go"
  pb=$MPS_PID
  mps_go "$go" victim fault
  local vrc effect
  mps_wait "$pa"
  vrc=$?
  mps_wait "$pb"
  if ! grep -q '"faulted":true' "$MPS_DIR/fault.json" 2>/dev/null; then
    effect=not_measured
    put_str mps_fault_note "the faulting client did not fault: $(mps_why fault)"
  elif [ "$vrc" = 0 ] && mps_ok victim; then
    effect=other_client_survived
  elif [ "$vrc" = 124 ] || [ "$vrc" = 137 ]; then
    effect=other_client_hung  # killed by its timeout
  else
    effect=other_client_failed
  fi
  put_str mps_fault_effect "$effect"
  put_str mps_fault_error "$(mps_str fault fault_error)"
  local verr
  verr=$(mps_why victim)
  [[ $effect != other_client_[fh]* ]] || put_str mps_fault_other_error "${verr#victim: }"
  local answered=false after
  mps_answers && answered=true
  put mps_answered_after_fault "$answered"
  # A new client once the two are gone (MPS refuses new ones until a faulted server's
  # clients have all exited): two more tries, a second apart.
  for i in 1 2 3; do
    mps_client after "$(mps_left 10)" -- --alloc-mib 256 && mps_ok after && break
    sleep 1
  done
  if mps_ok after; then after=ok; else after=$(mps_why after); fi
  put_str mps_client_after_fault "$after"

  mps_stop
  [ "${VALUES[mps_daemon_stopped]}" = true ] ||
    errors+=("the MPS daemon was still there 10 s after quit: ${VALUES[mps_daemon_left]//\"/}")
  if [ "${#errors[@]}" = 0 ]; then
    result mps pass
  else
    result mps fail "$(printf '%s; ' "${errors[@]}" | sed 's/; $//')"
  fi
}

for c in "${CHECKS[@]}"; do
  if [ "$(left 10)" -lt 10 ]; then
    result "$c" fail "not run: nothing left of the ${BUDGET_S} s budget"
    continue
  fi
  put "$c" null  # the check's own key first, its details after it
  case $c in
    nccl_allreduce) check_nccl_allreduce ;;
    nvml_inventory) check_nvml_inventory ;;
    mig) check_mig ;;
    train_mlp_2rank_nccl) check_train_mlp ;;
    gpu_ctest) check_gpu_ctest ;;
    mps) check_mps ;;
  esac
  [ "${VALUES[$c]}" != null ] || result "$c" fail "no result"
done
finish
