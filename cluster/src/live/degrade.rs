//! Loading a policy set the component cannot load whole: the documents
//! that cannot compile alone refused, else every namespace's objects, else
//! every object read from the API server, so that one input never stops
//! the rest from loading.

use anyhow::{Context, Result};
use ivpol_runtime::policies::Document;
use ivpol_runtime::{Pool, Runtime};
use std::sync::Arc;

fn clone_documents(documents: &[Document]) -> Vec<Document> {
    documents.iter().map(Document::copy).collect()
}

/// Loads `documents`; when the component cannot (an instance out of
/// memory, a trap), loads them again with every namespace's objects
/// refused, then with every object read from the API server refused, so
/// that one tenant's input never stops the cluster's policies from loading
/// (nor `serve` from starting). The second value says why it degraded.
pub(super) async fn load_degrading(
    runtime: &Arc<Runtime>,
    documents: &[Document],
) -> Result<(Pool, Option<String>)> {
    let whole = Pool::load(runtime.clone(), clone_documents(documents)).await;
    let error = match whole {
        Ok(pool) => return Ok((pool, None)),
        Err(e) => e,
    };
    tracing::error!("the policy set does not load whole: {error:#}");
    if let Some(loaded) = without_culprits(runtime, documents).await {
        return Ok(loaded);
    }
    fn namespaced(d: &Document) -> bool {
        d.owner.as_ref().is_some_and(|o| o.namespace.is_some())
    }
    fn from_cluster(d: &Document) -> bool {
        d.owner.is_some()
    }
    /// What a step refuses, and which documents.
    type Step = (&'static str, fn(&Document) -> bool);
    let steps: [Step; 2] = [
        ("every namespace's policies and exceptions", namespaced),
        ("every object read from the API server", from_cluster),
    ];
    for (what, refused) in steps {
        if !documents.iter().any(|d| refused(d) && d.refused.is_none()) {
            continue;
        }
        let why = format!(
            "the policy set did not load in the component ({}), so {what} is refused",
            ivpol_runtime::load_failure(&error)
        );
        let fewer: Vec<Document> = documents
            .iter()
            .map(|d| match refused(d) && d.refused.is_none() {
                true => refused_copy(d, &why),
                false => d.copy(),
            })
            .collect();
        if let Ok(pool) = Pool::load(runtime.clone(), fewer).await {
            tracing::error!("{why}");
            return Ok((pool, Some(why)));
        }
    }
    Err(error).context("loading the policy set")
}

/// The set without the documents that cannot load even on their own (a
/// trap or the memory limit while compiling them), each refused with why,
/// so that one document's compile sinks that document alone; `None` when
/// no single document is to blame (or the rest still do not load).
async fn without_culprits(
    runtime: &Arc<Runtime>,
    documents: &[Document],
) -> Option<(Pool, Option<String>)> {
    let mut culprits: Vec<(usize, String)> = Vec::new();
    for (i, d) in documents.iter().enumerate() {
        if d.refused.is_some() {
            continue;
        }
        if let Err(e) = Pool::load(runtime.clone(), vec![d.copy()]).await {
            tracing::warn!(source = %d.source, "this document does not load on its own: {e:#}");
            culprits.push((i, ivpol_runtime::load_failure(&e)));
        }
    }
    if culprits.is_empty() {
        return None;
    }
    let fewer: Vec<Document> = documents
        .iter()
        .enumerate()
        .map(|(i, d)| match culprits.iter().find(|(c, _)| *c == i) {
            Some((_, e)) => refused_copy(
                d,
                &format!("the component could not compile this document ({e})"),
            ),
            None => d.copy(),
        })
        .collect();
    let pool = Pool::load(runtime.clone(), fewer).await.ok()?;
    let names: Vec<&str> = culprits
        .iter()
        .map(|(i, _)| documents[*i].source.as_str())
        .collect();
    let why = format!(
        "the policy set did not load whole: {} could not be compiled on their own and are refused",
        names.join(", ")
    );
    tracing::error!("{why}");
    Some((pool, Some(why)))
}

/// `d` refused with `why` (its content a stub naming its object).
fn refused_copy(d: &Document, why: &str) -> Document {
    let mut one = [d.copy()];
    crate::budget::refuse_all(&mut one, why);
    let [out] = one;
    out
}
