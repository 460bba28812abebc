//! References parsed as go-containerregistry parses them: canonical forms,
//! Docker Hub's spellings, hosts and ports, digests, tags and the errors.

/// Spellings a runtime pulls from one place share one canonical form;
/// other registries, ports and repositories do not.
#[test]
fn canonical_forms_are_what_runtimes_pull() {
    let d = format!("sha256:{}", "a".repeat(64));
    for (written, canonical) in [
        (
            "REGISTRY.EXAMPLE.COM/team/app:1",
            "registry.example.com/team/app:1",
        ),
        (
            "registry.example.com:443/team/app:1",
            "registry.example.com/team/app:1",
        ),
        (
            "registry.example.com./team/app:1",
            "registry.example.com/team/app:1",
        ),
        (
            "registry.example.com:5000/team/app:1",
            "registry.example.com:5000/team/app:1",
        ),
        ("nginx", "docker.io/library/nginx:latest"),
        ("docker.io/nginx:1", "docker.io/library/nginx:1"),
        (
            "index.docker.io/library/nginx:1",
            "docker.io/library/nginx:1",
        ),
        ("registry-1.docker.io/nginx:1", "docker.io/library/nginx:1"),
        ("team/app:1", "docker.io/team/app:1"),
        ("[::1]:5000/app:1", "[::1]:5000/app:1"),
        ("localhost:443/app:1", "localhost/app:1"),
    ] {
        let got = parse(written).expect(written).canonical();
        assert_eq!(got, canonical, "{written}");
    }
    let pinned = parse(&format!("REGISTRY.EXAMPLE.COM:443/team/app:1@{d}")).expect("pinned");
    assert_eq!(
        pinned.canonical(),
        format!("registry.example.com/team/app@{d}")
    );
}

use super::*;

const HEX: &str = "6aefddb645ee6963afd681b1845c661d0ea4c3b20ab9db86d9e753b203d385f2";

fn ok(s: &str) -> ImageRef {
    match parse(s) {
        Ok(r) => r,
        Err(e) => panic!("{s:?} should parse: {e} ({})", e.reason()),
    }
}

fn err(s: &str) -> ImageRefError {
    match parse(s) {
        Ok(r) => panic!("{s:?} should not parse, got {r:?}"),
        Err(e) => e,
    }
}

#[test]
fn bare_name_is_docker_hub_latest() {
    let r = ok("nginx");
    assert_eq!(r.registry(), "index.docker.io");
    assert_eq!(r.repository(), "library/nginx");
    assert_eq!(r.tag(), Some("latest"));
    assert_eq!(r.digest(), None);
    assert_eq!(r.identifier(), "latest");
    assert!(!r.contains_digest());
    assert_eq!(r.original(), "nginx");
    assert_eq!(r.written_tag(), None);
    assert_eq!(r.name(), "index.docker.io/library/nginx");
    assert_eq!(r.info_registry(), "docker.io");
    assert_eq!(r.info_path(), "nginx");
    assert_eq!(r.tagged_name(), "docker.io/nginx:latest");
    assert_eq!(r.to_string(), "docker.io/nginx:latest");
}

#[test]
fn explicit_tag() {
    let r = ok("nginx:1.2");
    assert_eq!(r.tag(), Some("1.2"));
    assert_eq!(r.identifier(), "1.2");
    assert_eq!(r.written_tag(), Some("1.2"));
    assert_eq!(r.repository(), "library/nginx");
    assert_eq!(r.tagged_name(), "docker.io/nginx:1.2");
}

#[test]
fn docker_hub_spellings() {
    let cases = [
        // input, CEL repository, mutate form
        (
            "library/nginx",
            "library/nginx",
            "docker.io/library/nginx:latest",
        ),
        ("docker.io/nginx", "library/nginx", "docker.io/nginx:latest"),
        (
            "docker.io/library/nginx",
            "library/nginx",
            "docker.io/library/nginx:latest",
        ),
        (
            "index.docker.io/nginx",
            "library/nginx",
            "index.docker.io/nginx:latest",
        ),
        (
            "index.docker.io/library/nginx",
            "library/nginx",
            "index.docker.io/library/nginx:latest",
        ),
        (
            "bitnami/redis:7",
            "bitnami/redis",
            "docker.io/bitnami/redis:7",
        ),
    ];
    for (input, repo, mutate) in cases {
        let r = ok(input);
        assert_eq!(r.registry(), "index.docker.io", "{input}");
        assert_eq!(r.repository(), repo, "{input}");
        assert_eq!(r.to_string(), mutate, "{input}");
    }
}

#[test]
fn docker_io_rewrite_is_exact_and_case_sensitive() {
    let r = ok("DOCKER.IO/nginx");
    assert_eq!(r.registry(), "DOCKER.IO");
    // No implicit `library/` off the (case-sensitive) default registry.
    assert_eq!(r.repository(), "nginx");
}

