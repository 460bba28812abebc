//! Kubernetes' format library (`library/format.go`): `format.named(name)`
//! (an optional), `format.<name>()` for each named format, and
//! `<format>.validate(s)`: `optional.none()` when `s` is valid, else
//! `optional.of(<apimachinery's messages>)`.
//!
//! The identifier `format` is the namespace of these functions; the strings
//! extension's `'%s'.format([...])` is a method on a string and is unaffected.

use super::{add, optional_none, optional_of, string, urls};
use cel::objects::Opaque;
use cel::{Context, Value};
use regex::Regex;
use std::sync::{Arc, OnceLock};

/// The named formats, as `format.named` names them, with their
/// `format.<name>()` functions.
pub(super) const NAMES: [(&str, &str); 13] = [
    ("dns1123Label", "format.dns1123Label"),
    ("dns1123Subdomain", "format.dns1123Subdomain"),
    ("dns1035Label", "format.dns1035Label"),
    ("qualifiedName", "format.qualifiedName"),
    ("dns1123LabelPrefix", "format.dns1123LabelPrefix"),
    ("dns1123SubdomainPrefix", "format.dns1123SubdomainPrefix"),
    ("dns1035LabelPrefix", "format.dns1035LabelPrefix"),
    ("labelValue", "format.labelValue"),
    ("uri", "format.uri"),
    ("uuid", "format.uuid"),
    ("byte", "format.byte"),
    ("date", "format.date"),
    ("datetime", "format.datetime"),
];

/// A named format (Kubernetes' `kubernetes.NamedFormat`): equal only to
/// itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FormatValue(&'static str);

impl Opaque for FormatValue {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.NamedFormat"
    }
}

pub(super) fn register(ctx: &mut Context<'_, '_>) {
    for (name, qualified) in NAMES {
        add(ctx, qualified, move |call| {
            if call.this.is_some() || !call.args.is_empty() {
                return Err(call.no_overload());
            }
            Ok(Value::Opaque(Arc::new(FormatValue(name))))
        });
    }
    add(ctx, "format.named", |call| {
        let wanted = call.one_string()?;
        Ok(match NAMES.iter().find(|(n, _)| *n == wanted) {
            Some((name, _)) => optional_of(Value::Opaque(Arc::new(FormatValue(name)))),
            None => optional_none(),
        })
    });
    add(ctx, "validate", |call| {
        let f = *call.receiver::<FormatValue>(1)?;
        let Value::String(s) = &call.args[0] else {
            return Err(call.no_overload());
        };
        let errors = validate(f.0, s);
        Ok(if errors.is_empty() {
            optional_none()
        } else {
            optional_of(Value::List(Arc::new(
                errors.into_iter().map(string).collect(),
            )))
        })
    });
}

/// The messages for `s` under the format `name` (none when valid).
fn validate(name: &str, s: &str) -> Vec<String> {
    match name {
        "dns1123Label" => dns1123_label(s),
        "dns1123Subdomain" => dns1123_subdomain(s),
        "dns1035Label" => dns1035_label(s),
        "qualifiedName" => label_key(s),
        "dns1123LabelPrefix" => dns1123_label(&mask_trailing_dash(s)),
        "dns1123SubdomainPrefix" => dns1123_subdomain(&mask_trailing_dash(s)),
        "dns1035LabelPrefix" => dns1035_label(&mask_trailing_dash(s)),
        "labelValue" => label_value(s),
        "uri" => match urls::parse_request_uri(s) {
            Ok(_) => vec![],
            Err(e) => vec![e],
        },
        "uuid" => check(
            re(&UUID, UUID_PATTERN).is_match(s),
            "does not match the UUID format",
        ),
        "byte" => check(re(&BASE64, BASE64_PATTERN).is_match(s), "invalid base64"),
        "date" => check(is_date(s), "invalid date"),
        "datetime" => check(is_datetime(s), "invalid datetime"),
        _ => vec![],
    }
}

fn check(ok: bool, message: &str) -> Vec<String> {
    if ok {
        vec![]
    } else {
        vec![message.to_string()]
    }
}

/// The compiled `pattern`, one of this module's constants.
fn re(cell: &'static OnceLock<Regex>, pattern: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pattern).expect("a constant pattern compiles"))
}

static DNS1123_LABEL: OnceLock<Regex> = OnceLock::new();
static DNS1123_SUBDOMAIN: OnceLock<Regex> = OnceLock::new();
static DNS1035_LABEL: OnceLock<Regex> = OnceLock::new();
static LABEL_KEY: OnceLock<Regex> = OnceLock::new();
static LABEL_VALUE: OnceLock<Regex> = OnceLock::new();
static UUID: OnceLock<Regex> = OnceLock::new();
static BASE64: OnceLock<Regex> = OnceLock::new();
static DATETIME: OnceLock<Regex> = OnceLock::new();

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_SUBDOMAIN_FMT: &str =
    r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
/// kube-openapi's `strfmt.UUIDPattern`.
const UUID_PATTERN: &str = "(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$";
/// govalidator's `Base64`, which kube-openapi's `byte` format uses.
const BASE64_PATTERN: &str =
    r"^(?:[A-Za-z0-9+\/]{4})*(?:[A-Za-z0-9+\/]{2}==|[A-Za-z0-9+\/]{3}=|[A-Za-z0-9+\/]{4})$";
/// kube-openapi's `strfmt.DateTimePattern` (after the `t`).
const DATETIME_PATTERN: &str =
    r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$";

