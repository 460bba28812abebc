//! `credentials.providers: [amazon]`: an ECR registry gets the token of
//! ECR's `GetAuthorizationToken`, as go-containerregistry's ECR keychain
//! and `docker-credential-ecr-login` do (user `AWS`, the token's password).
//!
//! The call is the AWS SDK's, with its standard credential chain: the
//! environment, web identity (IRSA), the container endpoint (EKS Pod
//! Identity), the shared config files and IMDSv2; and its standard
//! endpoint overrides (`AWS_ENDPOINT_URL`, `AWS_ENDPOINT_URL_ECR`). Its
//! HTTPS is rustls with ring, like the rest of the host. One token serves
//! every registry of a region that the identity may read, so tokens are
//! kept per region (FIPS endpoints apart).

use super::kept::{Expiring, Kept};
use crate::net::credential::Credential;
use base64::Engine;
use std::time::{Duration, Instant, SystemTime};

/// No call to AWS runs longer than this (the request's deadline too).
const TIMEOUT: Duration = Duration::from_secs(10);

/// The DNS suffixes of ECR's private registries, in every partition.
const SUFFIXES: &[&str] = &[
    "amazonaws.com",
    "amazonaws.com.cn",
    "on.aws",
    "on.amazonwebservices.com.cn",
    "sc2s.sgov.gov",
    "c2s.ic.gov",
    "cloud.adc-e.uk",
    "csp.hci.ic.gov",
];

/// An ECR registry host:
/// `<account>.dkr[.-]ecr[-fips].<region>.<partition suffix>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Ecr {
    pub account: String,
    pub region: String,
    pub fips: bool,
}

impl Ecr {
    pub(super) fn parse(host: &str) -> Option<Ecr> {
        let host = host.to_ascii_lowercase();
        let (account, rest) = host.split_once('.')?;
        if account.len() != 12 || !account.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let rest = rest
            .strip_prefix("dkr.ecr")
            .or_else(|| rest.strip_prefix("dkr-ecr"))?;
        let (fips, rest) = match rest.strip_prefix("-fips") {
            Some(r) => (true, r),
            None => (false, rest),
        };
        let (region, suffix) = rest.strip_prefix('.')?.split_once('.')?;
        let region_ok = region.starts_with(|c: char| c.is_ascii_alphanumeric())
            && region
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        (region_ok && SUFFIXES.contains(&suffix)).then(|| Ecr {
            account: account.to_string(),
            region: region.to_string(),
            fips,
        })
    }
}

/// The tokens ECR gave.
#[derive(Default)]
pub(super) struct Amazon {
    tokens: Kept<Credential>,
}

impl Amazon {
    /// The credential for `ecr`, kept or fetched within `deadline`.
    pub(super) async fn credential(
        &self,
        ecr: &Ecr,
        deadline: Instant,
    ) -> Result<Credential, String> {
        let config = sdk_config().await.clone();
        let key = format!("{}\0{}", ecr.region, ecr.fips);
        let ecr = ecr.clone();
        self.tokens
            .get(&key, move || async move {
                let until = deadline.min(Instant::now() + TIMEOUT);
                let fetched = tokio::time::timeout_at(until.into(), token(&config, &ecr)).await;
                let answer = fetched.unwrap_or_else(|_| {
                    Err(format!(
                        "ECR GetAuthorizationToken in {}: no answer in time",
                        ecr.region
                    ))
                });
                crate::metrics::metrics().cloud_fetch("amazon", answer.is_ok());
                answer
            })
            .await
    }
}

/// The SDK's standard configuration (credential chain, region, endpoint
/// overrides, from the environment), loaded once for the process: ECR
/// tokens and `awskms://` keys share it.
pub(in crate::net) async fn sdk_config() -> &'static aws_config::SdkConfig {
    static CONFIG: tokio::sync::OnceCell<aws_config::SdkConfig> =
        tokio::sync::OnceCell::const_new();
    CONFIG.get_or_init(load_config).await
}

/// The SDK's standard configuration, with ring's rustls for HTTPS.
async fn load_config() -> aws_config::SdkConfig {
    use aws_smithy_http_client::tls;
    let http = aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(
            tls::rustls_provider::CryptoMode::Ring,
        ))
        .build_https();
    let timeouts = aws_config::timeout::TimeoutConfig::builder()
        .operation_timeout(TIMEOUT)
        .connect_timeout(Duration::from_secs(5))
        .build();
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .http_client(http)
        .timeout_config(timeouts)
        .load()
        .await
}

