#!/usr/bin/env python3
"""Writes the committed seed corpus (fuzz/corpus/<target>/) from the
repository's real inputs: conformance/ (Sigstore bundles, cosign layers,
Notary envelopes, Kyverno policies), policies/ and tests/examples/. The
only generated seeds are a small signed TUF repository (ed25519, needs the
`cryptography` package) and AdmissionReviews wrapped around vendored Kyverno
resources. Re-run from the repository root: `python3 fuzz/seeds.py`.
Seeds are named by the SHA-1 of their content, as libFuzzer names inputs."""

import base64
import glob
import hashlib
import json
import os
import re
import shutil

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")
SIG = "conformance/sigstore/"
COSIGN = "conformance/cosign/derived/"
NOTARY = "conformance/notary/"
LAYOUT = NOTARY + "notation/test/e2e/testdata/registry/oci_layout/"


def read(path):
    with open(os.path.join(ROOT, path), "rb") as f:
        return f.read()


seeds = {}


def seed(target, data):
    if isinstance(data, str):
        data = data.encode()
    seeds.setdefault(target, []).append(data)


def join(*parts):
    return b"\0".join(p.encode() if isinstance(p, str) else p for p in parts)


def b64d(s):
    s = s.replace("-", "+").replace("_", "/")
    return base64.b64decode(s + "=" * (-len(s) % 4))


# ---- AdmissionReview: host envelope and the component's request ----
review = json.loads(read("tests/examples/pod-review.json"))
reviews = [review]
for path in [
    "conformance/kyverno/test/conformance/chainsaw/image-validating-policies/validation-rules/accept/deployment.yaml",
    "conformance/kyverno/test/cli/test-image-validating-policy/sample-policy/good-pod.yaml",
]:
    obj = next(d for d in yaml.safe_load_all(read(path)) if d)
    kind = obj["kind"]
    group, version = ("apps", "v1") if kind == "Deployment" else ("", "v1")
    resource = kind.lower() + "s"
    meta = obj.get("metadata", {})
    for op in ["CREATE", "UPDATE", "DELETE"]:
        req = {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "kind": {"group": group, "version": version, "kind": kind},
            "resource": {"group": group, "version": version, "resource": resource},
            "requestKind": {"group": group, "version": version, "kind": kind},
            "requestResource": {"group": group, "version": version, "resource": resource},
            "name": meta.get("name", ""),
            "namespace": meta.get("namespace", "default"),
            "operation": op,
            "userInfo": {"username": "admin", "groups": ["system:authenticated"]},
            "dryRun": False,
        }
        if op != "DELETE":
            req["object"] = obj
        if op != "CREATE":
            req["oldObject"] = obj
        reviews.append({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req})
pod = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "mixed", "namespace": "default", "labels": {"prod": "true"}},
    "spec": {
        "initContainers": [{"name": "i", "image": "registry.example.com/init@sha256:" + "a" * 64}],
        "containers": [{"name": "a", "image": "ghcr.io/kyverno/test-verify-image:signed"},
                       {"name": "b", "image": "127.0.0.1:5000/app:latest"}],
        "ephemeralContainers": [{"name": "e", "image": "registry.k8s.io/pause:3.9"}],
    },
}
reviews.append({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
    "uid": "u-2", "operation": "CREATE", "namespace": "default", "name": "mixed",
    "kind": {"group": "", "version": "v1", "kind": "Pod"},
    "resource": {"group": "", "version": "v1", "resource": "pods"},
    "object": pod}})
for r in reviews:
    text = json.dumps(r)
    seed("host_envelope", text)
    seed("admission_request", json.dumps(r["request"]))
    seed("engine_admit", json.dumps(r["request"]))
# A truncated body and one with the uid after a large object.
seed("host_envelope", json.dumps(reviews[1])[:400])
seed("host_envelope", '{"request":{"object":{"s":"]}\\"{"},"uid":"u"},"kind":"AdmissionReview"}')

