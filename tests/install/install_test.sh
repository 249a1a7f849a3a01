#!/usr/bin/env bash
# Installs this build into a temporary prefix (never the host) and checks what an
# operator and a researcher get: every binary answers --version with this build's
# version, the systemd units pass `systemd-analyze verify` with those binaries, and a
# project outside the tree builds and runs against the installed checkpoint library —
# through the CMake package (shared and static) and through pkg-config.
# usage: install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
work=$(mktemp -d /tmp/baton-install.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
prefix=$work/prefix
fail() { echo "install_test: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" >"$work/install.log" || {
  cat "$work/install.log"; fail "cmake --install failed"; }
libdir=$(find "$prefix" -name libbaton_checkpoint.a -printf '%h\n' | head -1)
[ -n "$libdir" ] || fail "libbaton_checkpoint.a not installed"
for f in bin/baton bin/baton-agent bin/baton-exec bin/baton-keeper bin/baton-coordinator \
         include/baton/checkpoint/checkpoint.h include/baton/common/clock.h \
         lib/systemd/system/baton-coordinator.service lib/systemd/system/baton-agent.service \
         etc/baton/coordinator.yaml etc/baton/agent.yaml; do
  [ -e "$prefix/$f" ] || fail "$f not installed"
done
for f in libbaton_checkpoint.so pkgconfig/baton-checkpoint.pc cmake/baton/batonConfig.cmake; do
  [ -e "$libdir/$f" ] || fail "$libdir/$f not installed"
done
# Headers include only installed headers: nothing outside include/baton is named.
if grep -rhoE '#include "[^"]+"' "$prefix/include/baton" | sed -E 's/#include "(.*)"/\1/' |
    grep -vE '^absl/' | while read -r h; do [ -e "$prefix/include/baton/$h" ] || echo "$h"; done |
    grep .; then
  fail "installed headers include headers that are not installed (above)"
fi

# Man pages from the --help texts, and the CLI's bash completion.
for page in share/man/man1/baton.1 share/man/man8/baton-coordinator.8 share/man/man8/baton-agent.8; do
  [ -s "$prefix/$page" ] || fail "$page not installed"
done
grep -q 'submit' "$prefix/share/man/man1/baton.1" || fail "baton.1 does not describe submit"
grep -q 'print\\-config\|print-config' "$prefix/share/man/man8/baton-agent.8" ||
  fail "baton-agent.8 does not list --print-config"
completion=$prefix/share/bash-completion/completions/baton
complete_words() {  # words of the command line so far -> what completion offers
  PATH="$prefix/bin:$PATH" bash -c 'source "$1"; shift; COMP_WORDS=("$@");
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _baton; echo "${COMPREPLY[*]}"' _ "$completion" "$@"
}
[ "$(complete_words baton su)" = submit ] || fail "completion of 'baton su': $(complete_words baton su)"
[ "$(complete_words baton submit --max-res)" = --max-restarts ] ||
  fail "completion of 'baton submit --max-res': $(complete_words baton submit --max-res)"
[ "$(complete_words baton submit --mode d)" = direct ] || fail "completion of --mode"
[ "$(complete_words baton nodes dr)" = drain ] || fail "completion of 'baton nodes dr'"
[ "$(complete_words baton nodes drain n1 --ev)" = --evict ] ||
  fail "completion of 'baton nodes drain n1 --ev': $(complete_words baton nodes drain n1 --ev)"
[ "$(complete_words baton admin b)" = backup ] || fail "completion of 'baton admin b'"
[ "$(complete_words baton queue -o y)" = yaml ] || fail "completion of -o: $(complete_words baton queue -o y)"

# One version everywhere, the build's.
version=$("$prefix/bin/baton" --version | awk '{print $2}')
[ -n "$version" ] || fail "baton --version printed nothing"
for b in baton-agent baton-coordinator baton-exec baton-keeper; do
  got=$("$prefix/bin/$b" --version)
  [ "$got" = "$b $version" ] || fail "$b --version said '$got', expected '$b $version'"
done
echo "install_test: binaries are version $version"

# The units, pointed at the installed binaries, as systemd reads them.
if command -v systemd-analyze >/dev/null; then
  mkdir -p "$work/units"
  for u in baton-coordinator baton-agent; do
    sed -E "s#^ExecStart=[^ ]*/bin/#ExecStart=$prefix/bin/#" \
      "$prefix/lib/systemd/system/$u.service" >"$work/units/$u.service"
    grep -q "^ExecStart=$prefix/bin/$u --config $prefix/etc/baton/${u#baton-}.yaml$" \
      "$work/units/$u.service" || fail "$u: ExecStart is not the installed binary and config"
    out=$(cd "$work/units" && systemd-analyze verify "./$u.service" 2>&1) ||
      fail "systemd-analyze verify $u.service: $out"
    [ -z "$out" ] || fail "systemd-analyze verify $u.service warns: $out"
  done
  grep -q '^Delegate=yes' "$work/units/baton-agent.service" || fail "agent unit: no Delegate=yes"
  grep -q '^KillMode=process' "$work/units/baton-agent.service" || fail "agent unit: jobs die with it"
  echo "install_test: units verified"
  # The installed config files are read: their settings show in --print-config.
  "$prefix/bin/baton-coordinator" --config "$prefix/etc/baton/coordinator.yaml" --print-config |
    grep -qx 'listen: 0.0.0.0:7070' || fail "coordinator.yaml is not read"
  "$prefix/bin/baton-agent" --config "$prefix/etc/baton/agent.yaml" --print-config >"$work/agent.cfg"
  grep -qx 'coordinator: coordinator.example:7070' "$work/agent.cfg" || fail "agent.yaml is not read"
else
  echo "install_test: systemd-analyze not found: units not verified"
fi

# A project outside the tree, through the CMake package.
cmake -S "$src/tests/install/consumer" -B "$work/consumer" -G Ninja \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >"$work/consumer.log" 2>&1 || {
  cat "$work/consumer.log"; fail "configuring the consumer failed"; }
cmake --build "$work/consumer" >>"$work/consumer.log" 2>&1 || {
  cat "$work/consumer.log"; fail "building the consumer failed"; }
if grep -q -- "-I$src" "$work/consumer/build.ninja"; then fail "the consumer saw the source tree"; fi
for kind in shared static; do
  "$work/consumer/consumer_$kind" "$work/ckpt-$kind" || fail "consumer_$kind failed"
done
loaded=$(ldd "$work/consumer/consumer_shared")  # not piped into grep -q: pipefail
case "$loaded" in
  *"$libdir/libbaton_checkpoint.so"*) ;;
  *) fail "consumer_shared does not load the installed libbaton_checkpoint.so: $loaded" ;;
esac

# …and through pkg-config.
export PKG_CONFIG_PATH="$libdir/pkgconfig"
flags=$(pkg-config --cflags --libs baton-checkpoint) || fail "pkg-config baton-checkpoint failed"
# shellcheck disable=SC2086
c++ -std=c++20 "$src/tests/install/consumer/main.cc" -o "$work/pc_consumer" $flags ||
  fail "building with pkg-config's flags failed: $flags"
LD_LIBRARY_PATH="$libdir" "$work/pc_consumer" "$work/ckpt-pc" || fail "pc_consumer failed"
echo "install_test: ok"
