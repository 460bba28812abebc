//! Kyverno's built-in image extraction for ImageValidatingPolicy: which
//! resources have a pod spec, where it is, and the container images in it
//! together with RFC 6901 JSON pointers to each image string (for patches).
//!
//! # Findings (kyverno `pkg/cel/compiler/images.go`)
//!
//! `getImageExtractorsFromGVR` supports exactly these GVRs (group/version
//! included, see [`pod_spec_path_for_gvr`]):
//! * `v1/pods` -> `spec`;
//! * `apps/v1` `deployments`, `statefulsets`, `daemonsets`, `replicasets` and
//!   `batch/v1` `jobs` -> `spec.template.spec`;
//! * `batch/v1/cronjobs` -> `spec.jobTemplate.spec.template.spec`.
//!
//! `replicationcontrollers` is *not* among them (only the kind-based
//! ClusterPolicy/mutate extractor in `pkg/utils/api/image.go` knows it).
//! Each supported resource gets the three extractors `containers`,
//! `initContainers`, `ephemeralContainers`, each
//! `<podspec>.?<field>.orValue([]).map(e, e.image)`. For any other resource
//! `CompileImageExtractors` yields no extractors (unless the policy declares
//! `spec.images`), so `ExtractImages` returns an empty map and CEL's
//! `images` has no keys at all, not three empty lists; [`extract_lists`]
//! mirrors that.
//!
//! Kyverno evaluates the extractors on `object`, or `oldObject` when `object`
//! is null (DELETE): callers pass the right one. Where Kyverno's CEL would
//! raise an evaluation error (pod-spec path missing, a container without a
//! string `image`) we are lenient: a missing path yields no images and a
//! non-string `image` is skipped. Empty strings are kept, as CEL keeps them.
//! Policy-defined `spec.images` extractors of the same name replace these
//! built-ins in Kyverno; that is the caller's concern.

use serde_json::Value;
use std::collections::BTreeMap;

/// Which container list of a pod spec an image came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Category {
    /// An image of the pod spec's `containers`.
    Containers,
    /// An image of the pod spec's `initContainers`.
    InitContainers,
    /// An image of the pod spec's `ephemeralContainers`.
    EphemeralContainers,
}

impl Category {
    /// All categories, in extraction order.
    pub const ALL: [Category; 3] = [
        Category::Containers,
        Category::InitContainers,
        Category::EphemeralContainers,
    ];

    /// The pod-spec field name, which is also the key in CEL's `images`.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Containers => "containers",
            Category::InitContainers => "initContainers",
            Category::EphemeralContainers => "ephemeralContainers",
        }
    }
}

/// One image found in a resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractedImage {
    /// The container list the image came from.
    pub category: Category,
    /// The image string exactly as written.
    pub image: String,
    /// RFC 6901 pointer to the image string, e.g. `/spec/containers/0/image`.
    pub pointer: String,
}

const POD: &[&str] = &["spec"];
const POD_TEMPLATE: &[&str] = &["spec", "template", "spec"];
const CRONJOB: &[&str] = &["spec", "jobTemplate", "spec", "template", "spec"];

/// Path from the object root to the pod spec of a lowercase plural resource
/// (no subresource), or `None` if Kyverno has no built-in extractor for it.
/// Ignores group/version; see [`pod_spec_path_for_gvr`] for the exact check.
pub fn pod_spec_path(resource: &str) -> Option<&'static [&'static str]> {
    match resource {
        "pods" => Some(POD),
        "deployments" | "statefulsets" | "daemonsets" | "replicasets" | "jobs" => {
            Some(POD_TEMPLATE)
        }
        "cronjobs" => Some(CRONJOB),
        _ => None,
    }
}

/// Like [`pod_spec_path`] but requiring the exact group and version Kyverno
/// compares (`""/v1`, `apps/v1`, `batch/v1`).
pub fn pod_spec_path_for_gvr(
    group: &str,
    version: &str,
    resource: &str,
) -> Option<&'static [&'static str]> {
    let expected_group = match resource {
        "pods" => "",
        "deployments" | "statefulsets" | "daemonsets" | "replicasets" => "apps",
        "jobs" | "cronjobs" => "batch",
        _ => return None,
    };
    if group == expected_group && version == "v1" {
        pod_spec_path(resource)
    } else {
        None
    }
}

/// Images of a resource's pod spec: containers, then initContainers, then
/// ephemeralContainers, each in list order. Empty for unsupported resources.
pub fn extract(resource: &str, object: &Value) -> Vec<ExtractedImage> {
    let Some(path) = pod_spec_path(resource) else {
        return Vec::new();
    };
    extract_at(path, object)
}

/// Images of the pod spec at `path` (see [`extract`]).
fn extract_at(path: &[&str], object: &Value) -> Vec<ExtractedImage> {
    let prefix: String = path
        .iter()
        .map(|segment| format!("/{}", escape_pointer_segment(segment)))
        .collect();
    images_at(path, object)
        .map(|(category, index, image)| ExtractedImage {
            category,
            image: image.to_string(),
            // The index is the position in the original list, so the
            // pointer stays right even when entries are skipped.
            pointer: format!("{prefix}/{}/{index}/image", category.as_str()),
        })
        .collect()
}

