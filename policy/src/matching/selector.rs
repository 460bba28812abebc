//! Kubernetes `metav1.LabelSelector`: its JSON form, its validation (the
//! rules and messages of apimachinery's `ValidateLabelSelector`, which is what
//! the API server applies to `MatchResources` selectors), and its evaluation
//! against a label set (apimachinery `labels.Requirement.Matches`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{aggregate, child_path, go_quote, index_path, null_as_default};

/// A label query over a set of resources. The requirements of `match_labels`
/// and `match_expressions` are ANDed; an empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelSelector {
    /// Each `{key: value}` pair is an `In` requirement with a single value.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub match_labels: BTreeMap<String, String>,
    /// `matchExpressions`: requirements on labels, all of which must hold.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

/// One `matchExpressions` entry: `key`, `operator` and (for `In`/`NotIn`)
/// `values`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelSelectorRequirement {
    /// `key`: the label the requirement is about.
    pub key: String,
    /// `operator`: how the label is compared with `values`.
    pub operator: LabelSelectorOperator,
    /// `values`: the values for `In` and `NotIn`; empty for `Exists` and
    /// `DoesNotExist`.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub values: Vec<String>,
}

/// The four `metav1.LabelSelectorOperator` values. These are case-sensitive
/// in Kubernetes; anything else is rejected while deserializing with serde's
/// "unknown variant `X`, expected one of `In`, `NotIn`, `Exists`,
/// `DoesNotExist`" message, so an unknown operator can never reach matching.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum LabelSelectorOperator {
    /// The label is set to one of `values`.
    In,
    /// The label is absent or set to none of `values`.
    NotIn,
    /// The label is set, to any value.
    Exists,
    /// The label is absent.
    DoesNotExist,
}

impl LabelSelector {
    /// Whether every requirement names only `key`: such a selector is
    /// answered by that label alone (for namespaces, the name label the API
    /// server sets on every namespace).
    pub fn uses_only_key(&self, key: &str) -> bool {
        self.match_labels.keys().all(|k| k == key)
            && self.match_expressions.iter().all(|r| r.key == key)
    }

    /// True when the selector has no requirements at all (apimachinery's
    /// `labels.Everything()`), which matches every label set.
    pub fn is_empty(&self) -> bool {
        self.match_labels.is_empty() && self.match_expressions.is_empty()
    }

    /// Validates the selector; on failure returns every diagnostic, with paths
    /// relative to the selector, joined as apimachinery aggregates them.
    pub fn validate(&self) -> Result<(), String> {
        let errors = self.validate_at("");
        if errors.is_empty() {
            Ok(())
        } else {
            Err(aggregate(&errors))
        }
    }

    /// Validates the selector, prefixing each diagnostic's field path with
    /// `path` (for example `spec.matchConstraints.namespaceSelector`).
    ///
    /// Mirrors `metav1validation.ValidateLabelSelector` with strict options,
    /// as the API server uses for `MatchResources`: `matchLabels` keys and
    /// values must be valid label keys and values; `In`/`NotIn` need values;
    /// `Exists`/`DoesNotExist` must have none; keys and values in
    /// `matchExpressions` must be well-formed.
    pub fn validate_at(&self, path: &str) -> Vec<String> {
        let mut errors = Vec::new();
        let labels_path = child_path(path, "matchLabels");
        for (key, value) in &self.match_labels {
            // apimachinery reports both key and value errors against the
            // `matchLabels` path itself, not against the individual entry.
            for msg in label_key_errors(key) {
                errors.push(invalid(&labels_path, key, &msg));
            }
            for msg in label_value_errors(value) {
                errors.push(invalid(&labels_path, value, &msg));
            }
        }
        let exprs_path = child_path(path, "matchExpressions");
        for (i, req) in self.match_expressions.iter().enumerate() {
            errors.extend(req.validate_at(&index_path(&exprs_path, i)));
        }
        errors
    }

    /// Evaluates the selector against `labels` with apimachinery semantics.
    ///
    /// This does not validate: an `In`/`NotIn` without values behaves as the
    /// empty value set, and values given to `Exists`/`DoesNotExist` are
    /// ignored. Callers that must reject such selectors call
    /// [`LabelSelector::validate`] first, as `MatchResources::matches` does.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.match_labels
            .iter()
            .all(|(key, value)| labels.get(key) == Some(value))
            && self.match_expressions.iter().all(|req| req.matches(labels))
    }
}

