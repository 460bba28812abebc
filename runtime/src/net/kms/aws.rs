//! `awskms://[ENDPOINT]/KEY`: KMS `GetPublicKey`, as sigstore's AWS KMS
//! signer reads it. KEY is a key id, `alias/<name>`, or an ARN (whose
//! region is used); ENDPOINT, when given, replaces the SDK's (over HTTPS).

use crate::net::providers::amazon::{sdk_config, sdk_error};

pub(super) async fn public_key(rest: &str) -> Result<String, String> {
    let (endpoint, key) = rest
        .split_once('/')
        .ok_or("awskms://[ENDPOINT]/KEY: no key")?;
    let config = sdk_config().await;
    let mut conf = aws_sdk_kms::config::Builder::from(config);
    if let Some(region) = arn_region(key) {
        conf = conf.region(aws_config::Region::new(region.to_string()));
    }
    if !endpoint.is_empty() {
        conf = conf.endpoint_url(format!("https://{endpoint}"));
    }
    let client = aws_sdk_kms::Client::from_conf(conf.build());
    let out = client
        .get_public_key()
        .key_id(key)
        .send()
        .await
        .map_err(|e| format!("KMS GetPublicKey: {}", sdk_error(&e)))?;
    let der = out.public_key().ok_or("KMS GetPublicKey answered no key")?;
    Ok(super::spki_pem(der.as_ref()))
}

/// The region of `arn:<partition>:kms:<region>:<account>:<key or alias>`.
fn arn_region(key: &str) -> Option<&str> {
    let mut parts = key.strip_prefix("arn:")?.splitn(5, ':');
    let (_partition, service, region) = (parts.next()?, parts.next()?, parts.next()?);
    (service == "kms" && !region.is_empty()).then_some(region)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arns_name_their_region() {
        let arn = "arn:aws:kms:eu-west-2:123456789012:key/1234abcd";
        assert_eq!(arn_region(arn), Some("eu-west-2"));
        assert_eq!(
            arn_region("arn:aws-cn:kms:cn-north-1:1:alias/x"),
            Some("cn-north-1")
        );
        assert_eq!(arn_region("alias/cosign"), None);
        assert_eq!(arn_region("1234abcd-12ab-34cd-56ef-1234567890ab"), None);
        assert_eq!(arn_region("arn:aws:s3:::bucket"), None);
    }
}
