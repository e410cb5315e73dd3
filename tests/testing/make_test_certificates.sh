#!/usr/bin/env bash
# Throwaway TLS material for tests and benchmarks, in DIR: a CA (ca.pem) and a
# server certificate it signed for 127.0.0.1, ::1 and localhost (server.pem,
# server.key), a client certificate (client.pem, client.key), the server key
# with a certificate that expired in 2020 (expired.pem), a second CA
# (other-ca.pem) and two token files (token, other-token). EC keys: made in
# milliseconds.
#   tests/testing/make_test_certificates.sh DIR
set -euo pipefail
cd "$1"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -out "$1"; }
key ca.key
openssl req -x509 -new -key ca.key -out ca.pem -days 30 -subj /CN=warp-test-ca
key other-ca.key
openssl req -x509 -new -key other-ca.key -out other-ca.pem -days 30 -subj /CN=warp-other-ca
key server.key
openssl req -new -key server.key -out server.csr -subj /CN=localhost
printf 'subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost\n' > san.ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem \
  -days 30 -extfile san.ext
key client.key
openssl req -new -key client.key -out client.csr -subj /CN=computed
openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out client.pem -days 30
# `openssl ca` is the one that takes explicit dates (openssl 3.0's x509 does not).
mkdir -p db && : > db/index.txt && echo 01 > db/serial
printf '[ca]\ndefault_ca = t\n[t]\ndatabase = db/index.txt\nserial = db/serial\n%s\n%s\n' \
  'new_certs_dir = db' 'default_md = sha256
policy = p
copy_extensions = copy
[p]
commonName = supplied' > ca.cnf
openssl ca -batch -notext -config ca.cnf -cert ca.pem -keyfile ca.key -in server.csr \
  -out expired.pem -startdate 20200101000000Z -enddate 20200102000000Z -extfile san.ext
echo 'warp-test-token-0123456789abcdef' > token
echo 'warp-other-token-fedcba9876543210' > other-token
chmod 600 token other-token
