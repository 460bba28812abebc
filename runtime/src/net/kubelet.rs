//! Kubelet credential provider plugins (`--image-credential-provider-config`,
//! `--image-credential-provider-bin-dir`): the node's own
//! `CredentialProviderConfig` (`kubelet.config.k8s.io/v1`), so that ivpol
//! reuses the cloud providers' official plugins (`ecr-credential-provider`,
//! `acr-credential-provider`, GCP's `auth-provider-gcp`) exactly as the
//! kubelet runs them.
//!
//! A plugin whose `matchImages` match the image is run as
//! `<bin-dir>/<name> <args>` (no shell, its `env` added) with a
//! `CredentialProviderRequest` on stdin, and answers a
//! `CredentialProviderResponse` (`credentialprovider.kubelet.k8s.io/v1`):
//! credentials by image pattern, cached per image, registry or globally
//! (`cacheKeyType`) for `cacheDuration` (else the config's
//! `defaultCacheDuration`). Each run has a timeout and an output cap; a
//! plugin that fails, times out or answers malformed JSON denies, naming
//! the plugin.

use super::credential::Credential;
use anyhow::{bail, Context, Result};
use serde::Deserialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The API version of the request and response.
const API: &str = "credentialprovider.kubelet.k8s.io/v1";
/// The longest one run may take (the kubelet allows about as long).
const TIMEOUT: Duration = Duration::from_secs(10);
/// The most a plugin may print.
const MAX_OUTPUT: u64 = 256 << 10;
/// The most cached answers.
const MAX_ENTRIES: u64 = 1024;
/// How long a failure is reused.
const FAILED_FRESH: Duration = Duration::from_secs(5);

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ConfigFile {
    api_version: String,
    kind: String,
    #[serde(default)]
    providers: Vec<ProviderSpec>,
}

#[derive(Deserialize, Clone, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ProviderSpec {
    name: String,
    match_images: Vec<String>,
    default_cache_duration: String,
    api_version: String,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: Vec<EnvVar>,
    /// Service-account-token mode (kubelet 1.33): refused at load, since
    /// ivpol has no pod's token to give.
    #[serde(default)]
    token_attributes: Option<serde_json::Value>,
}

#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
struct EnvVar {
    name: String,
    value: String,
}

/// One configured plugin.
#[derive(Clone, Debug)]
struct Provider {
    spec: ProviderSpec,
    program: PathBuf,
    default_cache: Duration,
}

/// A plugin's credentials by image pattern, or why it gave none.
type Auth = Result<HashMap<String, Credential>, String>;

/// The configured plugins and their cached answers.
pub struct Plugins {
    providers: Vec<Provider>,
    answers: super::exec::Kept<Auth>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Response {
    api_version: String,
    kind: String,
    cache_key_type: String,
    #[serde(default)]
    cache_duration: Option<String>,
    #[serde(default)]
    auth: HashMap<String, AuthConfig>,
}

#[derive(Deserialize)]
struct AuthConfig {
    #[serde(default)]
    username: String,
    #[serde(default)]
    password: String,
}

impl Plugins {
    /// Reads the kubelet's `CredentialProviderConfig` at `config`; the
    /// plugins are the executables of those names in `bin_dir`.
    pub fn load(config: &Path, bin_dir: &Path) -> Result<Plugins> {
        let text = std::fs::read_to_string(config)
            .with_context(|| format!("reading {}", config.display()))?;
        Plugins::parse(&text, bin_dir).with_context(|| format!("{}", config.display()))
    }

