//! `azurekms://VAULT/KEY[/VERSION]`: a Key Vault key's public half, as
//! sigstore's Azure signer reads it: `GET https://VAULT/keys/KEY[/VERSION]`
//! with an Entra ID token for the vault's cloud, answering a JWK (EC or
//! RSA), which becomes PEM here.
//!
//! VAULT must be a Key Vault or Managed HSM host of one of Azure's clouds:
//! the host sends its Entra token there, so a policy cannot name a server
//! of its own choosing to receive it.

use crate::net::cloud;
use crate::net::entra::Entra;
use base64::Engine;
use der::asn1::{BitString, ObjectIdentifier, UintRef};
use der::{Any, Encode, Sequence};

/// The Key Vault API version asked for (keys' JWKs are stable across them).
const API_VERSION: &str = "7.4";

/// Each cloud's vault suffix and the scope of its tokens.
const VAULTS: [(&str, &str); 6] = [
    (".vault.azure.net", "https://vault.azure.net/.default"),
    (".vault.azure.cn", "https://vault.azure.cn/.default"),
    (
        ".vault.usgovcloudapi.net",
        "https://vault.usgovcloudapi.net/.default",
    ),
    (
        ".vault.microsoftazure.de",
        "https://vault.microsoftazure.de/.default",
    ),
    (
        ".managedhsm.azure.net",
        "https://managedhsm.azure.net/.default",
    ),
    (
        ".managedhsm.azure.cn",
        "https://managedhsm.azure.cn/.default",
    ),
];

pub(super) async fn public_key(
    entra: &Entra,
    client: &reqwest::Client,
    rest: &str,
) -> Result<String, String> {
    let key = KeyRef::parse(rest)?;
    let token = entra.token(key.scope).await?;
    let url = format!(
        "https://{}/keys/{}?api-version={API_VERSION}",
        key.vault, key.path
    );
    let what = format!("Key Vault {}", key.vault);
    let doc = cloud::json(client.get(&url).bearer_auth(&token.token), &what).await?;
    if doc["attributes"]["enabled"] == false {
        return Err(format!("{what}: key {} is disabled", key.path));
    }
    let der = spki_of_jwk(&doc["key"]).map_err(|why| format!("{what}: key {}: {why}", key.path))?;
    Ok(super::spki_pem(&der))
}

/// A key named by `azurekms://`.
#[derive(Debug, PartialEq)]
struct KeyRef<'a> {
    /// `host[:port]`.
    vault: &'a str,
    /// `KEY` or `KEY/VERSION`.
    path: &'a str,
    scope: &'static str,
}

impl<'a> KeyRef<'a> {
    fn parse(rest: &'a str) -> Result<KeyRef<'a>, String> {
        let usage = "azurekms://VAULT.vault.azure.net/KEY[/VERSION]";
        let (vault, path) = rest.split_once('/').ok_or(usage)?;
        let segments: Vec<&str> = path.split('/').collect();
        let name_ok =
            |s: &&str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
        if segments.len() > 2 || !segments.iter().all(name_ok) {
            return Err(format!("{path:?} is not KEY[/VERSION] ({usage})"));
        }
        let host = vault
            .split(':')
            .next()
            .unwrap_or(vault)
            .to_ascii_lowercase();
        let scope = VAULTS
            .iter()
            .find(|(suffix, _)| {
                host.strip_suffix(suffix)
                    .is_some_and(|n| !n.is_empty() && !n.contains('.'))
            })
            .map(|(_, scope)| *scope)
            .ok_or_else(|| {
                format!("{vault} is not a Key Vault or Managed HSM host of an Azure cloud")
            })?;
        Ok(KeyRef { vault, path, scope })
    }
}

/// `SEQUENCE { modulus INTEGER, publicExponent INTEGER }` (RFC 8017).
#[derive(Sequence)]
struct RsaPublicKey<'a> {
    modulus: UintRef<'a>,
    public_exponent: UintRef<'a>,
}

/// `SEQUENCE { algorithm AlgorithmIdentifier, subjectPublicKey BIT STRING }`.
#[derive(Sequence)]
struct Spki {
    algorithm: AlgorithmIdentifier,
    subject_public_key: BitString,
}

#[derive(Sequence)]
struct AlgorithmIdentifier {
    algorithm: ObjectIdentifier,
    parameters: Any,
}

const EC_PUBLIC_KEY: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");
const RSA_ENCRYPTION: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");

