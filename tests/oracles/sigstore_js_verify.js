// Offline Sigstore bundle verification with sigstore-js (@sigstore/verify),
// an oracle for the fixture cross-checks; it also verifies public-key
// bundles, which sigstore-python does not.
//
// usage: node sigstore_js_verify.js TRUSTED_ROOT BUNDLE (--artifact FILE | --dsse)
//          (--key HINT SPKI_PEM_FILE | --identity SAN --issuer ISSUER)
// NODE_PATH must name the node_modules holding @sigstore/verify.
// Prints `OK` and exits 0 when the bundle verifies, else `FAIL <reason>` and 1.

'use strict';
const fs = require('fs');
const crypto = require('crypto');
const { Verifier, toSignedEntity, toTrustMaterial } = require('@sigstore/verify');
const { bundleFromJSON } = require('@sigstore/bundle');
const { TrustedRoot } = require('@sigstore/protobuf-specs');

function arg(name) {
  const i = process.argv.indexOf(name);
  return i < 0 ? undefined : process.argv.slice(i + 1, i + 3);
}

try {
  const [rootPath, bundlePath] = process.argv.slice(2, 4);
  const root = TrustedRoot.fromJSON(JSON.parse(fs.readFileSync(rootPath, 'utf8')));
  const bundle = bundleFromJSON(JSON.parse(fs.readFileSync(bundlePath, 'utf8')));
  const artifact = arg('--artifact') ? fs.readFileSync(arg('--artifact')[0]) : undefined;
  const key = arg('--key');
  const keys = {};
  if (key) {
    const spki = crypto.createPublicKey(fs.readFileSync(key[1], 'utf8')).export({ type: 'spki', format: 'der' });
    keys[key[0]] = { rawBytes: spki };
  }
  const verifier = new Verifier(toTrustMaterial(root, keys), key ? { ctlogThreshold: 0 } : {});
  const identity = arg('--identity');
  const issuer = arg('--issuer');
  const policy = identity ? { subjectAlternativeName: identity[0], extensions: { issuer: issuer[0] } } : undefined;
  verifier.verify(toSignedEntity(bundle, artifact), policy);
  console.log('OK');
} catch (e) {
  console.log(`FAIL ${e.code || e.name}: ${e.message}`);
  process.exit(1);
}
