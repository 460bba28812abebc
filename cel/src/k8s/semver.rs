//! Kubernetes' semver library at version 1 (`library.SemverLib(
//! library.SemverVersion(1))`, as Kyverno registers it): `semver(s)`,
//! `semver(s, normalize)`, `isSemver(s)`, `isSemver(s, normalize)`, and on
//! a `kubernetes.Semver` `major()`, `minor()`, `patch()`,
//! `isGreaterThan(v)`, `isLessThan(v)` and `compareTo(v)`. Two versions
//! are `==` when they compare equal (build metadata is ignored).
//!
//! Parsing is `github.com/blang/semver/v4`'s `Parse`, with its error texts;
//! normalizing is Kubernetes' `normalizeAndParse` (strip one leading `v`,
//! leading zeros, fill in a missing minor and patch).

use super::{
    bool_arg, bool_result, go_quote, int_result, no_such_overload, opaque_arg, opaque_result,
    opaque_type, string_arg, take_args,
};
use cel::common::types::{BOOL_TYPE, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::objects::Opaque;
use cel::{DeclarationError, Env, ExecutionError};
use std::cmp::Ordering;

/// The type name of versions, Kubernetes'.
const TYPE_NAME: &str = "kubernetes.Semver";

/// A parsed version (blang/semver's `Version`).
#[derive(Debug, Clone)]
struct Version {
    major: u64,
    minor: u64,
    patch: u64,
    pre: Vec<Prerelease>,
    /// Kept as parsed, for fidelity; it takes no part in comparisons.
    #[allow(dead_code)]
    build: Vec<String>,
}

/// A prerelease identifier.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Prerelease {
    Num(u64),
    Alpha(String),
}

impl Prerelease {
    fn cmp(&self, other: &Prerelease) -> Ordering {
        match (self, other) {
            (Prerelease::Num(a), Prerelease::Num(b)) => a.cmp(b),
            (Prerelease::Num(_), Prerelease::Alpha(_)) => Ordering::Less,
            (Prerelease::Alpha(_), Prerelease::Num(_)) => Ordering::Greater,
            (Prerelease::Alpha(a), Prerelease::Alpha(b)) => a.as_bytes().cmp(b.as_bytes()),
        }
    }
}

impl Version {
    /// blang/semver's `Compare`.
    fn cmp(&self, other: &Version) -> Ordering {
        let core =
            (self.major, self.minor, self.patch).cmp(&(other.major, other.minor, other.patch));
        if core != Ordering::Equal {
            return core;
        }
        match (self.pre.is_empty(), other.pre.is_empty()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Greater,
            (false, true) => return Ordering::Less,
            (false, false) => {}
        }
        for (a, b) in self.pre.iter().zip(&other.pre) {
            let o = a.cmp(b);
            if o != Ordering::Equal {
                return o;
            }
        }
        self.pre.len().cmp(&other.pre.len())
    }
}

