//! The resource types the fake server serves: builtin kinds from
//! k8s-openapi's `Resource` constants, custom resources from CRD YAML.

use k8s_openapi::api::{
    admissionregistration::v1 as admission, apps::v1 as apps, batch::v1 as batch,
    coordination::v1 as coordination, core::v1 as core,
};
use serde::Deserialize;

/// One served resource: a group, kind and plural, its scope and the
/// versions that answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceType {
    /// `""` for the core group.
    pub group: String,
    pub kind: String,
    /// The URL path segment, e.g. `configmaps`.
    pub plural: String,
    pub namespaced: bool,
    /// Served versions only; any other version answers 404.
    pub versions: Vec<ServedVersion>,
    /// A custom resource (from a CRD), with the CRD strategy's rules:
    /// updates need a `resourceVersion`, no strategic merge patch.
    pub custom: bool,
}

/// A served version and whether it has the `/status` subresource.
#[derive(Debug, Clone, PartialEq)]
pub struct ServedVersion {
    pub name: String,
    pub status: bool,
}

impl ResourceType {
    /// `apiVersion` of objects read at `version`: `v1` or `group/v1`.
    pub fn api_version(&self, version: &str) -> String {
        if self.group.is_empty() {
            version.to_string()
        } else {
            format!("{}/{version}", self.group)
        }
    }

    pub fn served(&self, version: &str) -> Option<&ServedVersion> {
        self.versions.iter().find(|v| v.name == version)
    }

    /// Whether `version` has the `/status` subresource.
    pub fn has_status(&self, version: &str) -> bool {
        self.served(version).is_some_and(|v| v.status)
    }

    /// `plural.group` (just `plural` in the core group), as errors name it.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// Whether this is the core `Namespace` kind.
    pub fn is_namespace(&self) -> bool {
        self.group.is_empty() && self.plural == "namespaces"
    }
}

/// The scope of a k8s-openapi `Resource`, as a value.
trait ScopeFlag {
    const NAMESPACED: bool;
}

impl ScopeFlag for k8s_openapi::NamespaceResourceScope {
    const NAMESPACED: bool = true;
}

impl ScopeFlag for k8s_openapi::ClusterResourceScope {
    const NAMESPACED: bool = false;
}

/// A builtin kind from its k8s-openapi type's constants; `status` says
/// whether the real API serves its `/status` subresource.
fn builtin<T>(status: bool) -> ResourceType
where
    T: k8s_openapi::Resource,
    T::Scope: ScopeFlag,
{
    ResourceType {
        group: T::GROUP.to_string(),
        kind: T::KIND.to_string(),
        plural: T::URL_PATH_SEGMENT.to_string(),
        namespaced: <T::Scope as ScopeFlag>::NAMESPACED,
        versions: vec![ServedVersion {
            name: T::VERSION.to_string(),
            status,
        }],
        custom: false,
    }
}

const STATUS: bool = true;
const NO_STATUS: bool = false;

