#!/usr/bin/env bash
# kite ca / proxy verbs against the Globus tools: each accepts what the other makes.
KITE="$1"
source "$(dirname "$0")/lib.sh"
GLOBUS="$HOME/.globus"

"$KITE" ca init >/dev/null
echo "pass1234" | "$KITE" ca issue-user "CN=Jane Doe" --pwstdin >/dev/null
[ "$(stat -c %a "$GLOBUS/userkey.pem")" = 600 ] || fail "userkey.pem mode"
grep -q ENCRYPTED "$GLOBUS/userkey.pem" || fail "userkey.pem not encrypted"
ls "$X509_CERT_DIR"/*.0 "$X509_CERT_DIR"/*.signing_policy "$X509_CERT_DIR"/*.r0 >/dev/null
pass "CA and user certificate in the usual layout"

# Kite's proxy, read by Globus and OpenSSL.
echo "pass1234" | "$KITE" proxy init --pwstdin -q
[ "$(stat -c %a "$X509_USER_PROXY")" = 600 ] || fail "proxy mode"
grid-proxy-info -f "$X509_USER_PROXY" -exists || fail "grid-proxy-info -exists"
[ "$(grid-proxy-info -f "$X509_USER_PROXY" -identity)" = "/O=Grid/OU=Kite/CN=Jane Doe" ] ||
  fail "grid-proxy-info identity"
grid-proxy-info -f "$X509_USER_PROXY" -type | grep -q "RFC 3820 compliant impersonation proxy" ||
  fail "grid-proxy-info type"
openssl verify -allow_proxy_certs -CApath "$X509_CERT_DIR" -untrusted "$GLOBUS/usercert.pem" \
  "$X509_USER_PROXY" | grep -q ": OK" || fail "openssl verify"
pass "kite proxy init (EC) accepted by grid-proxy-info and openssl verify -allow_proxy_certs"

echo "pass1234" | "$KITE" proxy init --pwstdin -q --limited --bits 2048 --valid 2:00
grid-proxy-info -f "$X509_USER_PROXY" -type | grep -q "limited proxy" || fail "limited type"
[ "$(grid-proxy-info -f "$X509_USER_PROXY" -strength)" = 2048 ] || fail "strength"
left="$(grid-proxy-info -f "$X509_USER_PROXY" -timeleft)"
[ "$left" -gt 7000 ] && [ "$left" -le 7200 ] || fail "timeleft $left"
pass "limited RSA-2048 proxy for 2h, as Globus sees it"

# Globus's proxy, read and verified by Kite.
echo "pass1234" | grid-proxy-init -cert "$GLOBUS/usercert.pem" -key "$GLOBUS/userkey.pem" \
  -out "$T/gp" -pwstdin >/dev/null
[ "$("$KITE" proxy info -f "$T/gp" --verify --identity)" = "/O=Grid/OU=Kite/CN=Jane Doe" ] ||
  fail "kite identity of a grid-proxy-init proxy"
"$KITE" proxy info -f "$T/gp" --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["type"] == "RFC 3820 compliant impersonation proxy", d
assert d["identity"] == "/O=Grid/OU=Kite/CN=Jane Doe", d
assert 43000 < d["timeleft"] <= 43200, d'
echo "pass1234" | grid-proxy-init -limited -cert "$GLOBUS/usercert.pem" \
  -key "$GLOBUS/userkey.pem" -out "$T/gpl" -pwstdin >/dev/null
"$KITE" proxy info -f "$T/gpl" --verify | grep -q "type     : RFC 3820 compliant limited proxy" ||
  fail "kite type of a grid-proxy-init -limited proxy"
pass "grid-proxy-init proxies verified by Kite, identity extracted"

# --exists like grid-proxy-info -exists -valid.
"$KITE" proxy info --exists --valid 1:00 || fail "--exists --valid 1:00"
if "$KITE" proxy info --exists --valid 3:00; then fail "--exists --valid 3:00 should fail"; fi
"$KITE" proxy destroy
[ ! -e "$X509_USER_PROXY" ] || fail "destroy left the file"
if "$KITE" proxy info --exists; then fail "--exists after destroy"; fi
pass "proxy info --exists and proxy destroy"

# Host certificates.
"$KITE" ca issue-host localhost --out "$T/host" >/dev/null
openssl verify -CApath "$X509_CERT_DIR" "$T/host/hostcert.pem" | grep -q ": OK" || fail "host verify"
openssl x509 -in "$T/host/hostcert.pem" -noout -ext subjectAltName |
  grep -q "DNS:localhost, IP Address:127.0.0.1" || fail "host SAN"
[ "$(stat -c %a "$T/host/hostkey.pem")" = 600 ] || fail "hostkey mode"
pass "host certificate with subjectAltName"
