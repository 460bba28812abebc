//! Kubernetes' URL library (`library/urls.go`): `url(s)`, `isURL(s)`, and
//! on a URL `getScheme()`, `getHost()`, `getHostname()`, `getPort()`,
//! `getEscapedPath()`, `getQuery()`.
//!
//! As Kubernetes does, a string is a URL when Go's `url.ParseRequestURI`
//! accepts it (an absolute URI or an absolute path), and the value is then
//! what Go's `url.Parse` makes of it (which, unlike `ParseRequestURI`, cuts
//! off a `#fragment`). Both are reimplemented here with Go's rules and
//! error texts (`parse "<url>": <reason>`).

use super::{add, go_quote, string};
use cel::objects::{Key, Map, Opaque};
use cel::{Context, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// A parsed URL: the parts the library exposes, as Go's `url.URL` has them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct GoUrl {
    scheme: String,
    host: String,
    /// The decoded path (bytes: `%ff` is not UTF-8).
    path: Vec<u8>,
    /// The path as written, when it differs from the default encoding.
    raw_path: String,
    raw_query: String,
}

impl Opaque for GoUrl {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.URL"
    }
}

pub(super) fn register(ctx: &mut Context<'_, '_>) {
    add(ctx, "url", |call| {
        let s = call.one_string()?;
        let conversion = |e: String| {
            call.error(format!(
                "URL parse error during conversion from string: {e}"
            ))
        };
        parse_request_uri(s).map_err(conversion)?;
        let u = parse(s).map_err(conversion)?;
        Ok(Value::Opaque(Arc::new(u)))
    });
    add(ctx, "isURL", |call| {
        Ok(Value::Bool(parse_request_uri(call.one_string()?).is_ok()))
    });
    add(ctx, "getScheme", |call| {
        Ok(string(call.receiver::<GoUrl>(0)?.scheme.clone()))
    });
    add(ctx, "getHost", |call| {
        Ok(string(call.receiver::<GoUrl>(0)?.host.clone()))
    });
    add(ctx, "getHostname", |call| {
        Ok(string(split_host_port(&call.receiver::<GoUrl>(0)?.host).0))
    });
    add(ctx, "getPort", |call| {
        Ok(string(split_host_port(&call.receiver::<GoUrl>(0)?.host).1))
    });
    add(ctx, "getEscapedPath", |call| {
        Ok(string(call.receiver::<GoUrl>(0)?.escaped_path()))
    });
    add(ctx, "getQuery", |call| {
        let query = parse_query(&call.receiver::<GoUrl>(0)?.raw_query);
        let map: HashMap<Key, Value> = query
            .into_iter()
            .map(|(k, vs)| {
                let list = vs.into_iter().map(string).collect();
                (Key::String(Arc::new(k)), Value::List(Arc::new(list)))
            })
            .collect();
        Ok(Value::Map(Map { map: Arc::new(map) }))
    });
}

/// Go's `url.ParseRequestURI`.
pub(crate) fn parse_request_uri(raw: &str) -> Result<GoUrl, String> {
    parse_inner(raw, true).map_err(|e| format!("parse {}: {e}", go_quote(raw.as_bytes())))
}

/// Go's `url.Parse`: the fragment is cut off first (and only checked).
fn parse(raw: &str) -> Result<GoUrl, String> {
    let (u, frag) = raw.split_once('#').unwrap_or((raw, ""));
    let url =
        parse_inner(u, false).map_err(|e| format!("parse {}: {e}", go_quote(u.as_bytes())))?;
    if !frag.is_empty() {
        unescape(frag, Mode::Fragment)
            .map_err(|e| format!("parse {}: {e}", go_quote(raw.as_bytes())))?;
    }
    Ok(url)
}

/// Go's `url.parse`.
fn parse_inner(raw: &str, via_request: bool) -> Result<GoUrl, String> {
    if raw.bytes().any(|b| b < b' ' || b == 0x7f) {
        return Err("net/url: invalid control character in URL".into());
    }
    if raw.is_empty() && via_request {
        return Err("empty url".into());
    }
    let mut url = GoUrl::default();
    if raw == "*" {
        url.path = b"*".to_vec();
        return Ok(url);
    }
    let (scheme, mut rest) = get_scheme(raw)?;
    url.scheme = scheme.to_ascii_lowercase();
    if rest.ends_with('?') && rest.matches('?').count() == 1 {
        rest = &rest[..rest.len() - 1];
    } else if let Some((r, q)) = rest.split_once('?') {
        rest = r;
        url.raw_query = q.to_string();
    }
    if !rest.starts_with('/') {
        if !url.scheme.is_empty() {
            // Opaque: `mailto:x`; the library exposes nothing of it.
            return Ok(url);
        }
        if via_request {
            return Err("invalid URI for request".into());
        }
        let segment = rest.split('/').next().unwrap_or_default();
        if segment.contains(':') {
            return Err("first path segment in URL cannot contain colon".into());
        }
    }
    if (!url.scheme.is_empty() || !via_request && !rest.starts_with("///"))
        && rest.starts_with("//")
    {
        let mut authority = &rest[2..];
        rest = "";
        if let Some(i) = authority.find('/') {
            rest = &authority[i..];
            authority = &authority[..i];
        }
        url.host = parse_authority(&url.scheme, authority)?;
    }
    let path = unescape(rest, Mode::Path)?;
    if escape(&path, Mode::Path) != rest {
        url.raw_path = rest.to_string();
    }
    url.path = path;
    Ok(url)
}

