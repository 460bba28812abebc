//! Kyverno's own ImageValidatingPolicy conformance steps (chainsaw, vendored
//! in `conformance/kyverno/`), run through the real `ivpol serve` against
//! local equivalents of their images (see `ivpol_tests::kyverno`): the same
//! policy files, the same resource files, and the verdict and message each
//! chainsaw step expects from the API server. The message is the part after
//! `admission webhook "<name>" denied the request: `, which is the webhook's.

use ivpol_tests::kyverno::KyvernoImages;
use ivpol_tests::review::{patched, review};
use ivpol_tests::{Options, Server};
use serde_json::Value;
use std::path::Path;

const CASES: &str = "test/conformance/chainsaw/image-validating-policies";
const NOT_SIGNED: &str = "failed to verify image with notary cert";

/// What a chainsaw step expects of every document in a resource file.
enum Expect {
    Admit,
    /// Denied; with `Some(policy)`, by Kyverno's notary message from it.
    Deny(Option<&'static str>),
}
use Expect::{Admit, Deny};

struct Case {
    dir: &'static str,
    /// The policy and exception files the case creates.
    policies: &'static [&'static str],
    steps: &'static [(&'static str, Expect)],
}

const SAMPLE: Option<&str> = Some("ivpol-sample");
const SIGNED_IMAGES: Option<&str> = Some("check-signed-images");

/// The steps of every case whose images have local equivalents; the others
/// are listed in docs/compatibility.md with the reason.
const TABLE: &[Case] = &[
    Case {
        dir: "autogen/autogen-deployments-cronjobs",
        policies: &["policy.yaml"],
        steps: &[
            ("good-deployment.yaml", Admit),
            ("bad-deployment.yaml", Deny(None)),
        ],
    },
    Case {
        dir: "autogen/autogen-deployments-statefulsets",
        policies: &["policy.yaml"],
        steps: &[
            ("good-statefulset.yaml", Admit),
            ("bad-statefulset.yaml", Deny(None)),
        ],
    },
    Case {
        dir: "exceptions/autogen",
        policies: &["policy.yaml", "exception.yaml"],
        steps: &[
            ("bad-resources.yaml", Deny(None)),
            ("good-resources.yaml", Admit),
            ("skipped-resources.yaml", Admit),
        ],
    },
    Case {
        dir: "exceptions/regular",
        policies: &["policy.yaml", "exception.yaml"],
        steps: &[
            ("bad-pod.yaml", Deny(SAMPLE)),
            ("good-pod.yaml", Admit),
            ("skipped-pod.yaml", Admit),
        ],
    },
    Case {
        dir: "exceptions/wrong-exception",
        policies: &["policy.yaml", "exception.yaml"],
        steps: &[
            ("good-deployment.yaml", Admit),
            ("skipped-deployment.yaml", Deny(SAMPLE)),
        ],
    },
    Case {
        dir: "match-conditions",
        policies: &["policy.yaml"],
        steps: &[("bad-pod.yaml", Deny(SAMPLE)), ("good-pod.yaml", Admit)],
    },
    Case {
        dir: "report/with-exception",
        policies: &["policy.yaml", "exception.yaml"],
        steps: &[
            ("bad-deployment.yaml", Admit),
            ("skipped-deployment.yaml", Admit),
        ],
    },
    Case {
        dir: "report/background",
        policies: &["policy.yaml"],
        steps: &[("deployment.yaml", Admit)],
    },
    Case {
        dir: "security/forged-verification-annotation",
        policies: &["policy.yaml"],
        steps: &[(
            "pod.yaml",
            Deny(Some("check-signed-images-forged-annotation")),
        )],
    },
    Case {
        dir: "standard/notary-basic",
        policies: &["policy.yaml"],
        steps: &[("bad-pod.yaml", Deny(SAMPLE)), ("good-pod.yaml", Admit)],
    },
    Case {
        dir: "validation-actions/audit",
        policies: &["policy.yaml"],
        steps: &[("deployment.yaml", Admit)],
    },
    Case {
        dir: "validation-actions/deny",
        policies: &["policy.yaml"],
        steps: &[("deployment.yaml", Deny(SIGNED_IMAGES))],
    },
    Case {
        dir: "validation-actions/none",
        policies: &["policy.yaml"],
        steps: &[("deployment.yaml", Deny(SIGNED_IMAGES))],
    },
    Case {
        dir: "validation-actions/warn",
        policies: &["policy.yaml"],
        steps: &[("deployment.yaml", Admit)],
    },
    Case {
        dir: "validation-rules/accept",
        policies: &["policy.yaml"],
        steps: &[("deployment.yaml", Admit)],
    },
    Case {
        dir: "validation-rules/reject",
        policies: &["policy.yaml"],
        steps: &[("deployment.yaml", Deny(SIGNED_IMAGES))],
    },
];

