//! Docker credential helpers: `credHelpers` (per registry) and
//! `credsStore` (the default) in a docker config. A helper is the program
//! `docker-credential-<name>` on `PATH`, run as `docker-credential-<name>
//! get` with no shell: the registry (`host[:port]`) on stdin, a JSON
//! `{"Username": …, "Secret": …}` on stdout. Its "credentials not found"
//! answer means anonymous access, as for docker.
//!
//! Each run is bounded: a timeout (and the request's deadline), a cap on
//! what it may print, its environment limited to what helpers read. An
//! answer is cached per (helper, registry) for a while, a failure for a
//! few seconds, so a burst of requests runs a helper once; the cache is
//! bounded in entries. A failure names the helper and the first line of
//! what it said, and denies: never an anonymous retry that ends in a bare
//! 401.

use super::credential::Credential;
use std::time::{Duration, Instant};

/// The longest one run may take.
const TIMEOUT: Duration = Duration::from_secs(10);
/// The most a helper may print on stdout (a credential is small; an ECR
/// token is about 2 KiB) or on stderr.
const MAX_OUTPUT: u64 = 64 << 10;
/// How long an answer is reused. Helpers give no expiry; cloud tokens live
/// for hours, and a rotated password is picked up within this.
const FRESH: Duration = Duration::from_secs(300);
/// How long a failure is reused before the helper runs again.
const FAILED_FRESH: Duration = Duration::from_secs(5);
/// The most (helper, registry) answers kept.
const MAX_ENTRIES: u64 = 256;
/// The docker credential protocol's "no credential stored" answer.
const NOT_FOUND: &str = "credentials not found in native keychain";

type Answer = Result<Option<Credential>, String>;

/// Runs credential helpers and remembers their answers.
pub(crate) struct Helpers {
    answers: super::exec::Kept<Answer>,
}

impl Default for Helpers {
    fn default() -> Helpers {
        Helpers {
            answers: super::exec::Kept::new(MAX_ENTRIES),
        }
    }
}

impl Helpers {
    /// The credential helper `name` gives for `registry` (`host[:port]`),
    /// from the cache when fresh; none when it stores none.
    pub(crate) async fn get(&self, name: &str, registry: &str, deadline: Instant) -> Answer {
        let key = format!("{name}\0{registry}");
        if let Some(answer) = self.answers.get(&key) {
            return answer;
        }
        let answer = run(name, registry, deadline).await;
        crate::metrics::metrics().credential_helper_run(name, answer.is_ok());
        if let Err(why) = &answer {
            tracing::warn!(helper = name, registry, "registry-auth: {why}");
        }
        let keep = match answer {
            Ok(_) => FRESH,
            Err(_) => FAILED_FRESH,
        };
        self.answers.put(key, answer.clone(), keep);
        answer
    }
}

/// A helper's name as docker takes it: letters, digits, `.`, `_`, `-`,
/// so that `docker-credential-<name>` is one program on `PATH` and never a
/// path.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        && !name.starts_with('.')
}

/// One run of `docker-credential-<name> get` for `registry`.
async fn run(name: &str, registry: &str, deadline: Instant) -> Answer {
    let program = format!("docker-credential-{name}");
    if !valid_name(name) {
        return Err(format!("{name:?} is not a credential helper name"));
    }
    let mut command = tokio::process::Command::new(&program);
    command.arg("get");
    let until = deadline.min(Instant::now() + TIMEOUT);
    let out = super::exec::run(command, registry.as_bytes(), until, MAX_OUTPUT, &program).await?;
    if !out.status.success() {
        let said = out.said();
        if said.contains(NOT_FOUND) {
            return Ok(None);
        }
        return Err(format!("{program} failed ({}): {said}", out.status));
    }
    parse(&program, &out.stdout)
}

/// The credential in a helper's answer.
fn parse(program: &str, out: &[u8]) -> Answer {
    #[derive(serde::Deserialize)]
    struct Reply {
        #[serde(rename = "Username", default)]
        username: String,
        #[serde(rename = "Secret", default)]
        secret: String,
    }
    let reply: Reply = serde_json::from_slice(out)
        .map_err(|e| format!("{program}: its answer is not the credential JSON: {e}"))?;
    if reply.username == "<token>" {
        return Err(format!(
            "{program} gave an identity token, which ivpol does not exchange: give a username and password"
        ));
    }
    if reply.username.is_empty() && reply.secret.is_empty() {
        return Ok(None);
    }
    Ok(Some(Credential {
        username: reply.username,
        password: reply.secret,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helper_names_are_program_names_never_paths() {
        for good in ["ecr-login", "gcloud", "pass", "osxkeychain", "a.b_c-1"] {
            assert!(valid_name(good), "{good}");
        }
        for bad in ["", "../x", "a/b", "a b", ".hidden", "x;rm", &"a".repeat(65)] {
            assert!(!valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn answers_parse_as_the_protocol_says() {
        let ok = parse(
            "h",
            br#"{"ServerURL":"r.io","Username":"AWS","Secret":"tok"}"#,
        );
        assert_eq!(
            ok,
            Ok(Some(Credential {
                username: "AWS".into(),
                password: "tok".into()
            }))
        );
        assert_eq!(parse("h", br#"{"Username":"","Secret":""}"#), Ok(None));
        let token = parse("h", br#"{"Username":"<token>","Secret":"refresh"}"#);
        assert!(token.unwrap_err().contains("identity token"));
        let junk = parse("h", b"not json").unwrap_err();
        assert!(
            junk.starts_with("h: its answer is not the credential JSON"),
            "{junk}"
        );
    }
}
