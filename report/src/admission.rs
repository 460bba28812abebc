//! Admission results in the per-resource policy reports `ivpol scan`
//! writes, as Kyverno's admission reports and its reports controller put
//! them there (`pkg/webhooks/resource/ivpol` `audit`,
//! `pkg/controllers/report`).
//!
//! Which results: the component says, as Kyverno's audit handler decides
//! (WIT `answer.reported`: a validate request, not a dry run nor a DELETE,
//! about a namespaced object with a UID, that no policy which denies
//! judged), and each result says whether its policy is reported at all
//! (`report.reported`: not labelled `reports.kyverno.io/disabled`). The
//! results' wording is the component's too (`report-entry`).
//!
//! How, with several replicas and one writer:
//! 1. every replica collects the results it judged, at most
//!    [`MAX_PENDING`] resources (beyond that they are dropped and
//!    counted), and every [`FLUSH_EVERY`] writes them as `AdmissionResults`
//!    objects (ivpol's own kind, in ivpol's namespace, where tenants
//!    cannot write; Kyverno's EphemeralReports), each at most
//!    [`MAX_OBJECT_BYTES`];
//! 2. the elected leader alone reads them, at most
//!    [`MAX_OBJECTS_PER_ROUND`] every [`MERGE_EVERY`], merges each
//!    resource's results into its report (a result replaces an older one of
//!    the same policy and rule, as Kyverno's aggregation keeps the newest),
//!    writes the reports and deletes what it merged.
//!
//! The entries and the reports are the component's shapes (WIT `reports`),
//! made by the live generation's pool; the host only carries them.

use super::policy_report::{self, Style};
use super::resources::Subject;
use super::Outcome;
use anyhow::{Context, Result};
use ivpol_cluster::live::Live;
use ivpol_cluster::Cluster;
use ivpol_runtime::metrics::{metrics, ResultLabels};
use ivpol_runtime::reports::ReportShape;
use ivpol_runtime::resources::api_resource;
use ivpol_runtime::{wit, Pool};
use kube::api::{ApiResource, DeleteParams, DynamicObject, ListParams, PostParams};
use kube::{Api, Client};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

/// The flags of `serve` for admission reports.
#[derive(clap::Args, Clone, Default)]
pub struct AdmissionReportArgs {
    /// Put the results of admission requests that no matching policy
    /// denies (Audit and Warn policies) into each resource's policy report,
    /// as Kyverno's admission reports do: every replica hands its results
    /// to the leader through AdmissionResults objects in ivpol's namespace
    /// (`deploy/crds`), and the leader alone writes the reports.
    #[arg(long = "admission-reports")]
    pub admission_reports: bool,
    /// The reports' API (with --admission-reports): wgpolicyk8s.io
    /// PolicyReport, Kyverno's default, or openreports.io Report.
    #[arg(
        long = "report-api",
        value_enum,
        default_value = "wgpolicyk8s",
        requires = "admission_reports"
    )]
    pub report_api: policy_report::ReportApi,
    /// Name the reports after the resource's UID and label them
    /// `managed-by: kyverno`, as Kyverno does (with --admission-reports);
    /// by default `ivpol-<uid>`, `managed-by: ivpol`, so that the two live
    /// side by side.
    #[arg(long = "kyverno-report-names", requires = "admission_reports")]
    pub kyverno_report_names: bool,
}

impl AdmissionReportArgs {
    /// The reports' API and names.
    pub fn style(&self) -> Style {
        Style {
            api: self.report_api,
            kyverno_names: self.kyverno_report_names,
        }
    }
}

