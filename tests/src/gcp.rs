//! A double of the GCE/GKE metadata server's token endpoint, as Google
//! documents it: `GET /computeMetadata/v1/instance/service-accounts/default/token`
//! with `Metadata-Flavor: Google` answers
//! `{"access_token": …, "expires_in": …, "token_type": "Bearer"}` (and
//! carries `Metadata-Flavor: Google` back); without the header, 403.
//! Clients find it through `GCE_METADATA_HOST`.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

const TOKEN_PATH: &str = "/computeMetadata/v1/instance/service-accounts/default/token";

pub struct Metadata {
    /// `host:port`, as `GCE_METADATA_HOST` takes it.
    pub host: String,
    /// The paths (with queries) asked for.
    pub seen: Arc<Mutex<Vec<String>>>,
}

impl Metadata {
    /// Hands out `token`.
    pub fn start(token: &str) -> Metadata {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let host = listener.local_addr().expect("addr").to_string();
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let (s, t) = (seen.clone(), token.to_string());
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let (s, t) = (s.clone(), t.clone());
                std::thread::spawn(move || serve(stream, &s, &t));
            }
        });
        Metadata { host, seen }
    }

    /// The environment that points Google's auth libraries here, and
    /// nowhere else (no credentials file, no gcloud configuration).
    pub fn env(&self, home: &std::path::Path) -> Vec<(String, String)> {
        vec![
            ("GCE_METADATA_HOST".into(), self.host.clone()),
            ("HOME".into(), home.display().to_string()),
            (
                "CLOUDSDK_CONFIG".into(),
                home.join("gcloud").display().to_string(),
            ),
        ]
    }
}

fn serve(stream: TcpStream, seen: &Mutex<Vec<String>>, token: &str) {
    let Ok(read) = stream.try_clone() else { return };
    let mut reader = BufReader::new(read);
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let mut flavored = false;
    let mut header = String::new();
    while reader.read_line(&mut header).is_ok_and(|n| n > 2) {
        if let Some((k, v)) = header.split_once(':') {
            if k.trim().eq_ignore_ascii_case("metadata-flavor") && v.trim() == "Google" {
                flavored = true;
            }
        }
        header.clear();
    }
    let target = line.split_whitespace().nth(1).unwrap_or("/").to_string();
    if let Ok(mut s) = seen.lock() {
        s.push(target.clone());
    }
    let path = target.split('?').next().unwrap_or("/");
    let (status, body) = match (flavored, path) {
        (false, _) => (403, "Missing Metadata-Flavor:Google header.".to_string()),
        (true, TOKEN_PATH) => (
            200,
            serde_json::json!({"access_token": token, "expires_in": 3599, "token_type": "Bearer"})
                .to_string(),
        ),
        (true, _) => (404, "not found".to_string()),
    };
    let mut stream = stream;
    let head = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nMetadata-Flavor: Google\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body.as_bytes());
}
