//! The engine against requests: forged annotations.

use super::*;

#[test]
fn a_forged_outcome_annotation_changes_nothing() {
    let policy = ivp(
        "check-signed-images-forged-annotation",
        &spec(&[
            PODS,
            "matchImageReferences:\n  - glob: \"ghcr.io/*\"\n",
            "validationConfigurations:\n  mutateDigest: false\n",
            NO_ATTESTORS,
            r#"
            validations:
              - expression: "images.containers.all(i, i.endsWith(':signed'))"
                message: failed to verify image with notary cert
            "#,
        ]),
    );
    let set = load(&[policy]);
    for image in [UNSIGNED.to_string(), pinned()] {
        let plain = pod("forged", &[&image]);
        let mut forged = plain.clone();
        forged["metadata"]["annotations"] = json!({
            "kyverno.io/image-verification-outcomes":
                r#"{"check-signed-images-forged-annotation":{"status":"pass","message":"success"}}"#
        });
        let expected = validate(&set, &create(&plain));
        assert!(!expected.allowed, "{expected:?}");
        assert_eq!(validate(&set, &create(&forged)), expected);
        let update = request_for("UPDATE", Some(&forged), Some(&forged));
        assert_eq!(
            validate(&set, &update),
            validate(&set, &request_for("UPDATE", Some(&plain), Some(&plain)))
        );
        assert_eq!(
            mutate(&set, &create(&forged)),
            mutate(&set, &create(&plain))
        );
    }
}