/// The builtin kinds ivpol reads or writes.
pub fn builtins() -> Vec<ResourceType> {
    vec![
        builtin::<core::Namespace>(STATUS),
        builtin::<core::Secret>(NO_STATUS),
        builtin::<core::ConfigMap>(NO_STATUS),
        builtin::<core::Pod>(STATUS),
        builtin::<apps::Deployment>(STATUS),
        builtin::<apps::ReplicaSet>(STATUS),
        builtin::<apps::StatefulSet>(STATUS),
        builtin::<apps::DaemonSet>(STATUS),
        builtin::<batch::Job>(STATUS),
        builtin::<batch::CronJob>(STATUS),
        builtin::<coordination::Lease>(NO_STATUS),
        builtin::<admission::MutatingWebhookConfiguration>(NO_STATUS),
        builtin::<admission::ValidatingWebhookConfiguration>(NO_STATUS),
        // The webhook configurations' owner (`--webhook-owner-cluster-role`).
        builtin::<k8s_openapi::api::rbac::v1::ClusterRole>(NO_STATUS),
    ]
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Crd {
    api_version: String,
    kind: String,
    spec: CrdSpec,
}

#[derive(Deserialize)]
struct CrdSpec {
    group: String,
    names: CrdNames,
    scope: String,
    versions: Vec<CrdVersion>,
}

#[derive(Deserialize)]
struct CrdNames {
    kind: String,
    plural: String,
}

#[derive(Deserialize)]
struct CrdVersion {
    name: String,
    served: bool,
    #[serde(default)]
    subresources: Option<Subresources>,
}

#[derive(Deserialize)]
struct Subresources {
    #[serde(default)]
    status: Option<serde_yaml_ng::Value>,
}

/// The resource a `CustomResourceDefinition` (apiextensions.k8s.io/v1,
/// YAML or JSON) defines, with its served versions.
pub fn from_crd(text: &str) -> Result<ResourceType, String> {
    let crd: Crd = serde_yaml_ng::from_str(text).map_err(|e| format!("not a CRD: {e}"))?;
    if crd.api_version != "apiextensions.k8s.io/v1" || crd.kind != "CustomResourceDefinition" {
        return Err(format!(
            "not an apiextensions.k8s.io/v1 CustomResourceDefinition: {}/{}",
            crd.api_version, crd.kind
        ));
    }
    let namespaced = match crd.spec.scope.as_str() {
        "Namespaced" => true,
        "Cluster" => false,
        other => return Err(format!("unknown CRD scope {other:?}")),
    };
    let versions = crd
        .spec
        .versions
        .into_iter()
        .filter(|v| v.served)
        .map(|v| ServedVersion {
            status: v.subresources.is_some_and(|s| s.status.is_some()),
            name: v.name,
        })
        .collect();
    Ok(ResourceType {
        group: crd.spec.group,
        kind: crd.spec.names.kind,
        plural: crd.spec.names.plural,
        namespaced,
        versions,
        custom: true,
    })
}

/// Index of a type in [`Resources`]; stable for the server's life.
pub(crate) type ResId = usize;

/// Every type the server serves.
#[derive(Debug, Clone, Default)]
pub(crate) struct Resources {
    types: Vec<ResourceType>,
}

impl Resources {
    pub(crate) fn new(types: impl IntoIterator<Item = ResourceType>) -> Resources {
        let mut r = Resources::default();
        for t in types {
            r.add(t);
        }
        r
    }

    /// Adds a type, or replaces the one with the same group and plural
    /// (as re-applying a CRD does); its id stays.
    pub(crate) fn add(&mut self, t: ResourceType) -> ResId {
        match self
            .types
            .iter()
            .position(|x| x.group == t.group && x.plural == t.plural)
        {
            Some(i) => {
                self.types[i] = t;
                i
            }
            None => {
                self.types.push(t);
                self.types.len() - 1
            }
        }
    }

    pub(crate) fn get(&self, id: ResId) -> &ResourceType {
        &self.types[id]
    }

    /// The type at `/api[s]/{group}/{version}/.../{plural}`, if `version` is served.
    pub(crate) fn by_path(&self, group: &str, version: &str, plural: &str) -> Option<ResId> {
        self.types
            .iter()
            .position(|t| t.group == group && t.plural == plural && t.served(version).is_some())
    }

    /// The type of `apiVersion` and `kind` (or plural), and its version.
    pub(crate) fn by_kind(&self, api_version: &str, kind: &str) -> Option<(ResId, String)> {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let id = self.types.iter().position(|t| {
            t.group == group && (t.kind == kind || t.plural == kind) && t.served(version).is_some()
        })?;
        Some((id, version.to_string()))
    }

    /// The core `Namespace` type.
    pub(crate) fn namespace_id(&self) -> Option<ResId> {
        self.types.iter().position(ResourceType::is_namespace)
    }

    /// Every type, in the order added.
    pub(crate) fn all(&self) -> &[ResourceType] {
        &self.types
    }
}
