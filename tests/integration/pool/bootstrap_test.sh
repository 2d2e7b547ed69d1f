#!/usr/bin/env bash
# kite-glidein-bootstrap with the real kite-startd and kite-exec, in a job directory whose path
# has a blank, as a site's job manager would leave them: a good run execs the startd (which
# leaves at once, idle with no agent), and every refusal is one clear line and its exit code.
# Usage: bootstrap_test.sh BIN_DIR  (the build's bin directory)
set -euo pipefail
BIN="$(cd "$1" && pwd)"
BOOT="$BIN/kite-glidein-bootstrap"

T="$(mktemp -d /tmp/kite-bootstrap-it.XXXXXX)"
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }

sha() { sha256sum <"$1" | cut -d ' ' -f 1; }
STARTD_SHA=$(sha "$BIN/kite-startd")
EXEC_SHA=$(sha "$BIN/kite-exec")
LIB_SHA=$(sha "$BIN/libkite_rsc.so")

# A fresh job directory holding copies of the binaries as staged files (mode 0600).
job() {
  local d="$T/job $1"
  mkdir -p "$d"
  cp "$BIN/kite-startd" "$BIN/kite-exec" "$BIN/libkite_rsc.so" "$d/"
  chmod 0600 "$d/kite-startd" "$d/kite-exec" "$d/libkite_rsc.so"
  printf '%s\n' "$d"
}

# Startd flags that make it leave by itself within a second or two: no agent is there.
quick_args() { printf '%s\n' --agent "unix:$T/no agent/pool.sock" --idle-timeout 1 --update-interval 1; }

# expect_refusal WHAT CODE FRAGMENT DIR [ENV...] -- BOOTSTRAP-ARGS...: exit CODE, one stderr line
# "kite-glidein-bootstrap: ..." holding FRAGMENT, and no startd started (no execute/).
expect_refusal() {
  local what="$1" code="$2" fragment="$3" dir="$4"
  shift 4
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  local err rc=0
  err="$(cd "$dir" && env "${envs[@]}" "$BOOT" "$@" 2>&1 >/dev/null)" || rc=$?
  [ "$rc" -eq "$code" ] || fail "$what: exit status $rc, not $code ($err)"
  [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "$what: more than one stderr line: $err"
  case "$err" in
    "kite-glidein-bootstrap: "*"$fragment"*) pass "$what: $err" ;;
    *) fail "$what: '$err' lacks '$fragment'" ;;
  esac
  [ ! -e "$dir/execute" ] || fail "$what: a startd was started"
}

# --- a good run: checked, made executable, exec'd with --work "$PWD/execute" and the args as words
d=$(job good)
mapfile -t args < <(quick_args)
rc=0
(cd "$d" && timeout 30 "$BOOT" --sha256 "kite-startd=$STARTD_SHA" --sha256 "kite-exec=$EXEC_SHA" \
  --lib "libkite_rsc.so=$LIB_SHA" -- "${args[@]}" --name "\$(touch $T/pwned); \`touch $T/pwned\`" >"$T/good.out" 2>"$T/good.err") ||
  rc=$?
[ "$rc" -eq 0 ] || fail "good run: exit status $rc: $(cat "$T/good.err")"
[ -f "$d/execute/startd.lock" ] || fail "good run: the startd did not work in '$d/execute'"
if [ ! -x "$d/kite-startd" ] || [ ! -x "$d/kite-exec" ]; then fail "good run: not made executable"; fi
grep -q 'startd: leaving: idle' "$T/good.err" || fail "good run: no startd log: $(cat "$T/good.err")"
[ ! -e "$T/pwned" ] || fail "good run: an argument was evaluated by a shell"
grep -qF "\$(touch $T/pwned)" "$T/good.err" || fail "good run: --name did not arrive verbatim"
[ "$(stat -c %a "$d/libkite_rsc.so")" = 644 ] || fail "good run: the library is not left 0644"
pass "good run: kite-startd exec'd in '$d' and left when idle"

# --- the remote I/O library: checked like the programs, never run
d=$(job badlib)
expect_refusal "library checksum mismatch" 5 "libkite_rsc.so: SHA-256 $LIB_SHA does not match" \
  "$d" -- --sha256 "kite-startd=$STARTD_SHA" --lib "libkite_rsc.so=${EXEC_SHA}" -- "${args[@]}"
d=$(job scriptlib)
printf '#!/bin/sh\n' >"$d/libkite_rsc.so"
expect_refusal "a library that is not ELF" 7 "libkite_rsc.so cannot run on this host" \
  "$d" -- --sha256 "kite-startd=$STARTD_SHA" --lib "libkite_rsc.so=$(sha "$d/libkite_rsc.so")" \
  -- "${args[@]}"