    fn parse(text: &str, bin_dir: &Path) -> Result<Plugins> {
        let file: ConfigFile = serde_yaml_ng::from_str(text)?;
        if file.kind != "CredentialProviderConfig" || file.api_version != "kubelet.config.k8s.io/v1"
        {
            bail!("not a kubelet.config.k8s.io/v1 CredentialProviderConfig");
        }
        let mut providers = Vec::new();
        for spec in file.providers {
            let name = &spec.name;
            if name.is_empty() || name.contains('/') || name.starts_with('.') {
                bail!("provider {name:?}: a name is a file in the bin dir, not a path");
            }
            if spec.api_version != API {
                bail!(
                    "provider {name}: apiVersion {} is not {API}",
                    spec.api_version
                );
            }
            if spec.token_attributes.is_some() {
                bail!("provider {name}: tokenAttributes (service account tokens) is not supported: ivpol has no pod's token to give");
            }
            if spec.match_images.is_empty() {
                bail!("provider {name}: matchImages is empty");
            }
            for pattern in &spec.match_images {
                Pattern::parse(pattern).with_context(|| format!("provider {name}"))?;
            }
            let default_cache = parse_duration(&spec.default_cache_duration)
                .with_context(|| format!("provider {name}: defaultCacheDuration"))?;
            let program = bin_dir.join(name);
            providers.push(Provider {
                spec,
                program,
                default_cache,
            });
        }
        Ok(Plugins {
            providers,
            answers: super::exec::Kept::new(MAX_ENTRIES),
        })
    }

    /// The credential for `image` (`host[:port]/repository`) from the first
    /// plugin whose `matchImages` match it; none when none does or it
    /// holds none for the image.
    pub(crate) async fn credential(
        &self,
        image: &str,
        deadline: Instant,
    ) -> Result<Option<Credential>, String> {
        let Some(provider) = self
            .providers
            .iter()
            .find(|p| p.spec.match_images.iter().any(|m| matches(m, image)))
        else {
            return Ok(None);
        };
        let name = &provider.spec.name;
        let registry = image.split('/').next().unwrap_or_default();
        for key in [
            format!("{name}\0image\0{image}"),
            format!("{name}\0registry\0{registry}"),
            format!("{name}\0global"),
        ] {
            if let Some(auth) = self.answers.get(&key) {
                return auth.map(|a| best(&a, image));
            }
        }
        let answer = run(provider, image, deadline).await;
        crate::metrics::metrics().credential_helper_run(name, answer.is_ok());
        let (key, duration, auth) = match answer {
            Ok((kind, duration, auth)) => {
                let key = match kind.as_str() {
                    "Image" => format!("{name}\0image\0{image}"),
                    "Registry" => format!("{name}\0registry\0{registry}"),
                    _ => format!("{name}\0global"),
                };
                (key, duration.unwrap_or(provider.default_cache), Ok(auth))
            }
            Err(why) => (format!("{name}\0image\0{image}"), FAILED_FRESH, Err(why)),
        };
        let found = auth.as_ref().map(|a| best(a, image)).map_err(Clone::clone);
        self.answers.put(key, auth, duration);
        found
    }

    /// The plugin that may answer for `registry` (`host[:port]`), by the
    /// host part of its `matchImages`: what a verification's cache key
    /// binds when the plugin could have given the credential.
    pub(crate) fn serving(&self, registry: &str) -> Option<&str> {
        let host_of = |m: &String| m.split('/').next().map(str::to_string).unwrap_or_default();
        (self.providers.iter())
            .find(|p| {
                p.spec
                    .match_images
                    .iter()
                    .any(|m| matches(&host_of(m), registry))
            })
            .map(|p| p.spec.name.as_str())
    }
}

/// The credential of the most specific pattern in `auth` that matches
/// `image` (the longest one, as the kubelet orders them).
fn best(auth: &HashMap<String, Credential>, image: &str) -> Option<Credential> {
    let mut candidates: Vec<(&String, &Credential)> =
        auth.iter().filter(|(p, _)| matches(p, image)).collect();
    candidates.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(b.0)));
    candidates.first().map(|(_, c)| (*c).clone())
}

