//! Which component a subcommand runs, where its precompiled form is kept,
//! and, for a pulled one, whose cosign signature it must carry.

use super::registry::RegistryArgs;
use crate::oci::cache::ComponentCache;
use crate::oci::client::Client;
use crate::oci::pull::Pulled;
use crate::oci::reference::Reference;
use crate::oci::signatures::{self, Signatures};
use anyhow::{bail, Context, Result};
use clap::Args;
pub(crate) use ivpol_runtime::{sigstore, wit, Runtime, EMBEDDED_COMPONENT};
use std::path::{Path, PathBuf};

#[derive(Args)]
pub(super) struct ComponentArgs {
    /// Component to run instead of the embedded one: a file, or
    /// `oci://REGISTRY/REPOSITORY[:TAG][@sha256:DIGEST]` (pulled once, cached by digest).
    #[arg(long, value_name = "PATH|oci://REF")]
    component: Option<String>,
    /// Refuse a pulled component unless it carries a cosign signature by
    /// this public key (PEM; `cosign sign --key`), as a `.sig` image or a
    /// Sigstore bundle referrer. Checked at every start, from the cache too.
    #[arg(
        long = "component-key",
        value_name = "FILE",
        requires = "component",
        group = "component_signer"
    )]
    component_key: Option<PathBuf>,
    /// Refuse a pulled component unless it carries a keyless cosign
    /// signature whose certificate names this identity (SAN, exact match);
    /// needs --component-issuer.
    #[arg(
        long = "component-identity",
        value_name = "SAN",
        requires_all = ["component", "component_issuer"],
        group = "component_signer"
    )]
    component_identity: Option<String>,
    /// The OIDC issuer of the --component-identity certificate (exact match).
    #[arg(
        long = "component-issuer",
        value_name = "URL",
        requires = "component_identity"
    )]
    component_issuer: Option<String>,
    /// Sigstore TrustedRoot JSON for the component's signature: the Rekor
    /// keys (and, keyless, the Fulcio CAs and CT log keys) it is checked
    /// against. Default: the Sigstore public-good root built in.
    #[arg(
        long = "component-trusted-root",
        value_name = "FILE",
        requires = "component_signer"
    )]
    component_trusted_root: Option<PathBuf>,
    /// Accept a --component-key signature without a Rekor transparency log
    /// entry (`cosign sign --tlog-upload=false`).
    #[arg(
        long = "component-insecure-ignore-tlog",
        requires = "component_key",
        conflicts_with = "component_identity"
    )]
    component_insecure_ignore_tlog: bool,
    /// Where precompiled and pulled components are kept between runs
    /// (default `$XDG_CACHE_HOME/ivpol` or `~/.cache/ivpol`).
    #[arg(long = "cache-dir", value_name = "DIR", env = "IVPOL_CACHE_DIR")]
    cache_dir: Option<PathBuf>,
    /// Compile (and pull) the component on every start instead of caching it.
    #[arg(long = "no-precompile-cache", conflicts_with = "cache_dir")]
    no_precompile_cache: bool,
}

impl ComponentArgs {
    /// The component's bytes: the embedded ones, a file's, or an
    /// artifact's, pulled through `registry` and verified (its digests,
    /// and its signature when one is required). A reference that cannot be
    /// pulled or verified is an error: there is no fallback to the
    /// embedded component, which would run something other than what was
    /// asked.
    pub(super) async fn bytes(&self, registry: &RegistryArgs) -> Result<Vec<u8>> {
        let Some(source) = &self.component else {
            return Ok(EMBEDDED_COMPONENT.to_vec());
        };
        let required = self.required_signer()?;
        let Some(reference) = source.strip_prefix("oci://") else {
            if required.is_some() {
                bail!("--component-key and --component-identity check a component pulled with --component oci://...; {source} is a file");
            }
            let bytes =
                std::fs::read(source).with_context(|| format!("reading component {source}"))?;
            return runnable(bytes, source);
        };
        let reference = Reference::parse(reference)?;
        let client = Client::new(registry.net(None)?, &reference);
        let cache = self.cache_dir().map(|d| ComponentCache::new(&d));
        let pulled = crate::oci::pull::pull(&client, cache.as_ref())
            .await
            .with_context(|| format!("pulling the component {source}"))?;
        let pinned = reference.pinned(&pulled.manifest_digest);
        if let Some(required) = required {
            required
                .verify(
                    &client,
                    cache.as_ref(),
                    &pulled,
                    self.cache_dir().as_deref(),
                )
                .await
                .with_context(|| format!("refusing the component {pinned}"))?;
            tracing::info!(component = %pinned, signer = %required.name, "component signature verified");
        }
        tracing::info!(component = %pinned, layer = %pulled.layer.digest, "component pulled");
        runnable(pulled.component, source)
    }

    /// [`Self::bytes`] with [`Self::cache_dir`], for the commands that
    /// only run the component's standalone verifiers.
    pub(super) async fn load(&self, registry: &RegistryArgs) -> Result<(Vec<u8>, Option<PathBuf>)> {
        Ok((self.bytes(registry).await?, self.cache_dir()))
    }

