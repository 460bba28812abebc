//! The WIT glue of `ivpol:admission/reports`: Kyverno's shapes of results
//! (`ivpol-shapes`), over the records the runner hands back.

use super::exports::ivpol::admission::reports::{
    Guest, Outcome, Placement, ReportApi, ReportShape, ReportStatus, ResourceRef,
};
use super::Component;
use ivpol_shapes::{report, text};

impl Guest for Component {
    fn shape(outcomes: Vec<Outcome>, shape: ReportShape, seconds: u64) -> Vec<String> {
        let outcomes: Vec<ivpol_shapes::Outcome> = outcomes.into_iter().map(outcome).collect();
        let json = |values: Vec<serde_json::Value>| values.iter().map(|v| v.to_string()).collect();
        match shape {
            ReportShape::ApplyHeader(h) => {
                vec![text::applying(h.policies, h.resources, h.exceptions)]
            }
            ReportShape::ApplyTable => vec![text::failures_and_counts(&outcomes)],
            ReportShape::Errors => vec![text::errors(&outcomes)],
            ReportShape::ResultsAndSummary => {
                json(vec![report::results_and_summary(&outcomes, seconds)])
            }
            ReportShape::ReportsByPolicy => json(report::by_policy(&outcomes, seconds)),
            ReportShape::ReportsByNamespace((api, name)) => json(report::by_resource_namespace(
                report_api(api),
                &outcomes,
                &name,
                seconds,
            )),
            ReportShape::ResourceReport((place, resource)) => {
                let results = report::resource_results(&outcomes, seconds);
                let report =
                    report::resource_report(&placement(place), &subject(resource), results);
                json(report.into_iter().collect())
            }
            ReportShape::AdmissionEntries => json(report::admission_entries(&outcomes, seconds)),
        }
    }

    fn merge_resource_report(
        place: Placement,
        resource: ResourceRef,
        older: Vec<String>,
        newer: Vec<String>,
    ) -> Option<String> {
        // What a report held, or a replica wrote, that is not JSON is no result.
        let parse = |texts: Vec<String>| -> Vec<serde_json::Value> {
            (texts.iter())
                .filter_map(|t| serde_json::from_str(t).ok())
                .collect()
        };
        let results = report::merged(parse(older), parse(newer));
        report::resource_report(&placement(place), &subject(resource), results)
            .map(|r| r.to_string())
    }
}

fn outcome(o: Outcome) -> ivpol_shapes::Outcome {
    let e = o.entry;
    ivpol_shapes::Outcome {
        subject: o.resource.map(subject),
        policy: o.policy,
        policy_namespace: o.policy_namespace,
        status: match o.status {
            ReportStatus::Pass => ivpol_shapes::Status::Pass,
            ReportStatus::Fail => ivpol_shapes::Status::Fail,
            ReportStatus::Warn => ivpol_shapes::Status::Warn,
            ReportStatus::Error => ivpol_shapes::Status::Error,
            ReportStatus::Skip => ivpol_shapes::Status::Skip,
        },
        message: o.message,
        entry: ivpol_shapes::Entry {
            policy: e.policy,
            rule: e.rule,
            message: e.message,
            properties: e.properties,
            category: e.category,
            severity: e.severity,
            scored: e.scored,
        },
    }
}

fn subject(r: ResourceRef) -> ivpol_shapes::Subject {
    ivpol_shapes::Subject {
        api_version: r.api_version,
        kind: r.kind,
        name: r.name,
        namespace: r.namespace,
        uid: r.uid,
    }
}

fn report_api(api: ReportApi) -> report::ReportApi {
    match api {
        ReportApi::Wgpolicyk8s => report::ReportApi::Wgpolicyk8s,
        ReportApi::Openreports => report::ReportApi::Openreports,
    }
}

fn placement(p: Placement) -> report::Placement {
    report::Placement {
        api_version: p.api_version,
        kind: p.kind,
        name: p.name,
        managed_by: p.managed_by,
    }
}