impl LabelSelectorRequirement {
    /// Validates one requirement, prefixing paths with `path` (normally
    /// `...matchExpressions[i]`). Order of checks follows
    /// `ValidateLabelSelectorRequirement`: values-vs-operator, key, values.
    pub fn validate_at(&self, path: &str) -> Vec<String> {
        let mut errors = Vec::new();
        let values_path = child_path(path, "values");
        match self.operator {
            LabelSelectorOperator::In | LabelSelectorOperator::NotIn => {
                if self.values.is_empty() {
                    errors.push(format!(
                        "{values_path}: Required value: must be specified when `operator` is 'In' or 'NotIn'"
                    ));
                }
            }
            LabelSelectorOperator::Exists | LabelSelectorOperator::DoesNotExist => {
                if !self.values.is_empty() {
                    errors.push(format!(
                        "{values_path}: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
                    ));
                }
            }
        }
        let key_path = child_path(path, "key");
        for msg in label_key_errors(&self.key) {
            errors.push(invalid(&key_path, &self.key, &msg));
        }
        for (i, value) in self.values.iter().enumerate() {
            for msg in label_value_errors(value) {
                errors.push(invalid(&index_path(&values_path, i), value, &msg));
            }
        }
        errors
    }

    /// `labels.Requirement.Matches`: `In` needs the key present with a listed
    /// value; `NotIn` matches when the key is absent or its value is unlisted;
    /// `Exists`/`DoesNotExist` test only the key.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        match self.operator {
            LabelSelectorOperator::In => value.is_some_and(|v| self.values.contains(v)),
            LabelSelectorOperator::NotIn => value.is_none_or(|v| !self.values.contains(v)),
            LabelSelectorOperator::Exists => value.is_some(),
            LabelSelectorOperator::DoesNotExist => value.is_none(),
        }
    }
}

/// `field.Invalid` with a string bad value.
fn invalid(path: &str, value: &str, detail: &str) -> String {
    format!("{path}: Invalid value: {}: {detail}", go_quote(value))
}

// The format strings below are quoted verbatim in apimachinery's messages
// (`pkg/api/validate/content`), so they are kept as literal text even though
// this module checks them by hand rather than with a regex engine.
const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const LABEL_MAX_LEN: usize = 63;
const DNS1123_SUBDOMAIN_MAX_LEN: usize = 253;

/// apimachinery `RegexError`. Each example is rendered as `'x', ` and the
/// examples are joined with ` or `, so the real message has two spaces before
/// `or`; kept so the text is identical to what the API server prints.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let quoted: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{msg} (e.g. {}regex used for validation is '{fmt}')",
        quoted.join(" or ")
    )
}

fn max_len_error(len: usize) -> String {
    format!("must be no more than {len} bytes")
}

/// Matches `LABEL_KEY_FMT` anchored: non-empty, ASCII alphanumeric at both
/// ends, `-`, `_`, `.` or alphanumerics between.
fn is_label_name(s: &str) -> bool {
    let bytes = s.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// Matches one RFC 1123 label: lowercase alphanumeric at both ends, `-` or
/// lowercase alphanumerics between.
fn is_dns1123_label(s: &str) -> bool {
    let bytes = s.as_bytes();
    let lower_alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            lower_alnum(first)
                && lower_alnum(last)
                && bytes.iter().all(|b| lower_alnum(b) || *b == b'-')
        }
        _ => false,
    }
}

/// apimachinery `IsDNS1123Subdomain`.
fn dns1123_subdomain_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LEN {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LEN));
    }
    if !value.split('.').all(is_dns1123_label) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// apimachinery `content.IsLabelKey` (a.k.a. `IsQualifiedName`): an optional