/// `fmt` anchored at both ends, as apimachinery matches it.
fn full(cell: &'static OnceLock<Regex>, fmt: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(&format!("^{fmt}$")).expect("a constant pattern compiles"))
}

/// apimachinery's `maskTrailingDash` (a name that will have a suffix
/// appended may end in `-`). Go slices two bytes off a one-byte `-`, which
/// panics; here it is taken as `a`.
fn mask_trailing_dash(s: &str) -> String {
    match s.strip_suffix('-') {
        Some(_) if s.len() >= 2 => {
            let mut b = s.as_bytes()[..s.len() - 2].to_vec();
            b.push(b'a');
            String::from_utf8_lossy(&b).into_owned()
        }
        Some(_) => "a".to_string(),
        None => s.to_string(),
    }
}

/// apimachinery's `RegexError`.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut out = format!("{msg} (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{e}', "));
    }
    out.push_str(&format!("regex used for validation is '{fmt}')"));
    out
}

fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} bytes")
}

const EMPTY_ERROR: &str = "must be non-empty";

fn dns1123_label(s: &str) -> Vec<String> {
    let mut errs = vec![];
    if s.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !full(&DNS1123_LABEL, DNS1123_LABEL_FMT).is_match(s) {
        if full(&DNS1123_SUBDOMAIN, DNS1123_SUBDOMAIN_FMT).is_match(s) {
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

fn dns1123_subdomain(s: &str) -> Vec<String> {
    let mut errs = vec![];
    if s.len() > 253 {
        errs.push(max_len_error(253));
    }
    if !full(&DNS1123_SUBDOMAIN, DNS1123_SUBDOMAIN_FMT).is_match(s) {
        errs.push(regex_error(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

fn dns1035_label(s: &str) -> Vec<String> {
    let mut errs = vec![];
    if s.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !full(&DNS1035_LABEL, DNS1035_LABEL_FMT).is_match(s) {
        errs.push(regex_error(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

const LABEL_KEY_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// apimachinery's `IsLabelKey` (`IsQualifiedName`).
fn label_key(s: &str) -> Vec<String> {
    let mut errs = vec![];
    let parts: Vec<&str> = s.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push(format!("prefix part {EMPTY_ERROR}"));
            } else {
                errs.extend(
                    dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(LABEL_KEY_MSG, LABEL_KEY_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push(format!("name part {EMPTY_ERROR}"));
    } else if name.len() > 63 {
        errs.push(format!("name part {}", max_len_error(63)));
    }
    if !full(&LABEL_KEY, LABEL_KEY_FMT).is_match(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                LABEL_KEY_MSG,
                LABEL_KEY_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// apimachinery's `IsLabelValue`.
fn label_value(s: &str) -> Vec<String> {
    let mut errs = vec![];
    if s.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !full(&LABEL_VALUE, LABEL_VALUE_FMT).is_match(s) {
        errs.push(regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// kube-openapi's `IsDate`: Go's `time.Parse("2006-01-02", s)`.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        b[r].iter().try_fold(0u32, |acc, &c| {
            c.is_ascii_digit().then(|| acc * 10 + u32::from(c - b'0'))
        })
    };
    let (Some(year), Some(month), Some(day)) = (num(0..4), num(5..7), num(8..10)) else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// kube-openapi's `IsDateTime`: split at `t` (any case), a date before
/// the first, and the pattern on what lies between the first and second.
fn is_datetime(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_lowercase();
    let parts: Vec<&str> = lower.split('t').collect();
    if parts.len() < 2 || !is_date(parts[0]) {
        return false;
    }
    let Some(m) = re(&DATETIME, DATETIME_PATTERN).captures(parts[1]) else {
        return false;
    };
    let field = |i: usize| m.get(i).map_or("", |g| g.as_str());
    field(1) <= "23" && field(2) <= "59" && field(3) <= "59"
}

/// `validate`, for the no-panic test.
#[cfg(test)]
pub(super) fn validate_for_test(name: &str, s: &str) -> Vec<String> {
    validate(name, s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apimachinery_messages() {
        assert_eq!(dns1123_label("a.b"), vec!["must not contain dots"]);
        assert_eq!(
            dns1123_label(&"a".repeat(64)),
            vec!["must be no more than 63 bytes"]
        );
        assert!(dns1123_label("my-name").is_empty());
        assert_eq!(
            label_key("/a"),
            vec!["prefix part must be non-empty".to_string()]
        );
        assert!(label_key("a/b/c")[0].starts_with("a valid label key must consist"));
        assert!(label_key("example.com/MyName").is_empty());
        assert!(label_value("").is_empty());
        assert_eq!(mask_trailing_dash("ab-"), "aa");
        assert_eq!(mask_trailing_dash("-"), "a");
        assert!(dns1123_label(&mask_trailing_dash("é-")).len() == 1);
    }

    #[test]
    fn strfmt_formats() {
        assert!(is_date("2020-02-29"));
        assert!(!is_date("2021-02-29"));
        assert!(!is_date("2021-1-01"));
        assert!(is_datetime("2020-01-01T23:59:59.123+01:00"));
        assert!(!is_datetime("2020-01-01T24:00:00Z"));
        assert!(!is_datetime("2020-01-01"));
        assert!(re(&UUID, UUID_PATTERN).is_match("123E4567E89B12D3A456426614174000"));
        assert!(!re(&BASE64, BASE64_PATTERN).is_match(""));
    }
}
