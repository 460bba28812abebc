#!/bin/sh
# Makes the files this overlay turns into the Secret `ivpol-tls`:
#   ca.crt, ca.key   a private CA, made on the first run only (keep ca.key
#                    safe; it never goes into the cluster)
#   tls.crt, tls.key ivpol's serving certificate for ivpol.ivpol.svc, signed
#                    by that CA, made anew on every run (DAYS, default 90)
# Then: kubectl apply --server-side -k deploy/overlays/self-signed
#
# Rotation: run this again before tls.crt expires, and apply again. The
# kubelet updates the mounted Secret and ivpol serves the new pair within
# seconds, without a restart. The CA is unchanged, so the webhooks'
# caBundle is too. To replace the CA itself: run with NEW_CA=1, which keeps
# the old CA in ca.crt beside the new one (the API server trusts both while
# the pods pick up the new certificate); once they serve it, run once more
# with DROP_OLD_CA=1 and apply.
set -eu
cd "$(dirname "$0")"
SERVICE=${SERVICE:-ivpol}
NAMESPACE=${NAMESPACE:-ivpol}
DAYS=${DAYS:-90}
umask 077

new_ca() {
  openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
    -keyout ca.key -out ca.only.crt -days 3650 -subj "/CN=ivpol-ca" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
}

if [ ! -f ca.key ]; then
  new_ca
  cp ca.only.crt ca.crt
elif [ "${NEW_CA:-}" = 1 ]; then
  cp ca.crt ca.old.crt
  new_ca
  cat ca.only.crt ca.old.crt > ca.crt
elif [ "${DROP_OLD_CA:-}" = 1 ]; then
  cp ca.only.crt ca.crt
  rm -f ca.old.crt
fi

openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
  -keyout tls.key -out tls.csr -subj "/CN=$SERVICE.$NAMESPACE.svc" 2>/dev/null
cat > tls.ext <<EXT
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=DNS:$SERVICE.$NAMESPACE.svc,DNS:$SERVICE.$NAMESPACE.svc.cluster.local
EXT
openssl x509 -req -in tls.csr -CA ca.only.crt -CAkey ca.key \
  -set_serial "0x$(openssl rand -hex 16)" -days "$DAYS" -extfile tls.ext \
  -out tls.crt 2>/dev/null
rm -f tls.csr tls.ext
chmod 600 ca.key tls.key
chmod 644 ca.crt ca.only.crt tls.crt
echo "tls.crt for $SERVICE.$NAMESPACE.svc, valid $DAYS days; ca.crt holds $(grep -c 'BEGIN CERTIFICATE' ca.crt) CA certificate(s)"