/// One run of the plugin for `image`: (cacheKeyType, cacheDuration, auth).
async fn run(
    provider: &Provider,
    image: &str,
    deadline: Instant,
) -> Result<(String, Option<Duration>, HashMap<String, Credential>), String> {
    let name = &provider.spec.name;
    let mut command = tokio::process::Command::new(&provider.program);
    command
        .args(&provider.spec.args)
        .envs(provider.spec.env.iter().map(|e| (&e.name, &e.value)));
    let request =
        serde_json::json!({"apiVersion": API, "kind": "CredentialProviderRequest", "image": image});
    let until = deadline.min(Instant::now() + TIMEOUT);
    let what = format!("credential provider {name}");
    let out = super::exec::run(
        command,
        request.to_string().as_bytes(),
        until,
        MAX_OUTPUT,
        &what,
    )
    .await?;
    if !out.status.success() {
        return Err(format!("{what} failed ({}): {}", out.status, out.said()));
    }
    let out = out.stdout;
    let response: Response = serde_json::from_slice(&out).map_err(|e| {
        format!("credential provider {name}: its answer is not a CredentialProviderResponse: {e}")
    })?;
    if response.api_version != API || response.kind != "CredentialProviderResponse" {
        return Err(format!(
            "credential provider {name}: its answer is not a {API} CredentialProviderResponse"
        ));
    }
    if !matches!(
        response.cache_key_type.as_str(),
        "Image" | "Registry" | "Global"
    ) {
        return Err(format!(
            "credential provider {name}: cacheKeyType {:?} is not Image, Registry or Global",
            response.cache_key_type
        ));
    }
    let duration = match &response.cache_duration {
        Some(d) => Some(
            parse_duration(d)
                .map_err(|e| format!("credential provider {name}: cacheDuration: {e}"))?,
        ),
        None => None,
    };
    let auth = response
        .auth
        .into_iter()
        .map(|(pattern, a)| {
            (
                pattern,
                Credential {
                    username: a.username,
                    password: a.password,
                },
            )
        })
        .collect();
    Ok((response.cache_key_type, duration, auth))
}

/// A Go duration as the kubelet writes them (`12h`, `1h30m`, `90s`, `0`),
/// read by the flags' parser, less its bare seconds (Go wants a unit on
/// every number but `0`), and capped at a year.
fn parse_duration(text: &str) -> Result<Duration> {
    if text != "0" && text.bytes().all(|b| b.is_ascii_digit()) {
        bail!("{text:?} is not a duration: a number without a unit");
    }
    let parsed = crate::duration::parse_duration(text)?;
    Ok(parsed.min(Duration::from_secs(365 * 86400)))
}

/// A `matchImages` pattern: a host of DNS labels, each `*` or a glob of
/// one label, an optional port, an optional path prefix.
struct Pattern<'a> {
    labels: Vec<&'a str>,
    port: Option<&'a str>,
    path: &'a str,
}