# Upper-case hex and the --sha256=NAME=HEX form are the same thing.
d=$(job upper)
upper=$(printf '%s' "$STARTD_SHA" | tr 'a-f' 'A-F')
(cd "$d" && timeout 30 "$BOOT" "--sha256=kite-startd=$upper" --sha256 "kite-exec=$EXEC_SHA" \
  -- "${args[@]}" >/dev/null 2>&1) || fail "upper-case hex: refused"
pass "upper-case hex and --sha256=NAME=HEX"

# --- refusals
d=$(job mismatch)
bad=$(printf '%064d' 0)
expect_refusal "checksum mismatch" 5 "kite-exec: SHA-256 $EXEC_SHA does not match the expected $bad" \
  "$d" -- --sha256 "kite-startd=$STARTD_SHA" --sha256 "kite-exec=$bad" -- "${args[@]}"
[ ! -x "$d/kite-exec" ] || fail "checksum mismatch: the file was made executable"

d=$(job missing)
rm "$d/kite-exec"
expect_refusal "missing file" 3 "kite-exec is not in $d" \
  "$d" -- --sha256 "kite-startd=$STARTD_SHA" --sha256 "kite-exec=$EXEC_SHA" -- "${args[@]}"

d=$(job directory)
rm "$d/kite-exec" && mkdir "$d/kite-exec"
expect_refusal "a directory, not a file" 3 "kite-exec is not in" \
  "$d" -- --sha256 "kite-startd=$STARTD_SHA" --sha256 "kite-exec=$EXEC_SHA" -- "${args[@]}"

# Garbage with the right checksum: it passes the check but cannot run (never handed to a shell).
d=$(job garbage)
head -c 4096 /dev/urandom >"$d/kite-startd"
expect_refusal "not a program" 7 "kite-startd cannot run on this host ($(uname -m)" \
  "$d" -- --sha256 "kite-startd=$(sha "$d/kite-startd")" -- "${args[@]}"

# A shell script is not a glide-in binary either, even one that would succeed.
d=$(job script)
printf '#!/bin/sh\ntouch "%s/script-ran"\n' "$T" >"$d/kite-startd"
expect_refusal "a script" 7 "it is not an ELF program" \
  "$d" -- --sha256 "kite-startd=$(sha "$d/kite-startd")" -- "${args[@]}"
[ ! -e "$T/script-ran" ] || fail "a script: it was run"

# The real startd for another machine type: its ELF header names aarch64 (x86_64 elsewhere).
d=$(job arch)
if [ "$(uname -m)" = aarch64 ]; then other=62 other_name=x86_64; else other=183 other_name=aarch64; fi
printf '%b' "$(printf '\\%03o' "$other")" | dd of="$d/kite-startd" bs=1 seek=18 conv=notrunc status=none
expect_refusal "another machine type" 7 "it was built for $other_name, this host is $(uname -m)" \
  "$d" -- --sha256 "kite-startd=$(sha "$d/kite-startd")" -- "${args[@]}"

d=$(job usage)
expect_refusal "no startd checksum" 2 "no --sha256 kite-startd=HEX" \
  "$d" -- --sha256 "kite-exec=$EXEC_SHA" -- "${args[@]}"
expect_refusal "short hex" 2 "is not 64 hexadecimal digits" \
  "$d" -- --sha256 "kite-startd=abc" -- "${args[@]}"
expect_refusal "a path, not a name" 2 "is not a plain file name" \
  "$d" -- --sha256 "../kite-startd=$STARTD_SHA" -- "${args[@]}"
expect_refusal "no --" 2 "unexpected argument '--agent'" \
  "$d" -- --sha256 "kite-startd=$STARTD_SHA" "${args[@]}"

# --- the SHA-256 tools: sha256sum, else openssl, else shasum, else a refusal.
# A PATH holding only what the script needs besides them.
tools="$T/tools"
mkdir -p "$tools"
for t in cut sed tr uname getconf ldd od chmod env timeout; do
  p=$(command -v "$t") && ln -s "$p" "$tools/$t"
done
d=$(job notool)
expect_refusal "no SHA-256 tool" 4 "no SHA-256 tool on this host" \
  "$d" "PATH=$tools" -- --sha256 "kite-startd=$STARTD_SHA" -- "${args[@]}"

for alt in openssl shasum; do
  p=$(command -v "$alt") || { echo "skip: no $alt here"; continue; }
  only="$T/tools-$alt"
  cp -a "$tools" "$only"
  ln -s "$p" "$only/$alt"
  d=$(job "$alt")
  (cd "$d" && env "PATH=$only" timeout 30 "$BOOT" --sha256 "kite-startd=$STARTD_SHA" \
    --sha256 "kite-exec=$EXEC_SHA" -- "${args[@]}" >/dev/null 2>"$T/$alt.err") ||
    fail "$alt only: $(tail -n 1 "$T/$alt.err")"
  expect_refusal "$alt only, mismatch" 5 "does not match" \
    "$(job "$alt-bad")" "PATH=$only" -- --sha256 "kite-startd=$bad" -- "${args[@]}"
  pass "$alt only: checks and runs"
done

echo "all bootstrap checks passed"
