#!/bin/sh
# Differential shell-script test:
#   sh tests/run_sql.sh <sqlite3-shell> <path/to/gpuds.so> <script.sql>
#
# The script creates its tables with
#   CREATE VIRTUAL TABLE <name> USING @MOD@(<columns>);
# It is run three times through the sqlite3 shell, on an in-memory database
# with the extension loaded:
#   gfsl     @MOD@ replaced by gfsl
#   gpuhash  @MOD@ replaced by gpuhash
#   plain    "CREATE VIRTUAL TABLE <name> USING @MOD@(" rewritten to
#            "CREATE TABLE <name>(": an ordinary table, the reference
# stdout, stderr (error messages, with line numbers) and the exit status of
# the gfsl and gpuhash runs must be identical to those of the plain run.
# Scripts must make their output deterministic (ORDER BY k wherever several
# rows come back: gpuhash returns rows in no particular order).
#
# Exit: 0 identical, 1 different (a diff is printed), 77 skipped (no shell,
# no extension, or a shell that cannot load extensions).
# Set GPUDS_SQL_KEEP=1 to keep the outputs (their folder is printed).

if [ $# -lt 3 ]; then
  echo "SKIPPED: usage: run_sql.sh <sqlite3-shell> <gpuds.so> <script.sql> (shell not found?)"
  exit 77
fi
shell=$1
ext=$2
script=$3

case "$shell" in
  ""|*-NOTFOUND) echo "SKIPPED: no sqlite3 shell"; exit 77 ;;
esac
if ! command -v "$shell" >/dev/null 2>&1; then
  echo "SKIPPED: sqlite3 shell '$shell' not found"
  exit 77
fi
if [ ! -f "$ext" ]; then
  echo "SKIPPED: extension '$ext' not found"
  exit 77
fi
if [ ! -f "$script" ]; then
  echo "FAIL: script '$script' not found"
  exit 1
fi
case "$ext" in
  /*) ;;
  *) ext=$(pwd)/$ext ;;
esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpuds_sql.XXXXXX") || exit 1
if [ -z "$GPUDS_SQL_KEEP" ]; then
  trap 'rm -rf "$tmp"' EXIT
  trap 'rm -rf "$tmp"; exit 1' HUP INT TERM
fi

# Can this shell load the extension at all?
printf ".load '%s'\nSELECT json_valid(gpuds_info());\n" "$ext" \
  | "$shell" -batch :memory: >"$tmp/probe" 2>&1
if [ "$(cat "$tmp/probe")" != "1" ]; then
  if grep -qi "unknown command\|not authorized\|extension loading is disabled" "$tmp/probe"; then
    echo "SKIPPED: this sqlite3 shell cannot load extensions:"
    cat "$tmp/probe"
    exit 77
  fi
  echo "FAIL: loading $ext into $shell:"
  cat "$tmp/probe"
  exit 1
fi

if ! grep -q "@MOD@" "$script"; then
  echo "FAIL: $script has no @MOD@ placeholder"
  exit 1
fi

# One run per mode: <mode>.sql -> <mode>.out, <mode>.err, <mode>.rc
for mode in plain gfsl gpuhash; do
  {
    printf ".load '%s'\n" "$ext"
    if [ "$mode" = plain ]; then
      sed -e 's/CREATE VIRTUAL TABLE \([^ (]*\) USING @MOD@(/CREATE TABLE \1(/g' "$script"
    else
      sed -e "s/@MOD@/$mode/g" "$script"
    fi
  } >"$tmp/$mode.sql"
  if [ "$mode" = plain ] && grep -q "@MOD@" "$tmp/$mode.sql"; then
    echo "FAIL: $script uses @MOD@ outside 'CREATE VIRTUAL TABLE <name> USING @MOD@('"
    exit 1
  fi
  "$shell" -batch :memory: <"$tmp/$mode.sql" >"$tmp/$mode.out" 2>"$tmp/$mode.err"
  echo "exit status $?" >"$tmp/$mode.rc"
done

status=0
name=$(basename "$script")
for mode in gfsl gpuhash; do
  for part in out err rc; do
    if ! cmp -s "$tmp/plain.$part" "$tmp/$mode.$part"; then
      status=1
      echo "FAIL: $name: $mode differs from an ordinary table ($part):"
      diff -u "$tmp/plain.$part" "$tmp/$mode.$part" | sed -e "s#$tmp/##" | head -80
    fi
  done
done
if [ ! -s "$tmp/plain.out" ]; then
  echo "FAIL: $name: no output at all"
  status=1
fi
if [ -n "$GPUDS_SQL_KEEP" ]; then
  echo "outputs kept in $tmp"
fi
if [ $status -eq 0 ]; then
  echo "ok: $name: gfsl and gpuhash match an ordinary table ($(wc -l <"$tmp/plain.out") lines of output, $(wc -l <"$tmp/plain.err") of errors)"
fi
exit $status