/// One `GetAuthorizationToken` in `ecr`'s region.
async fn token(config: &aws_config::SdkConfig, ecr: &Ecr) -> Result<Expiring<Credential>, String> {
    let conf = aws_sdk_ecr::config::Builder::from(config)
        .region(aws_config::Region::new(ecr.region.clone()))
        .use_fips(ecr.fips)
        .build();
    let client = aws_sdk_ecr::Client::from_conf(conf);
    let out = client.get_authorization_token().send().await.map_err(|e| {
        format!(
            "ECR GetAuthorizationToken in {}: {}",
            ecr.region,
            sdk_error(&e)
        )
    })?;
    let data = out
        .authorization_data()
        .first()
        .ok_or("ECR GetAuthorizationToken answered no authorization data")?;
    let credential = decode_token(data.authorization_token().unwrap_or_default())?;
    let expires = data
        .expires_at()
        .and_then(|t| SystemTime::try_from(*t).ok())
        // ECR's tokens last 12 hours; one without a time is kept for one.
        .unwrap_or_else(|| SystemTime::now() + Duration::from_secs(3600));
    Ok(Expiring {
        value: credential,
        expires,
    })
}

/// ECR's token: base64 of `AWS:<password>`.
fn decode_token(token: &str) -> Result<Credential, String> {
    let bad = "ECR's authorization token is not base64 of user:password";
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(token)
        .map_err(|_| bad)?;
    let text = String::from_utf8(bytes).map_err(|_| bad)?;
    let (username, password) = text.split_once(':').ok_or(bad)?;
    Ok(Credential {
        username: username.to_string(),
        password: password.to_string(),
    })
}

/// An SDK error as one line: the service's code and message, else the
/// cause (no credentials, a connection refused, a timeout).
pub(in crate::net) fn sdk_error<E, R>(e: &aws_sdk_ecr::error::SdkError<E, R>) -> String
where
    E: aws_sdk_ecr::error::ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    use aws_sdk_ecr::error::SdkError;
    match e {
        SdkError::ServiceError(s) => {
            let err = s.err();
            format!(
                "{}: {}",
                err.code().unwrap_or("error"),
                err.message().unwrap_or("(no message)")
            )
        }
        other => {
            let mut why = other.to_string();
            let mut source = std::error::Error::source(other);
            while let Some(s) = source {
                why = format!("{why}: {s}");
                source = s.source();
            }
            why
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ecr_hosts_in_every_partition_and_form() {
        let ecr = |h: &str| Ecr::parse(h);
        let us = ecr("123456789012.dkr.ecr.us-east-1.amazonaws.com").expect("ecr");
        assert_eq!(
            (us.account.as_str(), us.region.as_str(), us.fips),
            ("123456789012", "us-east-1", false)
        );
        let fips = ecr("123456789012.dkr.ecr-fips.us-gov-west-1.amazonaws.com").expect("fips");
        assert!(fips.fips);
        assert_eq!(fips.region, "us-gov-west-1");
        for good in [
            "123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn",
            "123456789012.dkr-ecr.eu-west-1.on.aws",
            "123456789012.dkr.ecr.us-iso-east-1.c2s.ic.gov",
            "123456789012.DKR.ECR.us-east-1.AmazonAWS.com",
        ] {
            assert!(ecr(good).is_some(), "{good}");
        }
        for bad in [
            "ghcr.io",
            "public.ecr.aws",
            "12345678901.dkr.ecr.us-east-1.amazonaws.com",
            "1234567890123.dkr.ecr.us-east-1.amazonaws.com",
            "123456789012.dkr.ecr.us-east-1.amazonaws.com.evil.io",
            "123456789012.dkr.ecr..amazonaws.com",
            "123456789012.dkr.ecr.us-east-1.example.com",
            "abcdefghijkl.dkr.ecr.us-east-1.amazonaws.com",
        ] {
            assert!(ecr(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn tokens_decode_to_the_aws_user() {
        let c = decode_token("QVdTOnNlY3JldA==").expect("token");
        assert_eq!(
            (c.username.as_str(), c.password.as_str()),
            ("AWS", "secret")
        );
        let e = decode_token("not base64!")
            .expect_err("refused")
            .to_string();
        assert!(e.contains("is not base64 of user:password"), "{e}");
        let e = decode_token("bm9jb2xvbg==")
            .expect_err("refused")
            .to_string();
        assert!(e.contains("is not base64 of user:password"), "{e}");
    }
}
