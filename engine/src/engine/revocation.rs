//! Where a Notary chain's revocation answers come from
//! (`ivpol_notary::revocation`): OCSP and CRL URLs fetched through the
//! component's transport, and answers kept in the host's verification
//! cache.
//!
//! A fetch is a GET of the URL the certificate names, over its own scheme,
//! marked with [`REVOCATION_FETCH_HEADER`] so that the host sends it as
//! asked (plain HTTP is the norm: the answers are signed), with no
//! credentials, and only to endpoints its revocation allow-list admits.
//! The answer is bounded by the verifier's limits and by the request's
//! deadline and byte budget, like every other fetch.
//!
//! Cached answers are keyed by the issuer's fingerprint and the URL. The
//! verifier checks an answer on every use (signature, freshness), so a
//! cache entry cannot vouch for more than the signed answer does, and one
//! that went stale is fetched again.

use super::cache::{Credentials, VerificationCache};
use crate::notary::revocation::{Fetch, Fetched};
use crate::oci::transport::{HttpRequest, Transport};
use crate::verify::x509::Certificate;
use ivpol_refs::REVOCATION_FETCH_HEADER;
use sha2::{Digest, Sha256};

/// Revocation answers through `transport`, cached in `cache`.
pub(super) struct RevocationFetch<'a> {
    pub transport: &'a dyn Transport,
    pub cache: &'a dyn VerificationCache,
}

impl Fetch for RevocationFetch<'_> {
    fn get(
        &self,
        url: &str,
        issuer: &Certificate,
        max: usize,
        fresh: bool,
    ) -> Result<Fetched, String> {
        if !fresh {
            if let Some(body) = self.cache.get(&key(url, issuer), &Credentials::default()) {
                return Ok(Fetched { body, cached: true });
            }
        }
        let request = HttpRequest::get(
            url.to_string(),
            vec![(REVOCATION_FETCH_HEADER.to_string(), "1".to_string())],
        );
        let response = self
            .transport
            .send(&request, max)
            .map_err(|e| e.to_string())?;
        if response.status != 200 {
            return Err(format!(
                "the endpoint answered with status code {}",
                response.status
            ));
        }
        Ok(Fetched {
            body: response.body,
            cached: false,
        })
    }

    fn passed(&self, url: &str, issuer: &Certificate, body: &[u8]) {
        self.cache
            .put(&key(url, issuer), &Credentials::default(), body);
    }
}

/// The cache key of `url`'s answer for `issuer`: its own namespace, so no
/// verification key can collide with it.
fn key(url: &str, issuer: &Certificate) -> String {
    let mut h = Sha256::new();
    h.update(issuer.der());
    h.update(url.as_bytes());
    format!("revocation:{}", ivpol_refs::encoding::hex(&h.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oci::transport::{HttpResponse, TransportError};
    use std::sync::Mutex;

    /// Answers every request with `status` and `body`, and records them.
    struct Canned {
        status: u16,
        sent: Mutex<Vec<HttpRequest>>,
    }

    impl Transport for Canned {
        fn send(&self, request: &HttpRequest, _: usize) -> Result<HttpResponse, TransportError> {
            self.sent.lock().unwrap().push(request.clone());
            Ok(HttpResponse {
                status: self.status,
                headers: vec![],
                body: b"answer".to_vec(),
            })
        }
    }

    fn issuer() -> Certificate {
        let pem = crate::verify::testdata::read(&format!(
            "{}pki_root_crts.pem",
            crate::verify::testdata::FIXTURES
        ));
        Certificate::parse_pem(&pem).unwrap().remove(0)
    }

    #[test]
    fn a_fetch_is_a_marked_get_of_the_url_without_credentials() {
        let transport = Canned {
            status: 200,
            sent: Mutex::default(),
        };
        let fetch = RevocationFetch {
            transport: &transport,
            cache: &super::super::cache::NoCache,
        };
        let got = fetch
            .get("http://crl.example/ca.crl", &issuer(), 100, false)
            .unwrap();
        assert_eq!(got.body, b"answer");
        assert!(!got.cached);
        let sent = transport.sent.lock().unwrap();
        assert_eq!(sent[0].method, "GET");
        assert_eq!(sent[0].url, "http://crl.example/ca.crl");
        assert_eq!(
            sent[0].headers,
            vec![(REVOCATION_FETCH_HEADER.to_string(), "1".to_string())]
        );
        assert!(sent[0].secrets.is_empty() && sent[0].tenant.is_none());
    }

    #[test]
    fn an_answer_other_than_200_names_its_status() {
        let transport = Canned {
            status: 404,
            sent: Mutex::default(),
        };
        let fetch = RevocationFetch {
            transport: &transport,
            cache: &super::super::cache::NoCache,
        };
        let e = fetch
            .get("http://crl.example/ca.crl", &issuer(), 100, false)
            .unwrap_err();
        assert_eq!(e, "the endpoint answered with status code 404");
    }

    #[test]
    fn keys_bind_the_issuer_and_the_url() {
        let a = key("http://a/ca.crl", &issuer());
        assert!(a.starts_with("revocation:"));
        assert_ne!(a, key("http://b/ca.crl", &issuer()));
    }
}
