//! The smallest HTTP/1.1 server, shared by the tests' doubles of other
//! services (a misbehaving registry, Vault, the metadata server, Azure):
//! one thread per connection, one request per connection, the handler's
//! answer with `Connection: close`. Over plain TCP ([`serve`]) or TLS
//! ([`serve_tls`]); a TLS double may hand a request on to a plain server
//! behind it ([`Reply::Forward`]), as a front end does.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::Arc;

/// The most bytes of request body a double reads.
const MAX_BODY: usize = 1 << 20;

/// A request as the double saw it.
pub struct Request {
    /// The request line's method.
    pub method: String,
    /// The request line's target: path and query.
    pub target: String,
    headers: Vec<(String, String)>,
    /// The body (by `Content-Length`; none otherwise).
    pub body: Vec<u8>,
}

impl Request {
    /// The target without its query.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("/")
    }

    /// The value of header `name` (any case), if sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        (self.headers.iter())
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The value of `name` in a form-encoded body.
    pub fn form(&self, name: &str) -> Option<String> {
        form_urlencoded::parse(&self.body)
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    }

    /// The value of `name` in the query.
    pub fn query(&self, name: &str) -> Option<String> {
        let query = self.target.split_once('?')?.1;
        form_urlencoded::parse(query.as_bytes())
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    }
}

/// An answer.
pub struct Response {
    pub status: u16,
    pub content_type: String,
    /// More header lines.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// `status` with a JSON `body`.
    pub fn json(status: u16, body: impl Into<Vec<u8>>) -> Response {
        Response {
            status,
            content_type: "application/json".into(),
            headers: Vec::new(),
            body: body.into(),
        }
    }
}

/// What a TLS double does with a request.
pub enum Reply {
    Answer(Response),
    /// Hands the request (without its Authorization) to the plain HTTP
    /// server at this address, and its answer back.
    Forward(SocketAddr),
}

/// Serves `handler` on a fresh loopback port, for the test's lifetime.
pub fn serve(handler: impl Fn(&Request) -> Response + Send + Sync + 'static) -> SocketAddr {
    listen(None, move |r| Reply::Answer(handler(r)))
}

/// Serves `handler` over TLS with the PEM certificate chain and key at
/// `cert` and `key`.
pub fn serve_tls(
    cert: &Path,
    key: &Path,
    handler: impl Fn(&Request) -> Reply + Send + Sync + 'static,
) -> SocketAddr {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let chain = CertificateDer::pem_file_iter(cert)
        .expect("cert")
        .collect::<Result<Vec<_>, _>>()
        .expect("cert");
    let key = PrivateKeyDer::from_pem_file(key).expect("key");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .expect("TLS config");
    listen(Some(Arc::new(config)), handler)
}

fn listen(
    tls: Option<Arc<rustls::ServerConfig>>,
    handler: impl Fn(&Request) -> Reply + Send + Sync + 'static,
) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let handler = Arc::new(handler);
    std::thread::spawn(move || {
        for stream in listener.incoming().map_while(Result::ok) {
            let (handler, tls) = (handler.clone(), tls.clone());
            std::thread::spawn(move || match tls {
                None => answer(stream, &*handler),
                Some(config) => {
                    let Ok(conn) = rustls::ServerConnection::new(config) else {
                        return;
                    };
                    let mut tls = rustls::StreamOwned::new(conn, stream);
                    answer(&mut tls, &*handler);
                    tls.conn.send_close_notify();
                    let _ = tls.flush();
                }
            });
        }
    });
    addr
}

fn answer<S: Read + Write>(stream: S, handler: &dyn Fn(&Request) -> Reply) {
    let mut reader = BufReader::new(stream);
    let Some(request) = read_request(&mut reader) else {
        return;
    };
    let stream = reader.get_mut();
    match handler(&request) {
        Reply::Answer(r) => write_response(stream, &r),
        Reply::Forward(to) => forward(stream, &request, to),
    }
}

fn write_response(stream: &mut impl Write, r: &Response) {
    let mut head = format!(
        "HTTP/1.1 {} X\r\nContent-Type: {}\r\nContent-Length: {}\r\n",
        r.status,
        r.content_type,
        r.body.len()
    );
    for (k, v) in &r.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("Connection: close\r\n\r\n");
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(&r.body);
    let _ = stream.flush();
}

/// Sends `request` on to `to` and copies its answer back as it came.
fn forward(stream: &mut impl Write, request: &Request, to: SocketAddr) {
    let Ok(mut upstream) = TcpStream::connect(to) else {
        return write_response(stream, &Response::json(502, "upstream down"));
    };
    let mut head = format!(
        "{} {} HTTP/1.1\r\nHost: {to}\r\n",
        request.method, request.target
    );
    for (k, v) in &request.headers {
        let hop = ["host", "connection", "authorization", "content-length"];
        if !hop.iter().any(|h| k.eq_ignore_ascii_case(h)) {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        request.body.len()
    ));
    let sent = upstream
        .write_all(head.as_bytes())
        .and_then(|()| upstream.write_all(&request.body));
    if sent.is_ok() {
        let _ = std::io::copy(&mut upstream, stream);
    }
    let _ = stream.flush();
}

fn read_request(reader: &mut impl BufRead) -> Option<Request> {
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut headers = Vec::new();
    let mut header = String::new();
    while reader.read_line(&mut header).is_ok_and(|n| n > 2) {
        if let Some((k, v)) = header.split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
        header.clear();
    }
    let length = (headers.iter())
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0)
        .min(MAX_BODY);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    let mut words = line.split_whitespace();
    let method = words.next().unwrap_or_default().to_string();
    let target = words.next().unwrap_or("/").to_string();
    Some(Request {
        method,
        target,
        headers,
        body,
    })
}
