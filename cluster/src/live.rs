//! The live policy set of `ivpol serve`: numbered generations swapped in
//! whole, and the reloads that build them.
//!
//! A reload reads every `--policies` path and `--namespaces` again, loads
//! them into a new instance pool and swaps it in atomically. A request holds
//! the generation it started on to its end, so in-flight requests finish on
//! the old set and no request sees half of one. The old generation's
//! instances are freed when its last request ends: memory is sized for two.
//!
//! A policy that loaded before and is rejected by a reload keeps enforcing
//! its last good version, marked stale (readiness, metrics, a loud log).
//! A policy that never loaded denies in its scope, as at start-up. A reload
//! that cannot read its inputs, or whose component fails, keeps the current
//! generation.

mod degrade;

use crate::budget::Budgets;
use crate::Cluster;
use anyhow::{Context, Result};
use degrade::load_degrading;
use ivpol_runtime::metrics::{metrics, PolicyLabels};
use ivpol_runtime::policies::{self, Document};
use ivpol_runtime::{Pool, Runtime, Summary};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};

/// Where a generation's inputs are read from.
pub struct Inputs {
    pub policies: Vec<PathBuf>,
    pub namespaces: Option<PathBuf>,
    /// The cluster's policies and namespaces (`--kubernetes`).
    pub cluster: Option<Arc<Cluster>>,
    /// What the cluster's objects may cost the policy set.
    pub budgets: Budgets,
}

/// The inputs as read: policy documents and namespace objects.
pub(crate) struct Read {
    documents: Vec<Document>,
    namespaces: BTreeMap<String, Value>,
    /// SHA-256 of all of it: a reload that reads the same bytes is no reload.
    hash: String,
}

impl Inputs {
    /// Reads every input now.
    pub(crate) fn read(&self) -> Result<Read> {
        let mut documents = policies::read_all(&self.policies)?;
        if let Some(cluster) = &self.cluster {
            documents.extend(cluster.documents());
        }
        for line in crate::budget::apply(&mut documents, &self.budgets) {
            tracing::warn!("policy object refused: {line}");
        }
        let namespaces = match &self.namespaces {
            Some(p) => policies::read_namespaces(p)?,
            None => BTreeMap::new(),
        };
        let mut h = Sha256::new();
        for d in &documents {
            let refused = d.refused.as_deref().unwrap_or_default();
            for part in [
                d.source.as_bytes(),
                d.content.as_bytes(),
                refused.as_bytes(),
            ] {
                h.update((part.len() as u64).to_le_bytes());
                h.update(part);
            }
        }
        h.update(serde_json::to_vec(&namespaces).unwrap_or_default());
        let hash = ivpol_refs::encoding::hex(&h.finalize());
        Ok(Read {
            documents,
            namespaces,
            hash,
        })
    }
}

/// A policy serving its last good version because a reload rejected the
/// new one.
#[derive(Clone)]
pub struct Stale {
    pub name: String,
    pub namespace: Option<String>,
    pub kind: String,
    /// Why the new version did not load.
    pub error: String,
}

/// One loaded policy set, with what it was built from.
pub struct Generation {
    /// 1 at start-up, then one more per reload that changed something.
    pub number: u64,
    /// [`Read::hash`] of the inputs.
    pub hash: String,
    pub pool: Arc<Pool>,
    pub namespaces: BTreeMap<String, Value>,
    pub cluster: Option<Arc<Cluster>>,
    pub stale: Vec<Stale>,
}

impl Generation {
    /// The Namespace object `name` as JSON: from the cluster's watch, else
    /// from `--namespaces`; none when neither knows it (the component then
    /// fails closed where its labels are needed).
    pub(crate) fn namespace_object(&self, name: &str) -> Option<String> {
        self.cluster
            .as_ref()
            .and_then(|c| c.namespace_object(name))
            .or_else(|| policies::namespace_object(&self.namespaces, name))
    }
}

impl ivpol_runtime::Namespaces for Generation {
    fn namespace_object(&self, name: &str) -> Option<String> {
        Generation::namespace_object(self, name)
    }
}

/// A policy document's identity across generations.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Debug)]
struct Key {
    kind: String,
    namespace: Option<String>,
    name: String,
}

