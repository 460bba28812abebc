//! One request in, one answer out: `ivpol serve`'s admission routes over
//! the engine, with nothing wasm-specific, so it is tested natively.

use crate::cache::InstanceCache;
use ivpol_engine::engine::review::{Namespaces, Route};
use ivpol_engine::engine::{Phase, PolicySet};
use ivpol_oci::transport::Transport;
use ivpol_policy::policy::exception::ExceptionScope;
use ivpol_policy::policy::{LoadOptions, Refused, SourceDocument};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;

/// The largest AdmissionReview body read, as `ivpol serve`'s.
pub const MAX_BODY_BYTES: usize = 8 << 20;
/// The most policy files read from a directory.
pub const MAX_POLICY_FILES: usize = 1024;
/// The largest policy file read; a larger one is a diagnostic.
pub const MAX_POLICY_FILE_BYTES: u64 = 1 << 20;

/// The policies baked in at build time (`build.rs`).
const BAKED: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/baked.rs"));

/// An HTTP answer: status and JSON body.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub body: Vec<u8>,
}

/// The loaded policies, answering requests.
pub struct Webhook {
    set: PolicySet,
}

/// No cluster here: a policy that needs a Namespace's labels is answered
/// as `ivpol serve` answers it without `--kubernetes` or `--namespaces`.
struct NoNamespaces;

impl Namespaces for NoNamespaces {
    fn get(&self, _name: &str) -> Option<String> {
        None
    }
}

/// Policy documents as read: the files' contents, and the files that
/// could not be read (each a diagnostic, as in `ivpol serve`).
#[derive(Default)]
pub struct Documents {
    pub sources: Vec<SourceDocument>,
    pub refused: Vec<Refused>,
}

impl Documents {
    /// The policy files (`.yaml`, `.yml`, `.json`) of `dir`, in name
    /// order, at most [`MAX_POLICY_FILES`]; none when `dir` cannot be read.
    pub fn in_dir(dir: &Path) -> Option<Documents> {
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                let ext = p.extension().and_then(|x| x.to_str());
                matches!(ext, Some("yaml" | "yml" | "json"))
            })
            .take(MAX_POLICY_FILES)
            .collect();
        files.sort();
        let mut documents = Documents::default();
        for path in files {
            let source = path.display().to_string();
            match read_policy_file(&path) {
                Ok(content) => documents.sources.push(SourceDocument { source, content }),
                Err(why) => documents.refused.push(Refused {
                    reason: format!("{source}: {why}"),
                    source,
                    stub: String::new(),
                }),
            }
        }
        Some(documents)
    }

    /// The policies baked in when the component was built.
    pub fn baked() -> Documents {
        let sources = BAKED
            .iter()
            .map(|(name, content)| SourceDocument {
                source: (*name).to_string(),
                content: (*content).to_string(),
            })
            .collect();
        Documents {
            sources,
            refused: Vec::new(),
        }
    }
}

fn read_policy_file(path: &Path) -> Result<String, String> {
    let size = std::fs::metadata(path).map_err(|e| e.to_string())?.len();
    if size > MAX_POLICY_FILE_BYTES {
        return Err(format!("{size} bytes, more than {MAX_POLICY_FILE_BYTES}"));
    }
    std::fs::read_to_string(path).map_err(|e| e.to_string())
}

impl Webhook {
    /// `documents` loaded as `ivpol serve` loads policy files (exceptions
    /// from any namespace: the files are the operator's), with a cache of
    /// the instance's own.
    pub fn load(documents: Documents) -> Webhook {
        let options = LoadOptions {
            exceptions: ExceptionScope::Any,
            refused: documents.refused,
            without_host: true,
            ..Default::default()
        };
        let set = PolicySet::load_with_options(&documents.sources, options);
        let set = set.with_cache(Arc::new(InstanceCache::default()));
        Webhook { set }
    }

    /// Why each document that did not load was refused, one line each.
    pub fn diagnostics(&self) -> impl Iterator<Item = String> + '_ {
        self.set.diagnostics().iter().map(|d| {
            let name = d.policy.as_deref().unwrap_or("?");
            format!(
                "policy not loaded: {} (document {}, {name}): {}",
                d.source, d.document, d.message
            )
        })
    }

    /// The answer to `method path` with `body` (none: larger than
    /// [`MAX_BODY_BYTES`]), verifying through `transport`.
    pub fn answer(
        &self,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
        transport: Arc<dyn Transport + Send + Sync>,
    ) -> Reply {
        let path = ivpol_refs::route::normalised(path.split('?').next().unwrap_or_default());
        let Some(parsed) = ivpol_refs::route::parse(&path) else {
            return error(404, format!("no route for {method} {path}"));
        };
        if method != "POST" {
            return error(405, format!("{method} is not allowed on {path}: use POST"));
        }
        let Some(body) = body else {
            return error(
                413,
                format!("the body is larger than {MAX_BODY_BYTES} bytes"),
            );
        };
        let route = Route {
            phase: match parsed.mutate {
                true => Phase::Mutate,
                false => Phase::Validate,
            },
            namespaced: parsed.namespaced,
            names: parsed.names,
            trapped: Vec::new(),
        };
        match self.set.review(&route, body, &NoNamespaces, transport) {
            Ok(answer) => Reply {
                status: 200,
                body: answer.response,
            },
            Err(why) => unjudged(body, &why.to_string()),
        }
    }

    /// The longest policy timeout, which bounds each registry call.
    pub fn timeout_ns(&self) -> u64 {
        u64::from(self.set.max_timeout_seconds()) * 1_000_000_000
    }
}

/// A body that cannot be judged: denied by its uid, as `ivpol serve`
/// denies it, or a 400 when it has none.
fn unjudged(body: &[u8], why: &str) -> Reply {
    let uid = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v.pointer("/request/uid")?.as_str().map(str::to_string))
        .unwrap_or_default();
    if uid.is_empty() {
        return error(400, why.to_string());
    }
    let message = format!("the admission request cannot be evaluated: {why}");
    let review = json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {
            "uid": uid,
            "allowed": false,
            "status": { "status": "Failure", "message": message, "code": 400 }
        }
    });
    Reply {
        status: 200,
        body: review.to_string().into_bytes(),
    }
}

fn error(status: u16, message: String) -> Reply {
    Reply {
        status,
        body: json!({ "error": message, "code": status })
            .to_string()
            .into_bytes(),
    }
}

#[cfg(test)]
mod tests;
