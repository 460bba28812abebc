//! `matchConstraints` matching for ImageValidatingPolicy: the Kubernetes
//! `MatchResources` semantics (label selectors, resource rules, namespace and
//! object selectors, match policy) as Kyverno's IVP engine evaluates them.
//!
//! This file owns the module layout, the public re-exports, and the small
//! helpers the submodules share to render diagnostics in the same shape as
//! apimachinery's `field.Error` (`<path>: <type>: <value>: <detail>`), so that
//! messages read like the ones `kubectl apply` shows for the same mistake.

pub mod constraints;
pub mod rules;
pub mod selector;

pub use constraints::{
    validate_match_constraints, MatchError, MatchInput, MatchPolicy, MatchResources,
};
pub use rules::{rule_matches, NamedRuleWithOperations, RequestAttrs, RuleWithOperations};
pub use selector::{LabelSelector, LabelSelectorOperator, LabelSelectorRequirement};

use serde::{Deserialize, Deserializer};

/// Deserializes `null` as the type's default. Go's `encoding/json` decodes
/// `null` into a nil slice or map, and YAML writes `matchLabels:` with no value
/// as `null`, so rejecting it would refuse policies the Kubernetes API accepts.
pub(crate) fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// Appends a child field to a path the way `field.Path.Child` prints it; an
/// empty base yields a relative path, used when the caller's location is not
/// known.
pub(crate) fn child_path(base: &str, name: &str) -> String {
    if base.is_empty() {
        name.to_string()
    } else {
        format!("{base}.{name}")
    }
}

/// Appends a list index the way `field.Path.Index` prints it.
pub(crate) fn index_path(base: &str, index: usize) -> String {
    format!("{base}[{index}]")
}

/// Quotes a string like Go's `strconv.Quote` (`%q`), which is how
/// apimachinery renders string values inside validation messages.
pub(crate) fn go_quote(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{07}' => out.push_str("\\a"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{0b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Renders a list of strings as JSON, which is how `field.Invalid` prints a
/// slice-valued bad value.
pub(crate) fn json_strings(values: &[String]) -> String {
    serde_json::to_string(values).unwrap_or_else(|_| format!("{values:?}"))
}

/// Joins several diagnostics the way apimachinery's error aggregate prints
/// them: a single error as itself, several as `[a, b]`.
pub(crate) fn aggregate(errors: &[String]) -> String {
    match errors {
        [single] => single.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_render_like_field_path() {
        assert_eq!(child_path("", "key"), "key");
        assert_eq!(
            child_path("spec", "matchConstraints"),
            "spec.matchConstraints"
        );
        assert_eq!(index_path("resourceRules", 2), "resourceRules[2]");
    }

    #[test]
    fn go_quote_escapes_like_strconv_quote() {
        assert_eq!(go_quote("plain"), "\"plain\"");
        assert_eq!(go_quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(go_quote("tab\tnl\n"), "\"tab\\tnl\\n\"");
        assert_eq!(go_quote("\u{01}"), "\"\\x01\"");
        assert_eq!(go_quote("\u{85}"), "\"\\u0085\"");
        assert_eq!(go_quote("é"), "\"é\"");
    }

    #[test]
    fn json_strings_renders_a_json_array() {
        assert_eq!(json_strings(&[]), "[]");
        assert_eq!(
            json_strings(&["*".to_string(), "CREATE".to_string()]),
            "[\"*\",\"CREATE\"]"
        );
    }

    #[test]
    fn aggregate_matches_apimachinery_format() {
        assert_eq!(aggregate(&["a".to_string()]), "a");
        assert_eq!(aggregate(&["a".to_string(), "b".to_string()]), "[a, b]");
    }

    #[test]
    fn null_as_default_accepts_null_and_values() {
        #[derive(Deserialize)]
        struct Holder {
            #[serde(default, deserialize_with = "null_as_default")]
            items: Vec<String>,
        }
        let h: Result<Holder, _> = serde_json::from_str(r#"{"items": null}"#);
        assert!(matches!(h, Ok(ref v) if v.items.is_empty()));
        let h: Result<Holder, _> = serde_json::from_str(r#"{"items": ["x"]}"#);
        assert!(matches!(h, Ok(ref v) if v.items == ["x"]));
        let h: Result<Holder, _> = serde_json::from_str(r#"{}"#);
        assert!(matches!(h, Ok(ref v) if v.items.is_empty()));
        let h: Result<Holder, _> = serde_json::from_str(r#"{"items": 3}"#);
        let err = h.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            err.contains("invalid type: integer `3`, expected a sequence"),
            "{err}"
        );
    }
}
