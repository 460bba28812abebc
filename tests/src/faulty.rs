//! A deliberately misbehaving registry on 127.0.0.1, for the failures a
//! real registry will not produce on demand: 500s, slowness past the
//! deadline, oversized manifests, bytes that do not match their digest,
//! redirects to hosts the policy refuses. One canned answer per path.

use crate::http_double::{serve, Request, Response};
use std::collections::BTreeMap;
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
        let answers: Arc<Mutex<BTreeMap<String, Answer>>> = Arc::default();
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let (a, s) = (answers.clone(), seen.clone());
        let addr = serve(move |r| respond(r, &a, &s)).to_string();
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

fn respond(
    r: &Request,
    answers: &Mutex<BTreeMap<String, Answer>>,
    seen: &Mutex<Vec<String>>,
) -> Response {
    if let Ok(mut s) = seen.lock() {
        s.push(format!("{} {} HTTP/1.1", r.method, r.target));
    }
    let answer = answers.lock().ok().and_then(|m| m.get(r.path()).cloned());
    match answer {
        None => Response::json(
            404,
            r#"{"errors":[{"code":"NAME_UNKNOWN","message":"unknown"}]}"#,
        ),
        Some(Answer::Status(code, body)) => Response::json(code, body),
        Some(Answer::Bytes { content_type, body }) => Response {
            content_type,
            ..Response::json(200, body)
        },
        Some(Answer::Slow(d)) => {
            std::thread::sleep(d);
            Response::json(200, "{}")
        }
        Some(Answer::Redirect(to)) => Response {
            status: 307,
            content_type: "text/plain".into(),
            headers: vec![("Location".into(), to)],
            body: Vec::new(),
        },
    }
}