#[test]
fn localhost_and_ports() {
    let r = ok("localhost:5000/a/b:t");
    assert_eq!(r.registry(), "localhost:5000");
    assert_eq!(r.repository(), "a/b");
    assert_eq!(r.tag(), Some("t"));
    assert_eq!(r.tagged_name(), "localhost:5000/a/b:t");

    let r = ok("localhost/foo");
    assert_eq!(r.registry(), "localhost");
    assert_eq!(r.repository(), "foo");

    let r = ok("example.com:8443/app");
    assert_eq!(r.registry(), "example.com:8443");
    assert_eq!(r.tag(), Some("latest"));

    // Go accepts an empty port.
    assert_eq!(ok("example.com:/app").registry(), "example.com:");

    err("example.com:84a3/app");
    err("example.com:-1/app");
}

#[test]
fn single_segment_without_host_markers_is_a_repository() {
    // `foo` has no '.', ':' and is not localhost, so it is a namespace.
    let r = ok("foo/bar");
    assert_eq!(r.registry(), "index.docker.io");
    assert_eq!(r.repository(), "foo/bar");
    // A lone host-looking segment with no '/' is still a repository name.
    assert_eq!(ok("foo.bar").repository(), "library/foo.bar");
    assert_eq!(ok("localhost").repository(), "library/localhost");
}

#[test]
fn digest_reference() {
    let s = format!("127.0.0.1:5000/x@sha256:{HEX}");
    let r = ok(&s);
    assert_eq!(r.registry(), "127.0.0.1:5000");
    assert_eq!(r.repository(), "x");
    assert_eq!(r.tag(), None);
    assert_eq!(r.digest(), Some(format!("sha256:{HEX}").as_str()));
    assert_eq!(r.identifier(), format!("sha256:{HEX}"));
    assert!(r.contains_digest());
    assert_eq!(r.original(), s);
    assert_eq!(r.tagged_name(), "127.0.0.1:5000/x:latest");
    assert_eq!(r.to_string(), s);
}

#[test]
fn digest_on_docker_hub_is_normalised() {
    let r = ok(&format!("nginx@sha256:{HEX}"));
    assert_eq!(r.registry(), "index.docker.io");
    assert_eq!(r.repository(), "library/nginx");
    assert_eq!(r.name(), "index.docker.io/library/nginx");
    assert_eq!(r.to_string(), format!("docker.io/nginx@sha256:{HEX}"));
}

#[test]
fn tag_and_digest_is_a_digest_reference_without_tag() {
    let s = format!("ghcr.io/o/r:tag@sha256:{HEX}");
    let r = ok(&s);
    assert_eq!(r.registry(), "ghcr.io");
    assert_eq!(r.repository(), "o/r");
    assert_eq!(r.tag(), None, "ggcr drops the tag of tag+digest");
    assert_eq!(r.written_tag(), Some("tag"));
    assert_eq!(r.digest(), Some(format!("sha256:{HEX}").as_str()));
    assert_eq!(r.identifier(), format!("sha256:{HEX}"));
    assert!(r.contains_digest());
    assert_eq!(r.original(), s);
    assert_eq!(r.tagged_name(), "ghcr.io/o/r:tag");
    assert_eq!(r.to_string(), format!("ghcr.io/o/r@sha256:{HEX}"));
}

#[test]
fn tag_of_tag_and_digest_is_still_validated() {
    err(&format!("ghcr.io/o/r:b$d@sha256:{HEX}"));
    err(&format!("ghcr.io/o/r:@sha256:{HEX}"));
}

#[test]
fn bad_digests() {
    let e = err("nginx@sha256:abc");
    assert_eq!(e.reason(), "invalid checksum digest length");
    let e = err(&format!("nginx@sha256:{}", HEX.to_uppercase()));
    assert_eq!(e.reason(), "invalid checksum digest format");
    let e = err(&format!("nginx@sha512:{HEX}{HEX}"));
    assert!(e.reason().starts_with("unsupported digest algorithm"));
    let e = err(&format!("nginx@sha256:{HEX}@sha256:{HEX}"));
    assert!(e.reason().contains("exactly one '@'"));
    err("nginx@");
    err(&format!("@sha256:{HEX}"));
    err(&format!("nginx@sha256:{}g", &HEX[1..]));
    err(&format!("nginx@sha256:{HEX}0"));
}

#[test]
fn empty_and_whitespace() {
    let e = err("");
    assert_eq!(e.to_string(), "could not parse reference: ");
    assert_eq!(e.reason(), "a repository name must be specified");
    err(" ");
    err("nginx ");
    err(" nginx");
    err("ngi nx");
    err("nginx:\tv1");
}

