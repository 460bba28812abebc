//! RFC 6902 JSON Patch operations, as the mutate phase emits them.

use serde::Serialize;

/// One `replace` operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Replace {
    /// `op`: always `replace`.
    pub op: &'static str,
    /// `path`: the JSON Pointer of the value replaced.
    pub path: String,
    /// `value`: the new string value.
    pub value: String,
}

impl Replace {
    /// A `replace` of the value at `path` with `value`.
    pub fn new(path: String, value: String) -> Replace {
        Replace {
            op: "replace",
            path,
            value,
        }
    }
}

/// De-duplicates by path (first one wins) and renders the patch, or `None` when empty.
pub fn render(ops: Vec<Replace>) -> Option<String> {
    let mut seen = std::collections::BTreeSet::new();
    let unique: Vec<Replace> = ops
        .into_iter()
        .filter(|op| seen.insert(op.path.clone()))
        .collect();
    if unique.is_empty() {
        return None;
    }
    serde_json::to_string(&unique).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dedups_by_path_and_skips_empty() {
        assert_eq!(render(vec![]), None);
        let a = Replace::new("/spec/containers/0/image".into(), "x@sha256:1".into());
        let rendered = render(vec![a.clone(), a]).expect("non-empty");
        assert_eq!(
            rendered,
            r#"[{"op":"replace","path":"/spec/containers/0/image","value":"x@sha256:1"}]"#
        );
    }
}
