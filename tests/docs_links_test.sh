#!/usr/bin/env bash
# Keeps the repository self-contained: a fresh clone must be readable on its own.
#   1. No file of the tree refers to documents kept outside the repository (a parent
#      directory's shared/ folder, or the team's design, recipes or source-article files
#      that docs/ replaced).
#   2. Every relative Markdown link in the tree's *.md files ([text](path), [text](path#anchor),
#      [ref]: path) resolves to a file or folder inside the repository, and an anchor into a
#      Markdown file names one of its headings (GitHub's slugs).
# The files are the ones git tracks (plus untracked, not ignored ones), or, without git, a
# find over the source tree. Usage: docs_links_test.sh [SOURCE_DIR]
set -euo pipefail
export LC_ALL=C

SRC=$(cd "${1:-$(dirname "$0")/..}" && pwd -P)
SELF=tests/docs_links_test.sh
cd "$SRC"

# The files to check, relative to SRC, one per line.
list_files() {
  if command -v git >/dev/null 2>&1 &&
    [ "$(git rev-parse --show-toplevel 2>/dev/null || true)" = "$SRC" ]; then
    git ls-files --cached --others --exclude-standard
  else
    find . \( -name .git -o -name 'build*' -o -name __pycache__ \) -prune -o -type f -print |
      sed 's|^\./||'
  fi
}

FILES=$(list_files | sort -u)
if [ -z "$FILES" ]; then
  echo "docs_links_test: no files found under $SRC" >&2
  exit 1
fi
failures=0
fail() {
  echo "docs_links_test: $*" >&2
  failures=$((failures + 1))
}

# --- 1. nothing points outside the repository ---------------------------------------
# The patterns are spelled so that this file does not match them itself.
OUTSIDE='[.][.]/shared|shared/(DESIGN|RECIPES|STYLE)|SOURCE-ARTICLE|(DESIGN|RECIPES)[.]md'
hits=$(grep -v -x -F -- "$SELF" <<<"$FILES" | tr '\n' '\0' |
  xargs -0 grep -I -n -H -E -- "$OUTSIDE" 2>/dev/null || true)
while IFS= read -r hit; do
  [ -n "$hit" ] || continue
  file=${hit%%:*} rest=${hit#*:}
  fail "$file:${rest%%:*}: refers to a document outside the repository (point into docs/ instead): ${rest#*:}"
done <<<"$hits"

# --- 2. relative Markdown links resolve ----------------------------------------------
# extract_md FILE: prints "L<TAB>line<TAB>target" for every link outside code (fenced
# blocks and inline code spans are skipped) and "H<TAB>slug" for every heading, with
# GitHub's anchor slugs (lower case; only letters, digits, spaces, '-' and '_' kept; spaces
# become '-'; a repeated slug gets -1, -2, ...).
extract_md() {
  awk '
    BEGIN { fence = "" }
    {
      line = $0
      if (fence != "") {
        if (line ~ ("^[ ]*" fence)) fence = ""
        next
      }
      if (match(line, /^[ ]*(```|~~~)/)) { fence = substr(line, RSTART + RLENGTH - 3, 3); next }
      if (line ~ /^#+ /) {
        h = line
        sub(/^#+ +/, "", h); sub(/ +#+ *$/, "", h)
        h = tolower(h)
        gsub(/[^a-z0-9 _-]/, "", h)
        gsub(/ /, "-", h)
        slug = h
        if (h in seen) { slug = h "-" seen[h]; seen[h]++ } else seen[h] = 1
        print "H\t" slug
      }
      gsub(/`[^`]*`/, "", line)
      if (match(line, /^[ ]*\[[^]]+\]:[ ]+[^ ]+/)) {
        ref = substr(line, RSTART, RLENGTH); sub(/^[ ]*\[[^]]+\]:[ ]+/, "", ref)
        print "L\t" NR "\t" ref
      }
      while (match(line, /\]\([^)]*\)/)) {
        t = substr(line, RSTART + 2, RLENGTH - 3)
        line = substr(line, RSTART + RLENGTH)
        sub(/^[ ]*</, "", t); sub(/>[ ]*$/, "", t)
        sub(/[ ]+".*$/, "", t)
        print "L\t" NR "\t" t
      }
    }' "$1"
}

# normalize PATH: resolves "." and ".." lexically; prints "" for a path above the root.
normalize() {
  local out=() part
  local IFS=/
  for part in $1; do
    case "$part" in
      '' | .) ;;
      ..)
        if [ ${#out[@]} -eq 0 ]; then
          echo ""
          return
        fi
        unset 'out[${#out[@]}-1]'
        ;;
      *) out+=("$part") ;;
    esac
  done
  echo "${out[*]}"
}

# is_listed PATH: a file of the tree, or a folder holding some (what a fresh clone has).
is_listed() {
  grep -qxF -- "$1" <<<"$FILES" || grep -qF -- "$1/" <<<"$FILES"
}

MD_FILES=$(grep -E '\.md$' <<<"$FILES" || true)
links=0
while IFS= read -r md; do
  [ -n "$md" ] && [ -f "$md" ] || continue
  dir=$(dirname "$md")
  data=$(extract_md "$md")
  while IFS=$'\t' read -r kind lineno target; do
    [ "$kind" = L ] || continue
    links=$((links + 1))
    case "$target" in
      '') fail "$md:$lineno: an empty link"; continue ;;
      [a-zA-Z]*:*) continue ;;  # https:, mailto:, ...: not ours to check
      /*) fail "$md:$lineno: '$target' is absolute; link relative to the file"; continue ;;
    esac
    path=${target%%#*}
    anchor=""
    [ "$path" != "$target" ] && anchor=${target#*#}
    if [ -z "$path" ]; then
      resolved=$md
    else
      resolved=$(normalize "$dir/$path")
      if [ -z "$resolved" ]; then
        fail "$md:$lineno: '$target' points outside the repository"
        continue
      fi
      if [ ! -e "$resolved" ] || ! is_listed "$resolved"; then
        fail "$md:$lineno: '$target' does not exist in the repository ($resolved)"
        continue
      fi
    fi
    if [ -n "$anchor" ] && [[ "$resolved" == *.md ]]; then
      if ! extract_md "$resolved" | grep -qxF "H	$anchor"; then
        fail "$md:$lineno: '$target': $resolved has no heading with the anchor #$anchor"
      fi
    fi
  done <<<"$data"
done <<<"$MD_FILES"

if [ "$failures" -gt 0 ]; then
  echo "docs_links_test: $failures problem(s)" >&2
  exit 1
fi
echo "docs_links_test: $(wc -l <<<"$FILES") files clean; $links Markdown links resolve"