/// Each image of the pod spec at `path`, with its category and its index in
/// that category's list, in [`extract`]'s order.
fn images_at<'v>(
    path: &[&str],
    object: &'v Value,
) -> impl Iterator<Item = (Category, usize, &'v str)> {
    let spec = path.iter().try_fold(object, |v, key| v.get(key));
    Category::ALL.into_iter().flat_map(move |category| {
        let containers = spec
            .and_then(|s| s.get(category.as_str()))
            .and_then(Value::as_array);
        let found = containers.into_iter().flatten().enumerate();
        found.filter_map(move |(index, container)| match container.get("image") {
            Some(Value::String(image)) => Some((category, index, image.as_str())),
            _ => None,
        })
    })
}

/// CEL's `images` value for the built-in extractors: all three keys (maybe
/// empty lists) for a supported resource, no keys for any other. Every
/// policy of a request makes these, so no pointers are formatted.
pub fn extract_lists(resource: &str, object: &Value) -> BTreeMap<&'static str, Vec<String>> {
    let Some(path) = pod_spec_path(resource) else {
        return BTreeMap::new();
    };
    // Inserted one at a time: `collect()` would sort them first, with a sort
    // of its own (`ivpol_refs::sort`).
    let mut lists: BTreeMap<&'static str, Vec<String>> =
        ivpol_refs::sort::map(Category::ALL.iter().map(|c| (c.as_str(), Vec::new())));
    for (category, _, image) in images_at(path, object) {
        lists
            .entry(category.as_str())
            .or_default()
            .push(image.to_string());
    }
    lists
}

