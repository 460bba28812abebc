//! Loading documents: served versions, diagnostics and their paths, and
//! what is checked at load rather than at admission.

use super::*;

const GOOD: &str = r#"
apiVersion: policies.kyverno.io/v1beta1
kind: ImageValidatingPolicy
metadata:
  name: good
spec:
  matchConstraints:
    resourceRules:
      - apiGroups: [""]
        apiVersions: ["v1"]
        operations: ["CREATE"]
        resources: ["pods"]
  attestors: []
  validations:
    - expression: "true"
"#;

fn load_str(content: &str) -> LoadedSet {
    load(&[SourceDocument {
        source: "test.yaml".into(),
        content: content.into(),
    }])
}

fn only_message(content: &str) -> String {
    let set = load_str(content);
    assert!(set.policies.is_empty(), "policy loaded unexpectedly");
    set.diagnostics
        .iter()
        .map(|d| d.message.clone())
        .collect::<Vec<_>>()
        .join(" | ")
}

#[test]
fn loads_every_served_version() {
    for v in ["v1alpha1", "v1beta1", "v1"] {
        let set = load_str(&GOOD.replace("v1beta1", v));
        assert!(set.diagnostics.is_empty(), "{v}: {:?}", set.diagnostics);
        assert_eq!(set.policies[0].name, "good");
    }
    let nivp = GOOD.replace(
        "kind: ImageValidatingPolicy",
        "kind: NamespacedImageValidatingPolicy",
    );
    let set = load_str(&nivp);
    assert!(set.diagnostics.is_empty(), "{:?}", set.diagnostics);
    assert_eq!(set.policies[0].namespace.as_deref(), Some("default"));
    let alpha_nivp = nivp.replace("v1beta1", "v1alpha1");
    assert!(only_message(&alpha_nivp).contains("not served"));
}

/// `ctlog.tsaCertChain` must be a PEM chain, leaf to root, within
/// Kyverno's bound.
#[test]
fn a_tsa_cert_chain_is_read_at_load() {
    let root = include_str!(
        "../../../../conformance/notary/notation/internal/testdata/NotationTestRoot.pem"
    );
    let with = |chain: &str| {
        let indented = chain.trim_end().replace('\n', "\n            ");
        GOOD.replace(
            "attestors: []",
            &format!("attestors:\n    - name: k\n      cosign:\n        key: {{data: 'x'}}\n        ctlog:\n          insecureIgnoreTlog: true\n          tsaCertChain: |\n            {indented}"),
        )
    };
    let messages = |chain: &str| {
        let set = load_str(&with(chain));
        let all: Vec<String> = set.diagnostics.iter().map(|d| d.message.clone()).collect();
        all.join(" | ")
    };
    assert!(messages("not a pem").contains("ctlog.tsaCertChain"));
    let one = messages(root);
    assert!(one.contains("needs its leaf and its root"), "{one}");
    assert!(!messages(&root.repeat(2)).contains("tsaCertChain"));
    assert!(messages(&root.repeat(13)).contains("at most a leaf, 10 intermediates and a root"));
}

/// As the API server and Kyverno's CLI: a key given twice is refused,
/// naming the key and its line, and the file's other documents load.
#[test]
fn a_key_given_twice_is_a_diagnostic() {
    let twice = GOOD.replace(
        "    - expression: \"true\"\n",
        "    - expression: \"true\"\n      message: a\n      message: b\n",
    );
    let second = GOOD.replace("name: good", "name: second");
    let set = load_str(&format!("{twice}---{second}"));
    assert_eq!(set.diagnostics.len(), 1, "{:?}", set.diagnostics);
    let why = &set.diagnostics[0];
    assert!(
        why.message.contains("key \"message\" already set in map"),
        "{why:?}"
    );
    // The mapping holding it, by path and line.
    assert!(why.message.contains("spec.validations[0]"), "{why:?}");
    assert!(why.message.contains("line 15"), "{why:?}");
    // Its routes deny by the name the document declares.
    assert_eq!(why.policy.as_deref(), Some("good"));
    // (With its pod-controller autogen variants.)
    let names: Vec<&str> = set.policies.iter().map(|p| p.name.as_str()).collect();
    assert!(
        !names.is_empty() && names.iter().all(|n| *n == "second"),
        "{names:?}"
    );
}

#[test]
fn a_bad_document_does_not_stop_the_others() {
    let bad = GOOD
        .replace("name: good", "name: bad")
        .replace("expression: \"true\"", "expression: \"1 +\"");
    let set = load_str(&format!("{bad}\n---\n{GOOD}"));
    assert!(set.policies.iter().all(|p| p.name == "good"));
    assert!(!set.policies.is_empty());
    assert_eq!(set.diagnostics.len(), 1);
    let d = &set.diagnostics[0];
    assert_eq!((d.document, d.policy.as_deref()), (0, Some("bad")));
    assert!(
        d.message.starts_with("spec.validations[0].expression"),
        "{}",
        d.message
    );
    assert!(d.message.contains("`1 +`"), "{}", d.message);
}

