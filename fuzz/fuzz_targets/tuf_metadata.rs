//! TUF metadata (`verify::tuf`): a trusted root and a mirror whose files
//! are the fuzz input, walked as Kyverno's `tuf` attestor option does
//! (root rotation, timestamp, snapshot, targets, the target's hashes) to
//! `trusted_root.json`, which is then parsed as a Sigstore trusted root.
//!
//! Input: NUL-separated documents. Document 0 is the trusted root; every
//! other one is `<path>\n<bytes>`, a file of the mirror (`2.root.json`,
//! `timestamp.json`, `1.snapshot.json`, `targets/<sha256>.trusted_root.json`).
#![no_main]

use std::cell::Cell;

use ivpol_fuzz::{split, NOW};
use ivpol_guest::tuf::{self, TufError};
use ivpol_guest::verify::trust::TrustMaterial;
use ivpol_guest::verify::Result;
use libfuzzer_sys::fuzz_target;

struct Mirror<'a> {
    files: Vec<(&'a [u8], &'a [u8])>,
    fetches: Cell<usize>,
}

impl tuf::Repository for Mirror<'_> {
    fn fetch(&self, path: &str, max: usize) -> Result<Option<Vec<u8>>> {
        self.fetches.set(self.fetches.get() + 1);
        if self.fetches.get() > 100 {
            return Err(TufError::Fetch {
                url: path.to_string(),
                detail: "too many fetches".to_string(),
            }
            .into());
        }
        match self.files.iter().find(|(p, _)| *p == path.as_bytes()) {
            Some((_, body)) if body.len() > max => Err(TufError::TooLarge {
                file: path.to_string(),
                size: body.len(),
                max,
            }
            .into()),
            Some((_, body)) => Ok(Some(body.to_vec())),
            None => Ok(None),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let docs = split(data, 16);
    let mirror = Mirror {
        files: docs[1..]
            .iter()
            .map(|d| match d.iter().position(|&b| b == b'\n') {
                Some(i) => (&d[..i], &d[i + 1..]),
                None => (*d, &[][..]),
            })
            .collect(),
        fetches: Cell::new(0),
    };
    if let Ok(text) = tuf::trusted_root(docs[0], &mirror, NOW) {
        let _ = TrustMaterial::from_trusted_root_json(&text);
    }
    let _ = tuf::target(docs[0], &mirror, "other.json", NOW);
    // The trusted root itself, as a policy's `trustedRoot` would be read.
    if let Ok(text) = std::str::from_utf8(docs[0]) {
        let _ = TrustMaterial::from_trusted_root_json(text);
    }
});