# ---- policies ----
policy_files = sorted(glob.glob(os.path.join(ROOT, "policies", "*.yaml")))
policy_files += sorted(glob.glob(os.path.join(ROOT, "tests/examples/*/*.yaml")))
policy_files += [
    os.path.join(ROOT, p)
    for p in [
        "conformance/kyverno/test/cli/test-image-validating-policy/sample-policy/policy.yaml",
        "conformance/kyverno/test/cli/test-image-validating-policy/with-cel-exceptions/policy.yaml",
        "conformance/kyverno/test/cli/test-image-validating-policy/with-cel-exceptions/exception.yaml",
        "conformance/kyverno/test/conformance/chainsaw/image-validating-policies/validation-rules/reject/policy.yaml",
    ]
]
for p in policy_files:
    text = open(p, "rb").read()
    seed("policy_load", text)
docs = [d for d in yaml.safe_load_all(read("policies/verify-cosign-keyless.yaml")) if d]
seed("policy_load", json.dumps(docs[0], indent=1))

# ---- image references and globs ----
refs = [
    "nginx",
    "nginx:1.27",
    "docker.io/library/nginx:latest",
    "ghcr.io/kyverno/test-verify-image:signed",
    "127.0.0.1:5000/app:v1",
    "registry.example.com:8443/team/app@sha256:" + "a" * 64,
    "localhost/app:v1@sha256:" + "0123456789abcdef" * 4,
    "[::1]:5000/ns/img:tag",
    "UPPER/case",
]
for r in refs:
    seed("image_reference", r)
for pat, subject in [
    ("ghcr.io/*", "ghcr.io/kyverno/test-verify-image:signed"),
    ("*", "nginx"),
    ("docker.io/{library,team}/*:v?", "docker.io/library/nginx:v1"),
    ("[a-z]*.io/**", "ghcr.io/a/b"),
    ("[!0-9]??/{a,{b,c}}*", "abc/cde"),
    ("registry.k8s.io/\\*", "registry.k8s.io/*"),
]:
    seed("image_glob", join(pat, subject))

# ---- OCI manifests and indexes (notation e2e layout: image, referrers, signature) ----
def blob(case, prefix):
    (path,) = glob.glob(os.path.join(ROOT, LAYOUT, case, "blobs/sha256", prefix + "*"))
    return open(path, "rb").read()


image = blob("e2e-valid-signature", "b8479de3")
sig_manifest = blob("e2e-valid-signature", "90ceaff2")
sig_digest = "sha256:" + hashlib.sha256(sig_manifest).hexdigest()
referrers = json.dumps(
    {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [
            {
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": sig_digest,
                "size": len(sig_manifest),
                "artifactType": "application/vnd.cncf.notary.signature",
            }
        ],
    }
)
seed(
    "oci_manifest",
    join(image, referrers, sig_manifest, blob("e2e-valid-signature", "44136fa3"),
         blob("e2e-valid-signature", "6de5fe1f"), blob("e2e-valid-signature", "c9af07e0")),
)
seed("oci_manifest", join(blob("e2e-valid-multiple-signatures", "13e107e0"), referrers, image))
seed("oci_manifest", join(read(LAYOUT + "e2e-valid-signature/index.json"), "@/v2/team/app/manifests/other"))
seed("oci_manifest", join(read(COSIGN + "dir-img-cosign-fulcio-rekor-valid/image-manifest.json")))
docker_list = json.dumps(
    {
        "schemaVersion": 2,
        "mediaType": "application/vnd.docker.distribution.manifest.list.v2+json",
        "manifests": [
            {"mediaType": "application/vnd.oci.image.manifest.v1+json",
             "digest": "sha256:" + hashlib.sha256(image).hexdigest(), "size": len(image),
             "platform": {"os": "linux", "architecture": "amd64"}},
        ],
    }
)
seed("oci_manifest", join(docker_list, "", image))

