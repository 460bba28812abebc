//! Policy reports in either API Kyverno writes: `wgpolicyk8s.io/v1alpha2`
//! PolicyReport and ClusterPolicyReport (its reports controller's default)
//! or `openreports.io/v1alpha1` Report and ClusterReport (its CLI's, and its
//! controller's with `--openreportsEnabled`).
//!
//! The component shapes them (WIT `reports`): the host hands it the
//! outcomes and the time, and says where a resource's report goes (API,
//! name, label), which is how it finds the reports it wrote again.

use super::resources::Subject;
use super::Outcome;
use anyhow::{Context, Result};
use ivpol_runtime::reports::{self, Placement, ReportShape};
use ivpol_runtime::Pool;
use serde_json::Value;
use std::time::{SystemTime, UNIX_EPOCH};

/// Which API reports are written in (`--report-api`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportApi {
    /// `wgpolicyk8s.io/v1alpha2` PolicyReport and ClusterPolicyReport:
    /// what Kyverno writes by default and Policy Reporter reads.
    #[default]
    Wgpolicyk8s,
    /// `openreports.io/v1alpha1` Report and ClusterReport.
    Openreports,
}

impl ReportApi {
    /// As the component names it.
    pub fn to_wit(self) -> reports::ReportApi {
        match self {
            ReportApi::Wgpolicyk8s => reports::ReportApi::Wgpolicyk8s,
            ReportApi::Openreports => reports::ReportApi::Openreports,
        }
    }

    pub(crate) fn api_version(self) -> &'static str {
        match self {
            ReportApi::Wgpolicyk8s => "wgpolicyk8s.io/v1alpha2",
            ReportApi::Openreports => "openreports.io/v1alpha1",
        }
    }

    /// The kind of a namespaced report, or of a cluster-wide one.
    pub(crate) fn kind(self, namespaced: bool) -> &'static str {
        match (self, namespaced) {
            (ReportApi::Wgpolicyk8s, true) => "PolicyReport",
            (ReportApi::Wgpolicyk8s, false) => "ClusterPolicyReport",
            (ReportApi::Openreports, true) => "Report",
            (ReportApi::Openreports, false) => "ClusterReport",
        }
    }

    /// The namespaced kind's resource name (the plural).
    pub fn plural(self) -> &'static str {
        match self {
            ReportApi::Wgpolicyk8s => "policyreports",
            ReportApi::Openreports => "reports",
        }
    }
}

/// How `scan --kubernetes` names and labels the reports it writes.
#[derive(Clone, Copy, Debug)]
pub struct Style {
    pub api: ReportApi,
    /// Kyverno's own names (the resource's UID) and its
    /// `app.kubernetes.io/managed-by: kyverno` label, as Kyverno's chainsaw
    /// asserts require; otherwise `ivpol-<uid>` and `managed-by: ivpol`, so
    /// that ivpol's reports and Kyverno's live side by side.
    pub kyverno_names: bool,
}

/// The label every report ivpol writes carries.
pub(crate) const MANAGED_BY: &str = "app.kubernetes.io/managed-by";

impl Style {
    /// The name of the report about the resource with `uid`.
    pub fn name_for(self, uid: &str) -> String {
        match self.kyverno_names {
            true => uid.to_string(),
            false => format!("ivpol-{uid}"),
        }
    }

    /// The value of [`MANAGED_BY`].
    pub(crate) fn managed_by(self) -> &'static str {
        match self.kyverno_names {
            true => "kyverno",
            false => "ivpol",
        }
    }

    /// Where the report about `subject` goes; none without a UID.
    pub(crate) fn placement(self, subject: &Subject) -> Option<Placement> {
        Some(Placement {
            api_version: self.api.api_version().into(),
            kind: self.api.kind(true).into(),
            name: self.name_for(subject.uid.as_deref()?),
            managed_by: self.managed_by().into(),
        })
    }
}

/// `outcomes` in Kyverno's `shape`, as the component words them (WIT
/// `reports.shape`), results stamped now.
pub async fn shape<'a>(
    pool: &Pool,
    outcomes: impl IntoIterator<Item = &'a Outcome>,
    shape: ReportShape,
) -> Result<Vec<String>> {
    let outcomes: Vec<reports::Outcome> = outcomes.into_iter().map(Outcome::to_wit).collect();
    pool.shape(&outcomes, &shape, now_seconds()).await
}

/// One text `shape` makes (the apply text, the error blocks).
pub async fn text(pool: &Pool, outcomes: &[Outcome], shape: ReportShape) -> Result<String> {
    Ok(self::shape(pool, outcomes, shape).await?.concat())
}

/// The JSON documents `shape` makes (results, reports).
pub async fn documents(
    pool: &Pool,
    outcomes: &[Outcome],
    shape: ReportShape,
) -> Result<Vec<Value>> {
    (self::shape(pool, outcomes, shape).await?.iter())
        .map(|d| serde_json::from_str(d).context("the component's report"))
        .collect()
}

/// `ivpol scan --kubernetes`: the report about `subject`, as the
/// component shapes it, placed as `style` says; none when the subject has
/// no UID or namespace, or `outcomes` is empty.
pub async fn for_resource(
    pool: &Pool,
    style: Style,
    subject: &Subject,
    outcomes: &[&Outcome],
) -> Result<Option<Value>> {
    let Some(place) = style.placement(subject) else {
        return Ok(None);
    };
    let shape = ReportShape::ResourceReport((place, subject.to_wit()));
    let shaped = self::shape(pool, outcomes.iter().copied(), shape).await?;
    let report = shaped.first().map(|r| serde_json::from_str(r));
    report.transpose().context("the component's report")
}

/// Seconds since the epoch, for `timestamp.seconds`.
pub fn now_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Reports as YAML documents (`---` between them), or as JSON, one per line.
pub fn render(reports: &[Value], json: bool) -> String {
    let mut out = String::new();
    for (i, r) in reports.iter().enumerate() {
        if json {
            out.push_str(&r.to_string());
            out.push('\n');
            continue;
        }
        if i > 0 {
            out.push_str("---\n");
        }
        out.push_str(&serde_yaml_ng::to_string(r).unwrap_or_default());
    }
    out
}