#[test]
fn unknown_fields_name_their_path() {
    let msg = only_message(&GOOD.replace("attestors: []", "attestors: []\n  frobnicate: 1"));
    assert!(msg.contains("frobnicate"), "{msg}");
    let msg = only_message(&GOOD.replace(
        "operations: [\"CREATE\"]",
        "operations: [\"CREATE\"]\n        bogus: 1",
    ));
    assert!(
        msg.contains("spec.matchConstraints.resourceRules[0]"),
        "{msg}"
    );
}

#[test]
fn bad_validation_action_uses_kyvernos_message() {
    let msg = only_message(&GOOD.replace(
        "attestors: []",
        "attestors: []\n  validationActions: [test]",
    ));
    assert_eq!(
        msg,
        r#"spec.validationActions[0]: Unsupported value: "test": supported values: "Deny", "Audit", "Warn""#
    );
}

#[test]
fn empty_resource_rules_are_rejected() {
    let doc = GOOD.replace(
        "    resourceRules:\n      - apiGroups: [\"\"]\n        apiVersions: [\"v1\"]\n        operations: [\"CREATE\"]\n        resources: [\"pods\"]\n",
        "    resourceRules: []\n",
    );
    assert!(only_message(&doc).contains("at least one resource rule is required"));
    let doc = GOOD.replace("  matchConstraints:\n", "  matchConstraintz:\n");
    assert!(!only_message(&doc).is_empty());
}

#[test]
fn notary_attestors_need_their_trust_store() {
    let with = |notary: &str| {
        GOOD.replace(
            "attestors: []",
            &format!("attestors:\n    - name: n\n      notary: {notary}"),
        )
    };
    assert!(only_message(&with("{}")).contains(
        "spec.attestors[0].notary.certs: Required value: the PEM certificates of the trust store"
    ));
    assert!(only_message(&with("{certs: {}}"))
        .contains("spec.attestors[0].notary.certs: exactly one of value or expression"));
    assert!(only_message(&with(
        "{certs: {value: x}, tsaCerts: {value: y, expression: z}}"
    ))
    .contains("spec.attestors[0].notary.tsaCerts: exactly one of value or expression"));
    assert!(only_message(&with("{certs: {expression: 'nope('}}"))
        .contains("spec.attestors[0].notary.certs.expression"));
    let root = serde_json::to_string(include_str!(
        "../../../../conformance/notary/notation/internal/testdata/NotationTestRoot.pem"
    ))
    .expect("a JSON string");
    let set = load_str(&with(&format!(
        "{{certs: {{value: {root}}}, tsaCerts: {{expression: \"'y'\"}}}}"
    )));
    assert!(set.diagnostics.is_empty(), "{:?}", set.diagnostics);
    assert!(!set.policies.is_empty());
}

#[test]
fn unimplemented_features_are_diagnostics() {
    let kms = |uri: &str| {
        GOOD.replace(
            "attestors: []",
            &format!("attestors:\n    - name: k\n      cosign:\n        key: {{kms: '{uri}'}}"),
        )
    };
    assert!(only_message(&kms("gcpkms://keyRings/r")).contains("not a key name"));
    assert!(only_message(&kms("azurekms://vault.example")).contains("no vault or key"));
    assert!(only_message(&kms("vaultkms://x")).contains("not a KMS scheme Kyverno has"));
    assert!(only_message(&kms("awskms://")).contains("no key id"));
    assert!(only_message(&kms("k8s://just-a-name")).contains("k8s://NAMESPACE/SECRET"));
    assert!(only_message(&kms("hashivault://a/b")).contains("not a key name"));
    for good in [
        "awskms:///alias/x",
        "awskms://kms.example:4566/1234",
        "hashivault://cosign",
        "k8s://team/cosign",
        "gcpkms://projects/p/locations/l/keyRings/r/cryptoKeys/k",
        "gcpkms://projects/p/locations/l/keyRings/r/cryptoKeys/k/cryptoKeyVersions/2",
        "azurekms://team.vault.azure.net/cosign",
    ] {
        let set = load_str(&kms(good));
        assert!(set.diagnostics.is_empty(), "{good}: {:?}", set.diagnostics);
    }
    let both = GOOD.replace(
        "attestors: []",
        "attestors:\n    - name: k\n      cosign:\n        key: {kms: 'hashivault://k', data: 'x'}",
    );
    assert!(only_message(&both).contains("exactly one of data, kms or expression"));
    let doc = GOOD.replace(
        "attestors: []",
        "attestors:\n    - name: k\n      cosign:\n        ctlog: {insecureIgnoreTlog: true}",
    );
    assert!(only_message(&doc).contains("exactly one of key, keyless or certificate"));
    let doc = GOOD.replace(
        "attestors: []",
        "attestors: []\n  credentials:\n    providers: [oracle]",
    );
    assert!(only_message(&doc).contains("spec.credentials.providers[0]"));
    let doc = GOOD.replace(
        "attestors: []",
        "attestors: []\n  credentials:\n    providers: [default, github, amazon, google, azure]",
    );
    let set = load_str(&doc);
    assert!(set.diagnostics.is_empty(), "{:?}", set.diagnostics);
    // The provider reaches the host beside the Secrets, `default` not.
    assert_eq!(
        set.policies[0].registry_secrets(),
        [
            "provider:github",
            "provider:amazon",
            "provider:google",
            "provider:azure"
        ]
    );
    let doc = GOOD.replace(
        "attestors: []",
        "attestors: []\n  credentials:\n    secrets: [../etc/passwd]",
    );
    assert!(only_message(&doc).contains("spec.credentials.secrets[0]"));
}

