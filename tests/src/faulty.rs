//! A deliberately misbehaving registry on 127.0.0.1, for the failures a
//! real registry will not produce on demand: 500s, slowness past the
//! deadline, oversized manifests, bytes that do not match their digest,
//! redirects to hosts the policy refuses. One canned answer per path.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Clone)]
pub enum Answer {
    Status(u16, String),
    Bytes { content_type: String, body: Vec<u8> },
    Slow(Duration),
    Redirect(String),
}

pub struct Faulty {
    pub addr: String,
    answers: Arc<Mutex<BTreeMap<String, Answer>>>,
    /// Request lines received (method and path), for assertions.
    pub seen: Arc<Mutex<Vec<String>>>,
}

impl Faulty {
    pub fn start() -> Faulty {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        let answers: Arc<Mutex<BTreeMap<String, Answer>>> = Arc::default();
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let (a, s) = (answers.clone(), seen.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let (a, s) = (a.clone(), s.clone());
                std::thread::spawn(move || serve(stream, &a, &s));
            }
        });
        Faulty {
            addr,
            answers,
            seen,
        }
    }

    /// Answers requests for `path` (exact, without query) with `answer`.
    pub fn on(&self, path: &str, answer: Answer) -> &Self {
        if let Ok(mut m) = self.answers.lock() {
            m.insert(path.to_string(), answer);
        }
        self
    }
}

fn serve(
    mut stream: TcpStream,
    answers: &Mutex<BTreeMap<String, Answer>>,
    seen: &Mutex<Vec<String>>,
) {
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    // Skip the headers.
    let mut header = String::new();
    while reader.read_line(&mut header).is_ok_and(|n| n > 2) {
        header.clear();
    }
    let path = line
        .split_whitespace()
        .nth(1)
        .unwrap_or("/")
        .split('?')
        .next()
        .unwrap_or("/")
        .to_string();
    if let Ok(mut s) = seen.lock() {
        s.push(line.trim().to_string());
    }
    let answer = answers.lock().ok().and_then(|m| m.get(&path).cloned());
    let (status, content_type, body, extra) = match answer {
        None => (
            404,
            "application/json".to_string(),
            br#"{"errors":[{"code":"NAME_UNKNOWN","message":"unknown"}]}"#.to_vec(),
            String::new(),
        ),
        Some(Answer::Status(code, body)) => (
            code,
            "application/json".into(),
            body.into_bytes(),
            String::new(),
        ),
        Some(Answer::Bytes { content_type, body }) => (200, content_type, body, String::new()),
        Some(Answer::Slow(d)) => {
            std::thread::sleep(d);
            (
                200,
                "application/json".into(),
                b"{}".to_vec(),
                String::new(),
            )
        }
        Some(Answer::Redirect(to)) => (
            307,
            "text/plain".into(),
            Vec::new(),
            format!("Location: {to}\r\n"),
        ),
    };
    let head = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(&body);
    let _ = stream.flush();
}