/// DNS-subdomain prefix and `/`, then a name of at most 63 bytes.
fn label_key_errors(value: &str) -> Vec<String> {
    let examples = ["MyName", "my.name", "123-abc"];
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    dns1123_subdomain_errors(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(LABEL_KEY_ERR, LABEL_KEY_FMT, &examples)
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > LABEL_MAX_LEN {
        errs.push(format!("name part {}", max_len_error(LABEL_MAX_LEN)));
    }
    // Deliberately not `else`: apimachinery also reports the regex failure for
    // an empty or over-long name.
    if !is_label_name(name) {
        errs.push(format!(
            "name part {}",
            regex_error(LABEL_KEY_ERR, LABEL_KEY_FMT, &examples)
        ));
    }
    errs
}

/// apimachinery `content.IsLabelValue`: empty, or a label name of at most 63
/// bytes.
fn label_value_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_MAX_LEN {
        errs.push(max_len_error(LABEL_MAX_LEN));
    }
    if !value.is_empty() && !is_label_name(value) {
        errs.push(regex_error(
            LABEL_VALUE_ERR,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn req(
        key: &str,
        operator: LabelSelectorOperator,
        values: &[&str],
    ) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.to_string(),
            operator,
            values: values.iter().map(|v| v.to_string()).collect(),
        }
    }

    fn exprs(reqs: Vec<LabelSelectorRequirement>) -> LabelSelector {
        LabelSelector {
            match_labels: BTreeMap::new(),
            match_expressions: reqs,
        }
    }

    use LabelSelectorOperator::{DoesNotExist, Exists, In, NotIn};

    // ---- deserialization ----

    #[test]
    fn deserializes_camel_case() {
        let sel: LabelSelector = serde_json::from_str(
            r#"{"matchLabels":{"app":"web"},"matchExpressions":[{"key":"tier","operator":"In","values":["a","b"]}]}"#,
        )
        .unwrap();
        assert_eq!(sel.match_labels, labels(&[("app", "web")]));
        assert_eq!(sel.match_expressions, vec![req("tier", In, &["a", "b"])]);
    }

    #[test]
    fn deserializes_empty_object_and_nulls() {
        let sel: LabelSelector = serde_json::from_str("{}").unwrap();
        assert!(sel.is_empty());
        let sel: LabelSelector =
            serde_json::from_str(r#"{"matchLabels":null,"matchExpressions":null}"#).unwrap();
        assert!(sel.is_empty());
        let r: LabelSelectorRequirement =
            serde_json::from_str(r#"{"key":"k","operator":"Exists","values":null}"#).unwrap();
        assert!(r.values.is_empty());
    }

    #[test]
    fn rejects_unknown_fields() {
        let err = serde_json::from_str::<LabelSelector>(r#"{"matchLabel":{}}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown field `matchLabel`"), "{err}");
        let err = serde_json::from_str::<LabelSelectorRequirement>(
            r#"{"key":"k","operator":"In","values":["v"],"extra":1}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("unknown field `extra`"), "{err}");
    }

    #[test]
    fn rejects_unknown_operator_with_clear_message() {
        let err = serde_json::from_str::<LabelSelectorRequirement>(
            r#"{"key":"k","operator":"Gt","values":["1"]}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("unknown variant `Gt`"), "{err}");
        assert!(
            err.contains("`In`, `NotIn`, `Exists`, `DoesNotExist`"),
            "{err}"
        );
        // Operators are case-sensitive in Kubernetes.
        let err = serde_json::from_str::<LabelSelectorRequirement>(
            r#"{"key":"k","operator":"in","values":["1"]}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("unknown variant `in`"), "{err}");
    }

    #[test]
    fn requires_key_and_operator() {
        let err = serde_json::from_str::<LabelSelectorRequirement>(r#"{"operator":"Exists"}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("missing field `key`"), "{err}");
        let err = serde_json::from_str::<LabelSelectorRequirement>(r#"{"key":"k"}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("missing field `operator`"), "{err}");
    }

    #[test]
    fn serializes_round_trip_without_empty_fields() {
        let sel = exprs(vec![req("k", Exists, &[])]);
        let json = serde_json::to_string(&sel).unwrap();
        assert_eq!(
            json,
            r#"{"matchExpressions":[{"key":"k","operator":"Exists"}]}"#
        );
        let back: LabelSelector = serde_json::from_str(&json).unwrap();
        assert_eq!(back, sel);
    }

    // ---- validation ----

    #[test]
    fn valid_selectors_pass() {
        assert_eq!(LabelSelector::default().validate(), Ok(()));
        let sel = LabelSelector {
            match_labels: labels(&[("example.com/app", "web-1"), ("tier", "")]),
            match_expressions: vec![
                req("a", In, &["x"]),
                req("b", NotIn, &["x", "y"]),
                req("c", Exists, &[]),
                req("d", DoesNotExist, &[]),
            ],
        };
        assert_eq!(sel.validate(), Ok(()));
    }

    #[test]
    fn in_and_not_in_require_values() {
        for op in [In, NotIn] {
            let sel = exprs(vec![req("k", op, &[])]);
            assert_eq!(
                sel.validate(),
                Err("matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'".to_string())
            );
        }
    }

    #[test]
    fn exists_and_does_not_exist_forbid_values() {
        for op in [Exists, DoesNotExist] {
            let sel = exprs(vec![req("k", Exists, &[]), req("k", op, &["v"])]);
            assert_eq!(
                sel.validate(),
                Err("matchExpressions[1].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'".to_string())
            );
        }
    }

    #[test]
    fn validate_at_prefixes_field_path() {
        let sel = exprs(vec![req("k", In, &[])]);
        assert_eq!(
            sel.validate_at("spec.matchConstraints.namespaceSelector"),
            vec!["spec.matchConstraints.namespaceSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'".to_string()]
        );
    }

    #[test]
    fn multiple_errors_are_aggregated() {
        let sel = exprs(vec![req("k", In, &[]), req("k", Exists, &["v"])]);
        let err = sel.validate().unwrap_err();
        assert!(
            err.starts_with("[matchExpressions[0].values: Required value"),
            "{err}"
        );
        assert!(
            err.contains(", matchExpressions[1].values: Forbidden"),
            "{err}"
        );
        assert!(err.ends_with(']'));
    }

    #[test]
    fn invalid_expression_key_is_reported() {
        let errs = exprs(vec![req("bad key!", Exists, &[])]).validate_at("");
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0].starts_with("matchExpressions[0].key: Invalid value: \"bad key!\": name part must consist of alphanumeric characters"),
            "{}",
            errs[0]
        );
        assert!(errs[0]
            .contains("regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'"));
        assert!(errs[0].contains("(e.g. 'MyName',  or 'my.name',  or '123-abc', regex"));
    }

    #[test]
    fn empty_key_reports_both_emptiness_and_format() {
        let errs = exprs(vec![req("", Exists, &[])]).validate_at("");
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert_eq!(
            errs[0],
            "matchExpressions[0].key: Invalid value: \"\": name part must be non-empty"
        );
        assert!(errs[1].contains("name part must consist of"));
    }

    #[test]
    fn key_prefix_rules() {
        assert!(label_key_errors("example.com/name").is_empty());
        assert_eq!(
            label_key_errors("/name"),
            vec!["prefix part must be non-empty"]
        );
        let errs = label_key_errors("Example.com/name");
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0].starts_with("prefix part a lowercase RFC 1123 subdomain"),
            "{}",
            errs[0]
        );
        assert!(errs[0].contains("(e.g. 'example.com', regex used"));
        let errs = label_key_errors("a/b/c");
        assert_eq!(errs.len(), 1);
        assert!(errs[0].starts_with("a valid label key must consist of"));
        assert!(errs[0].ends_with(
            "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ));
        let long_prefix = format!("{}.com/name", "a".repeat(250));
        assert_eq!(
            label_key_errors(&long_prefix),
            vec!["prefix part must be no more than 253 bytes"]
        );
        assert!(!label_key_errors("a..b.com/name").is_empty());
    }

    #[test]
    fn key_name_length_limit() {
        assert!(label_key_errors(&"a".repeat(63)).is_empty());
        assert_eq!(
            label_key_errors(&"a".repeat(64)),
            vec!["name part must be no more than 63 bytes"]
        );
        assert!(label_key_errors("-a").len() == 1);
        assert!(label_key_errors("a-").len() == 1);
        assert!(label_key_errors("A_b.c-D").is_empty());
    }

    #[test]
    fn label_value_rules() {
        assert!(label_value_errors("").is_empty());
        assert!(label_value_errors("My_value.1-2").is_empty());
        assert!(label_value_errors(&"v".repeat(63)).is_empty());
        assert_eq!(
            label_value_errors(&"v".repeat(64)),
            vec!["must be no more than 63 bytes"]
        );
        let errs = label_value_errors("-bad");
        assert_eq!(errs.len(), 1);
        assert!(errs[0].starts_with("a valid label must be an empty string"));
        assert!(errs[0].contains("'MyValue',  or 'my_value',  or '12345'"));
        assert_eq!(label_value_errors(&format!("-{}", "v".repeat(63))).len(), 2);
    }

    #[test]
    fn invalid_expression_value_is_reported_at_its_index() {
        let errs = exprs(vec![req("k", In, &["ok", "not ok"])]).validate_at("p");
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0].starts_with(
                "p.matchExpressions[0].values[1]: Invalid value: \"not ok\": a valid label must"
            ),
            "{}",
            errs[0]
        );
    }

    #[test]
    fn invalid_match_labels_are_reported_at_match_labels() {
        let sel = LabelSelector {
            match_labels: labels(&[("bad key", "bad value")]),
            match_expressions: vec![],
        };
        let errs = sel.validate_at("s");
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert!(errs[0].starts_with("s.matchLabels: Invalid value: \"bad key\": name part"));
        assert!(errs[1].starts_with("s.matchLabels: Invalid value: \"bad value\": a valid label"));
    }

    // ---- matching ----

    #[test]
    fn empty_selector_matches_everything() {
        let sel = LabelSelector::default();
        assert!(sel.matches(&BTreeMap::new()));
        assert!(sel.matches(&labels(&[("a", "b")])));
    }

    #[test]
    fn match_labels_require_exact_value() {
        let sel = LabelSelector {
            match_labels: labels(&[("app", "web")]),
            match_expressions: vec![],
        };
        assert!(sel.matches(&labels(&[("app", "web"), ("x", "y")])));
        assert!(!sel.matches(&labels(&[("app", "db")])));
        assert!(!sel.matches(&BTreeMap::new()));
    }

    #[test]
    fn in_operator() {
        let sel = exprs(vec![req("env", In, &["prod", "stage"])]);
        assert!(sel.matches(&labels(&[("env", "prod")])));
        assert!(sel.matches(&labels(&[("env", "stage")])));
        assert!(!sel.matches(&labels(&[("env", "dev")])));
        assert!(!sel.matches(&BTreeMap::new()));
        // Unvalidated In with no values matches nothing.
        assert!(!exprs(vec![req("env", In, &[])]).matches(&labels(&[("env", "")])));
    }

    #[test]
    fn not_in_operator_matches_absent_key() {
        let sel = exprs(vec![req("env", NotIn, &["prod"])]);
        assert!(sel.matches(&BTreeMap::new()));
        assert!(sel.matches(&labels(&[("env", "dev")])));
        assert!(!sel.matches(&labels(&[("env", "prod")])));
    }

    #[test]
    fn exists_operator() {
        let sel = exprs(vec![req("env", Exists, &[])]);
        assert!(sel.matches(&labels(&[("env", "")])));
        assert!(!sel.matches(&labels(&[("other", "x")])));
    }

    #[test]
    fn does_not_exist_operator() {
        let sel = exprs(vec![req("env", DoesNotExist, &[])]);
        assert!(sel.matches(&labels(&[("other", "x")])));
        assert!(!sel.matches(&labels(&[("env", "")])));
    }

    #[test]
    fn requirements_are_anded() {
        let sel = LabelSelector {
            match_labels: labels(&[("app", "web")]),
            match_expressions: vec![req("env", In, &["prod"]), req("debug", DoesNotExist, &[])],
        };
        assert!(sel.matches(&labels(&[("app", "web"), ("env", "prod")])));
        assert!(!sel.matches(&labels(&[("app", "web"), ("env", "prod"), ("debug", "1")])));
        assert!(!sel.matches(&labels(&[("app", "web"), ("env", "dev")])));
        assert!(!sel.matches(&labels(&[("app", "db"), ("env", "prod")])));
    }
}