/// The characters of prerelease and build identifiers.
fn is_alphanum(s: &str) -> bool {
    s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

fn is_numeric(s: &str) -> bool {
    s.chars().all(|c| c.is_ascii_digit())
}

fn has_leading_zeroes(s: &str) -> bool {
    s.len() > 1 && s.starts_with('0')
}

/// Go's `strconv.ParseUint(s, 10, 64)`, with its error text.
fn parse_uint(s: &str) -> Result<u64, String> {
    if s.is_empty() || !is_numeric(s) {
        return Err(format!(
            "strconv.ParseUint: parsing {}: invalid syntax",
            go_quote(s)
        ));
    }
    s.parse().map_err(|_| {
        format!(
            "strconv.ParseUint: parsing {}: value out of range",
            go_quote(s)
        )
    })
}

/// A major, minor or patch number.
fn parse_number(s: &str, which: &str) -> Result<u64, String> {
    if !is_numeric(s) {
        return Err(format!(
            "Invalid character(s) found in {which} number {}",
            go_quote(s)
        ));
    }
    if has_leading_zeroes(s) {
        let which = match which {
            "major" => "Major",
            "minor" => "Minor",
            _ => "Patch",
        };
        return Err(format!(
            "{which} number must not contain leading zeroes {}",
            go_quote(s)
        ));
    }
    parse_uint(s)
}

/// blang/semver's `Parse`.
fn parse(s: &str) -> Result<Version, String> {
    if s.is_empty() {
        return Err("Version string empty".to_owned());
    }
    let parts: Vec<&str> = s.splitn(3, '.').collect();
    let [major, minor, rest] = parts[..] else {
        return Err("No Major.Minor.Patch elements found".to_owned());
    };
    let major = parse_number(major, "major")?;
    let minor = parse_number(minor, "minor")?;
    let (rest, build) = match rest.split_once('+') {
        Some((rest, build)) => (rest, Some(build)),
        None => (rest, None),
    };
    let (patch, pre) = match rest.split_once('-') {
        Some((patch, pre)) => (patch, Some(pre)),
        None => (rest, None),
    };
    let patch = parse_number(patch, "patch")?;
    let mut version = Version {
        major,
        minor,
        patch,
        pre: Vec::new(),
        build: Vec::new(),
    };
    for p in pre
        .map(|p| p.split('.').collect::<Vec<_>>())
        .unwrap_or_default()
    {
        if p.is_empty() {
            return Err("Prerelease is empty".to_owned());
        }
        let identifier = if is_numeric(p) {
            if has_leading_zeroes(p) {
                return Err(format!(
                    "Numeric PreRelease version must not contain leading zeroes {}",
                    go_quote(p)
                ));
            }
            Prerelease::Num(parse_uint(p)?)
        } else if is_alphanum(p) {
            Prerelease::Alpha(p.to_owned())
        } else {
            return Err(format!(
                "Invalid character(s) found in prerelease {}",
                go_quote(p)
            ));
        };
        version.pre.push(identifier);
    }
    for b in build
        .map(|b| b.split('.').collect::<Vec<_>>())
        .unwrap_or_default()
    {
        if b.is_empty() {
            return Err("Build meta data is empty".to_owned());
        }
        if !is_alphanum(b) {
            return Err(format!(
                "Invalid character(s) found in build meta data {}",
                go_quote(b)
            ));
        }
        version.build.push(b.to_owned());
    }
    Ok(version)
}

/// Kubernetes' `normalizeAndParse`.
fn normalize_and_parse(s: &str) -> Result<Version, String> {
    let s = s.strip_prefix('v').unwrap_or(s);
    let mut parts: Vec<String> = s
        .splitn(3, '.')
        .map(|p| {
            if p.len() <= 1 {
                return p.to_owned();
            }
            let trimmed = p.trim_start_matches('0');
            match trimmed.chars().next() {
                Some(c) if c.is_ascii_digit() => trimmed.to_owned(),
                _ => format!("0{trimmed}"),
            }
        })
        .collect();
    if parts.len() < 3 {
        if parts.last().is_some_and(|p| p.contains(['+', '-'])) {
            return Err("short version cannot contain PreRelease/Build meta data".to_owned());
        }
        parts.resize(3, "0".to_owned());
    }
    parse(&parts.join("."))
}

/// A `kubernetes.Semver` value.
#[derive(Debug)]
struct SemverValue(Version);

impl PartialEq for SemverValue {
    fn eq(&self, other: &SemverValue) -> bool {
        self.0.cmp(&other.0) == Ordering::Equal
    }
}

impl Eq for SemverValue {}

impl Opaque for SemverValue {
    fn runtime_type_name(&self) -> &str {
        TYPE_NAME
    }
}

/// Adds the library's functions.
pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let v = || opaque_type(TYPE_NAME);
    env.add_overload("semver", "string_to_semver", vec![STRING_TYPE], to_semver)?;
    env.add_overload(
        "semver",
        "string_bool_to_semver",
        vec![STRING_TYPE, BOOL_TYPE],
        to_semver,
    )?;
    env.add_overload("isSemver", "is_semver_string", vec![STRING_TYPE], is_semver)?;
    env.add_overload(
        "isSemver",
        "is_semver_string_bool",
        vec![STRING_TYPE, BOOL_TYPE],
        is_semver,
    )?;
    env.add_member_overload(
        "isGreaterThan",
        "semver_is_greater_than",
        v(),
        vec![v()],
        greater,
    )?;
    env.add_member_overload("isLessThan", "semver_is_less_than", v(), vec![v()], less)?;
    env.add_member_overload("compareTo", "semver_compare_to", v(), vec![v()], compare_to)?;
    env.add_member_overload("major", "semver_major", v(), vec![], major)?;
    env.add_member_overload("minor", "semver_minor", v(), vec![], minor)?;
    env.add_member_overload("patch", "semver_patch", v(), vec![], patch)
}