/// How often a replica writes what it collected.
pub(crate) const FLUSH_EVERY: Duration = Duration::from_secs(5);
/// How often the leader merges what the replicas wrote.
pub(crate) const MERGE_EVERY: Duration = Duration::from_secs(5);
/// Most resources whose results wait in one replica.
pub(crate) const MAX_PENDING: usize = 1_000;
/// Largest `AdmissionResults` object written (etcd takes 1.5 MiB).
pub(crate) const MAX_OBJECT_BYTES: usize = 512 * 1024;
/// Most `AdmissionResults` objects the leader merges in one round.
pub(crate) const MAX_OBJECTS_PER_ROUND: u32 = 50;

/// The kind the replicas hand their results to the leader in.
fn results_resource() -> ApiResource {
    api_resource(
        "reports.ivpol.dev/v1alpha1",
        "AdmissionResults",
        "admissionresults",
    )
}

/// What an admission request was about, as the component parsed it.
#[derive(Clone, Copy)]
pub struct Request<'a> {
    pub api_version: &'a str,
    pub kind: &'a str,
    pub name: &'a str,
    pub namespace: &'a str,
    pub object_uid: &'a str,
}

/// The results one replica judged and has not written yet.
#[derive(Default)]
pub struct Collector {
    pending: Mutex<Vec<(Subject, Vec<Outcome>)>>,
}

fn count(what: &str, n: usize) {
    metrics()
        .admission_report_results
        .get_or_create(&ResultLabels {
            result: what.into(),
        })
        .inc_by(n as u64);
}

impl Collector {
    /// Keeps `verdict`'s results about `request`, which the component
    /// said are reported (WIT `answer.reported`), leaving out those of
    /// policies whose results are not (`report.reported`).
    pub fn record(&self, request: &Request<'_>, verdict: &wit::Verdict) {
        let subject = subject(request);
        let outcomes: Vec<Outcome> = (verdict.results.iter())
            .filter(|r| r.report.as_ref().is_some_and(|e| e.reported))
            .filter_map(|r| Outcome::new(Some(subject.clone()), r))
            .collect();
        if outcomes.is_empty() {
            return;
        }
        let n = outcomes.len();
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        if pending.len() >= MAX_PENDING {
            count("dropped", n);
            return;
        }
        pending.push((subject, outcomes));
        count("collected", n);
    }

    fn take(&self) -> Vec<(Subject, Vec<Outcome>)> {
        std::mem::take(&mut *self.pending.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// The report subject of `request`.
fn subject(request: &Request<'_>) -> Subject {
    Subject {
        api_version: request.api_version.to_string(),
        kind: request.kind.to_string(),
        name: request.name.to_string(),
        namespace: Some(request.namespace.to_string()),
        uid: Some(request.object_uid.to_string()),
    }
}

/// Starts writing what `collector` gathers (every replica), and merging
/// it into reports (while `leading`), with the component of `live`'s
/// current generation shaping both.
pub fn start(
    collector: Arc<Collector>,
    live: Arc<Live>,
    cluster: Arc<Cluster>,
    style: Style,
    leading: watch::Receiver<bool>,
) {
    let client = cluster.client.clone();
    let namespace = cluster.own_namespace.clone();
    let (flush_client, flush_namespace) = (client.clone(), namespace.clone());
    let flush_live = live.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(FLUSH_EVERY);
        loop {
            tick.tick().await;
            let batch = collector.take();
            if batch.is_empty() {
                continue;
            }
            let written = async {
                let entries = entries(&flush_live, batch).await?;
                write(&flush_client, &flush_namespace, entries).await
            };
            if let Err(e) = written.await {
                tracing::warn!("admission results for reports not written: {e:#}");
            }
        }
    });
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(MERGE_EVERY);
        loop {
            tick.tick().await;
            if !*leading.borrow() {
                continue;
            }
            if let Err(e) = merge_round(&live, &client, &namespace, style).await {
                tracing::warn!("admission results not merged into reports: {e:#}");
            }
        }
    });
}

