//! The Kubernetes CEL libraries (`k8s.io/apiserver/pkg/cel/library`) that
//! parse strings into Kubernetes values, with Kubernetes' semantics and
//! error texts: `urls`, `ip`, `cidr` and `format` (one module each). Unlike
//! the overloads beside them (`super`), they are context functions.
//!
//! The values are opaque (`net.IP`, `net.CIDR`, `kubernetes.URL`,
//! `kubernetes.NamedFormat`); their member functions are registered by name
//! in the shared function table, so each checks its receiver and reports a
//! wrong one as an error. What Go parses (`netip`, `net/url`) is parsed here
//! by hand-written equivalents, so what is accepted and rejected, and the
//! error texts, are Go's (`docs/cel.md` lists the known differences).

mod cidr;
mod format;
mod ip;
mod urls;

use cel::common::types::{CelString, Type};
use cel::common::value::CowVal;
use cel::objects::OptionalValue;
use cel::{Context, Env, ExecutionError, FunctionContext, Value};
use std::sync::Arc;

/// Declares the libraries' types, so that `type(ip('::1')) == net.IP` holds,
/// and `string(ip)`, `string(cidr)`: `string` is a standard overloaded
/// function, which only the environment can extend.
pub(crate) fn declare(env: &mut Env) {
    for (name, id) in [
        (ip::IP_TYPE, "ip_to_string"),
        (cidr::CIDR_TYPE, "cidr_to_string"),
    ] {
        // Only fail for a name or id declared before: these are new.
        let _ = env.add_type(Type::new_opaque_type(name));
        let _ = env.add_overload("string", id, vec![Type::new_opaque_type(name)], to_string);
    }
}

/// `string(ip)` and `string(cidr)`: Go's `String()` of the address or
/// prefix.
fn to_string<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let text = match args.first().map(|a| Value::try_from(a.as_ref())) {
        Some(Ok(Value::Opaque(o))) => {
            if let Some(ip) = o.downcast_ref::<ip::IpValue>() {
                ip::format_addr(ip.0)
            } else if let Some(c) = o.downcast_ref::<cidr::CidrValue>() {
                c.to_string()
            } else {
                return Err(ExecutionError::function_error("string", "no such overload"));
            }
        }
        Some(Err(e)) => return Err(e),
        _ => return Err(ExecutionError::function_error("string", "no such overload")),
    };
    Ok(CowVal::owned(CelString::from(text)))
}

/// Registers the libraries' functions on `ctx`.
pub(crate) fn register(ctx: &mut Context<'_, '_>) {
    ip::register(ctx);
    cidr::register(ctx);
    urls::register(ctx);
    format::register(ctx);
    // The name two libraries share: `ip(s)` and `<cidr>.ip()`.
    add(ctx, "ip", |call| match call.this {
        Some(_) => cidr::ip_member(call),
        None => ip::parse_function(call),
    });
}

/// One call of a library function: its receiver, if called as a method,
/// and its arguments, resolved.
pub(crate) struct Call {
    /// The function's name, for errors.
    name: String,
    /// The receiver of a member call.
    this: Option<Value>,
    /// The arguments.
    args: Vec<Value>,
}

