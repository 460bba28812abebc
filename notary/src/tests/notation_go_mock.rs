//! Notary envelopes from `notation-go/internal/mock/testdata`.

use super::*;

#[test]
fn ca_valid_sig_env() {
    let env = mock("ca_valid_sig_env.json");
    let v = ok(&env, MEDIA_TYPE_JWS, &mock_target(), &ca(&[NOTATION_ROOT]));
    assert_eq!(v.chain.len(), 2);
    assert_eq!(v.signing_time, None);
    assert_eq!(v.payload["targetArtifact"]["size"], 528);
    // trustStores=[ca:valid-trust-store-2]
    fails(
        &env,
        MEDIA_TYPE_JWS,
        &mock_target(),
        &ca(&[GLOBALSIGN_ROOT_R3]),
        "the signature's certificate chain does not contain any trusted certificate",
    );
}

#[test]
fn ca_invalid_sig_env() {
    fails(
        &mock("ca_invalid_sig_env.json"),
        MEDIA_TYPE_JWS,
        &mock_target(),
        &ca(&[NOTATION_ROOT]),
        "signature is invalid. Error: illegal base64 data at input byte 242",
    );
}

#[test]
fn ca_expired_sig_env() {
    fails(
        &mock("ca_expired_sig_env.json"),
        MEDIA_TYPE_JWS,
        &mock_target(),
        &ca(&[NOTATION_ROOT]),
        "digital signature has expired on \"Fri, 29 Jul 2022 23:59:00 +0000\"",
    );
}

fn sa_trust() -> Trust {
    Trust {
        signing_authority_roots: certs(SA_ROOT),
        ..Trust::default()
    }
}

#[test]
fn sa_sig_envs() {
    let v = ok(
        &mock("sa_valid_sig_env.json"),
        MEDIA_TYPE_JWS,
        &mock_target(),
        &sa_trust(),
    );
    assert_eq!(v.signing_time, parse_rfc3339("2020-11-09T07:00:00Z"));
    fails(
        &mock("sa_invalid_sig_env.json"),
        MEDIA_TYPE_JWS,
        &mock_target(),
        &sa_trust(),
        "signature is invalid. Error: illegal base64 data at input byte 242",
    );
    fails(
        &mock("sa_expired_sig_env.json"),
        MEDIA_TYPE_JWS,
        &mock_target(),
        &sa_trust(),
        "digital signature has expired on \"Fri, 29 Jul 2022 23:59:00 +0000\"",
    );
    // Kyverno's policy has only a `ca` trust store: a signingAuthority
    // signature has nothing to be trusted by, even with the same root.
    fails(
        &mock("sa_valid_sig_env.json"),
        MEDIA_TYPE_JWS,
        &mock_target(),
        &ca(&[NOTATION_ROOT]),
        "no trusted certificates are found to verify authenticity",
    );
}

#[test]
fn plugin_sig_envs() {
    let want = "error while locating the verification plugin \"plugin-name\", make sure the plugin is installed successfully before verifying the signature. error: plugin not found";
    fails(
        &mock("ca_plugin_sig_env.json"),
        MEDIA_TYPE_JWS,
        &mock_target(),
        &ca(&[NOTATION_ROOT]),
        want,
    );
    fails(
        &mock("sa_plugin_sig_env.json"),
        MEDIA_TYPE_JWS,
        &mock_target(),
        &sa_trust(),
        want,
    );
}

#[test]
fn plugin_version_sig_envs() {
    // Upstream installs a mock plugin at version 1.0.0; without plugin
    // support every one fails at locating the plugin.
    let want =
        "error while locating the verification plugin \"io.cncf.notary.plugin.unittest.mock\"";
    for v in [
        "ca_incompatible_pluginver_sig_env_1.0.9.json",
        "ca_incompatible_pluginver_sig_env_1.0.1.json",
        "ca_incompatible_pluginver_sig_env_1.2.3.json",
        "ca_incompatible_pluginver_sig_env_1.1.0-alpha.json",
        "ca_compatible_pluginver_sig_env_0.0.9.json",
        "ca_compatible_pluginver_sig_env_1.0.0-alpha.json",
        "ca_compatible_pluginver_sig_env_1.0.0-alpha.beta.json",
        "ca_compatible_pluginver_sig_env_1.0.0.json",
    ] {
        fails(
            &mock(v),
            MEDIA_TYPE_JWS,
            &wabbit_target(),
            &ca(&[WABBIT]),
            want,
        );
    }
}

#[test]
fn sig_env_with_metadata() {
    // Upstream runs it at audit level; under strict the self-signed leaf
    // (2023-01-11..2023-01-12) is both unknown to the trust store and expired.
    let env = mock("sig_env_with_metadata.json");
    let t = target(
        "sha256:5a07385af4e6b6af81b0ebfd435aedccdfa3507f0609c658209e1aba57159b2b",
        DOCKER_V2,
        942,
    );
    fails(
        &env,
        MEDIA_TYPE_JWS,
        &t,
        &ca(&[NOTATION_ROOT]),
        "the signature's certificate chain does not contain any trusted certificate",
    );
    let own = Trust {
        roots: own_root(&env, MEDIA_TYPE_JWS),
        ..Trust::default()
    };
    fails(
        &env,
        MEDIA_TYPE_JWS,
        &t,
        &own,
        "verification time is after certificate",
    );
}