/// The string and normalize flag of `semver` and `isSemver`, parsed.
fn parse_args(
    function: &str,
    args: &[CowVal<'_, '_>],
) -> Result<Result<Version, String>, ExecutionError> {
    let s = string_arg(function, args[0].as_ref())?;
    let normalize = match args.get(1) {
        Some(flag) => bool_arg(function, flag.as_ref())?,
        None => false,
    };
    Ok(match normalize {
        true => normalize_and_parse(s),
        false => parse(s),
    })
}

fn to_semver<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    match parse_args("semver", &args)? {
        Ok(v) => opaque_result(SemverValue(v)),
        Err(e) => Err(ExecutionError::function_error("semver", e)),
    }
}

fn is_semver<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    bool_result(parse_args("isSemver", &args)?.is_ok())
}

/// The version `val` holds.
fn version(function: &str, val: &dyn Val) -> Result<Version, ExecutionError> {
    let opaque = opaque_arg::<SemverValue>(function, val)?;
    opaque
        .downcast_ref::<SemverValue>()
        .map(|v| v.0.clone())
        .ok_or_else(|| no_such_overload(function, &[val]))
}

/// The receiver compared to the argument.
fn ordering<'b, 'v>(function: &str, args: Vec<CowVal<'b, 'v>>) -> Result<Ordering, ExecutionError> {
    let [a, b] = take_args(args)?;
    Ok(version(function, a.as_ref())?.cmp(&version(function, b.as_ref())?))
}

fn greater<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    bool_result(ordering("isGreaterThan", args)? == Ordering::Greater)
}

fn less<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    bool_result(ordering("isLessThan", args)? == Ordering::Less)
}

fn compare_to<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    int_result(ordering("compareTo", args)? as i64)
}

/// A version number as CEL's int: Go converts the uint64 with wrapping.
fn number<'b, 'v>(
    function: &str,
    args: Vec<CowVal<'b, 'v>>,
    pick: fn(&Version) -> u64,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [v] = take_args(args)?;
    int_result(pick(&version(function, v.as_ref())?) as i64)
}

fn major<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    number("major", args, |v| v.major)
}

fn minor<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    number("minor", args, |v| v.minor)
}

fn patch<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    number("patch", args, |v| v.patch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_errors_are_blang_semver_texts() {
        for (input, message) in [
            ("", "Version string empty"),
            ("v1.0", "No Major.Minor.Patch elements found"),
            ("1.0", "No Major.Minor.Patch elements found"),
            ("a.0.0", "Invalid character(s) found in major number \"a\""),
            (
                "01.0.0",
                "Major number must not contain leading zeroes \"01\"",
            ),
            ("1..0", "strconv.ParseUint: parsing \"\": invalid syntax"),
            ("1.0.0-", "Prerelease is empty"),
            (
                "1.0.0-01",
                "Numeric PreRelease version must not contain leading zeroes \"01\"",
            ),
            (
                "1.0.0-a_b",
                "Invalid character(s) found in prerelease \"a_b\"",
            ),
            ("1.0.0+", "Build meta data is empty"),
            (
                "99999999999999999999.0.0",
                "strconv.ParseUint: parsing \"99999999999999999999\": value out of range",
            ),
        ] {
            assert_eq!(parse(input).unwrap_err(), message, "{input:?}");
        }
        assert_eq!(
            normalize_and_parse("1-beta").unwrap_err(),
            "short version cannot contain PreRelease/Build meta data"
        );
    }

    #[test]
    fn orders_by_precedence() {
        let v = |s: &str| parse(s).expect("valid");
        let ordered = [
            "1.0.0-alpha",
            "1.0.0-alpha.1",
            "1.0.0-alpha.beta",
            "1.0.0-beta",
            "1.0.0-beta.2",
            "1.0.0-beta.11",
            "1.0.0-rc.1",
            "1.0.0",
            "1.0.1",
            "1.1.0",
            "2.0.0",
        ];
        for pair in ordered.windows(2) {
            assert_eq!(v(pair[0]).cmp(&v(pair[1])), Ordering::Less, "{pair:?}");
        }
        assert_eq!(v("1.0.0+a").cmp(&v("1.0.0+b")), Ordering::Equal);
        assert_eq!(normalize_and_parse("v01.02").expect("normalizes").minor, 2);
        assert_eq!(
            normalize_and_parse("1.0.00-x").expect("normalizes").patch,
            0
        );
    }
}