/// RFC 6901 escaping of one reference token (`~` -> `~0`, `/` -> `~1`).
fn escape_pointer_segment(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod_spec() -> Value {
        json!({
            "containers": [{"name": "a", "image": "nginx"}, {"name": "b", "image": "ghcr.io/x/y:1"}],
            "initContainers": [{"name": "i", "image": "busybox"}],
            "ephemeralContainers": [{"name": "e", "image": "debug:1"}]
        })
    }

    fn images(found: &[ExtractedImage]) -> Vec<(&str, &str, &str)> {
        found
            .iter()
            .map(|f| (f.category.as_str(), f.image.as_str(), f.pointer.as_str()))
            .collect()
    }

    #[test]
    fn category_names() {
        assert_eq!(Category::Containers.as_str(), "containers");
        assert_eq!(Category::InitContainers.as_str(), "initContainers");
        assert_eq!(
            Category::EphemeralContainers.as_str(),
            "ephemeralContainers"
        );
    }

    #[test]
    fn supported_resources() {
        assert_eq!(pod_spec_path("pods"), Some(&["spec"][..]));
        for r in [
            "deployments",
            "statefulsets",
            "daemonsets",
            "replicasets",
            "jobs",
        ] {
            assert_eq!(
                pod_spec_path(r),
                Some(&["spec", "template", "spec"][..]),
                "{r}"
            );
        }
        assert_eq!(
            pod_spec_path("cronjobs"),
            Some(&["spec", "jobTemplate", "spec", "template", "spec"][..])
        );
    }

    #[test]
    fn unsupported_resources() {
        for r in [
            "replicationcontrollers",
            "services",
            "configmaps",
            "Pods",
            "pod",
            "pods/ephemeralcontainers",
            "",
        ] {
            assert_eq!(pod_spec_path(r), None, "{r}");
        }
    }

    #[test]
    fn gvr_requires_group_and_version() {
        assert!(pod_spec_path_for_gvr("", "v1", "pods").is_some());
        assert!(pod_spec_path_for_gvr("apps", "v1", "deployments").is_some());
        assert!(pod_spec_path_for_gvr("apps", "v1", "replicasets").is_some());
        assert!(pod_spec_path_for_gvr("batch", "v1", "jobs").is_some());
        assert!(pod_spec_path_for_gvr("batch", "v1", "cronjobs").is_some());
        assert!(pod_spec_path_for_gvr("apps", "v1beta1", "deployments").is_none());
        assert!(pod_spec_path_for_gvr("extensions", "v1", "deployments").is_none());
        assert!(pod_spec_path_for_gvr("batch", "v1beta1", "cronjobs").is_none());
        assert!(pod_spec_path_for_gvr("apps", "v1", "pods").is_none());
        assert!(pod_spec_path_for_gvr("", "v1", "replicationcontrollers").is_none());
    }

    #[test]
    fn pod_images_in_category_then_index_order() {
        let pod = json!({"kind": "Pod", "spec": pod_spec()});
        assert_eq!(
            images(&extract("pods", &pod)),
            vec![
                ("containers", "nginx", "/spec/containers/0/image"),
                ("containers", "ghcr.io/x/y:1", "/spec/containers/1/image"),
                ("initContainers", "busybox", "/spec/initContainers/0/image"),
                (
                    "ephemeralContainers",
                    "debug:1",
                    "/spec/ephemeralContainers/0/image"
                ),
            ]
        );
    }

    #[test]
    fn template_and_cronjob_pointers() {
        let deploy = json!({"spec": {"template": {"spec": pod_spec()}}});
        let found = extract("deployments", &deploy);
        assert_eq!(found.len(), 4);
        assert_eq!(found[0].pointer, "/spec/template/spec/containers/0/image");
        assert_eq!(
            found[2].pointer,
            "/spec/template/spec/initContainers/0/image"
        );

        let cron = json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": pod_spec()}}}}});
        let found = extract("cronjobs", &cron);
        assert_eq!(found.len(), 4);
        assert_eq!(
            found[3].pointer,
            "/spec/jobTemplate/spec/template/spec/ephemeralContainers/0/image"
        );
    }

    #[test]
    fn pointers_resolve_to_the_image() {
        let cron = json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": pod_spec()}}}}});
        for found in extract("cronjobs", &cron) {
            assert_eq!(
                cron.pointer(&found.pointer),
                Some(&Value::String(found.image.clone()))
            );
        }
    }

    #[test]
    fn non_string_images_are_skipped_keeping_indices() {
        let pod = json!({"spec": {"containers": [
            {"name": "a"},
            {"name": "b", "image": 3},
            {"name": "c", "image": null},
            "not-an-object",
            {"name": "d", "image": ""},
            {"name": "e", "image": "nginx"}
        ]}});
        assert_eq!(
            images(&extract("pods", &pod)),
            vec![
                ("containers", "", "/spec/containers/4/image"),
                ("containers", "nginx", "/spec/containers/5/image"),
            ]
        );
    }

    #[test]
    fn missing_or_malformed_structure_yields_nothing() {
        for obj in [
            json!(null),
            json!({}),
            json!({"spec": null}),
            json!({"spec": {"containers": {"image": "nginx"}}}),
            json!({"spec": {"containers": "nginx"}}),
            json!([1, 2]),
        ] {
            assert!(extract("pods", &obj).is_empty(), "{obj}");
        }
        // A pod-shaped Deployment has no template, so no images.
        let pod_shaped = json!({"spec": pod_spec()});
        assert!(extract("deployments", &pod_shaped).is_empty());
    }

    #[test]
    fn unsupported_resource_extracts_nothing() {
        let rc = json!({"spec": {"template": {"spec": pod_spec()}}});
        assert!(extract("replicationcontrollers", &rc).is_empty());
    }

    #[test]
    fn lists_have_all_keys_for_supported_resources() {
        let pod = json!({"spec": {"containers": [{"image": "a"}, {"image": "b"}]}});
        let lists = extract_lists("pods", &pod);
        assert_eq!(lists.len(), 3);
        assert_eq!(lists["containers"], vec!["a", "b"]);
        assert!(lists["initContainers"].is_empty());
        assert!(lists["ephemeralContainers"].is_empty());

        let empty = extract_lists("jobs", &json!({}));
        assert_eq!(
            empty.keys().copied().collect::<Vec<_>>(),
            vec!["containers", "ephemeralContainers", "initContainers"]
        );
        assert!(empty.values().all(Vec::is_empty));
    }

    /// The lists hold what [`extract`] finds, in its order, whatever the
    /// object holds: entries without an image or with another type are
    /// skipped by both, as is a category that is not a list.
    #[test]
    fn lists_agree_with_extract() {
        let spec = json!({
            "containers": [{"image": "a"}, {"name": "none"}, {"image": 7}, {"image": "b"}],
            "initContainers": {"image": "not a list"},
            "ephemeralContainers": [{"image": "e"}]
        });
        for (resource, object) in [
            ("pods", json!({ "spec": spec })),
            (
                "cronjobs",
                json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": spec}}}}}),
            ),
            ("deployments", json!({"spec": {"template": {"spec": spec}}})),
        ] {
            let mut want: BTreeMap<&str, Vec<String>> =
                Category::ALL.iter().map(|c| (c.as_str(), vec![])).collect();
            for found in extract(resource, &object) {
                want.entry(found.category.as_str())
                    .or_default()
                    .push(found.image);
            }
            assert_eq!(extract_lists(resource, &object), want, "{resource}");
            assert_eq!(want["containers"], vec!["a", "b"]);
        }
    }

    #[test]
    fn lists_are_empty_for_unsupported_resources() {
        let rc = json!({"spec": {"template": {"spec": pod_spec()}}});
        assert!(extract_lists("replicationcontrollers", &rc).is_empty());
        assert!(extract_lists("services", &json!({})).is_empty());
    }

    #[test]
    fn pointer_escaping() {
        assert_eq!(escape_pointer_segment("a/b~c"), "a~1b~0c");
        assert_eq!(escape_pointer_segment("spec"), "spec");
        let found = extract_at(&["x/y"], &json!({"x/y": {"containers": [{"image": "i"}]}}));
        assert_eq!(found[0].pointer, "/x~1y/containers/0/image");
    }
}
