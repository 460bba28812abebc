//! Kyverno's `resource` library over the objects the host grants: refused
//! at load without a grant, read through the host with one, and confined
//! to a namespaced policy's own namespace.

use super::*;
use ivpol_cel::resource_lib::ResourceSource;
use std::sync::{Arc, Mutex};

/// ConfigMaps by (namespace, name), and every read asked for.
#[derive(Default)]
struct ConfigMaps {
    granted: Vec<String>,
    objects: Vec<(String, String, Value)>,
    reads: Mutex<Vec<String>>,
}

impl ResourceSource for ConfigMaps {
    fn granted(&self) -> Vec<String> {
        self.granted.clone()
    }

    fn get(
        &self,
        api_version: &str,
        resource: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>, String> {
        self.reads
            .lock()
            .expect("reads")
            .push(format!("{api_version} {resource} {namespace}/{name}"));
        if !self.granted.iter().any(|g| g == resource) {
            return Err(format!("{resource} is not granted"));
        }
        Ok(self
            .objects
            .iter()
            .find(|(ns, n, _)| ns == namespace && n == name)
            .map(|(_, _, o)| o.clone()))
    }

    fn list(&self, _: &str, _: &str, namespace: &str) -> Result<Value, String> {
        let items: Vec<Value> = self
            .objects
            .iter()
            .filter(|(ns, _, _)| ns == namespace)
            .map(|(_, _, o)| o.clone())
            .collect();
        Ok(json!({"apiVersion": "v1", "kind": "List", "items": items}))
    }
}

fn config_maps(granted: &[&str]) -> Arc<ConfigMaps> {
    Arc::new(ConfigMaps {
        granted: granted.iter().map(|g| g.to_string()).collect(),
        objects: vec![(
            "default".into(),
            "allowed".into(),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "allowed", "namespace": "default"},
                   "data": {"registry": "ghcr.io"}}),
        )],
        reads: Mutex::default(),
    })
}

/// Admits pods whose first image is in the registry the ConfigMap names.
const READS_CONFIG_MAP: &str = r#"
variables:
  - name: cm
    expression: resource.get("v1", "configmaps", object.metadata.namespace, "allowed")
validations:
  - expression: object.spec.containers[0].image.startsWith(variables.cm.data.registry + "/")
    message: not from the allowed registry
"#;

fn policy_set(doc: &str, source: Arc<ConfigMaps>) -> PolicySet {
    PolicySet::load_with_resources(
        &[SourceDocument {
            source: "p.yaml".into(),
            content: doc.to_string(),
        }],
        source,
        Default::default(),
    )
}

#[test]
fn without_a_grant_the_library_is_a_load_diagnostic() {
    let doc = ivp(
        "reads",
        &spec(&[PODS, RELAXED, NO_ATTESTORS, READS_CONFIG_MAP]),
    );
    let set = policy_set(&doc, config_maps(&[]));
    let messages: Vec<&str> = set
        .diagnostics()
        .iter()
        .map(|d| d.message.as_str())
        .collect();
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert!(
        messages[0].starts_with("spec.variables[0].expression: Kyverno library resource")
            && messages[0].contains("--grant-resource"),
        "{messages:?}"
    );
    // And the plain loader (no host at all) refuses it the same way.
    assert_eq!(
        PolicySet::load(&[SourceDocument {
            source: "p.yaml".into(),
            content: doc
        }])
        .diagnostics()
        .len(),
        1
    );
}

#[test]
fn with_a_grant_the_object_decides_the_verdict() {
    let source = config_maps(&["configmaps"]);
    let doc = ivp(
        "reads",
        &spec(&[PODS, RELAXED, NO_ATTESTORS, READS_CONFIG_MAP]),
    );
    let set = policy_set(&doc, source.clone());
    assert!(set.diagnostics().is_empty(), "{:?}", set.diagnostics());
    let v = validate(&set, &create(&pod("p", &["ghcr.io/a/b:1"])));
    assert!(v.allowed, "{v:?}");
    let v = validate(&set, &create(&pod("p", &["docker.io/a/b:1"])));
    assert_denied(&v, "Policy reads failed: not from the allowed registry");
    assert_eq!(
        source.reads.lock().expect("reads")[0],
        "v1 configmaps default/allowed"
    );
}

#[test]
fn a_missing_object_or_a_refused_kind_is_an_error_result() {
    let missing = READS_CONFIG_MAP.replace("\"allowed\")", "\"gone\")");
    let doc = ivp("reads", &spec(&[PODS, RELAXED, NO_ATTESTORS, &missing]));
    let v = validate(
        &policy_set(&doc, config_maps(&["configmaps"])),
        &create(&pod("p", &["ghcr.io/a/b:1"])),
    );
    assert!(!v.allowed, "{v:?}");
    assert_eq!(v.results[0].status, Status::Error, "{v:?}");
    assert!(
        only_message(&v).contains("configmaps \"gone\" not found"),
        "{v:?}"
    );
    let secrets = READS_CONFIG_MAP.replace("\"configmaps\"", "\"secrets\"");
    let doc = ivp("reads", &spec(&[PODS, RELAXED, NO_ATTESTORS, &secrets]));
    let v = validate(
        &policy_set(&doc, config_maps(&["configmaps"])),
        &create(&pod("p", &["ghcr.io/a/b:1"])),
    );
    assert_eq!(v.results[0].status, Status::Error, "{v:?}");
    assert!(only_message(&v).contains("secrets is not granted"), "{v:?}");
}

#[test]
fn a_namespaced_policy_reads_only_its_own_namespace() {
    let elsewhere = READS_CONFIG_MAP.replace("object.metadata.namespace", "\"kube-system\"");
    let source = config_maps(&["configmaps"]);
    let doc = nivp(
        "reads",
        "default",
        &spec(&[PODS, RELAXED, NO_ATTESTORS, &elsewhere]),
    );
    let set = policy_set(&doc, source.clone());
    let v = admit_with(
        &set,
        Phase::Validate,
        &Scope::Namespaced("default".into()),
        &[],
        &create(&pod("p", &["ghcr.io/a/b:1"])),
        None,
    );
    assert_eq!(v.results[0].status, Status::Error, "{v:?}");
    assert!(
        only_message(&v).contains("may not read namespace \"kube-system\""),
        "{v:?}"
    );
    assert!(source.reads.lock().expect("reads").is_empty());
}

#[test]
fn list_returns_the_objects_of_the_namespace() {
    let lists = r#"
validations:
  - expression: size(resource.list("v1", "configmaps", object.metadata.namespace).items) == 1
    message: expected one ConfigMap
"#;
    let doc = ivp("lists", &spec(&[PODS, RELAXED, NO_ATTESTORS, lists]));
    let v = validate(
        &policy_set(&doc, config_maps(&["configmaps"])),
        &create(&pod("p", &["ghcr.io/a/b:1"])),
    );
    assert!(v.allowed, "{v:?}");
}

#[test]
fn post_is_refused_at_load() {
    let posts = r#"
validations:
  - expression: resource.post("v1", "configmaps", "default", {}) != null
    message: x
"#;
    let doc = ivp("posts", &spec(&[PODS, RELAXED, NO_ATTESTORS, posts]));
    let set = policy_set(&doc, config_maps(&["configmaps"]));
    assert!(
        set.diagnostics()[0]
            .message
            .contains("resource.post is not implemented by ivpol"),
        "{:?}",
        set.diagnostics()
    );
}
