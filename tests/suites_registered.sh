#!/usr/bin/env bash
# Fails naming each GoogleTest suite of BINARY that no "Suite.*" pattern of FILTERS
# (colon-separated, as --gtest_filter takes them) selects.
#   suites_registered.sh BINARY FILTERS
set -euo pipefail
binary=$1
filters=":$2:"
suites=$("$binary" --gtest_list_tests | grep -E '^[A-Za-z_][A-Za-z0-9_]*\.$' | tr -d '.')
missing=""
for suite in $suites; do
  case "$filters" in
    *":$suite.*:"*) ;;
    *) missing="$missing $suite" ;;
  esac
done
if [ -n "$missing" ]; then
  echo "suites of $binary run by no ctest test (register it: baton_test_entry ... FILTER):$missing" >&2
  exit 1
fi
echo "$(echo "$suites" | wc -w) suites, each run by a ctest test"