/// The document a policy last loaded from, and the file it was in.
struct Good {
    source: String,
    /// The document as JSON.
    text: String,
}

/// What a reload puts back: the stale policies, and the files whose
/// unreadable documents they are taken to be.
#[derive(Default)]
struct Regressed {
    stale: Vec<Stale>,
    unreadable: BTreeSet<String>,
}

/// The current generation and the last good version of each policy.
pub struct Live {
    runtime: Arc<Runtime>,
    inputs: Arc<Inputs>,
    current: RwLock<Arc<Generation>>,
    last_good: Mutex<BTreeMap<Key, Good>>,
    /// One reload at a time.
    reloading: tokio::sync::Mutex<()>,
    /// Why the last reload kept the current generation, or loaded the
    /// cluster's objects only in part; none once one loads whole.
    last_error: Mutex<Option<String>>,
}

/// What a reload did, as counted in `ivpol_policy_reloads_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reloaded {
    /// The inputs read the same as the current generation's.
    Unchanged,
    /// A new generation in which every policy loaded.
    Loaded,
    /// A new generation with rejected or stale policies.
    Rejected,
    /// No new generation: the inputs could not be read or loaded.
    Failed,
}

impl Reloaded {
    pub fn label(self) -> &'static str {
        match self {
            Reloaded::Unchanged => "unchanged",
            Reloaded::Loaded => "loaded",
            Reloaded::Rejected => "rejected",
            Reloaded::Failed => "failed",
        }
    }
}

impl Live {
    /// Generation 1. Unreadable inputs or a failing component are errors:
    /// there is nothing to serve.
    pub async fn start(runtime: Arc<Runtime>, inputs: Inputs) -> Result<Live> {
        let inputs = Arc::new(inputs);
        let read = read_off_runtime(&inputs).await?;
        let (pool, degraded) = load_degrading(&runtime, &read.documents).await?;
        let live = Live {
            runtime,
            inputs,
            current: RwLock::new(Arc::new(Generation {
                number: 0,
                hash: String::new(),
                pool: Arc::new(pool),
                namespaces: BTreeMap::new(),
                cluster: None,
                stale: vec![],
            })),
            last_good: Mutex::default(),
            reloading: tokio::sync::Mutex::new(()),
            last_error: Mutex::new(degraded),
        };
        let pool = live.current().pool.clone();
        live.fetch_secrets(pool.summary()).await;
        live.install(read, pool, vec![]);
        Ok(live)
    }

