//! `trusted_root.json` (Sigstore TrustedRoot, media type
//! `application/vnd.dev.sigstore.trustedroot+json;version=0.1`) for the own
//! CA, Rekor and CT log, each with a validity window.

use super::b64;
use super::ca::{CtLog, Fulcio, Window};
use super::keys::KeyPair;
use super::rekor::Rekor;
use serde_json::{json, Value};

/// `validFor`: a start and an optional end.
#[derive(Clone, Copy, Debug)]
pub struct ValidFor {
    pub start: i64,
    pub end: Option<i64>,
}

impl From<Window> for ValidFor {
    fn from(w: Window) -> Self {
        ValidFor {
            start: w.not_before,
            end: Some(w.not_after),
        }
    }
}

impl ValidFor {
    pub fn since(start: i64) -> ValidFor {
        ValidFor { start, end: None }
    }

    fn json(&self) -> Value {
        let mut v = json!({"start": super::rfc3339(self.start)});
        if let Some(end) = self.end {
            v["end"] = Value::String(super::rfc3339(end));
        }
        v
    }
}

/// A TrustedRoot under construction.
#[derive(Clone, Debug, Default)]
pub struct TrustedRoot {
    cas: Vec<Value>,
    tlogs: Vec<Value>,
    ctlogs: Vec<Value>,
}

fn log_json(key: &KeyPair, base_url: &str, valid: ValidFor) -> Value {
    json!({
        "baseUrl": base_url,
        "hashAlgorithm": "SHA2_256",
        "publicKey": {
            "rawBytes": b64(key.spki_der()),
            "keyDetails": key.key_details(),
            "validFor": valid.json(),
        },
        "logId": {"keyId": b64(key.key_id())},
    })
}

impl TrustedRoot {
    pub fn new() -> TrustedRoot {
        TrustedRoot::default()
    }

    /// The CA, trusted for its certificates' window.
    pub fn fulcio(self, ca: &Fulcio) -> TrustedRoot {
        self.fulcio_valid(ca, ca.window.into())
    }

    pub fn fulcio_valid(mut self, ca: &Fulcio, valid: ValidFor) -> TrustedRoot {
        self.cas.push(json!({
            "subject": {"organization": "ivpol.test", "commonName": "ivpol-fulcio"},
            "uri": ca.uri,
            "certChain": {"certificates": [
                {"rawBytes": b64(&ca.intermediate.der)},
                {"rawBytes": b64(&ca.root.der)},
            ]},
            "validFor": valid.json(),
        }));
        self
    }

    /// The Rekor key, valid from the CA window's start, open-ended.
    pub fn rekor(self, rekor: &Rekor) -> TrustedRoot {
        self.rekor_valid(rekor, ValidFor::since(super::ca::CA_WINDOW.not_before))
    }

    pub fn rekor_valid(mut self, rekor: &Rekor, valid: ValidFor) -> TrustedRoot {
        self.tlogs
            .push(log_json(&rekor.key, &rekor.base_url, valid));
        self
    }

    pub fn ctlog(self, log: &CtLog) -> TrustedRoot {
        self.ctlog_valid(log, ValidFor::since(super::ca::CA_WINDOW.not_before))
    }

    pub fn ctlog_valid(mut self, log: &CtLog, valid: ValidFor) -> TrustedRoot {
        self.ctlogs.push(log_json(&log.key, &log.base_url, valid));
        self
    }

    /// CA + Rekor + CT log, default windows.
    pub fn of(ca: &Fulcio, rekor: &Rekor, ct: &CtLog) -> TrustedRoot {
        TrustedRoot::new().fulcio(ca).rekor(rekor).ctlog(ct)
    }

    pub fn to_json(&self) -> Value {
        json!({
            "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
            "tlogs": self.tlogs,
            "certificateAuthorities": self.cas,
            "ctlogs": self.ctlogs,
            "timestampAuthorities": [],
        })
    }

    pub fn to_string_pretty(&self) -> String {
        serde_json::to_string_pretty(&self.to_json()).expect("json")
    }
}
