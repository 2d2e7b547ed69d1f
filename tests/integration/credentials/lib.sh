# Shared by the credential integration scripts: a private temporary world and small assertions.
# Usage: source lib.sh; the caller has set KITE to the kite binary.
set -euo pipefail

T="$(mktemp -d /tmp/kite-cred-it.XXXXXX)"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$T"
}
trap cleanup EXIT

# Never touch the real ~/.globus, /etc/grid-security or the user's proxy.
export HOME="$T/home" KITE_HOME="$T/kite" X509_USER_PROXY="$T/x509up"
export X509_CERT_DIR="$KITE_HOME/ca/certificates"
unset X509_USER_CERT X509_USER_KEY MYPROXY_SERVER MYPROXY_SERVER_DN || true
mkdir -p "$HOME"

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }

# expect_fail "what" "stderr fragment" cmd...: the command must exit non-zero with one stderr line
# containing the fragment.
expect_fail() {
  local what="$1" fragment="$2"; shift 2
  local err rc=0
  err="$("$@" 2>&1 >/dev/null)" || rc=$?
  [ "$rc" -ne 0 ] || fail "$what: exit status 0"
  [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "$what: more than one stderr line: $err"
  case "$err" in *"$fragment"*) pass "$what: $err" ;; *) fail "$what: '$err' lacks '$fragment'" ;; esac
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
