# bash completion for baton: commands, each command's flags (read from its --help, so
# they never go stale), and job ids of the queue for commands that take jobs.
_baton() {
  local cur prev cmd
  cur=${COMP_WORDS[COMP_CWORD]}
  prev=${COMP_WORDS[COMP_CWORD - 1]}
  local commands="submit queue status explain logs cancel signal nodes share policy events whoami admin capacity version"
  if [ "$COMP_CWORD" -eq 1 ]; then
    mapfile -t COMPREPLY < <(compgen -W "$commands --help --version" -- "$cur")
    return 0
  fi
  cmd=${COMP_WORDS[1]}
  case "$prev" in
    -f | --file) mapfile -t COMPREPLY < <(compgen -f -- "$cur"); return 0 ;;
    --mode) mapfile -t COMPREPLY < <(compgen -W "direct mpi" -- "$cur"); return 0 ;;
    --restart) mapfile -t COMPREPLY < <(compgen -W "never on-failure always" -- "$cur"); return 0 ;;
    -s | --signal) mapfile -t COMPREPLY < <(compgen -W "USR1 USR2" -- "$cur"); return 0 ;;
    -o | --output) mapfile -t COMPREPLY < <(compgen -W "wide json yaml name" -- "$cur"); return 0 ;;
  esac
  case "$cur" in
    -*)
      local flags
      local sub=()  # subcommands with flags of their own: nodes drain, admin backup
      case "$cmd ${COMP_WORDS[2]}" in
        "nodes drain" | "nodes undrain" | "admin backup") sub=("${COMP_WORDS[2]}") ;;
      esac
      flags=$(baton "$cmd" "${sub[@]}" --help 2>/dev/null | grep -oE -- '--[a-z][a-z-]*' | sort -u)
      mapfile -t COMPREPLY < <(compgen -W "$flags" -- "$cur")
      return 0
      ;;
  esac
  case "$cmd" in
    status | explain | logs | cancel | signal)
      local jobs
      jobs=$(baton queue --timeout 2s -o name 2>/dev/null | sed -n 's#^job/##p')
      mapfile -t COMPREPLY < <(compgen -W "$jobs" -- "$cur")
      ;;
    admin)
      if [ "$COMP_CWORD" -eq 2 ]; then
        mapfile -t COMPREPLY < <(compgen -W "token policy backup ha" -- "$cur")
      elif [ "${COMP_WORDS[2]}" = backup ]; then
        mapfile -t COMPREPLY < <(compgen -d -- "$cur")
      elif [ "${COMP_WORDS[2]}" = ha ] && [ "$COMP_CWORD" -eq 3 ]; then
        mapfile -t COMPREPLY < <(compgen -W "status step-down" -- "$cur")
      fi
      ;;
    nodes)
      if [ "$COMP_CWORD" -eq 2 ]; then
        mapfile -t COMPREPLY < <(compgen -W "drain undrain" -- "$cur")
      else
        local nodes
        nodes=$(baton nodes -o name --timeout 2s 2>/dev/null | sed -n 's|^node/||p')
        mapfile -t COMPREPLY < <(compgen -W "$nodes" -- "$cur")
      fi
      ;;
    policy) mapfile -t COMPREPLY < <(compgen -W "get set" -- "$cur") ;;
  esac
  return 0
}
complete -F _baton baton