#[test]
fn keyless_extensions_and_subject_expressions_are_checked_at_load() {
    let keyless = |body: &str| {
        GOOD.replace(
            "attestors: []",
            &format!("attestors:\n    - name: k\n      cosign:\n        keyless:\n{body}"),
        )
    };
    let ids = "          identities: [{issuer: i, subject: s}]\n";
    let msg = only_message(&keyless(&format!(
        "{ids}          additionalExtensions: {{githubWorkflowRepo: a/b}}"
    )));
    assert!(
        msg.contains("spec.attestors[0].cosign.keyless.additionalExtensions.githubWorkflowRepo: Unsupported value")
            && msg.contains("githubWorkflowRepository"),
        "{msg}"
    );
    let msg = only_message(&keyless(&format!(
        "{ids}          additionalExtensions: {{githubWorkflowSha: 1}}"
    )));
    assert!(
        msg.contains("spec.attestors[0].cosign.keyless.additionalExtensions.githubWorkflowSha: Invalid value: must be a string"),
        "{msg}"
    );
    let msg = only_message(&keyless(
        "          identities: [{subjectRegExp: x, subjectExpression: \"'y'\"}]",
    ));
    assert!(
        msg.contains("spec.attestors[0].cosign.keyless.identities[0]: subjectExpression and subjectRegExp are mutually exclusive"),
        "{msg}"
    );
    let msg = only_message(&keyless(
        "          identities: [{subjectExpression: 'nope('}]",
    ));
    assert!(
        msg.contains("spec.attestors[0].cosign.keyless.identities[0].subjectExpression"),
        "{msg}"
    );
    for (body, want) in [
        (
            "          identities: []",
            "keyless.identities: Required value: at least one identity",
        ),
        (
            "          identities: [{}]",
            "keyless.identities[0]: Required value: a subject",
        ),
    ] {
        let msg = only_message(&keyless(body));
        assert!(
            msg.contains(&format!("spec.attestors[0].cosign.{want}")),
            "{msg}"
        );
    }
    let set = load_str(&keyless(
        "          identities: [{issuer: i, subjectExpression: \"'^https://x/' + namespaceObject.metadata.name\"}]\n          additionalExtensions: {githubWorkflowRepository: a/b, githubWorkflowTrigger: push, githubWorkflowSha: abc, githubWorkflowName: n, githubWorkflowRef: refs/heads/main}",
    ));
    assert!(set.diagnostics.is_empty(), "{:?}", set.diagnostics);
}

/// Trust material written inline that does not parse is the policy's
/// mistake, refused at load rather than failing every verification.
#[test]
fn inline_keys_and_certificates_that_do_not_parse_are_load_diagnostics() {
    let attestor = |body: &str| {
        GOOD.replace(
            "attestors: []",
            &format!("attestors:\n    - name: a\n{body}"),
        )
    };
    for (body, want) in [
        (
            "      cosign:\n        key: {data: 'not a key'}",
            "spec.attestors[0].cosign.key.data: not a public key",
        ),
        (
            "      cosign:\n        certificate: {cert: {value: 'not a certificate'}}",
            "spec.attestors[0].cosign.certificate.cert: not PEM certificates",
        ),
        (
            "      notary:\n        certs: {value: 'not a certificate'}",
            "spec.attestors[0].notary.certs: not PEM certificates",
        ),
    ] {
        let msg = only_message(&attestor(body));
        assert!(msg.contains(want), "{want:?} not in {msg}");
    }
}