/// Go's `getScheme`.
fn get_scheme(raw: &str) -> Result<(&str, &str), String> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' => {
                if i == 0 {
                    return Ok(("", raw));
                }
            }
            b':' => {
                if i == 0 {
                    return Err("missing protocol scheme".into());
                }
                return Ok((&raw[..i], &raw[i + 1..]));
            }
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

/// Go's `parseAuthority`: the host (user information is checked, not kept).
fn parse_authority(scheme: &str, authority: &str) -> Result<String, String> {
    let at = authority.rfind('@');
    let host = parse_host(
        scheme,
        match at {
            Some(i) => &authority[i + 1..],
            None => authority,
        },
    )?;
    if let Some(i) = at {
        let userinfo = &authority[..i];
        if !valid_userinfo(userinfo) {
            return Err("net/url: invalid userinfo".into());
        }
        match userinfo.split_once(':') {
            None => {
                unescape(userinfo, Mode::UserPassword)?;
            }
            Some((user, password)) => {
                unescape(user, Mode::UserPassword)?;
                unescape(password, Mode::UserPassword)?;
            }
        }
    }
    Ok(host)
}

fn valid_userinfo(s: &str) -> bool {
    s.chars().all(|c| {
        c.is_ascii_alphanumeric()
            || matches!(
                c,
                '-' | '.'
                    | '_'
                    | ':'
                    | '~'
                    | '!'
                    | '$'
                    | '&'
                    | '\''
                    | '('
                    | ')'
                    | '*'
                    | '+'
                    | ','
                    | ';'
                    | '='
                    | '%'
                    | '@'
            )
    })
}

/// Go's `parseHost`, as current Go has it: a bracketed host must be an
/// IPv6 address (zone allowed), and for `http` and `https` the port starts
/// at the first colon, so `https://a:b:c/` has the invalid port `:b:c`
/// (for other schemes, at the last).
fn parse_host(scheme: &str, host: &str) -> Result<String, String> {
    let invalid_port = |p: &str| format!("invalid port {} after host", go_quote(p.as_bytes()));
    match host.rfind('[') {
        Some(open) if open > 0 => Err("invalid IP-literal".into()),
        Some(_) => {
            let Some(close) = host.rfind(']') else {
                return Err("missing ']' in host".into());
            };
            let colon_port = &host[close + 1..];
            if !valid_optional_port(colon_port) {
                return Err(invalid_port(colon_port));
            }
            let colon_port = unescape(colon_port, Mode::Host)?;
            // `[` is at 0 and `]` after it: the last `[` is the first byte.
            let hostname = host.get(1..close).unwrap_or_default();
            let mut unescaped = match hostname.find("%25") {
                Some(z) => {
                    let mut h = unescape(&hostname[..z], Mode::Host)?;
                    h.extend(unescape(&hostname[z..], Mode::Zone)?);
                    h
                }
                None => unescape(hostname, Mode::Host)?,
            };
            match super::ip::parse_addr(&String::from_utf8_lossy(&unescaped)) {
                Err(e) => return Err(format!("invalid host: {e}")),
                Ok((addr, _)) if addr.is_ipv4() => return Err("invalid IP-literal".into()),
                Ok(_) => {}
            }
            unescaped.insert(0, b'[');
            unescaped.push(b']');
            unescaped.extend(colon_port);
            Ok(String::from_utf8_lossy(&unescaped).into_owned())
        }
        None => {
            if let Some(first) = host.find(':') {
                let last = host.rfind(':').unwrap_or(first);
                let i = if scheme == "http" || scheme == "https" {
                    first
                } else {
                    last
                };
                if !valid_optional_port(&host[i..]) {
                    return Err(invalid_port(&host[i..]));
                }
            }
            Ok(String::from_utf8_lossy(&unescape(host, Mode::Host)?).into_owned())
        }
    }
}

