//! cel-go's regex extension (`ext.Regex()`, in Kyverno's IVP environment):
//! `regex.replace(s, re, replacement)` and `regex.replace(s, re,
//! replacement, count)`, `regex.extract(s, re)` (an optional string) and
//! `regex.extractAll(s, re)`, with cel-go's semantics and error texts.
//! Patterns are RE2 syntax, read by the `regex` crate as the Kubernetes
//! regex functions are; a pattern that does not parse is an error whose
//! text is that crate's.

use super::{int_arg, string_arg, take_args};
use cel::common::types::{CelOptional, CelString, INT_TYPE, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError, Value};
use regex::{Captures, Regex};
use std::sync::Arc;

/// Adds the regex functions.
pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let s = || STRING_TYPE;
    env.add_overload(
        "regex.replace",
        "regex_replace_string_string_string",
        vec![s(), s(), s()],
        replace_all,
    )?;
    env.add_overload(
        "regex.replace",
        "regex_replace_string_string_string_int",
        vec![s(), s(), s(), INT_TYPE],
        replace_n,
    )?;
    env.add_overload(
        "regex.extract",
        "regex_extract_string_string",
        vec![s(), s()],
        extract,
    )?;
    env.add_overload(
        "regex.extractAll",
        "regex_extractAll_string_string",
        vec![s(), s()],
        extract_all,
    )
}

fn compile(function: &str, pattern: &str) -> Result<Regex, ExecutionError> {
    cel::regex_cache::compiled(pattern).map_err(|e| ExecutionError::function_error(function, e))
}

fn string_result<'b, 'v>(s: String) -> Result<CowVal<'b, 'v>, ExecutionError> {
    cel::cost::charge(s.len() as u64 / 10 + 1)?;
    Ok(CowVal::owned(CelString::from(s)))
}

fn replace_all<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [target, pattern, replacement] = take_args(args)?;
    replace(target.as_ref(), pattern.as_ref(), replacement.as_ref(), -1)
}

fn replace_n<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [target, pattern, replacement, count] = take_args(args)?;
    let count = int_arg("regex.replace", count.as_ref())?;
    replace(
        target.as_ref(),
        pattern.as_ref(),
        replacement.as_ref(),
        count,
    )
}

/// The first `count` matches (all when negative) of `pattern` in `target`
/// replaced, `\N` in the replacement standing for group N (`\0` the whole
/// match) and `\\` for a backslash.
fn replace<'b, 'v>(
    target: &dyn Val,
    pattern: &dyn Val,
    replacement: &dyn Val,
    count: i64,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    const F: &str = "regex.replace";
    let target = string_arg(F, target)?;
    let (pattern, replacement) = (string_arg(F, pattern)?, string_arg(F, replacement)?);
    if count == 0 {
        return string_result(target.to_string());
    }
    let re = compile(F, pattern)?;
    let limit = usize::try_from(count).unwrap_or(usize::MAX);
    let mut out = String::with_capacity(target.len());
    let mut last = 0;
    for caps in re.captures_iter(target).take(limit) {
        let whole = caps.get(0).map_or(0..0, |m| m.range());
        out.push_str(&target[last..whole.start]);
        expand(&caps, re.captures_len() - 1, replacement, &mut out)?;
        last = whole.end;
        // A replacement can multiply the text: charge as it grows.
        cel::cost::charge(1)?;
        if out.len() > crate::MAX_BUILT_BYTES {
            return Err(ExecutionError::function_error(F, "the result is too large"));
        }
    }
    out.push_str(&target[last..]);
    string_result(out)
}

/// Appends `replacement` for one match, as cel-go's `replaceStrValidator`.
fn expand(
    caps: &Captures<'_>,
    groups: usize,
    replacement: &str,
    out: &mut String,
) -> Result<(), ExecutionError> {
    let invalid = |why: &str| {
        ExecutionError::function_error(
            "regex.replace",
            format!("invalid replacement string: '{replacement}' \\ {why}"),
        )
    };
    let mut chars = replacement.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            None => return Err(invalid("not allowed at end")),
            Some('\\') => out.push('\\'),
            Some(d) => {
                let n = d
                    .to_digit(10)
                    .ok_or_else(|| invalid("must be followed by a digit or \\"))?
                    as usize;
                if n > groups {
                    return Err(ExecutionError::function_error(
                        "regex.replace",
                        format!(
                            "replacement string references group {n} but regex has only {groups} group(s)"
                        ),
                    ));
                }
                if let Some(m) = caps.get(n) {
                    out.push_str(m.as_str());
                }
            }
        }
    }
    Ok(())
}

/// The pattern, refused when it has more than one capturing group.
fn one_group(function: &str, pattern: &str) -> Result<Regex, ExecutionError> {
    let re = compile(function, pattern)?;
    if re.captures_len() - 1 > 1 {
        return Err(ExecutionError::function_error(
            function,
            format!(
                "regular expression has more than one capturing group: {}",
                super::go_quote(pattern)
            ),
        ));
    }
    Ok(re)
}

/// The group's text (or the whole match without a group) of one match;
/// `None` for an empty or absent group.
fn extracted(caps: &Captures<'_>, grouped: bool) -> Option<String> {
    match grouped {
        true => caps
            .get(1)
            .map(|m| m.as_str())
            .filter(|s| !s.is_empty())
            .map(str::to_string),
        false => caps.get(0).map(|m| m.as_str().to_string()),
    }
}

fn extract<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    const F: &str = "regex.extract";
    let [target, pattern] = take_args(args)?;
    let target = string_arg(F, target.as_ref())?;
    let re = one_group(F, string_arg(F, pattern.as_ref())?)?;
    let grouped = re.captures_len() == 2;
    let found = re
        .captures(target)
        .and_then(|caps| extracted(&caps, grouped));
    Ok(CowVal::owned(match found {
        Some(s) => CelOptional::of(Box::new(CelString::from(s))),
        None => CelOptional::none(),
    }))
}

fn extract_all<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    const F: &str = "regex.extractAll";
    let [target, pattern] = take_args(args)?;
    let target = string_arg(F, target.as_ref())?;
    let re = one_group(F, string_arg(F, pattern.as_ref())?)?;
    let grouped = re.captures_len() == 2;
    let mut found = Vec::new();
    for caps in re.captures_iter(target) {
        cel::cost::charge(1)?;
        if let Some(s) = extracted(&caps, grouped) {
            found.push(Value::String(Arc::new(s)));
        }
    }
    let list: Box<dyn Val> = Value::List(Arc::new(found)).try_into()?;
    Ok(CowVal::Owned(list))
}