/// The documents of a YAML file.
fn documents(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("resource file");
    serde_yaml_ng::Deserializer::from_str(&text)
        .filter_map(|d| serde::Deserialize::deserialize(d).ok())
        .filter(|v: &Value| !v.is_null())
        .collect()
}

fn serve(images: &KyvernoImages, dir: &Path, policies: &[&str]) -> Server {
    let files: Vec<(String, String)> = policies
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(dir.join(f)).expect("policy file");
            (f.to_string(), text)
        })
        .collect();
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(n, t)| (n.as_str(), t.as_str()))
        .collect();
    let s = Server::start_with(
        &refs,
        Options {
            extra_args: vec!["--insecure-registry".into(), images.addr().to_string()],
            ..Options::default()
        },
    );
    let (_, ready) = s.get("/health/readiness");
    assert_eq!(ready["rejected"], 0, "{}", s.log());
    s
}

/// What the API server answers for creating `doc`: the mutating webhook
/// (digest pinning), its patch applied, then the validating webhook.
fn create(s: &Server, doc: &Value) -> Value {
    let namespace = doc["metadata"]["namespace"].as_str().unwrap_or("default");
    let mutated = s.review("/ivpol/mutate", &review("CREATE", namespace, doc));
    if mutated["allowed"] != true {
        return mutated;
    }
    let object = patched(doc, &mutated);
    s.review("/ivpol/validate", &review("CREATE", namespace, &object))
}

fn check_step(s: &Server, case: &str, file: &str, doc: &Value, expect: &Expect) {
    let r = create(s, doc);
    let name = &doc["metadata"]["name"];
    match expect {
        Admit => assert_eq!(r["allowed"], true, "{case}/{file} {name}: {r}"),
        Deny(policy) => {
            assert_eq!(r["allowed"], false, "{case}/{file} {name}: {r}");
            if let Some(p) = policy {
                assert_eq!(
                    r["status"]["message"],
                    format!("Policy {p} failed: {NOT_SIGNED}"),
                    "{case}/{file} {name}"
                );
            }
        }
    }
}

#[test]
fn kyvernos_chainsaw_steps_get_kyvernos_verdicts() {
    let images = KyvernoImages::push();
    for case in TABLE {
        let dir = images.localize(&format!("{CASES}/{}", case.dir));
        let s = serve(&images, dir.path(), case.policies);
        for (file, expect) in case.steps {
            let docs = documents(&dir.path().join(file));
            assert!(!docs.is_empty(), "{}/{file} has no documents", case.dir);
            for doc in &docs {
                check_step(&s, case.dir, file, doc, expect);
            }
        }
    }
}

#[test]
fn the_warn_case_warns_with_kyvernos_message() {
    let images = KyvernoImages::push();
    let dir = images.localize(&format!("{CASES}/validation-actions/warn"));
    let s = serve(&images, dir.path(), &["policy.yaml"]);
    let doc = &documents(&dir.path().join("deployment.yaml"))[0];
    let r = create(&s, doc);
    assert_eq!(r["allowed"], true, "{r}");
    assert_eq!(
        r["warnings"],
        serde_json::json!([format!("Policy check-signed-images failed: {NOT_SIGNED}")]),
        "{r}"
    );
}