/// One `{scope, results}` entry per resource, as the component shapes
/// them. A batch it cannot shape is dropped (and counted).
async fn entries(live: &Live, batch: Vec<(Subject, Vec<Outcome>)>) -> Result<Vec<Value>> {
    let outcomes: Vec<Outcome> = batch.into_iter().flat_map(|(_, o)| o).collect();
    let pool = live.current().pool.clone();
    let shaped = policy_report::documents(&pool, &outcomes, ReportShape::AdmissionEntries).await;
    if shaped.is_err() {
        count("dropped", outcomes.len());
    }
    shaped
}

/// Writes `entries` as `AdmissionResults` objects of at most
/// [`MAX_OBJECT_BYTES`]; an entry larger than that alone is dropped.
async fn write(client: &Client, namespace: &str, entries: Vec<Value>) -> Result<()> {
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), namespace, &results_resource());
    let chunks = chunks(entries, MAX_OBJECT_BYTES);
    for (i, chunk) in chunks.iter().enumerate() {
        let object = json!({
            "apiVersion": "reports.ivpol.dev/v1alpha1",
            "kind": "AdmissionResults",
            "metadata": {"generateName": "ivpol-admission-", "namespace": namespace},
            "spec": {"resources": chunk},
        });
        let object: DynamicObject = serde_json::from_value(object)?;
        if let Err(e) = api.create(&PostParams::default(), &object).await {
            // This object's results and those of the ones not written.
            let lost = chunks[i..].iter().flatten().map(results_of).sum();
            count("dropped", lost);
            return Err(e).context("writing AdmissionResults (is its CRD installed?)");
        }
    }
    Ok(())
}

fn results_of(entry: &Value) -> usize {
    entry["results"].as_array().map_or(0, Vec::len)
}

/// `entries` in groups whose JSON stays within `max` bytes; an entry
/// larger than `max` alone is dropped (and counted).
fn chunks(entries: Vec<Value>, max: usize) -> Vec<Vec<Value>> {
    let mut out: Vec<Vec<Value>> = Vec::new();
    let mut size = 0;
    for entry in entries {
        let len = entry.to_string().len() + 1;
        if len > max {
            count("dropped", results_of(&entry));
            continue;
        }
        match out.last_mut() {
            Some(last) if size + len <= max => last.push(entry),
            _ => {
                out.push(vec![entry]);
                size = 0;
            }
        }
        size += len;
    }
    out
}

/// One round of the leader: the oldest `AdmissionResults`, merged into
/// their resources' reports, then deleted.
async fn merge_round(live: &Live, client: &Client, namespace: &str, style: Style) -> Result<()> {
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), namespace, &results_resource());
    let mut objects = api
        .list(&ListParams::default().limit(MAX_OBJECTS_PER_ROUND))
        .await
        .context("listing AdmissionResults")?
        .items;
    if objects.is_empty() {
        return Ok(());
    }
    objects.sort_by_key(|o| {
        (
            o.metadata.creation_timestamp.clone(),
            o.metadata.name.clone(),
        )
    });
    let mut by_resource: BTreeMap<(String, String), (Subject, Vec<Value>)> = BTreeMap::new();
    for object in &objects {
        let entries = object.data["spec"]["resources"].as_array().cloned();
        for entry in entries.unwrap_or_default() {
            let Some(subject) = subject_of(&entry["scope"]) else {
                continue;
            };
            let key = (
                subject.namespace.clone().unwrap_or_default(),
                subject.uid.clone().unwrap_or_default(),
            );
            let slot = by_resource
                .entry(key)
                .or_insert_with(|| (subject, Vec::new()));
            let results = entry["results"].as_array().cloned().unwrap_or_default();
            slot.1.extend(results);
        }
    }
    let mut written = 0;
    let pool = live.current().pool.clone();
    for (subject, results) in by_resource.into_values() {
        written += results.len();
        merge_into_report(&pool, client, style, &subject, results).await?;
    }
    count("written", written);
    for object in objects {
        let name = object.metadata.name.unwrap_or_default();
        api.delete(&name, &DeleteParams::default())
            .await
            .with_context(|| format!("deleting AdmissionResults {name}"))?;
    }
    Ok(())
}