    /// The precompile cache directory, unless caching is off.
    pub(super) fn cache_dir(&self) -> Option<PathBuf> {
        match self.no_precompile_cache {
            true => None,
            false => self
                .cache_dir
                .clone()
                .or_else(ivpol_runtime::precompiled::default_dir),
        }
    }

    /// The signer the flags require, with its trust material read.
    fn required_signer(&self) -> Result<Option<RequiredSigner>> {
        let read = |path: &Path, what: &str| {
            std::fs::read_to_string(path)
                .with_context(|| format!("reading the {what} {}", path.display()))
        };
        let (signer, name) = match (
            &self.component_key,
            &self.component_identity,
            &self.component_issuer,
        ) {
            (Some(key), _, _) => (
                sigstore::Signer::Key(read(key, "component key")?),
                format!("the key {}", key.display()),
            ),
            (None, Some(subject), Some(issuer)) => (
                sigstore::Signer::Identity(sigstore::Identity {
                    subject: subject.clone(),
                    issuer: issuer.clone(),
                }),
                format!("the identity {subject} (issuer {issuer})"),
            ),
            // clap requires the issuer with the identity.
            _ => return Ok(None),
        };
        let trusted_root = match &self.component_trusted_root {
            Some(path) => Some(read(path, "trusted root")?),
            None => None,
        };
        Ok(Some(RequiredSigner {
            signer,
            name,
            trusted_root,
            ignore_tlog: self.component_insecure_ignore_tlog,
        }))
    }
}

/// Who must have signed a pulled component, and what the signature is
/// checked against.
struct RequiredSigner {
    signer: sigstore::Signer,
    /// For messages: "the key cosign.pub", "the identity ... (issuer ...)".
    name: String,
    trusted_root: Option<String>,
    ignore_tlog: bool,
}

impl RequiredSigner {
    /// Verifies that `pulled` is signed, for the manifest digest it was
    /// pulled at. The embedded component is the verifier, whichever
    /// component is then run: a pulled component never vouches for itself.
    ///
    /// A component from the cache is verified with the signatures kept
    /// with it, so an offline start is checked too; when those do not
    /// verify (or none were kept), the registry is asked for its current
    /// ones. Signatures that verified are kept for the next start.
    async fn verify(
        &self,
        client: &Client,
        cache: Option<&ComponentCache>,
        pulled: &Pulled,
        precompiled: Option<&Path>,
    ) -> Result<()> {
        let digest = &pulled.manifest_digest;
        let verifier = Runtime::offline(EMBEDDED_COMPONENT, precompiled)
            .context("loading the embedded component to verify the signature")?;
        let kept = match (pulled.from_cache, cache) {
            (true, Some(cache)) => cache.get_signatures(digest).and_then(|bytes| {
                Signatures::from_json(&bytes)
                    .inspect_err(|e| tracing::warn!("ignoring the kept signatures: {e:#}"))
                    .ok()
            }),
            _ => None,
        };
        let mut refused = None;
        if let Some(kept) = &kept {
            match self.check(&verifier, digest, kept).await? {
                Ok(()) => {
                    eprintln!("verified the signature of {digest} kept in the cache");
                    return Ok(());
                }
                Err(why) => refused = Some(why.message),
            }
        }
        let fetched = match signatures::fetch(client, digest).await {
            Ok(fetched) => fetched,
            Err(e) => match refused {
                // Offline: the kept signatures' verdict stands.
                Some(why) => bail!(
                    "not signed by {}: {why} (signatures kept in the cache; the registry could not be asked for others: {e:#})",
                    self.name
                ),
                None => return Err(e.context("fetching its signatures")),
            },
        };
        if let (Some(why), Some(kept)) = (&refused, &kept) {
            if *kept == fetched {
                bail!("not signed by {}: {why}", self.name);
            }
        }
        if let Err(why) = self.check(&verifier, digest, &fetched).await? {
            bail!("not signed by {}: {}", self.name, why.message);
        }
        if let Some(cache) = cache {
            let kept = fetched
                .to_json()
                .and_then(|b| cache.put_signatures(digest, &b));
            if let Err(e) = kept {
                tracing::warn!("cannot keep the component's signatures in the cache: {e:#}");
            }
        }
        Ok(())
    }

    /// One verification by `verifier`; the outer error is a trap.
    async fn check(
        &self,
        verifier: &Runtime,
        digest: &str,
        signatures: &Signatures,
    ) -> Result<std::result::Result<(), wit::VerificationFailure>> {
        verifier
            .verify_artifact(
                digest,
                &signatures.to_wit(),
                &self.signer,
                self.trusted_root.as_deref(),
                self.ignore_tlog,
            )
            .await
    }
}

/// `bytes`, unless they are the webhook component, which any wasi:http
/// host runs but this one does not (it links the policy module's world):
/// said plainly rather than as a failed link.
fn runnable(bytes: Vec<u8>, source: &str) -> Result<Vec<u8>> {
    let world = crate::oci::artifact::interfaces(&bytes)
        .ok()
        .and_then(|info| crate::oci::artifact::world(&info));
    if world == Some(crate::oci::artifact::WEBHOOK_WORLD) {
        bail!(
            "{source} is the webhook component ({}): run it under a wasi:http host such as `wasmtime serve`; ivpol runs the policy module",
            crate::oci::artifact::WEBHOOK_WORLD
        );
    }
    Ok(bytes)
}
