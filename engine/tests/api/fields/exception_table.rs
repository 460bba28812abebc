//! The PolicyException table: the proof for every `spec` path.

use super::*;

/// The PolicyException table: one entry per `spec` path.
pub(super) fn exception_table() -> BTreeMap<&'static str, Proof> {
    let mut t = BTreeMap::new();
    let skip_p =
        "  matchConditions:\n    - name: c\n      expression: \"object.metadata.name == 'p'\"\n";
    t.insert("spec.policyRefs", Parent);
    t.insert(
        "spec.policyRefs[].name",
        verdict(
            with_exception(skip_p),
            with_exception(skip_p).replace("    - name: f\n", "    - name: g\n"),
        ),
    );
    t.insert(
        "spec.policyRefs[].kind",
        verdict(
            with_exception(skip_p),
            with_exception(skip_p).replace(
                "      kind: ImageValidatingPolicy\n",
                "      kind: ValidatingPolicy\n",
            ),
        ),
    );
    t.insert("spec.matchConditions", Parent);
    t.insert(
        "spec.matchConditions[].expression",
        verdict(
            with_exception(skip_p),
            with_exception(&skip_p.replace("== 'p'", "== 'q'")),
        ),
    );
    // The name is part of the error when the condition fails to evaluate.
    let erring = "  matchConditions:\n    - name: c\n      expression: \"object.nope == 1\"\n";
    t.insert(
        "spec.matchConditions[].name",
        verdict(
            with_exception(erring),
            with_exception(&erring.replace("name: c", "name: d")),
        ),
    );
    t.insert(
        "spec.expiresAt",
        verdict(
            with_exception(&format!("{skip_p}  expiresAt: '2999-01-01T00:00:00Z'\n")),
            with_exception(&format!("{skip_p}  expiresAt: '2001-01-01T00:00:00Z'\n")),
        ),
    );
    t.insert(
        "spec.reportResult",
        verdict(
            with_exception(&format!("{skip_p}  reportResult: skip\n")),
            with_exception(&format!("{skip_p}  reportResult: pass\n")),
        ),
    );
    for (path, line) in [
        ("spec.allowedValues", "  allowedValues: [x]\n"),
        ("spec.images", "  images: [x]\n"),
        ("spec.evaluationMode", "  evaluationMode: Kubernetes\n"),
        ("spec.properties", "  properties:\n    ticket: T-1\n"),
    ] {
        t.insert(path, Refused(exception(&format!("{skip_p}{line}"))));
    }
    t
}
