//! Just enough HTTP/1.1: requests with a bounded head and body
//! (Content-Length or chunked), JSON responses and chunked streams.

use serde_json::Value;
use std::io::{self, BufRead, Read, Write};

/// The largest request body accepted (the API server's own limit is 3 MiB).
pub(crate) const MAX_BODY: usize = 4 << 20;
/// The largest request line plus headers.
const MAX_HEAD: u64 = 64 << 10;

#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub method: String,
    /// The path, still percent-encoded.
    pub path: String,
    /// The raw query string (without `?`).
    pub query: String,
    /// The decoded query parameters.
    pub params: Vec<(String, String)>,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The first value of a query parameter.
    pub(crate) fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The media type of the body, without parameters such as `charset`.
    pub(crate) fn content_type(&self) -> Option<String> {
        self.header("content-type").map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
    }

    /// HTTP/1.1 keeps the connection unless the client asks to close it.
    pub(crate) fn keep_alive(&self) -> bool {
        !self
            .header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"))
    }
}

#[derive(Debug)]
pub(crate) enum ReadError {
    /// The peer closed the connection between requests.
    Closed,
    /// The body is over [`MAX_BODY`].
    TooLarge,
    /// Not HTTP/1.x as understood here.
    Malformed(String),
    /// The connection failed or was shut.
    Io,
}

impl From<io::Error> for ReadError {
    fn from(_: io::Error) -> ReadError {
        ReadError::Io
    }
}

/// Reads one request.
pub(crate) fn read_request(r: &mut impl BufRead) -> Result<Request, ReadError> {
    let mut budget = MAX_HEAD;
    let line = read_line(r, &mut budget)?.ok_or(ReadError::Closed)?;
    let mut parts = line.split_whitespace();
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(ReadError::Malformed(format!("request line {line:?}")));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(ReadError::Malformed(format!("version {version:?}")));
    }
    let mut headers = Vec::new();
    loop {
        let line = read_line(r, &mut budget)?
            .ok_or_else(|| ReadError::Malformed("headers cut short".into()))?;
        if line.is_empty() {
            break;
        }
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| ReadError::Malformed(format!("header {line:?}")))?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut req = Request {
        method: method.to_string(),
        path: path.to_string(),
        query: query.to_string(),
        params: form_urlencoded::parse(query.as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect(),
        headers,
        body: Vec::new(),
    };
    req.body = read_body(r, &req)?;
    Ok(req)
}

/// A CRLF- or LF-terminated line within the head's budget; none at EOF.
fn read_line(r: &mut impl BufRead, budget: &mut u64) -> Result<Option<String>, ReadError> {
    let mut buf = Vec::new();
    let n = r.by_ref().take(*budget).read_until(b'\n', &mut buf)?;
    if n == 0 {
        return Ok(None);
    }
    *budget -= n as u64;
    if buf.last() != Some(&b'\n') {
        return Err(ReadError::Malformed(
            "request head too long or cut short".into(),
        ));
    }
    let text = String::from_utf8(buf).map_err(|_| ReadError::Malformed("non-UTF-8 head".into()))?;
    Ok(Some(text.trim_end_matches(['\r', '\n']).to_string()))
}

fn read_body(r: &mut impl BufRead, req: &Request) -> Result<Vec<u8>, ReadError> {
    let chunked = req
        .header("transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    if chunked {
        return read_chunked(r);
    }
    let len: usize = match req.header("content-length") {
        None => return Ok(Vec::new()),
        Some(v) => v
            .parse()
            .map_err(|_| ReadError::Malformed(format!("content-length {v:?}")))?,
    };
    if len > MAX_BODY {
        return Err(ReadError::TooLarge);
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body)?;
    Ok(body)
}

fn read_chunked(r: &mut impl BufRead) -> Result<Vec<u8>, ReadError> {
    let mut body = Vec::new();
    loop {
        let mut budget = 1024;
        let line = read_line(r, &mut budget)?
            .ok_or_else(|| ReadError::Malformed("chunk cut short".into()))?;
        let size = line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size, 16)
            .map_err(|_| ReadError::Malformed(format!("chunk size {size:?}")))?;
        if size == 0 {
            // Trailers, up to the empty line.
            let mut budget = MAX_HEAD;
            while read_line(r, &mut budget)?.is_some_and(|l| !l.is_empty()) {}
            return Ok(body);
        }
        if body.len() + size > MAX_BODY {
            return Err(ReadError::TooLarge);
        }
        let start = body.len();
        body.resize(start + size, 0);
        r.read_exact(&mut body[start..])?;
        let mut crlf = [0u8; 2];
        r.read_exact(&mut crlf)?;
    }
}

fn reason_phrase(code: u16) -> &'static str {
    match code {
        200 => "OK",
        201 => "Created",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        410 => "Gone",
        413 => "Payload Too Large",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Entity",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

/// A complete JSON response.
pub(crate) fn write_json(
    w: &mut impl Write,
    code: u16,
    body: &Value,
    keep_alive: bool,
) -> io::Result<()> {
    let body = body.to_string();
    let connection = if keep_alive { "keep-alive" } else { "close" };
    write!(
        w,
        "HTTP/1.1 {code} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: {connection}\r\n\r\n{body}",
        reason_phrase(code),
        body.len()
    )?;
    w.flush()
}

/// The head of a chunked 200 response (a watch stream).
pub(crate) fn start_chunked(w: &mut impl Write) -> io::Result<()> {
    write!(
        w,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )?;
    w.flush()
}

pub(crate) fn write_chunk(w: &mut impl Write, data: &[u8]) -> io::Result<()> {
    if data.is_empty() {
        return Ok(());
    }
    write!(w, "{:x}\r\n", data.len())?;
    w.write_all(data)?;
    w.write_all(b"\r\n")?;
    w.flush()
}

/// The last chunk: the stream ends cleanly.
pub(crate) fn end_chunked(w: &mut impl Write) -> io::Result<()> {
    w.write_all(b"0\r\n\r\n")?;
    w.flush()
}

/// Percent-decodes one path segment.
pub(crate) fn decode_segment(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_request_with_a_body_and_query() {
        let raw = b"PATCH /api/v1/namespaces/a?fieldManager=x%2Fy&force=true HTTP/1.1\r\nContent-Type: application/apply-patch+yaml; charset=utf-8\r\nContent-Length: 2\r\n\r\n{}";
        let req = read_request(&mut &raw[..]).expect("request");
        assert_eq!(req.method, "PATCH");
        assert_eq!(req.path, "/api/v1/namespaces/a");
        assert_eq!(req.param("fieldManager"), Some("x/y"));
        assert_eq!(
            req.content_type().as_deref(),
            Some("application/apply-patch+yaml")
        );
        assert_eq!(req.body, b"{}");
    }

    #[test]
    fn reads_chunked_bodies_and_refuses_large_ones() {
        let raw = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n";
        assert_eq!(read_request(&mut &raw[..]).expect("chunked").body, b"{}");
        let big = format!(
            "POST / HTTP/1.1\r\nContent-Length: {}\r\n\r\n",
            MAX_BODY + 1
        );
        assert!(matches!(
            read_request(&mut big.as_bytes()),
            Err(ReadError::TooLarge)
        ));
    }

    #[test]
    fn decodes_path_segments() {
        assert_eq!(decode_segment("a%3Ab%zz"), "a:b%zz");
    }
}
