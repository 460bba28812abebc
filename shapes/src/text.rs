//! `kyverno apply`'s default text, byte for byte: the `Applying ...` line,
//! one block per failed policy and resource, and the counts.

use super::{Counts, Outcome, Status};
use std::fmt::Write;

/// `\nApplying N policy rule(s) to M resource(s)[ with K exception(s)]...\n`
pub fn applying(policies: u32, resources: u32, exceptions: u32) -> String {
    match exceptions {
        0 => format!("\nApplying {policies} policy rule(s) to {resources} resource(s)...\n"),
        k => format!(
            "\nApplying {policies} policy rule(s) to {resources} resource(s) with {k} exception(s)...\n"
        ),
    }
}

/// Where a result is about: `ns/Kind/name`, or `JSON payload`.
fn resource_path(o: &Outcome) -> String {
    match &o.subject {
        Some(s) => s.path(),
        None => "JSON payload".into(),
    }
}

/// One block per error: `policy <p> -> resource <r> error:`, then
/// `1 - <rule> <message>`, then an empty line.
pub fn errors(outcomes: &[Outcome]) -> String {
    let mut out = String::new();
    for o in outcomes.iter().filter(|o| o.status == Status::Error) {
        block(&mut out, o, "error");
    }
    out
}

/// Each IVP response holds one rule, so the number is always 1.
fn block(out: &mut String, o: &Outcome, verb: &str) {
    let _ = writeln!(
        out,
        "policy {} -> resource {} {verb}:",
        o.policy,
        resource_path(o)
    );
    let _ = writeln!(out, "1 - {} {}", o.entry.rule, o.message);
    out.push('\n');
}

/// The failure blocks in result order (`failed:`, or `failed as audit
/// warning:` for a failure `--audit-warn` made a warning), then `pass: X,
/// fail: Y, warn: W, error: Z, skip: S \n` (Kyverno's trailing space
/// included) after one empty line: the blank line that ends the last
/// block, or its own when nothing failed.
pub fn failures_and_counts(outcomes: &[Outcome]) -> String {
    let mut out = String::new();
    for o in outcomes {
        match o.status {
            Status::Fail => block(&mut out, o, "failed"),
            Status::Warn => block(&mut out, o, "failed as audit warning"),
            _ => {}
        }
    }
    if out.is_empty() {
        out.push('\n');
    }
    let c = Counts::of(outcomes.iter().map(|o| o.status));
    let _ = writeln!(
        out,
        "pass: {}, fail: {}, warn: {}, error: {}, skip: {} ",
        c.pass, c.fail, c.warn, c.error, c.skip
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;
    use crate::Subject;

    fn outcome(name: &str, status: Status, message: &str) -> Outcome {
        let subject = Subject {
            api_version: "apps/v1".into(),
            kind: "StatefulSet".into(),
            name: name.into(),
            namespace: Some("default".into()),
            uid: None,
        };
        let mut o = fixture::outcome(Some(&subject), "ivpol-sample", status);
        o.message = message.into();
        o
    }

    /// The text of Kyverno's chainsaw test `apply-ivps-in-cluster-mode-with-polex`.
    #[test]
    fn matches_kyvernos_apply_text() {
        let outcomes = vec![
            outcome("good-statefulset", Status::Pass, "success"),
            outcome(
                "bad-statefulset",
                Status::Fail,
                "failed to verify image with notary cert",
            ),
            outcome("skipped-statefulset", Status::Skip, "skipped"),
        ];
        let text = applying(1, 3, 1) + &failures_and_counts(&outcomes);
        assert_eq!(
            text.trim(),
            "Applying 1 policy rule(s) to 3 resource(s) with 1 exception(s)...\n\
             policy ivpol-sample -> resource default/StatefulSet/bad-statefulset failed:\n\
             1 - ivpol-sample failed to verify image with notary cert\n\
             \n\
             pass: 1, fail: 1, warn: 0, error: 0, skip: 1"
        );
        assert_eq!(
            failures_and_counts(&outcomes[..1]),
            "\npass: 1, fail: 0, warn: 0, error: 0, skip: 0 \n"
        );
        assert_eq!(
            applying(2, 1, 0),
            "\nApplying 2 policy rule(s) to 1 resource(s)...\n"
        );
    }

    #[test]
    fn errors_and_warnings_get_their_own_verbs() {
        let mut warned = outcome("w", Status::Warn, "soon");
        warned.policy = "audit".into();
        let errored = outcome("e", Status::Error, "internal error: x");
        let outcomes = [warned, errored];
        assert!(failures_and_counts(&outcomes).starts_with(
            "policy audit -> resource default/StatefulSet/w failed as audit warning:\n"
        ));
        assert_eq!(
            errors(&outcomes),
            "policy ivpol-sample -> resource default/StatefulSet/e error:\n\
             1 - ivpol-sample internal error: x\n\n"
        );
        let mut payload = outcome("p", Status::Error, "m");
        payload.subject = None;
        assert!(errors(&[payload]).contains("-> resource JSON payload error:"));
    }
}