fn valid_optional_port(port: &str) -> bool {
    port.is_empty()
        || port
            .strip_prefix(':')
            .is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()))
}

/// Go's `splitHostPort`: host (without brackets) and port.
fn split_host_port(host_port: &str) -> (String, String) {
    let (mut host, mut port) = (host_port, "");
    if let Some(i) = host.rfind(':') {
        if valid_optional_port(&host[i..]) {
            port = &host[i + 1..];
            host = &host[..i];
        }
    }
    if host.len() >= 2 && host.starts_with('[') && host.ends_with(']') {
        host = &host[1..host.len() - 1];
    }
    (host.to_string(), port.to_string())
}

/// Go's `url.ParseQuery`, errors skipped as `URL.Query()` skips them:
/// keys in order of first appearance, values in order.
fn parse_query(query: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for pair in query.split('&') {
        if pair.contains(';') || pair.is_empty() {
            continue;
        }
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let (Ok(k), Ok(v)) = (
            unescape(k, Mode::QueryComponent),
            unescape(v, Mode::QueryComponent),
        ) else {
            continue;
        };
        let k = String::from_utf8_lossy(&k).into_owned();
        let v = String::from_utf8_lossy(&v).into_owned();
        match out.iter_mut().find(|(key, _)| *key == k) {
            Some((_, vs)) => vs.push(v),
            None => out.push((k, vec![v])),
        }
    }
    out
}

impl GoUrl {
    /// Go's `URL.EscapedPath()`.
    fn escaped_path(&self) -> String {
        if !self.raw_path.is_empty()
            && valid_encoded(&self.raw_path)
            && unescape(&self.raw_path, Mode::Path).is_ok_and(|p| p == self.path)
        {
            return self.raw_path.clone();
        }
        if self.path == b"*" {
            return "*".into();
        }
        escape(&self.path, Mode::Path)
    }
}

/// Go's `validEncoded` for paths.
fn valid_encoded(s: &str) -> bool {
    s.bytes().all(|c| {
        matches!(
            c,
            b'!' | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'@'
                | b'['
                | b']'
                | b'%'
        ) || !should_escape(c, Mode::Path)
    })
}

/// The parts of a URL Go escapes differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Path,
    Host,
    Zone,
    UserPassword,
    QueryComponent,
    Fragment,
}

/// Go's `shouldEscape`.
fn should_escape(c: u8, mode: Mode) -> bool {
    if c.is_ascii_alphanumeric() {
        return false;
    }
    if matches!(mode, Mode::Host | Mode::Zone)
        && matches!(
            c,
            b'!' | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'['
                | b']'
                | b'<'
                | b'>'
                | b'"'
        )
    {
        return false;
    }
    match c {
        b'-' | b'_' | b'.' | b'~' => return false,
        b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'?' | b'@' => match mode {
            Mode::UserPassword => return matches!(c, b'@' | b'/' | b'?' | b':'),
            Mode::QueryComponent => return true,
            Mode::Fragment => return false,
            Mode::Path => return c == b'?',
            Mode::Host | Mode::Zone => {}
        },
        _ => {}
    }
    if mode == Mode::Fragment && matches!(c, b'!' | b'(' | b')' | b'*') {
        return false;
    }
    true
}

/// Go's `escape` (for paths: a space is `%20`).
fn escape(s: &[u8], mode: Mode) -> String {
    let mut out = String::with_capacity(s.len());
    for &c in s {
        if should_escape(c, mode) {
            if c == b' ' && mode == Mode::QueryComponent {
                out.push('+');
            } else {
                out.push_str(&format!("%{c:02X}"));
            }
        } else {
            out.push(char::from(c));
        }
    }
    out
}

fn unhex(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        b'A'..=b'F' => c - b'A' + 10,
        _ => 0,
    }
}

