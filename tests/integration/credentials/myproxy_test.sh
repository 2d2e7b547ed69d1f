#!/usr/bin/env bash
# kite myproxy get/store against Debian's myproxy-server on loopback, with myproxy-init and
# myproxy-logon as the other peers (store with one, retrieve with the other, both ways).
KITE="$1"
source "$(dirname "$0")/lib.sh"
command -v myproxy-server >/dev/null || fail "myproxy-server not installed (scripts/deps)"
GLOBUS="$HOME/.globus"

"$KITE" ca init >/dev/null
"$KITE" ca issue-user "CN=Jane Doe" >/dev/null
"$KITE" ca issue-host localhost --out "$T/host" >/dev/null

# The server: its own config, storage and port; host credential from the environment.
mkdir -m 700 "$T/store"
cat > "$T/myproxy-server.config" <<'CONF'
accepted_credentials "*"
authorized_retrievers "*"
default_retrievers "*"
authorized_renewers "*"
CONF
PORT="$(free_port)"
X509_USER_CERT="$T/host/hostcert.pem" X509_USER_KEY="$T/host/hostkey.pem" \
  myproxy-server -c "$T/myproxy-server.config" -s "$T/store" -l 127.0.0.1 -p "$PORT" \
  -P "$T/myproxy.pid"
for _ in $(seq 50); do [ -s "$T/myproxy.pid" ] && break; sleep 0.1; done
PIDS+=("$(cat "$T/myproxy.pid")")
SERVER="localhost:$PORT"

# Kite stores (from usercert.pem, as myproxy-init does), myproxy-logon retrieves.
echo "secret-one" | "$KITE" myproxy store -s "$SERVER" -l jane --pwstdin >/dev/null
echo "secret-one" | myproxy-logon -s localhost -p "$PORT" -l jane -S -o "$T/logon.pem" >/dev/null
[ "$(grid-proxy-info -f "$T/logon.pem" -identity)" = "/O=Grid/OU=Kite/CN=Jane Doe" ] ||
  fail "myproxy-logon of a kite-stored credential"
pass "kite myproxy store -> myproxy-logon"

# myproxy-init stores, Kite retrieves; Kite's verifier accepts what it got.
echo "secret-two" | myproxy-init -C "$GLOBUS/usercert.pem" -y "$GLOBUS/userkey.pem" \
  -s localhost -p "$PORT" -l bob -S >/dev/null
echo "secret-two" | "$KITE" myproxy get -s "$SERVER" -l bob --pwstdin -o "$T/got.pem" >/dev/null
[ "$(stat -c %a "$T/got.pem")" = 600 ] || fail "retrieved proxy mode"
[ "$("$KITE" proxy info -f "$T/got.pem" --verify --identity)" = "/O=Grid/OU=Kite/CN=Jane Doe" ] ||
  fail "kite myproxy get identity"
grid-proxy-info -f "$T/got.pem" -exists || fail "grid-proxy-info of kite-retrieved proxy"
pass "myproxy-init -> kite myproxy get (verified)"

# Kite to Kite, with a lifetime asked for; the default path is X509_USER_PROXY.
echo "secret-one" | "$KITE" myproxy get -s "$SERVER" -l jane --pwstdin --valid 1:00 >/dev/null
left="$("$KITE" proxy info --timeleft)"
[ "$left" -gt 3500 ] && [ "$left" -le 3600 ] || fail "timeleft $left"
pass "kite myproxy get --valid 1:00 into \$X509_USER_PROXY"

expect_fail "wrong MyProxy pass phrase" "MyProxy server refused" \
  bash -c "echo wrong-pass | '$KITE' myproxy get -s '$SERVER' -l jane --pwstdin -o '$T/x.pem'"
expect_fail "unknown MyProxy user" "MyProxy server refused" \
  bash -c "echo secret-one | '$KITE' myproxy get -s '$SERVER' -l nobody --pwstdin -o '$T/x.pem'"
expect_fail "server subject mismatch" "expected /O=Grid/OU=Kite/CN=host/elsewhere" \
  bash -c "echo secret-one | '$KITE' myproxy get -s '$SERVER' -l jane --pwstdin -o '$T/x.pem' \
           --server-dn /O=Grid/OU=Kite/CN=host/elsewhere"
CLOSED="$(free_port)"
expect_fail "no server" "cannot connect" \
  bash -c "echo secret-one | '$KITE' myproxy get -s 'localhost:$CLOSED' -l jane --pwstdin"
echo "secret-one" | "$KITE" proxy init -q --out "$T/ec-proxy"
expect_fail "EC proxy cannot be stored" "only re-delegate from RSA" \
  bash -c "echo secret-one | '$KITE' myproxy store -s '$SERVER' -l eve --pwstdin --proxy '$T/ec-proxy'"