/// The scope of an entry as a report subject; none when it is not one.
fn subject_of(scope: &Value) -> Option<Subject> {
    let text = |k: &str| {
        scope[k]
            .as_str()
            .filter(|v| !v.is_empty())
            .map(String::from)
    };
    Some(Subject {
        api_version: text("apiVersion")?,
        kind: text("kind")?,
        name: text("name")?,
        namespace: Some(text("namespace")?),
        uid: Some(text("uid")?),
    })
}

/// Merges `results` (in the order they were written) into the report about
/// `subject` as it is now, as the component merges them, and writes it
/// back.
async fn merge_into_report(
    pool: &Pool,
    client: &Client,
    style: Style,
    subject: &Subject,
    results: Vec<Value>,
) -> Result<()> {
    let Some(place) = style.placement(subject) else {
        return Ok(());
    };
    let namespace = subject.namespace.as_deref().unwrap_or_default();
    let existing = super::kubernetes::get_report(client, style, namespace, &place.name)
        .await?
        .and_then(|r| r["results"].as_array().cloned())
        .unwrap_or_default();
    let texts = |values: &[Value]| values.iter().map(Value::to_string).collect::<Vec<_>>();
    let merged = pool
        .merge_resource_report(
            &place,
            &subject.to_wit(),
            &texts(&existing),
            &texts(&results),
        )
        .await?;
    let Some(report) = merged else {
        return Ok(());
    };
    let report = serde_json::from_str(&report).context("the component's report")?;
    super::kubernetes::apply_reports(client, style, &[report]).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_stay_within_their_byte_bound() {
        let entry = |n: usize| json!({"scope": {}, "results": [{"message": "x".repeat(n)}]});
        let groups = chunks(vec![entry(100), entry(100), entry(100), entry(5000)], 300);
        assert_eq!(groups.iter().map(Vec::len).collect::<Vec<_>>(), [2, 1]);
    }

    fn policy_result(policy: &str, reported: bool) -> wit::PolicyResult {
        wit::PolicyResult {
            policy: policy.into(),
            namespace: None,
            status: wit::Status::Fail,
            message: "m".into(),
            actions: wit::Actions::AUDIT,
            audit_annotations: vec![],
            exceptions: vec![],
            verifications: vec![],
            report: Some(wit::ReportEntry {
                properties: vec![("process".into(), "admission review".into())],
                reported,
                audit: true,
                ..crate::test_entry(policy, "m")
            }),
        }
    }

    /// Which requests are reported is the component's word
    /// (`engine::review::admission_reported`); the collector keeps the
    /// results of the policies that are reported at all, as the component
    /// words them.
    #[test]
    fn the_results_of_policies_labelled_not_reported_are_left_out() {
        let request = Request {
            api_version: "v1",
            kind: "Pod",
            name: "p",
            namespace: "team",
            object_uid: "u1",
        };
        let verdict = |results| wit::Verdict {
            allowed: true,
            message: None,
            warnings: vec![],
            patch: None,
            results,
        };
        let collector = Collector::default();
        collector.record(
            &request,
            &verdict(vec![policy_result("a", true), policy_result("b", false)]),
        );
        collector.record(&request, &verdict(vec![policy_result("c", false)]));
        let taken = collector.take();
        assert_eq!(
            taken.len(),
            1,
            "a request with nothing reported is not kept"
        );
        let (subject, outcomes) = &taken[0];
        assert_eq!(subject.uid.as_deref(), Some("u1"));
        let policies: Vec<&str> = outcomes.iter().map(|o| o.policy.as_str()).collect();
        assert_eq!(policies, ["a"]);
        assert_eq!(
            outcomes[0].to_wit().entry.properties,
            [("process".to_string(), "admission review".to_string())]
        );
    }
}