#[test]
fn error_message_names_input() {
    let e = err("NOT VALID");
    assert_eq!(e.to_string(), "could not parse reference: NOT VALID");
    assert_eq!(e.input(), "NOT VALID");
    // Same wording as the sdk CEL test.
    let e = err("registry.k8s.io/kube-apiserver-arm64:@");
    assert_eq!(
        e.to_string(),
        "could not parse reference: registry.k8s.io/kube-apiserver-arm64:@"
    );
}

#[test]
fn uppercase_repository_is_invalid() {
    err("Nginx");
    err("nginx/NGINX");
    err("ghcr.io/Owner/repo");
    let e = err("library/Nginx:1");
    assert!(e.reason().starts_with("repository can only contain"));
    // Registries are hosts and may have any case.
    assert_eq!(ok("GHCR.IO/o/r").registry(), "GHCR.IO");
}

#[test]
fn tags() {
    let e = err("nginx:");
    assert_eq!(e.reason(), "nginx: must specify a tag name after the colon");
    err("nginx:ta$g");
    err("nginx:tåg");
    err("nginx:a/b:");
    err(":latest");
    // ggcr allows leading '.'/'-' and uppercase in tags.
    assert_eq!(ok("nginx:-x.Y_z").tag(), Some("-x.Y_z"));
    let max = "t".repeat(128);
    assert_eq!(ok(&format!("nginx:{max}")).tag(), Some(max.as_str()));
    let e = err(&format!("nginx:{max}t"));
    assert!(e.reason().starts_with("tag must be between 1 and 128"));
}

#[test]
fn repository_length() {
    ok(&format!("ghcr.io/{}", "a".repeat(255)));
    err(&format!("ghcr.io/{}", "a".repeat(256)));
    // ggcr re-parses a digest reference's *normalised* name, so the
    // implicit `library/` counts only for digests.
    let long = "a".repeat(250);
    assert_eq!(
        ok(&format!("{long}:v1")).repository(),
        format!("library/{long}")
    );
    let e = err(&format!("{long}@sha256:{HEX}"));
    assert!(e
        .reason()
        .starts_with("repository must be between 1 and 255"));
}

#[test]
fn odd_repositories_ggcr_accepts() {
    // Weak validation only checks the character set.
    let r = ok("/foo");
    assert_eq!(r.registry(), "index.docker.io");
    assert_eq!(r.repository(), "/foo");
    assert_eq!(ok("a.io/b//c").repository(), "b//c");
    err("a.io/");
}

#[test]
fn registry_authority_rules() {
    err("exa mple.com/x");
    err("a{b}.io/x");
    err("a.io?x/y");
    err("a.io#x/y");
    err("user@a.io/x");
    err("a%41.io/x");
    err("a.io\u{7f}/x");
    err("a.io\n/x");
    // Non-ASCII hosts and RFC 3986 sub-delims pass Go's check.
    assert_eq!(ok("bücher.de/x").registry(), "bücher.de");
    assert_eq!(ok("a!$&'()*+,;=.io/x").registry(), "a!$&'()*+,;=.io");
}

#[test]
fn ipv6_hosts() {
    let r = ok("[::1]:5000/foo:bar");
    assert_eq!(r.registry(), "[::1]:5000");
    assert_eq!(r.repository(), "foo");
    assert_eq!(r.tag(), Some("bar"));
    assert_eq!(r.tagged_name(), "[::1]:5000/foo:bar");
    assert_eq!(ok("[2001:db8::1]/foo").registry(), "[2001:db8::1]");
    assert_eq!(ok("[::ffff:1.2.3.4]/foo").registry(), "[::ffff:1.2.3.4]");
    let d = ok(&format!("[::1]:5000/foo@sha256:{HEX}"));
    assert_eq!(d.registry(), "[::1]:5000");

    err("[1.2.3.4]/foo");
    err("[::1/foo");
    err("[::1]:5x/foo");
    err("[fe80::1%25en0]/foo");
    err("[fe80::zz]/foo");
    err("x[::1]/foo");
    err("[::1]]/foo");
    err("[::1]:5000");
}

#[test]
fn unbracketed_ipv6_uses_last_colon_as_port() {
    // Scheme-less url.Parse keeps the historical last-colon rule.
    assert_eq!(ok("::1/foo").registry(), "::1");
    err("::1x/foo");
}

#[test]
fn is_uri_authority_directly() {
    assert!(is_uri_authority("ghcr.io"));
    assert!(is_uri_authority("host:"));
    assert!(is_uri_authority("[::1]"));
    assert!(!is_uri_authority("[::1"));
    assert!(!is_uri_authority("a/b"));
    assert!(!is_uri_authority("a|b"));
}

#[test]
fn digest_tag_replaces_only_the_algorithm_colon() {
    assert_eq!(
        digest_tag(&format!("sha256:{HEX}")),
        format!("sha256-{HEX}")
    );
    // Only the first colon, as cosign replaces it.
    assert_eq!(digest_tag("sha512:a:b"), "sha512-a:b");
    assert_eq!(digest_tag("nocolon"), "nocolon");
}