/// Go's `unescape`, with its error texts.
fn unescape(s: &str, mode: Mode) -> Result<Vec<u8>, String> {
    let b = s.as_bytes();
    let escape_error = |e: &[u8]| format!("invalid URL escape {}", go_quote(e));
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                if i + 2 >= b.len()
                    || !b[i + 1].is_ascii_hexdigit()
                    || !b[i + 2].is_ascii_hexdigit()
                {
                    let end = (i + 3).min(b.len());
                    return Err(escape_error(&b[i..end]));
                }
                let esc = &b[i..i + 3];
                if mode == Mode::Host && unhex(b[i + 1]) < 8 && esc != b"%25" {
                    return Err(escape_error(esc));
                }
                let v = unhex(b[i + 1]) << 4 | unhex(b[i + 2]);
                if mode == Mode::Zone && esc != b"%25" && v != b' ' && should_escape(v, Mode::Host)
                {
                    return Err(escape_error(esc));
                }
                out.push(v);
                i += 3;
            }
            b'+' if mode == Mode::QueryComponent => {
                out.push(b' ');
                i += 1;
            }
            c => {
                if matches!(mode, Mode::Host | Mode::Zone) && c < 0x80 && should_escape(c, mode) {
                    return Err(format!(
                        "invalid character {} in host name",
                        go_quote(&b[i..i + 1])
                    ));
                }
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// `url.Parse` and what the getters read, for the no-panic test.
#[cfg(test)]
pub(super) fn parse_for_test(s: &str) -> Result<String, String> {
    let u = parse(s)?;
    Ok(format!(
        "{} {:?} {:?} {:?}",
        u.escaped_path(),
        split_host_port(&u.host),
        parse_query(&u.raw_query),
        u.scheme
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_uris_as_go() {
        let err = |s: &str| parse_request_uri(s).unwrap_err();
        assert_eq!(err("../x"), r#"parse "../x": invalid URI for request"#);
        assert_eq!(err(""), r#"parse "": empty url"#);
        assert_eq!(err(":x"), r#"parse ":x": missing protocol scheme"#);
        assert_eq!(
            err("https://a:b:c/"),
            r#"parse "https://a:b:c/": invalid port ":b:c" after host"#
        );
        assert_eq!(
            err("ftp://a:b:c/"),
            r#"parse "ftp://a:b:c/": invalid port ":c" after host"#
        );
        assert!(parse_request_uri("postgres://a:1,b:2/db").is_ok());
        assert_eq!(
            err("https://[v1.x]/"),
            r#"parse "https://[v1.x]/": invalid host: ParseAddr("v1.x"): unexpected character (at "v1.x")"#
        );
        assert_eq!(
            err("https://x[::1]/"),
            r#"parse "https://x[::1]/": invalid IP-literal"#
        );
        assert_eq!(
            err("https://example.com/%zé"),
            r#"parse "https://example.com/%zé": invalid URL escape "%z\xc3""#
        );
        assert_eq!(
            err("https://a{b}/"),
            r#"parse "https://a{b}/": invalid character "{" in host name"#
        );
        assert_eq!(
            parse("1a:b/x").unwrap_err(),
            r#"parse "1a:b/x": first path segment in URL cannot contain colon"#
        );
        assert_eq!(
            err("http://a b/"),
            r#"parse "http://a b/": invalid character " " in host name"#
        );
        assert_eq!(err("/%zz"), r#"parse "/%zz": invalid URL escape "%zz""#);
        assert_eq!(err("/%4"), r#"parse "/%4": invalid URL escape "%4""#);
        assert_eq!(
            err("http://x/\n"),
            "parse \"http://x/\\n\": net/url: invalid control character in URL"
        );
        assert_eq!(
            err("http://[1.2.3.4]/"),
            r#"parse "http://[1.2.3.4]/": invalid IP-literal"#
        );
        assert!(err("http://u ser@x/").ends_with("net/url: invalid userinfo"));
        assert!(parse_request_uri("mailto:a@b").is_ok());
        assert!(parse_request_uri("*").is_ok());
        assert!(parse_request_uri("http://[fe80::1%25en0]:8080/").is_ok());
    }

    #[test]
    fn parts_as_go() {
        // A path written differently from Go's encoding keeps its spelling
        // when that is a valid encoding (`%2F`), not otherwise (a space).
        assert_eq!(parse("/a%2Fb/c").unwrap().escaped_path(), "/a%2Fb/c");
        let u =
            parse("https://user:pass@Example.com:80/a%2Fb/c d?x=1&x=2&y=a+b&;z=1#frag").unwrap();
        assert_eq!(u.host, "Example.com:80");
        assert_eq!(
            split_host_port(&u.host),
            ("Example.com".into(), "80".into())
        );
        assert_eq!(u.escaped_path(), "/a/b/c%20d");
        assert_eq!(
            parse_query(&u.raw_query),
            vec![
                ("x".to_string(), vec!["1".to_string(), "2".to_string()]),
                ("y".to_string(), vec!["a b".to_string()]),
            ]
        );
        let v6 = parse("http://[::1]:8080/").unwrap();
        assert_eq!(split_host_port(&v6.host), ("::1".into(), "8080".into()));
        // `//x` with no scheme: a path to ParseRequestURI, a host to Parse.
        assert!(parse_request_uri("//x/y").is_ok());
        assert_eq!(parse("//x/y").unwrap().host, "x");
    }
}
