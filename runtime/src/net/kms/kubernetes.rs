//! `k8s://NAMESPACE/SECRET`: the Secret's `cosign.pub`, as cosign stores a
//! key pair it generated in a Secret (`cosign generate-key-pair k8s://…`).
//! A namespaced policy reads Secrets of its own namespace only (the
//! component refuses any other at load; this checks again).

use crate::object_name::is_object_name;
use k8s_openapi::api::core::v1::Secret;

pub(super) async fn public_key(
    client: &kube::Client,
    rest: &str,
    tenant: Option<&str>,
) -> Result<String, String> {
    let (namespace, name) = rest
        .split_once('/')
        .filter(|(ns, n)| is_object_name(ns) && is_object_name(n))
        .ok_or("k8s://NAMESPACE/SECRET: not a namespace and Secret name")?;
    if tenant.is_some_and(|t| t != namespace) {
        return Err(format!(
            "a namespaced policy reads k8s:// keys from its own namespace only, not {namespace}"
        ));
    }
    let api = kube::Api::<Secret>::namespaced(client.clone(), namespace);
    let secret = api
        .get_opt(name)
        .await
        .map_err(|e| format!("Secret {name} in namespace {namespace}: {e}"))?
        .ok_or_else(|| format!("Secret {name} not found in namespace {namespace}"))?;
    let data = secret.data.unwrap_or_default();
    let pem = data
        .get("cosign.pub")
        .ok_or_else(|| format!("Secret {name} in namespace {namespace} has no cosign.pub"))?;
    String::from_utf8(pem.0.clone()).map_err(|_| format!("Secret {name}'s cosign.pub is not text"))
}
