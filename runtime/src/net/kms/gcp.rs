//! `gcpkms://projects/P/locations/L/keyRings/R/cryptoKeys/K[/cryptoKeyVersions/V]`:
//! a Cloud KMS key version's public key (`getPublicKey`), as sigstore's GCP
//! signer reads it. Without a version, the newest enabled one is used (as
//! sigstore does: asymmetric keys have no primary version). The token is
//! Application Default Credentials', as for `credentials.providers:
//! [google]`; `CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDKMS` (gcloud's own
//! setting) replaces the endpoint.

use crate::net::cloud;
use crate::net::providers::google;

const ENDPOINT: &str = "https://cloudkms.googleapis.com/";

pub(super) async fn public_key(client: &reqwest::Client, rest: &str) -> Result<String, String> {
    let key = KeyName::parse(rest)?;
    let token = google::access_token().await?;
    let base = std::env::var("CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDKMS")
        .ok()
        .filter(|e| !e.is_empty())
        .unwrap_or_else(|| ENDPOINT.to_string());
    let api = format!("{}/v1", base.trim_end_matches('/'));
    let get = |path: String| {
        let request = client.get(format!("{api}/{path}")).bearer_auth(&token);
        cloud::json(request, "Cloud KMS")
    };
    let version = match key.version {
        Some(v) => format!("{}/cryptoKeyVersions/{v}", key.key),
        None => {
            let listed = get(format!(
                "{}/cryptoKeyVersions?filter=state%3DENABLED&pageSize=1000",
                key.key
            ))
            .await?;
            newest_version(&listed).ok_or_else(|| format!("{} has no enabled version", key.key))?
        }
    };
    let answer = get(format!("{version}/publicKey")).await?;
    answer["pem"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("Cloud KMS: {version}: the answer holds no pem"))
}

/// A key named by `gcpkms://`.
#[derive(Debug, PartialEq)]
struct KeyName {
    /// `projects/P/locations/L/keyRings/R/cryptoKeys/K`.
    key: String,
    version: Option<String>,
}

impl KeyName {
    fn parse(rest: &str) -> Result<KeyName, String> {
        let usage = "gcpkms://projects/P/locations/L/keyRings/R/cryptoKeys/K[/cryptoKeyVersions/V]";
        let parts: Vec<&str> = rest.split('/').collect();
        let shape = [
            "projects",
            "",
            "locations",
            "",
            "keyRings",
            "",
            "cryptoKeys",
            "",
        ];
        let named = |s: &&str| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
                && *s != "."
                && *s != ".."
        };
        let fits = parts.len() >= shape.len()
            && shape.iter().zip(&parts).all(|(want, got)| {
                if want.is_empty() {
                    named(got)
                } else {
                    want == got
                }
            });
        let version = match &parts[shape.len().min(parts.len())..] {
            [] => None,
            ["cryptoKeyVersions" | "versions", v]
                if v.bytes().all(|b| b.is_ascii_digit()) && !v.is_empty() =>
            {
                Some(v.to_string())
            }
            _ => return Err(format!("{rest:?} is not {usage}")),
        };
        if !fits {
            return Err(format!("{rest:?} is not {usage}"));
        }
        Ok(KeyName {
            key: parts[..shape.len()].join("/"),
            version,
        })
    }
}

/// The highest-numbered version's name in a `cryptoKeyVersions.list` answer.
fn newest_version(listed: &serde_json::Value) -> Option<String> {
    let versions = listed["cryptoKeyVersions"].as_array()?;
    versions
        .iter()
        .filter(|v| v["state"] == "ENABLED")
        .filter_map(|v| v["name"].as_str())
        .filter_map(|name| {
            let number: u64 = name.rsplit('/').next()?.parse().ok()?;
            Some((number, name))
        })
        .max_by_key(|(number, _)| *number)
        .map(|(_, name)| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "projects/p/locations/global/keyRings/ring/cryptoKeys/cosign";

    #[test]
    fn key_names_with_and_without_a_version() {
        let plain = KeyName::parse(KEY).expect("key");
        assert_eq!((plain.key.as_str(), plain.version), (KEY, None));
        let v = KeyName::parse(&format!("{KEY}/cryptoKeyVersions/3")).expect("v");
        assert_eq!(v.version.as_deref(), Some("3"));
        let short = KeyName::parse(&format!("{KEY}/versions/4")).expect("short");
        assert_eq!(short.version.as_deref(), Some("4"));
        for (bad, why) in [
            (
                "projects/p/locations/global/keyRings/ring",
                "is not gcpkms://projects/P/locations/L/keyRings/R/cryptoKeys/K",
            ),
            (
                "projects/p/locations/global/keyRings/ring/cryptoKeys/",
                "is not gcpkms://projects/P/locations/L/keyRings/R/cryptoKeys/K",
            ),
            (
                "projects/../locations/global/keyRings/ring/cryptoKeys/k",
                "is not gcpkms://projects/P/locations/L/keyRings/R/cryptoKeys/K",
            ),
            (
                "projects/p/locations/global/keyRings/ring/cryptoKeys/k/cryptoKeyVersions/latest",
                "is not gcpkms://projects/P/locations/L/keyRings/R/cryptoKeys/K",
            ),
            (
                "projects/p/locations/global/keyRings/ring/cryptoKeys/k/x",
                "is not gcpkms://projects/P/locations/L/keyRings/R/cryptoKeys/K",
            ),
            (
                "keyRings/ring/cryptoKeys/k",
                "is not gcpkms://projects/P/locations/L/keyRings/R/cryptoKeys/K",
            ),
        ] {
            let e = KeyName::parse(bad).expect_err(bad).to_string();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
    }

    #[test]
    fn the_newest_enabled_version_is_used() {
        let listed = serde_json::json!({"cryptoKeyVersions": [
            {"name": format!("{KEY}/cryptoKeyVersions/2"), "state": "ENABLED"},
            {"name": format!("{KEY}/cryptoKeyVersions/10"), "state": "ENABLED"},
            {"name": format!("{KEY}/cryptoKeyVersions/11"), "state": "DISABLED"},
        ]});
        assert_eq!(
            newest_version(&listed),
            Some(format!("{KEY}/cryptoKeyVersions/10"))
        );
        assert_eq!(newest_version(&serde_json::json!({})), None);
    }
}