    /// The generation new requests use.
    pub fn current(&self) -> Arc<Generation> {
        match self.current.read() {
            Ok(g) => g.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Why the last reload kept the current generation or loaded only in
    /// part (readiness' `lastReloadError`); none once one loads whole.
    pub fn last_reload_error(&self) -> Option<String> {
        self.last_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn set_last_error(&self, error: Option<String>) {
        *self.last_error.lock().unwrap_or_else(|p| p.into_inner()) = error;
    }

    /// Reads the inputs again and, if they changed, swaps in a new
    /// generation. `why` names the trigger in the log.
    pub async fn reload(&self, why: &str) -> Reloaded {
        let _one = self.reloading.lock().await;
        let outcome = match read_off_runtime(&self.inputs).await {
            Ok(read) if read.hash == self.current().hash => Reloaded::Unchanged,
            Ok(read) => self.load(read, why).await.unwrap_or_else(|e| {
                tracing::error!("policy reload ({why}) failed, the current policies stay: {e:#}");
                self.set_last_error(Some(format!("{e:#}")));
                Reloaded::Failed
            }),
            Err(e) => {
                tracing::error!(
                    "policy reload ({why}) cannot read its inputs, the current policies stay: {e:#}"
                );
                self.set_last_error(Some(format!("reading the inputs: {e:#}")));
                Reloaded::Failed
            }
        };
        if outcome != Reloaded::Unchanged {
            metrics().count_reload(outcome.label());
        }
        outcome
    }

    /// Loads `read`; policies that regressed are loaded again from their
    /// last good version, in a second pass.
    async fn load(&self, read: Read, why: &str) -> Result<Reloaded> {
        let (first, mut degraded) = load_degrading(&self.runtime, &read.documents).await?;
        let regressed = self.regressed(&read.documents, first.summary());
        let (pool, stale) = match regressed.stale.is_empty() {
            true => (first, vec![]),
            false => {
                drop(first);
                let documents = self.with_last_good(&read.documents, &regressed);
                let (pool, again) = load_degrading(&self.runtime, &documents)
                    .await
                    .context("loading the last good versions")?;
                degraded = degraded.or(again);
                (pool, regressed.stale)
            }
        };
        self.set_last_error(degraded);
        let summary = pool.summary();
        let outcome = match summary.rejected.is_empty() && stale.is_empty() {
            true => Reloaded::Loaded,
            false => Reloaded::Rejected,
        };
        for s in &stale {
            tracing::error!(policy = %s.name, namespace = ?s.namespace, "policy reload REJECTED this policy; its last good version still enforces (stale): {}", s.error);
        }
        self.fetch_secrets(pool.summary()).await;
        self.refresh_keys(pool.summary());
        let number = self.install(read, Arc::new(pool), stale);
        tracing::info!(generation = number, trigger = why, "policies reloaded");
        Ok(outcome)
    }

    /// Fetches the cluster Secrets the policies name, before they serve.
    async fn fetch_secrets(&self, summary: &Summary) {
        if let Some(cluster) = &self.inputs.cluster {
            let names = summary
                .policies
                .iter()
                .flat_map(|p| p.registry_secrets.iter().cloned())
                // `provider:<name>` is a credential the host holds, no Secret.
                .filter(|n| !n.starts_with(ivpol_runtime::net::PROVIDER_PREFIX))
                .collect();
            cluster.secrets.want(names).await;
        }
    }

    /// Reads the policies' KMS keys again, in the background: requests
    /// that come first read a key themselves, and a KMS that is down does
    /// not hold the reload.
    fn refresh_keys(&self, summary: &Summary) {
        let keys: Vec<(String, Option<String>)> = summary
            .policies
            .iter()
            .flat_map(|p| p.kms_keys.iter().map(|k| (k.clone(), p.namespace.clone())))
            .collect();
        if !keys.is_empty() {
            let net = self.runtime.net().clone();
            tokio::spawn(async move { net.refresh_keys(keys).await });
        }
    }

    /// Makes `pool` current as the next generation; returns its number.
    fn install(&self, read: Read, pool: Arc<Pool>, stale: Vec<Stale>) -> u64 {
        self.remember(&read.documents, pool.summary(), &stale);
        report(pool.summary(), &stale);
        let mut current = match self.current.write() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        let number = current.number + 1;
        *current = Arc::new(Generation {
            number,
            hash: read.hash,
            pool,
            namespaces: read.namespaces,
            cluster: self.inputs.cluster.clone(),
            stale,
        });
        metrics().policy_generation.set(number as i64);
        metrics().set_policy_set_hash(&current.hash);
        number
    }

    /// Keeps the document of every policy that loaded from `documents`
    /// (stale ones keep the version they already had), and forgets the
    /// policies the new generation no longer holds: a policy deleted on
    /// purpose does not come back as someone's last good version.
    fn remember(&self, documents: &[Document], summary: &Summary, stale: &[Stale]) {
        let loaded: BTreeSet<(Option<&str>, &str)> = summary
            .policies
            .iter()
            .map(|p| (p.namespace.as_deref(), p.name.as_str()))
            .collect();
        let stale: BTreeSet<Key> = stale.iter().map(Stale::key).collect();
        let mut last_good = self.last_good.lock().unwrap_or_else(|p| p.into_inner());
        for d in documents {
            for (key, value) in split(d).filter_map(|p| p.value) {
                let Some(key) = key else { continue };
                let is_loaded = loaded.contains(&(key.namespace.as_deref(), key.name.as_str()));
                if is_loaded && !stale.contains(&key) {
                    let good = Good {
                        source: d.source.clone(),
                        text: value.to_string(),
                    };
                    last_good.insert(key, good);
                }
            }
        }
        last_good.retain(|k, _| {
            stale.contains(k) || loaded.contains(&(k.namespace.as_deref(), k.name.as_str()))
        });
    }

    /// The rejected policies of a new load that have a last good version,
    /// and the policies a broken file held before and no longer yields.
    fn regressed(&self, documents: &[Document], summary: &Summary) -> Regressed {
        let rejected = &summary.rejected;
        let last_good = self.last_good.lock().unwrap_or_else(|p| p.into_inner());
        let stale = rejected
            .iter()
            .map(|r| Stale {
                name: r.name.clone(),
                namespace: r.namespace.clone(),
                kind: r.kind.as_str().to_string(),
                error: r.message.clone(),
            })
            .filter(|s| last_good.contains_key(&s.key()))
            .collect();
        let mut out = Regressed {
            stale,
            unreadable: BTreeSet::new(),
        };
        // An unreadable document has no name: the policies that loaded
        // from its file before and are now missing are taken to be it.
        let present: BTreeSet<Key> = documents
            .iter()
            .flat_map(split)
            .filter_map(|p| p.value.and_then(|(k, _)| k))
            .collect();
        for r in rejected {
            let Some(source) = unreadable(&r.name, documents) else {
                continue;
            };
            let missing: Vec<Stale> = last_good
                .iter()
                .filter(|(k, good)| good.source == source && !present.contains(k))
                .map(|(k, _)| Stale {
                    name: k.name.clone(),
                    namespace: k.namespace.clone(),
                    kind: k.kind.clone(),
                    error: format!("{}: {}", r.name, r.message),
                })
                .collect();
            if !missing.is_empty() {
                out.unreadable.insert(source.to_string());
                out.stale.extend(missing);
            }
        }
        // A file cut short mid-write (`kind: Imag`, `name: p` for `p1`)
        // still parses, as a document that is no policy or names another
        // one. A policy that loaded from a file that now has a broken
        // document, and that no document of the new load names, is taken
        // to be that document: it stays stale rather than vanishing (its
        // route would admit). A file whose documents all load, and which
        // no longer holds the policy, removed it on purpose.
        let loaded: BTreeSet<(Option<&str>, &str)> = summary
            .policies
            .iter()
            .map(|p| (p.namespace.as_deref(), p.name.as_str()))
            .collect();
        for d in &summary.diagnostics {
            let cut: Vec<Stale> = last_good
                .iter()
                .filter(|(k, good)| {
                    good.source == d.source
                        && !loaded.contains(&(k.namespace.as_deref(), k.name.as_str()))
                        && !rejected
                            .iter()
                            .any(|r| r.name == k.name && r.namespace == k.namespace)
                })
                .map(|(k, _)| Stale {
                    name: k.name.clone(),
                    namespace: k.namespace.clone(),
                    kind: k.kind.clone(),
                    error: format!(
                        "{} no longer yields this policy, and has a document that does not load: {}",
                        d.source, d.message
                    ),
                })
                .collect();
            out.stale.extend(cut);
        }
        out.stale.sort_by_key(Stale::key);
        out.stale.dedup_by_key(|s| s.key());
        out
    }

    /// `documents` with each regressed policy's document (and the
    /// unreadable documents taken to be them) blanked, and each one's last
    /// good version added as a document of its own.
    fn with_last_good(&self, documents: &[Document], regressed: &Regressed) -> Vec<Document> {
        let keys: BTreeSet<Key> = regressed.stale.iter().map(Stale::key).collect();
        let mut out: Vec<Document> = documents
            .iter()
            .map(|d| blank(d, &keys, regressed.unreadable.contains(&d.source)))
            .collect();
        let last_good = self.last_good.lock().unwrap_or_else(|p| p.into_inner());
        for s in &regressed.stale {
            if let Some(good) = last_good.get(&s.key()) {
                out.push(Document::file(
                    format!("{} (last good version of {})", good.source, s.name),
                    good.text.clone(),
                ));
            }
        }
        out
    }
}

impl Stale {
    fn key(&self) -> Key {
        Key {
            kind: self.kind.clone(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
        }
    }
}

/// One YAML document of a file, read as the component reads them (a
/// syntax error ends the file).
struct Part {
    /// The document's policy identity (when it names one) and value; none
    /// when it is not valid YAML (the rest of the file is then unread).
    value: Option<(Option<Key>, Value)>,
}

fn split(d: &Document) -> impl Iterator<Item = Part> + '_ {
    let mut broken = false;
    serde_yaml_ng::Deserializer::from_str(&d.content).map_while(move |doc| {
        if broken {
            return None;
        }
        let value = <Value as serde::Deserialize>::deserialize(doc).ok();
        broken = value.is_none();
        Some(Part {
            value: value.map(|v| (key_of(&v), v)),
        })
    })
}

fn key_of(v: &Value) -> Option<Key> {
    let text = |p: &str| v.pointer(p).and_then(Value::as_str).map(String::from);
    Some(Key {
        kind: text("/kind")?,
        namespace: text("/metadata/namespace"),
        name: text("/metadata/name")?,
    })
}

/// The source of `<source>#<n>`, the name the component gives a document
/// it could not read, when that source is one of `documents`.
fn unreadable<'a>(name: &str, documents: &'a [Document]) -> Option<&'a str> {
    let (source, index) = name.rsplit_once('#')?;
    index.parse::<u32>().ok()?;
    let d = documents.iter().find(|d| d.source == source)?;
    Some(d.source.as_str())
}

/// The document with the parts named by `keys` (and, if `unreadable`, the
/// parts that are not valid YAML) replaced by `null`, which the component
/// skips, so that every other part keeps its index.
fn blank(d: &Document, keys: &BTreeSet<Key>, unreadable: bool) -> Document {
    let parts: Vec<Part> = split(d).collect();
    let touched = parts.iter().any(|p| match &p.value {
        Some((Some(k), _)) => keys.contains(k),
        Some(_) => false,
        None => unreadable,
    });
    if !touched {
        return d.copy();
    }
    let content = parts
        .iter()
        .map(|p| match &p.value {
            Some((Some(k), _)) if keys.contains(k) => "null".to_string(),
            Some((_, v)) => v.to_string(),
            None => "null".to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n---\n");
    Document {
        content,
        ..d.copy()
    }
}

/// How long reading the inputs may take before a reload gives up on them.
const READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// [`Inputs::read`] on a blocking thread, within [`READ_TIMEOUT`]: a file
/// system that stalls (a FIFO is never opened blocking, but a network
/// mount can hang) never holds up health, admission or shutdown.
async fn read_off_runtime(inputs: &Arc<Inputs>) -> Result<Read> {
    let inputs = inputs.clone();
    let read = tokio::task::spawn_blocking(move || inputs.read());
    match tokio::time::timeout(READ_TIMEOUT, read).await {
        Ok(Ok(read)) => read,
        Ok(Err(e)) => Err(anyhow::anyhow!("reading the inputs failed: {e}")),
        Err(_) => Err(anyhow::anyhow!(
            "reading the inputs took longer than {}s",
            READ_TIMEOUT.as_secs()
        )),
    }
}

/// Logs and counts what loaded, what was rejected and what is stale.
fn report(summary: &Summary, stale: &[Stale]) {
    for d in &summary.diagnostics {
        tracing::warn!(source = %d.source, document = d.document, policy = ?d.policy, "policy not loaded: {}", d.message);
    }
    for r in &summary.rejected {
        tracing::error!(policy = %r.name, namespace = ?r.namespace, "policy rejected: it denies every request it would have judged: {}", r.message);
    }
    let m = metrics();
    m.policies_rejected.clear();
    for r in &summary.rejected {
        m.policies_rejected
            .get_or_create(&labels(&r.name, &r.namespace))
            .set(1);
    }
    m.policies_stale.clear();
    for s in stale {
        m.policies_stale
            .get_or_create(&labels(&s.name, &s.namespace))
            .set(1);
    }
    m.policies_loaded.set(summary.policies.len() as i64);
    m.policy_load_errors.set(summary.diagnostics.len() as i64);
    tracing::info!(
        loaded = summary.policies.len(),
        rejected = summary.rejected.len(),
        stale = stale.len(),
        "policies loaded"
    );
}

fn labels(name: &str, namespace: &Option<String>) -> PolicyLabels {
    PolicyLabels {
        policy: name.to_string(),
        namespace: namespace.clone().unwrap_or_default(),
    }
}