#[test]
fn tuf_loads_with_an_inline_root() {
    let attestor = |tuf: &str| {
        GOOD.replace(
            "attestors: []",
            &format!("attestors:\n    - name: k\n      cosign:\n        keyless: {{identities: [{{issuer: i, subject: s}}]}}\n        tuf: {tuf}"),
        )
    };
    let set = load_str(&attestor(
        "{root: {data: 'e30K'}, mirror: 'https://tuf.example.com/'}",
    ));
    assert!(set.diagnostics.is_empty(), "{:?}", set.diagnostics);
    let set = load_str(&attestor("{root: {data: 'e30K'}}"));
    assert!(set.diagnostics.is_empty(), "{:?}", set.diagnostics);
    // A root on disk is read through the host, by absolute path.
    let set = load_str(&attestor("{root: {path: /etc/tuf/root.json}}"));
    assert!(set.diagnostics.is_empty(), "{:?}", set.diagnostics);
    assert_eq!(
        only_message(&attestor("{root: {path: root.json}}")),
        "spec.attestors[0].cosign.tuf.root.path: \"root.json\" is not an absolute path"
    );
    assert!(
        only_message(&attestor("{mirror: 'https://tuf.example.com'}"))
            .starts_with("spec.attestors[0].cosign.tuf.root.data: Required value")
    );
    assert!(only_message(&attestor("{root: {data: '!!'}}"))
        .starts_with("spec.attestors[0].cosign.tuf.root.data: invalid base64"));
    assert!(only_message(&attestor("{root: {data: '{}'}}")).contains("not the JSON itself"));
    assert_eq!(
        only_message(&attestor("{root: {data: 'e30K'}, mirror: 'tuf.example.com'}")),
        "spec.attestors[0].cosign.tuf.mirror: \"tuf.example.com\" is not an https:// or http:// URL"
    );
    // trustedRoot takes precedence: tuf is then not used, nor checked.
    let doc = attestor("{root: {path: /x}}").replace(
        "        tuf:",
        "        trustedRoot: {value: x}\n        tuf:",
    );
    assert!(load_str(&doc).diagnostics.is_empty());
}

#[test]
fn other_kinds_and_garbage_are_diagnostics() {
    assert!(
        only_message("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}")
            .contains("not an ImageValidatingPolicy")
    );
    assert!(only_message("{ not: [yaml").contains("not valid YAML"));
    assert!(only_message(&GOOD.replace("  name: good\n", "")).contains("metadata.name"));
    assert!(
        only_message(&GOOD.replace("  validations:\n    - expression: \"true\"\n", ""))
            .contains("spec.validations")
    );
}

#[test]
fn json_documents_load() {
    let json: serde_json::Value = serde_yaml_ng::from_str(GOOD).expect("yaml");
    let set = load_str(&json.to_string());
    assert!(set.diagnostics.is_empty(), "{:?}", set.diagnostics);
    assert_eq!(set.policies[0].name, "good");
}

/// Without a host (the webhook component), what only the host can give a
/// policy is refused at load, each naming what to use instead; the same
/// policy loads with a host.
#[test]
fn what_only_a_host_gives_is_refused_without_one() {
    let doc = GOOD.replace(
        "attestors: []",
        "attestors:\n    - name: kms\n      cosign:\n        key: {kms: 'hashivault://k'}\n    - name: tuf\n      cosign:\n        keyless: {identities: [{issuer: i, subject: s}]}\n        tuf: {root: {path: /roots/root.json}}\n  credentials:\n    providers: [default, amazon]\n    secrets: [regcred]",
    );
    let options = LoadOptions {
        without_host: true,
        ..Default::default()
    };
    let source = SourceDocument {
        source: "test.yaml".into(),
        content: doc.clone(),
    };
    let set = load_with(std::slice::from_ref(&source), &options);
    assert!(set.policies.is_empty());
    let messages: Vec<_> = set.diagnostics.iter().map(|d| d.message.as_str()).collect();
    let message = messages.join(" | ");
    for part in [
        "spec.credentials.providers[1]: the amazon credential provider: ivpol's host provides it, and this engine runs without one; use credentials.secrets",
        "spec.attestors[0].cosign.key.kms: a KMS key",
        "use key.data",
        "spec.attestors[1].cosign.tuf.root.path: a trust file",
    ] {
        assert!(message.contains(part), "{part}: {message}");
    }
    assert!(
        !message.contains("providers[0]"),
        "default is the instance's own: {message}"
    );
    let with_host = load_with(&[source], &LoadOptions::default());
    assert!(
        with_host
            .diagnostics
            .iter()
            .all(|d| !d.message.contains("this engine runs without")),
        "{:?}",
        with_host.diagnostics
    );
}