impl<'a> Pattern<'a> {
    fn parse(pattern: &'a str) -> Result<Pattern<'a>> {
        let pattern = pattern
            .trim_start_matches("https://")
            .trim_start_matches("http://");
        let (hostport, path) = pattern.split_once('/').unwrap_or((pattern, ""));
        let (host, port) = match hostport.rsplit_once(':') {
            Some((h, p)) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => (h, Some(p)),
            Some(_) => bail!("{pattern:?}: a port is digits"),
            None => (hostport, None),
        };
        if host.is_empty() {
            bail!("{pattern:?}: no host");
        }
        Ok(Pattern {
            labels: host.split('.').collect(),
            port,
            path,
        })
    }
}

/// Whether the kubelet's `matchImages` `pattern` matches `image`: the same
/// number of host labels, each equal or matched by its glob (`*` within one
/// label), the same port when the pattern has one, and the pattern's path a
/// prefix of the image's (by segment).
fn matches(pattern: &str, image: &str) -> bool {
    let (Ok(p), Ok(i)) = (Pattern::parse(pattern), Pattern::parse(image)) else {
        return false;
    };
    p.labels.len() == i.labels.len()
        && p.labels.iter().zip(&i.labels).all(|(p, i)| glob(p, i))
        && (p.port.is_none() || p.port == i.port)
        && (p.path.is_empty()
            || i.path == p.path
            || i.path
                .starts_with(&format!("{}/", p.path.trim_end_matches('/'))))
}

/// `*` matches any run of characters within one label.
fn glob(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern.eq_ignore_ascii_case(text),
        Some((head, rest)) => {
            text.len() >= head.len()
                && text[..head.len()].eq_ignore_ascii_case(head)
                && (head.len()..=text.len())
                    .any(|i| text.is_char_boundary(i) && glob(rest, &text[i..]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn match_images_match_as_the_kubelet_matches() {
        let ecr = "*.dkr.ecr.*.amazonaws.com";
        assert!(matches(
            ecr,
            "123456789012.dkr.ecr.eu-west-1.amazonaws.com/app"
        ));
        assert!(
            !matches(ecr, "dkr.ecr.eu-west-1.amazonaws.com/app"),
            "label count"
        );
        assert!(!matches(ecr, "evil.com/123.dkr.ecr.x.amazonaws.com"));
        assert!(matches("*.azurecr.io", "team.azurecr.io/a/b"));
        assert!(!matches("*.azurecr.io", "team.azurecr.io.evil.com/a"));
        assert!(matches("gcr.io", "gcr.io/p/i"));
        assert!(matches(
            "registry.io:8080/team",
            "registry.io:8080/team/app"
        ));
        assert!(!matches(
            "registry.io:8080/team",
            "registry.io:8080/teamx/app"
        ));
        assert!(!matches("registry.io:8080", "registry.io:9090/app"));
        assert!(
            matches("registry.io", "registry.io:9090/app"),
            "no port in the pattern: any"
        );
        assert!(matches("*-docker.pkg.dev", "europe-docker.pkg.dev/p/r/i"));
    }

    #[test]
    fn the_config_is_the_kubelets_and_bad_ones_are_refused() {
        let ok = "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n  - name: ecr-credential-provider\n    matchImages: [\"*.dkr.ecr.*.amazonaws.com\"]\n    defaultCacheDuration: 12h\n    apiVersion: credentialprovider.kubelet.k8s.io/v1\n    args: [get-credentials]\n    env: [{name: AWS_PROFILE, value: x}]\n";
        let p = Plugins::parse(ok, Path::new("/bin")).expect("parses");
        assert_eq!(p.providers[0].default_cache, Duration::from_secs(12 * 3600));
        assert_eq!(
            p.providers[0].program,
            Path::new("/bin/ecr-credential-provider")
        );
        for (bad, why) in [
            (
                ok.replace("kind: CredentialProviderConfig", "kind: Other"),
                "not a kubelet",
            ),
            (
                ok.replace("name: ecr-credential-provider", "name: ../x"),
                "not a path",
            ),
            (
                ok.replace(
                    "credentialprovider.kubelet.k8s.io/v1",
                    "credentialprovider.kubelet.k8s.io/v1alpha1",
                ),
                "is not credentialprovider",
            ),
            (ok.replace("12h", "twelve"), "defaultCacheDuration"),
            (
                ok.replace("    args:", "    tokenAttributes: {}\n    args:"),
                "tokenAttributes",
            ),
            (ok.replace("    args:", "    argz:"), "unknown field"),
        ] {
            let e = format!(
                "{:#}",
                Plugins::parse(&bad, Path::new("/bin")).err().expect(why)
            );
            assert!(e.contains(why), "{why}: {e}");
        }
    }

    #[test]
    fn go_durations_parse() {
        assert_eq!(
            parse_duration("1h30m").expect("d"),
            Duration::from_secs(5400)
        );
        assert_eq!(parse_duration("90s").expect("d"), Duration::from_secs(90));
        assert_eq!(parse_duration("0").expect("d"), Duration::ZERO);
        assert_eq!(
            parse_duration("500ms").expect("d"),
            Duration::from_millis(500)
        );
        for (bad, why) in [
            ("", "a number without a unit"),
            ("12", "a number without a unit"),
            ("1d", "is not a duration"),
            ("h", "is not a duration"),
        ] {
            let e = parse_duration(bad).expect_err(bad).to_string();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
    }

    #[test]
    fn the_most_specific_pattern_wins() {
        let cred = |u: &str| Credential {
            username: u.into(),
            password: "p".into(),
        };
        let auth = HashMap::from([
            ("*.example.com".to_string(), cred("wide")),
            ("r.example.com/team".to_string(), cred("team")),
            ("other.io".to_string(), cred("other")),
        ]);
        assert_eq!(
            best(&auth, "r.example.com/team/app").map(|c| c.username),
            Some("team".into())
        );
        assert_eq!(
            best(&auth, "r.example.com/else").map(|c| c.username),
            Some("wide".into())
        );
        assert_eq!(best(&auth, "nothing.io/x"), None);
    }
}