# ---- Sigstore bundles ----
bundle_cases = [
    "happy-path-v0.1", "happy-path-v0.2", "happy-path-v0.3", "happy-path-v0.3-new-mediaType",
    "happy-path-intoto-in-dsse-v3", "managed-key-happy-path", "rekor2-happy-path",
    "rekor2-dsse-happy-path", "rekor2-timestamp-with-embedded-cert",
    "rekor2-checkpoint-cosigned", "bundle-with-sct-with-extensions", "intoto-with-custom-trust-root",
    "bundle-invalid-base64-signature_fail", "invalid-inclusion-proof_fail",
]
bundles = {c: read(SIG + c + "/bundle.sigstore.json") for c in bundle_cases}
for c, b in bundles.items():
    seed("sigstore_bundle", b)

# ---- DSSE envelopes (from the DSSE bundles) ----
for c in ["happy-path-intoto-in-dsse-v3", "rekor2-dsse-happy-path", "intoto-with-custom-trust-root"]:
    b = json.loads(bundles[c])
    env = b.get("dsseEnvelope")
    if not env:
        continue
    statement = json.loads(b64d(env["payload"]))
    digest = "sha256:" + statement["subject"][0]["digest"]["sha256"]
    seed("dsse_envelope", join(json.dumps(env), digest))
    seed("dsse_envelope", json.dumps(env, indent=2))

# ---- cosign .sig layers ----
for case in sorted(os.listdir(os.path.join(ROOT, COSIGN))):
    d = COSIGN + case + "/"
    opt = lambda name: read(d + name) if os.path.exists(os.path.join(ROOT, d + name)) else b""
    seed("cosign_layer", join(read(d + "simplesigning-layer.json"), opt("signature.b64").strip(),
                              opt("cert.pem"), opt("chain.pem"), opt("rekor-bundle.json")))

# ---- Notary envelopes ----
jws_files = [
    NOTARY + "notation-go/internal/testdata/jws_signature.sig",
    NOTARY + "notation-go/verifier/testdata/timestamp/sigEnv/jwsWithTimestamp.sig",
    NOTARY + "notation-go/verifier/testdata/timestamp/sigEnv/withoutTimestamp.sig",
    NOTARY + "notation/test/e2e/testdata/signatures/malformed.jws.sig",
]
jws = [read(p) for p in jws_files] + [blob("e2e-valid-signature", "c9af07e0"),
                                      blob("e2e-expired-signature", "b5f92756")]
for j in jws:
    seed("notary_jws", j)
cose_files = [
    NOTARY + "notation-go/internal/testdata/cose_signature.sig",
    NOTARY + "notation-go/verifier/testdata/timestamp/sigEnv/coseWithTimestamp.sig",
    NOTARY + "notation-go/verifier/testdata/timestamp/sigEnv/coseExpiredWithTimestamp.sig",
]
for p in cose_files:
    seed("notary_cose", read(p))

# ---- X.509 chains ----
for case in ["dir-img-cosign-fulcio-rekor-valid", "dir-img-cosign-pki-valid"]:
    seed("x509_chain", read(COSIGN + case + "/cert.pem") + read(COSIGN + case + "/chain.pem"))
for p in [
    NOTARY + "notation-core-go/x509/testdata/multi-der.der",
    NOTARY + "notation-core-go/x509/testdata/multi-pem.crt",
    NOTARY + "notation/test/e2e/testdata/config/timestamp/CertChain.pem",
    NOTARY + "notation/test/e2e/testdata/config/crl/certchain_with_crl.pem",
]:
    seed("x509_chain", read(p))
for j in jws[:2]:
    header = json.loads(j)["header"]
    seed("x509_chain", b"".join(base64.b64decode(c) for c in header["x5c"]))
for c in ["happy-path-v0.3", "bundle-with-sct-with-extensions", "happy-path-v0.1"]:
    vm = json.loads(bundles[c])["verificationMaterial"]
    if "certificate" in vm:
        certs = [vm["certificate"]["rawBytes"]]
    else:
        certs = [x["rawBytes"] for x in vm["x509CertificateChain"]["certificates"]]
    seed("x509_chain", b"".join(base64.b64decode(x) for x in certs))

