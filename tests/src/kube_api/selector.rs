//! Label and field selectors, as `labelSelector` and `fieldSelector`
//! query parameters spell them.

use serde_json::Value;

/// One requirement of a label selector.
#[derive(Debug, Clone, PartialEq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
}

/// A parsed `labelSelector`: every requirement must hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct LabelSelector(Vec<Requirement>);

impl LabelSelector {
    /// Parses `a=b,c!=d,e in (f,g),h notin (i),j,!k` (`==` is `=`).
    pub(crate) fn parse(text: &str) -> Result<LabelSelector, String> {
        let mut reqs = Vec::new();
        for term in split_top_level(text) {
            let term = term.trim();
            if term.is_empty() {
                continue;
            }
            reqs.push(parse_requirement(term)?);
        }
        Ok(LabelSelector(reqs))
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether an object with these `metadata.labels` is selected.
    pub(crate) fn matches(&self, labels: Option<&Value>) -> bool {
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.0.iter().all(|r| match r {
            Requirement::Equals(k, v) => get(k) == Some(v.as_str()),
            Requirement::NotEquals(k, v) => get(k) != Some(v.as_str()),
            Requirement::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Requirement::NotIn(k, vs) => !get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::DoesNotExist(k) => get(k).is_none(),
        })
    }
}

/// Splits at commas outside parentheses.
fn split_top_level(text: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn parse_requirement(term: &str) -> Result<Requirement, String> {
    let bad = || format!("unable to parse requirement: {term:?}");
    if let Some(key) = term.strip_prefix('!') {
        return Ok(Requirement::DoesNotExist(
            key_of(key.trim()).ok_or_else(bad)?,
        ));
    }
    if let Some((k, v)) = term.split_once("!=") {
        return Ok(Requirement::NotEquals(
            key_of(k.trim()).ok_or_else(bad)?,
            value_of(v.trim()).ok_or_else(bad)?,
        ));
    }
    if let Some((k, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
        return Ok(Requirement::Equals(
            key_of(k.trim()).ok_or_else(bad)?,
            value_of(v.trim()).ok_or_else(bad)?,
        ));
    }
    let Some((key, rest)) = term.split_once(char::is_whitespace) else {
        return Ok(Requirement::Exists(key_of(term).ok_or_else(bad)?));
    };
    let key = key_of(key).ok_or_else(bad)?;
    let rest = rest.trim_start();
    let (negated, set) = if let Some(s) = rest.strip_prefix("notin") {
        (true, s)
    } else if let Some(s) = rest.strip_prefix("in") {
        (false, s)
    } else {
        return Err(bad());
    };
    let values = value_set(set.trim()).ok_or_else(bad)?;
    Ok(if negated {
        Requirement::NotIn(key, values)
    } else {
        Requirement::In(key, values)
    })
}

/// `(a, b)` → `[a, b]`; at least one value.
fn value_set(text: &str) -> Option<Vec<String>> {
    let inner = text.strip_prefix('(')?.strip_suffix(')')?.trim();
    if inner.is_empty() {
        return None;
    }
    inner.split(',').map(|v| value_of(v.trim())).collect()
}

/// A label key: `[prefix/]name`, of the characters labels allow.
fn key_of(text: &str) -> Option<String> {
    let ok = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
    ok.then(|| text.to_string())
}

/// A label value: possibly empty, of the characters labels allow.
fn value_of(text: &str) -> Option<String> {
    let ok = text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    ok.then(|| text.to_string())
}

/// The fields a `fieldSelector` may name here.
const FIELDS: [&str; 2] = ["metadata.name", "metadata.namespace"];

/// A parsed `fieldSelector` over `metadata.name` and `metadata.namespace`.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct FieldSelector(Vec<(String, bool, String)>);

impl FieldSelector {
    /// Parses `metadata.name=a,metadata.namespace!=b` (`==` is `=`).
    pub(crate) fn parse(text: &str) -> Result<FieldSelector, String> {
        let mut terms = Vec::new();
        for term in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let (field, equal, value) = if let Some((f, v)) = term.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
                (f, true, v)
            } else {
                return Err(format!("invalid selector: {term:?}; can't understand it"));
            };
            let field = field.trim();
            if !FIELDS.contains(&field) {
                return Err(format!(
                    "field label not supported: {field} (this fake serves {})",
                    FIELDS.join(" and ")
                ));
            }
            terms.push((field.to_string(), equal, value.trim().to_string()));
        }
        Ok(FieldSelector(terms))
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether an object with this `metadata` is selected.
    pub(crate) fn matches(&self, metadata: Option<&Value>) -> bool {
        self.0.iter().all(|(field, equal, value)| {
            let key = field.trim_start_matches("metadata.");
            let actual = metadata
                .and_then(|m| m.get(key))
                .and_then(Value::as_str)
                .unwrap_or("");
            (actual == value) == *equal
        })
    }
}

/// Both selectors of a list or watch.
#[derive(Debug, Clone, Default)]
pub(crate) struct Selectors {
    pub labels: LabelSelector,
    pub fields: FieldSelector,
}

impl Selectors {
    pub(crate) fn matches(&self, obj: &Value) -> bool {
        let meta = obj.get("metadata");
        self.labels.matches(meta.and_then(|m| m.get("labels"))) && self.fields.matches(meta)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sel(text: &str) -> LabelSelector {
        LabelSelector::parse(text).expect("selector")
    }

    #[test]
    fn label_operators() {
        let labels = json!({"app": "web", "tier": "front"});
        let l = Some(&labels);
        assert!(sel("app=web").matches(l));
        assert!(sel("app==web,tier").matches(l));
        assert!(!sel("app!=web").matches(l));
        assert!(
            sel("missing!=x").matches(l),
            "!= holds when the label is absent"
        );
        assert!(sel("app in (db, web)").matches(l));
        assert!(!sel("app notin (db,web)").matches(l));
        assert!(sel("missing notin (a)").matches(l));
        assert!(!sel("missing in (a)").matches(l));
        assert!(sel("!missing").matches(l));
        assert!(!sel("!app").matches(l));
        assert!(sel("").matches(None));
    }

    #[test]
    fn bad_label_selectors_are_refused() {
        for bad in ["app in ()", "app in a", "a b c", "app=(x)", "!"] {
            assert!(LabelSelector::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn field_selectors() {
        let meta = json!({"name": "a", "namespace": "ns"});
        let f = |t: &str| FieldSelector::parse(t).expect("field selector");
        assert!(f("metadata.name=a").matches(Some(&meta)));
        assert!(f("metadata.namespace==ns,metadata.name!=b").matches(Some(&meta)));
        assert!(!f("metadata.name!=a").matches(Some(&meta)));
        assert!(FieldSelector::parse("spec.nodeName=x").is_err());
    }
}
