#!/usr/bin/env bash
# Bad input to the credential verbs: a clear one-line error and a non-zero exit each time.
KITE="$1"
source "$(dirname "$0")/lib.sh"
GLOBUS="$HOME/.globus"

"$KITE" ca init >/dev/null
echo "pass1234" | "$KITE" ca issue-user "CN=Jane Doe" --pwstdin >/dev/null

expect_fail "wrong passphrase" "wrong passphrase" \
  bash -c "echo nope | '$KITE' proxy init --pwstdin -q"
chmod 644 "$GLOBUS/userkey.pem"
expect_fail "key readable by others" "mode 0644" \
  bash -c "echo pass1234 | '$KITE' proxy init --pwstdin -q"
chmod 600 "$GLOBUS/userkey.pem"

"$KITE" ca issue-user "CN=Other" --out "$T/other" >/dev/null
expect_fail "key not matching the certificate" "does not match" \
  "$KITE" proxy init -q --cert "$GLOBUS/usercert.pem" --key "$T/other/userkey.pem"
printf -- '-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n' > "$T/bad.pem"
expect_fail "malformed PEM" "malformed PEM certificate" \
  "$KITE" proxy init -q --cert "$T/bad.pem" --key "$T/other/userkey.pem"
expect_fail "missing proxy" "no proxy at" "$KITE" proxy info

echo "pass1234" | "$KITE" proxy init --pwstdin -q
chmod 644 "$X509_USER_PROXY"
expect_fail "proxy readable by others" "mode 0644" "$KITE" proxy info
chmod 600 "$X509_USER_PROXY"

# A proxy from a CA this host does not trust.
KITE_HOME="$T/rogue" "$KITE" ca init --subject "/O=Rogue/CN=Rogue CA" >/dev/null
KITE_HOME="$T/rogue" "$KITE" ca issue-user "CN=Mallory" --out "$T/mallory" >/dev/null
"$KITE" proxy init -q --no-verify --cert "$T/mallory/usercert.pem" \
  --key "$T/mallory/userkey.pem" --out "$T/rogue-proxy"
expect_fail "untrusted CA" "not a CA trusted" "$KITE" proxy info -f "$T/rogue-proxy" --verify
expect_fail "proxy init checks the chain" "does not verify" \
  "$KITE" proxy init -q --cert "$T/mallory/usercert.pem" --key "$T/mallory/userkey.pem"

expect_fail "subject outside the CA namespace" "outside this CA's namespace" \
  "$KITE" ca issue-user "/O=Elsewhere/CN=Eve" --out "$T/eve"
expect_fail "second ca init" "already exists" "$KITE" ca init
expect_fail "bad --valid" "is not a duration" bash -c "echo pass1234 | '$KITE' proxy init --pwstdin --valid soon"

# What a pass phrase on standard input may be: not a file fed by mistake, and an empty stdin is
# said to be empty (a 10 MB pass phrase was once answered "no passphrase on standard input").
head -c 10000000 /dev/zero | tr '\0' 'x' > "$T/huge"
expect_fail "10 MB pass phrase" "longer than 4096 bytes" \
  bash -c "'$KITE' proxy init --pwstdin -q < '$T/huge'"
expect_fail "empty stdin" "it is empty" bash -c "'$KITE' proxy init --pwstdin -q < /dev/null"
# A FIFO named as the proxy is refused at once, not waited on.
mkfifo "$T/fifo"
expect_fail "proxy file is a FIFO" "not a regular file" timeout 10 "$KITE" proxy info -f "$T/fifo"