/// The DER SubjectPublicKeyInfo of an EC (P-256, P-384, P-521) or RSA JWK.
fn spki_of_jwk(jwk: &serde_json::Value) -> Result<Vec<u8>, String> {
    let field = |name: &str| -> Result<Vec<u8>, String> {
        let text = jwk[name]
            .as_str()
            .ok_or_else(|| format!("the JWK has no {name}"))?;
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(text.trim_end_matches('='))
            .map_err(|_| format!("the JWK's {name} is not base64url"))
    };
    let kty = jwk["kty"].as_str().unwrap_or_default();
    let der_error = |e: der::Error| e.to_string();
    let spki = match kty.trim_end_matches("-HSM") {
        "EC" => {
            let (curve, size) = match jwk["crv"].as_str().unwrap_or_default() {
                "P-256" => ("1.2.840.10045.3.1.7", 32),
                "P-384" => ("1.3.132.0.34", 48),
                "P-521" => ("1.3.132.0.35", 66),
                other => return Err(format!("curve {other:?} is not one cosign verifies")),
            };
            let (x, y) = (field("x")?, field("y")?);
            if x.len() != size || y.len() != size {
                return Err("the JWK's point has the wrong size for its curve".into());
            }
            let point = [&[4u8][..], &x, &y].concat();
            let curve = ObjectIdentifier::new(curve).map_err(|e| e.to_string())?;
            Spki {
                algorithm: AlgorithmIdentifier {
                    algorithm: EC_PUBLIC_KEY,
                    parameters: Any::encode_from(&curve).map_err(der_error)?,
                },
                subject_public_key: BitString::from_bytes(&point).map_err(der_error)?,
            }
        }
        "RSA" => {
            let (n, e) = (field("n")?, field("e")?);
            let key = RsaPublicKey {
                modulus: UintRef::new(&n).map_err(der_error)?,
                public_exponent: UintRef::new(&e).map_err(der_error)?,
            };
            Spki {
                algorithm: AlgorithmIdentifier {
                    algorithm: RSA_ENCRYPTION,
                    parameters: Any::null(),
                },
                subject_public_key: BitString::from_bytes(&key.to_der().map_err(der_error)?)
                    .map_err(der_error)?,
            }
        }
        other => return Err(format!("key type {other:?} is not EC or RSA")),
    };
    spki.to_der().map_err(der_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_azures_vault_hosts_receive_its_token() {
        let key = KeyRef::parse("team.vault.azure.net/cosign").expect("key");
        assert_eq!(key.scope, "https://vault.azure.net/.default");
        assert_eq!(key.path, "cosign");
        let versioned = KeyRef::parse("team.vault.azure.net:8443/cosign/0a1b2c").expect("v");
        assert_eq!(
            (versioned.vault, versioned.path),
            ("team.vault.azure.net:8443", "cosign/0a1b2c")
        );
        assert!(KeyRef::parse("hsm.managedhsm.azure.net/k").is_ok());
        assert!(KeyRef::parse("cn.vault.azure.cn/k").is_ok());
        for (bad, why) in [
            (
                "evil.example/cosign",
                "is not a Key Vault or Managed HSM host",
            ),
            (
                "team.vault.azure.net.evil.example/cosign",
                "is not a Key Vault or Managed HSM host",
            ),
            (
                "vault.azure.net/cosign",
                "is not a Key Vault or Managed HSM host",
            ),
            (
                "a.b.vault.azure.net/cosign",
                "is not a Key Vault or Managed HSM host",
            ),
            ("team.vault.azure.net/", "is not KEY[/VERSION]"),
            ("team.vault.azure.net/a/b/c", "is not KEY[/VERSION]"),
            ("team.vault.azure.net/../keys", "is not KEY[/VERSION]"),
            (
                "team.vault.azure.net",
                "azurekms://VAULT.vault.azure.net/KEY[/VERSION]",
            ),
        ] {
            let e = KeyRef::parse(bad).expect_err(bad).to_string();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
    }

    /// A P-256 key and a 1024-bit RSA key (small only to keep the vector
    /// short), each as Key Vault's JWK and as `openssl pkey -pubout` wrote it.
    #[test]
    fn jwks_become_the_keys_openssl_writes() {
        let ec = serde_json::json!({"kty": "EC-HSM", "crv": "P-256",
            "x": "9PmPu_EgHaQ7HbLfOJcdDsHTISbAgwlmvB0g8rkHKiA",
            "y": "iqHrxU0Hql1bS62HfnGIEG3mEU9y-oyn-VbOlcHCaEE"});
        assert_eq!(
            super::super::spki_pem(&spki_of_jwk(&ec).expect("ec")),
            EC_PEM
        );
        let rsa = serde_json::json!({"kty": "RSA", "e": "AQAB", "n": RSA_N});
        assert_eq!(
            super::super::spki_pem(&spki_of_jwk(&rsa).expect("rsa")),
            RSA_PEM
        );
        let short = serde_json::json!({"kty": "EC", "crv": "P-384", "x": "AAAA", "y": "AAAA"});
        assert!(spki_of_jwk(&short).expect_err("size").contains("size"));
        let k1 = serde_json::json!({"kty": "EC", "crv": "P-256K", "x": "", "y": ""});
        let e = spki_of_jwk(&k1).expect_err("refused").to_string();
        assert!(e.contains("is not one cosign verifies"), "{e}");
        let e = spki_of_jwk(&serde_json::json!({"kty": "oct"}))
            .expect_err("refused")
            .to_string();
        assert!(e.contains("is not EC or RSA"), "{e}");
    }

    const EC_PEM: &str = "-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE9PmPu/EgHaQ7HbLfOJcdDsHTISbA
gwlmvB0g8rkHKiCKoevFTQeqXVtLrYd+cYgQbeYRT3L6jKf5Vs6VwcJoQQ==
-----END PUBLIC KEY-----
";
    const RSA_N: &str = "pN8gx6To-HiWhBZrk5QwfP7qQ27P0WxpAqY9Vsg5YeM_AjS4yAw9ZTQOZ-K1pImD2rGTsB_sfOSRvluisMo6Th07aRxQviqp8MIWDhgpBe31rv0XA8nCRTtDdRi7W9qDqICOi689d4ZD9PlYTWIPIY6N4dAgu1VARXYMawyC9gs";
    const RSA_PEM: &str = "-----BEGIN PUBLIC KEY-----
MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQCk3yDHpOj4eJaEFmuTlDB8/upD
bs/RbGkCpj1WyDlh4z8CNLjIDD1lNA5n4rWkiYPasZOwH+x85JG+W6KwyjpOHTtp
HFC+KqnwwhYOGCkF7fWu/RcDycJFO0N1GLtb2oOogI6Lrz13hkP0+VhNYg8hjo3h
0CC7VUBFdgxrDIL2CwIDAQAB
-----END PUBLIC KEY-----
";
}