/// Registers `f` under `name`, called with the call's receiver and
/// arguments.
fn add(
    ctx: &mut Context<'_, '_>,
    name: &'static str,
    f: impl Fn(Call) -> Result<Value, ExecutionError> + Send + Sync + 'static,
) {
    // Fails only for a name the environment declares overloads of
    // (`functions_are_registered` checks there is none).
    let _ = ctx.add_function(name, move |ftx: &FunctionContext| {
        let this = match &ftx.this {
            Some(t) => Some(Value::try_from(t.as_ref())?),
            None => None,
        };
        let args = ftx
            .args
            .iter()
            .map(|a| Value::try_from(a.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        f(Call {
            name: name.to_string(),
            this,
            args,
        })
    });
}

impl Call {
    /// The error for arguments the function has no overload for (cel-go's
    /// `no such overload`, which cel-go reports at load time where it can).
    fn no_overload(&self) -> ExecutionError {
        no_such_overload(self)
    }

    /// A function error with Kubernetes' text.
    fn error(&self, message: impl ToString) -> ExecutionError {
        ExecutionError::function_error(&self.name, message)
    }

    /// The one string argument of a global function.
    fn one_string(&self) -> Result<&str, ExecutionError> {
        match (&self.this, self.args.as_slice()) {
            (None, [Value::String(s)]) => Ok(s.as_str()),
            _ => Err(self.no_overload()),
        }
    }

    /// The receiver of a member function called with `arity` arguments, if
    /// it is an opaque `T`.
    fn receiver<T: cel::objects::Opaque>(&self, arity: usize) -> Result<&T, ExecutionError> {
        match &self.this {
            Some(Value::Opaque(o)) if self.args.len() == arity => {
                o.downcast_ref::<T>().ok_or_else(|| self.no_overload())
            }
            _ => Err(self.no_overload()),
        }
    }
}

fn no_such_overload(call: &Call) -> ExecutionError {
    ExecutionError::function_error(&call.name, "no such overload")
}

/// A CEL string.
fn string(s: impl Into<String>) -> Value {
    Value::String(Arc::new(s.into()))
}

/// `optional.of(v)`.
fn optional_of(v: Value) -> Value {
    Value::Opaque(Arc::new(OptionalValue::of(v)))
}

/// `optional.none()`.
fn optional_none() -> Value {
    Value::Opaque(Arc::new(OptionalValue::none()))
}

/// Go's `strconv.Quote` (what `%q` prints), which Kubernetes' and Go's
/// error texts quote their input with: printable characters as they are,
/// `"` and `\` escaped, control characters as `\n`, `\x00` or `\u0085`,
/// and each byte of invalid UTF-8 as `\xff`. Printable is approximated as
/// "not a control character, and no space other than ' '".
pub(crate) fn go_quote(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(bytes.len() + 2);
    out.push('"');
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\u{7}' => out.push_str("\\a"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{b}' => out.push_str("\\v"),
                c if c == ' ' || !(c.is_control() || c.is_whitespace()) => out.push(c),
                c if u32::from(c) < 0x80 => {
                    let _ = write!(out, "\\x{:02x}", u32::from(c));
                }
                c if u32::from(c) < 0x10000 => {
                    let _ = write!(out, "\\u{:04x}", u32::from(c));
                }
                c => {
                    let _ = write!(out, "\\U{:08x}", u32::from(c));
                }
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod conformance;

#[cfg(test)]
mod tests {
    use super::go_quote;
    use crate::{compile, Bindings};

    /// Every function is in the shared table: a name the environment
    /// already declared would have been refused by `add_function`.
    #[test]
    fn functions_are_registered() {
        let globals = [
            "url",
            "isURL",
            "ip",
            "isIP",
            "ip.isCanonical",
            "cidr",
            "isCIDR",
            "format.named",
        ];
        let members = [
            "getScheme",
            "getHost",
            "getHostname",
            "getPort",
            "getEscapedPath",
            "getQuery",
            "family",
            "isUnspecified",
            "isLoopback",
            "isLinkLocalMulticast",
            "isLinkLocalUnicast",
            "isGlobalUnicast",
            "containsIP",
            "containsCIDR",
            "ip",
            "masked",
            "prefixLength",
            "validate",
        ];
        let bindings = Bindings::builder().build();
        let calls = globals
            .iter()
            .map(|f| format!("{f}(1)"))
            .chain(members.iter().map(|f| format!("1.{f}()")));
        for src in calls {
            let err = compile(&src)
                .expect(&src)
                .eval(&bindings)
                .unwrap_err()
                .to_string();
            assert!(err.contains("no such overload"), "{src}: {err}");
        }
        for name in super::format::NAMES.iter().map(|(_, q)| q) {
            let src = format!("{name}() == {name}()");
            let got = compile(&src).expect(&src).eval(&bindings);
            assert_eq!(got, Ok(cel::Value::Bool(true)), "{src}");
        }
        // The strings extension's `format` is a method and is unaffected.
        let got = compile("'%s-%d'.format([dyn('a'), dyn(1)])")
            .expect("compiles")
            .eval(&bindings);
        assert_eq!(got, Ok(super::string("a-1")));
    }

    fn eval(src: &str) -> Result<cel::Value, String> {
        compile(src)?
            .eval(&Bindings::builder().build())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn kubernetes_behaviour_through_cel() {
        let yes = |src: &str| assert_eq!(eval(src), Ok(cel::Value::Bool(true)), "{src}");
        let fails = |src: &str, want: &str| {
            let got = eval(src);
            assert!(
                got.as_ref().is_err_and(|e| e.contains(want)),
                "{src}: {got:?}"
            );
        };
        yes("ip('::1') == ip('0::0:1') && ip('1.2.3.4') != ip('1.2.3.5')");
        yes("ip('::1') != cidr('::1/128').masked().ip() == false");
        yes("string(ip('2001:DB8:0:0:0::1')) == '2001:db8::1'");
        yes("cidr('10.0.0.1/8') != cidr('10.0.0.1/8').masked()");
        yes("cidr('10.0.0.0/8').containsCIDR('10.0.0.0/16')");
        yes("!cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16')");
        yes("!cidr('10.0.0.0/8').containsIP(ip('::1'))");
        fails("cidr('10.0.0.0/8').containsIP('nope')", "no such overload");
        fails(
            "cidr('10.0.0.0/8').containsCIDR('nope')",
            "netip.ParsePrefix(\"nope\"): no '/'",
        );
        fails(
            "ip('::ffff:1.2.3.4')",
            "IPv4-mapped IPv6 address \"::ffff:1.2.3.4\" is not allowed",
        );
        fails("ip('fe80::1%eth0')", "with zone value is not allowed");
        fails("url('../x')", "URL parse error during conversion from string: parse \"../x\": invalid URI for request");
        yes("url('https://x/a?b=1&b=2#f').getQuery() == {'b': ['1', '2']}");
        yes("url('HTTPS://x').getScheme() == 'https'");
        yes("format.named('uri').value().validate('../x') == optional.of(['parse \"../x\": invalid URI for request'])");
        yes("format.dns1123Label().validate('a.b') == optional.of(['must not contain dots'])");
        yes("!format.named('nope').hasValue()");
        yes("type(ip('::1')) == net.IP && type(cidr('::/0')) == net.CIDR && type(ip('::1')) != net.CIDR");
        fails("ip('1.2.3.4').getHost()", "no such overload");
        fails("format.uuid().validate(1)", "no such overload");
    }

    /// Every function answers any string with a value or an error, never a
    /// panic: strings built from the characters the parsers look at, and
    /// multi-byte ones, at every length up to 6 (a pseudo-random sample).
    #[test]
    fn no_input_panics() {
        let alphabet = [
            "", ":", "::", ".", "/", "%", "%2", "%25", "[", "]", "@", "?", "#", "1", "0", "ff",
            "255", "-", "a", "é", "\u{85}", " ", "\n", "+", "=", "&", ";", "t", "z",
        ];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            usize::try_from(seed % alphabet.len() as u64).unwrap_or(0)
        };
        for _ in 0..20_000 {
            let len = next() % 7;
            let s: String = (0..len).map(|_| alphabet[next()]).collect();
            let _ = super::ip::parse_ip(&s);
            let _ = super::cidr::parse_cidr_for_test(&s);
            let _ = super::urls::parse_request_uri(&s);
            let _ = super::urls::parse_for_test(&s);
            for (name, _) in super::format::NAMES {
                let _ = super::format::validate_for_test(name, &s);
            }
        }
    }

    #[test]
    fn quotes_as_go_does() {
        assert_eq!(go_quote(b"a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(go_quote(b"\n\x01\x7f"), r#""\n\x01\x7f""#);
        assert_eq!(go_quote("é ü".as_bytes()), "\"é ü\"");
        assert_eq!(go_quote(b"\xff"), r#""\xff""#);
        assert_eq!(go_quote("\u{85}".as_bytes()), r#""\u0085""#);
    }
}
