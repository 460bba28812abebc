//! The listener, one thread per connection, keep-alive, bearer-token
//! authentication, and the shared state the control methods reach.

use super::error::ApiError;
use super::handler::{self, Reply};
use super::http::{self, ReadError, Request, MAX_BODY};
use super::ops::Api;
use super::{watch, RequestRecord};
use std::collections::HashMap;
use std::io::BufReader;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// The state behind one lock, and a condition variable watches wait on:
/// notified on every write, dropped watch, bookmark request and shutdown.
pub(crate) struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

pub(crate) struct State {
    pub api: Api,
    pub token: String,
    pub requests: Vec<RequestRecord>,
    pub bookmark_interval: Duration,
    /// Bumped to ask every watch for a bookmark now.
    pub bookmark_epoch: u64,
    pub shutdown: bool,
    conns: HashMap<u64, Conn>,
    next_conn: u64,
}

/// An open connection: a handle to shut it, and whether it streams a watch.
struct Conn {
    stream: TcpStream,
    watching: bool,
    dropped: bool,
}

impl Shared {
    pub(crate) fn new(api: Api, token: String) -> Shared {
        Shared {
            state: Mutex::new(State {
                api,
                token,
                requests: Vec::new(),
                bookmark_interval: Duration::from_secs(1),
                bookmark_epoch: 0,
                shutdown: false,
                conns: HashMap::new(),
                next_conn: 0,
            }),
            changed: Condvar::new(),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .expect("fake API server state (a thread panicked holding it)")
    }

    /// Waits for a change, at most `limit`.
    pub(crate) fn wait<'a>(
        &self,
        guard: MutexGuard<'a, State>,
        limit: Duration,
    ) -> MutexGuard<'a, State> {
        self.changed
            .wait_timeout(guard, limit)
            .expect("fake API server state (a thread panicked holding it)")
            .0
    }

    /// Wakes every watch.
    pub(crate) fn notify(&self) {
        self.changed.notify_all();
    }
}

impl State {
    /// Whether the connection was dropped (or is gone).
    pub(crate) fn is_dropped(&self, conn: u64) -> bool {
        self.conns.get(&conn).is_none_or(|c| c.dropped)
    }

    pub(crate) fn watch_count(&self) -> usize {
        self.conns
            .values()
            .filter(|c| c.watching && !c.dropped)
            .count()
    }

    /// Shuts every connection streaming a watch, at once; how many.
    pub(crate) fn drop_watches(&mut self) -> usize {
        let mut n = 0;
        for c in self.conns.values_mut().filter(|c| c.watching && !c.dropped) {
            c.dropped = true;
            let _ = c.stream.shutdown(Shutdown::Both);
            n += 1;
        }
        n
    }

    /// Shuts every connection (the server is going away).
    pub(crate) fn close_all(&mut self) {
        self.shutdown = true;
        for c in self.conns.values_mut() {
            c.dropped = true;
            let _ = c.stream.shutdown(Shutdown::Both);
        }
    }

    fn register(&mut self, stream: TcpStream) -> u64 {
        self.next_conn += 1;
        self.conns.insert(
            self.next_conn,
            Conn {
                stream,
                watching: false,
                dropped: false,
            },
        );
        self.next_conn
    }

    fn set_watching(&mut self, conn: u64, watching: bool) {
        if let Some(c) = self.conns.get_mut(&conn) {
            c.watching = watching;
        }
    }
}

/// Accepts connections until shutdown, a thread for each.
pub(crate) fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let Ok(handle) = stream.try_clone() else {
            continue;
        };
        let id = {
            let mut st = shared.lock();
            if st.shutdown {
                return;
            }
            st.register(handle)
        };
        let shared = shared.clone();
        std::thread::spawn(move || serve_connection(&shared, id, stream));
    }
}

fn serve_connection(shared: &Shared, id: u64, stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    if let Ok(read_half) = stream.try_clone() {
        let mut reader = BufReader::new(read_half);
        let mut writer = stream;
        while serve_one(shared, id, &mut reader, &mut writer) {}
    }
    shared.lock().conns.remove(&id);
}

/// Serves one request; whether to keep the connection.
fn serve_one(
    shared: &Shared,
    id: u64,
    reader: &mut BufReader<TcpStream>,
    writer: &mut TcpStream,
) -> bool {
    let req = match http::read_request(reader) {
        Ok(req) => req,
        Err(ReadError::TooLarge) => {
            let e = ApiError::too_large(MAX_BODY);
            let _ = http::write_json(writer, e.code, &e.status(), false);
            return false;
        }
        Err(ReadError::Malformed(why)) => {
            let e = ApiError::bad_request(why);
            let _ = http::write_json(writer, e.code, &e.status(), false);
            return false;
        }
        Err(ReadError::Closed | ReadError::Io) => return false,
    };
    let keep = req.keep_alive();
    match respond(shared, id, &req) {
        Ok(Reply::Json(code, body)) => http::write_json(writer, code, &body, keep).is_ok() && keep,
        Err(e) => http::write_json(writer, e.code, &e.status(), keep).is_ok() && keep,
        Ok(Reply::Watch(spec)) => {
            let ended_cleanly = watch::stream(shared, id, writer, &spec).is_ok();
            shared.lock().set_watching(id, false);
            ended_cleanly && keep
        }
    }
}

/// Authenticates, answers and records a request, under the lock.
fn respond(shared: &Shared, id: u64, req: &Request) -> Result<Reply, ApiError> {
    let mut st = shared.lock();
    let result = if authenticated(&st.token, req) {
        handler::handle(&mut st.api, req)
    } else {
        Err(ApiError::unauthorized())
    };
    let (status, watch) = match &result {
        Ok(Reply::Json(code, _)) => (*code, false),
        Ok(Reply::Watch(_)) => (200, true),
        Err(e) => (e.code, false),
    };
    if watch {
        st.set_watching(id, true);
    }
    st.requests.push(RequestRecord::of(req, status, watch));
    if req.method != "GET" {
        shared.notify();
    }
    result
}

fn authenticated(token: &str, req: &Request) -> bool {
    let Some(value) = req.header("authorization") else {
        return false;
    };
    let Some((scheme, given)) = value.split_once(' ') else {
        return false;
    };
    scheme.eq_ignore_ascii_case("bearer") && given.trim() == token
}
