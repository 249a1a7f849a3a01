#!/bin/sh
# A stand-in for nvidia-cuda-mps-control in tests: it records what it was sent, in order,
# to $CUDA_MPS_LOG_DIRECTORY/fake-control.log. With -d it starts a "daemon" (a process that
# waits to be told to quit) and keeps its pid where the real one does, in the pipe directory.
# Without arguments it reads commands on its standard input: quit stops the daemon,
# get_server_list prints the pids listed in $CUDA_MPS_PIPE_DIRECTORY/fake-servers (a test
# writes it to play a running server). Like the real one, a command with no daemon fails.
log="$CUDA_MPS_LOG_DIRECTORY/fake-control.log"
pidfile="$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid"
if [ "$1" = "-d" ]; then
  [ -d "$CUDA_MPS_PIPE_DIRECTORY" ] && [ -d "$CUDA_MPS_LOG_DIRECTORY" ] || {
    echo "pipe or log directory missing" >&2
    exit 1
  }
  echo "start gpu=$CUDA_VISIBLE_DEVICES" >> "$log"
  sh -c 'trap "exit 0" TERM; while :; do sleep 0.2; done' </dev/null >/dev/null 2>&1 &
  echo $! > "$pidfile"
  exit 0
fi
if ! [ -f "$pidfile" ] || ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
  echo "Cannot find MPS control daemon process" >&2
  exit 1
fi
while IFS= read -r cmd; do
  echo "$cmd" >> "$log"
  case "$cmd" in
    quit) kill "$(cat "$pidfile")" && rm -f "$pidfile" ;;
    get_server_list) [ -f "$CUDA_MPS_PIPE_DIRECTORY/fake-servers" ] && cat "$CUDA_MPS_PIPE_DIRECTORY/fake-servers" ;;
  esac
done
exit 0
