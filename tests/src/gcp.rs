//! A double of the GCE/GKE metadata server's token endpoint, as Google
//! documents it: `GET /computeMetadata/v1/instance/service-accounts/default/token`
//! with `Metadata-Flavor: Google` answers
//! `{"access_token": …, "expires_in": …, "token_type": "Bearer"}` (and
//! carries `Metadata-Flavor: Google` back); without the header, 403.
//! Clients find it through `GCE_METADATA_HOST`.

use crate::http_double::{serve, Request, Response};
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
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let (s, t) = (seen.clone(), token.to_string());
        let addr = serve(move |r| token_answer(r, &s, &t));
        Metadata {
            host: addr.to_string(),
            seen,
        }
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

fn token_answer(r: &Request, seen: &Mutex<Vec<String>>, token: &str) -> Response {
    if let Ok(mut s) = seen.lock() {
        s.push(r.target.clone());
    }
    let mut answer = match (r.header("Metadata-Flavor"), r.path()) {
        (Some("Google"), TOKEN_PATH) => Response::json(
            200,
            serde_json::json!({"access_token": token, "expires_in": 3599, "token_type": "Bearer"})
                .to_string(),
        ),
        (Some("Google"), _) => Response::json(404, "not found"),
        _ => Response::json(403, "Missing Metadata-Flavor:Google header."),
    };
    answer
        .headers
        .push(("Metadata-Flavor".into(), "Google".into()));
    answer
}