# ---- RFC 3161 timestamps: DER token or response, then the signature ----
for c in ["rekor2-timestamp-with-embedded-cert", "rekor2-happy-path", "rekor2-dsse-happy-path"]:
    b = json.loads(bundles[c])
    ts = b["verificationMaterial"].get("timestampVerificationData", {}).get("rfc3161Timestamps", [])
    if "messageSignature" in b:
        sig = base64.b64decode(b["messageSignature"]["signature"])
    else:
        sig = base64.b64decode(b["dsseEnvelope"]["signatures"][0]["sig"])
    for t in ts:
        seed("rfc3161_timestamp", base64.b64decode(t["signedTimestamp"]) + sig)
j = json.loads(jws[1])
seed("rfc3161_timestamp", b64d(j["header"]["io.cncf.notary.timestampSignature"]) + b64d(j["signature"]))
seed("rfc3161_timestamp", read(NOTARY + "notation-core-go/internal/timestamp/testdata/TimeStampTokenWithInvalidSignature.p7s"))

# ---- TUF: the real Sigstore root, and a small signed repository ----
seed("tuf_metadata", read(SIG + "_tuf-root.sigstore.dev.json"))
try:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives import serialization

    def canonical(v):
        return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()

    sk = Ed25519PrivateKey.from_private_bytes(bytes([7] * 32))
    pk = sk.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    key = {"keytype": "ed25519", "scheme": "ed25519", "keyval": {"public": pk.hex()}}
    kid = hashlib.sha256(canonical(key)).hexdigest()
    role = {"keyids": [kid], "threshold": 1}
    expires = "2100-01-01T00:00:00Z"

    def sign(signed):
        sig = sk.sign(canonical(signed)).hex()
        return json.dumps({"signed": signed, "signatures": [{"keyid": kid, "sig": sig}]}, indent=1).encode()

    def root(version):
        return sign({"_type": "root", "spec_version": "1.0.31", "version": version, "expires": expires,
                     "consistent_snapshot": True, "keys": {kid: key},
                     "roles": {"root": role, "timestamp": role, "snapshot": role, "targets": role}})

    target = read(SIG + "trust-root-tsa-validity-end-inclusive/trusted_root.json") if os.path.exists(
        os.path.join(ROOT, SIG + "trust-root-tsa-validity-end-inclusive/trusted_root.json")) else b"{}"
    th = hashlib.sha256(target).hexdigest()
    targets = sign({"_type": "targets", "spec_version": "1.0.31", "version": 1, "expires": expires,
                    "targets": {"trusted_root.json": {"length": len(target), "hashes": {"sha256": th}}}})
    snapshot = sign({"_type": "snapshot", "spec_version": "1.0.31", "version": 1, "expires": expires,
                     "meta": {"targets.json": {"version": 1}}})
    timestamp = sign({"_type": "timestamp", "spec_version": "1.0.31", "version": 1, "expires": expires,
                      "meta": {"snapshot.json": {"version": 1}}})
    files = [("2.root.json", root(2)), ("timestamp.json", timestamp), ("1.snapshot.json", snapshot),
             ("1.targets.json", targets), ("targets/%s.trusted_root.json" % th, target)]
    seed("tuf_metadata", join(root(1), *[p.encode() + b"\n" + b for p, b in files]))
    seed("tuf_metadata", join(root(1), *[p.encode() + b"\n" + b for p, b in files[1:]]))
except ImportError:
    print("cryptography is not installed: no generated TUF repository seed")
seed("tuf_metadata", read(SIG + "_public-good-trusted_root.sigstore.dev.json"))

# ---- write ----
total = 0
for target, items in sorted(seeds.items()):
    d = os.path.join(CORPUS, target)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for data in items:
        with open(os.path.join(d, hashlib.sha1(data).hexdigest()), "wb") as f:
            f.write(data)
        total += len(data)
    print(f"{target}: {len(items)} seeds")
print(f"total {total} bytes")
