//! The admission routes, as both `ivpol serve` and the webhook component
//! read a request path: `/ivpol|nivpol/validate|mutate[/names...]`.

/// One admission route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdmissionRoute {
    /// `/nivpol/`: the namespaced policies of the request's namespace;
    /// `/ivpol/`: the cluster policies.
    pub namespaced: bool,
    /// The mutate phase (`/mutate`), else validate.
    pub mutate: bool,
    /// Policy names from the path; empty means every policy in scope.
    pub names: Vec<String>,
}

/// The route of a `path` already [`normalised`], if it is one.
pub fn parse(path: &str) -> Option<AdmissionRoute> {
    let mut parts = path.trim_start_matches('/').splitn(3, '/');
    let namespaced = match parts.next()? {
        "ivpol" => false,
        "nivpol" => true,
        _ => return None,
    };
    let mutate = match parts.next()? {
        "validate" => false,
        "mutate" => true,
        _ => return None,
    };
    let names = parts
        .next()
        .unwrap_or_default()
        .split('/')
        .filter(|n| !n.is_empty())
        .map(String::from)
        .collect();
    Some(AdmissionRoute {
        namespaced,
        mutate,
        names,
    })
}

/// The one normalisation every path gets: runs of `/` are one, and a
/// trailing `/` goes (`//ivpol/validate/` and `/ivpol//validate` are both
/// `/ivpol/validate`), so that no spelling of a route is served while
/// another is not.
pub fn normalised(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for segment in path.split('/').filter(|s| !s.is_empty()) {
        out.push('/');
        out.push_str(segment);
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}
