//! What Kyverno copies from a policy's metadata into each of its report
//! results (`pkg/utils/report`, `ToPolicyReportResult`), and what Policy
//! Reporter filters and groups by: the annotations
//! `policies.kyverno.io/category`, `policies.kyverno.io/severity`
//! (critical, high, medium, low or info; anything else is left out) and
//! `policies.kyverno.io/scored` (`"false"` makes the results unscored); and
//! the label `reports.kyverno.io/disabled` (the policy's admission results
//! are not reported). Read once at load, from the document the policy came
//! from, so that the host writes reports without reading policies.

use super::spec::Metadata;

// Named in `ivpol_refs`, which the host reads too: its trimmed copies of
// cluster objects keep exactly these.
const CATEGORY: &str = ivpol_refs::POLICY_REPORT_ANNOTATIONS[0];
const SEVERITY: &str = ivpol_refs::POLICY_REPORT_ANNOTATIONS[1];
const SCORED: &str = ivpol_refs::POLICY_REPORT_ANNOTATIONS[2];
const EXCLUDE_REPORTING: &str = ivpol_refs::POLICY_REPORT_LABELS[0];

/// One policy's report metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReportMeta {
    /// `policies.kyverno.io/category`, when set and not empty.
    pub category: Option<String>,
    /// `policies.kyverno.io/severity`, when it is one Kyverno knows.
    pub severity: Option<&'static str>,
    /// False when `policies.kyverno.io/scored` is `"false"`.
    pub scored: bool,
    /// False when the policy is labelled `reports.kyverno.io/disabled`.
    pub reported: bool,
}

impl Default for ReportMeta {
    fn default() -> ReportMeta {
        ReportMeta {
            category: None,
            severity: None,
            scored: true,
            reported: true,
        }
    }
}

impl ReportMeta {
    /// The report metadata of a policy with `metadata`.
    pub fn of(metadata: &Metadata) -> ReportMeta {
        let text = |key: &str| metadata.annotations.get(key).map(String::as_str);
        ReportMeta {
            category: text(CATEGORY).filter(|c| !c.is_empty()).map(str::to_string),
            severity: text(SEVERITY).and_then(severity),
            scored: text(SCORED) != Some("false"),
            reported: !metadata.labels.contains_key(EXCLUDE_REPORTING),
        }
    }
}

/// Kyverno's `SeverityFromString`.
fn severity(s: &str) -> Option<&'static str> {
    ["critical", "high", "medium", "low", "info"]
        .into_iter()
        .find(|known| *known == s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata(annotations: &[(&str, &str)], labels: &[(&str, &str)]) -> Metadata {
        let map = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        Metadata {
            name: Some("p".into()),
            annotations: map(annotations),
            labels: map(labels),
            ..Metadata::default()
        }
    }

    #[test]
    fn the_report_annotations_are_read_as_kyverno_reads_them() {
        assert_eq!(ReportMeta::of(&metadata(&[], &[])), ReportMeta::default());
        let meta = ReportMeta::of(&metadata(
            &[
                (CATEGORY, "Supply chain"),
                (SEVERITY, "high"),
                (SCORED, "false"),
            ],
            &[(EXCLUDE_REPORTING, "")],
        ));
        assert_eq!(
            meta,
            ReportMeta {
                category: Some("Supply chain".into()),
                severity: Some("high"),
                scored: false,
                reported: false,
            }
        );
    }

    #[test]
    fn unknown_severities_empty_categories_and_other_scored_values_are_left_out() {
        let meta = ReportMeta::of(&metadata(
            &[(CATEGORY, ""), (SEVERITY, "urgent"), (SCORED, "no")],
            &[("team", "a")],
        ));
        assert_eq!(meta, ReportMeta::default());
    }
}
