//! `cargo run -p ivpol-tests --bin sign-image -- HOST:PORT/REPO:TAG [options]`:
//! signs an image in a plain-HTTP registry the way cosign does, with the
//! test suite's own keys, CA, CT log and Rekor (the fixture generator the
//! tests use), and writes what a policy needs to trust it into a directory.
//!
//! Options:
//!   --push                 first push a small generated image to REPO:TAG
//!   --keyless              sign with a Fulcio-style certificate (default: a key)
//!   --key KIND             p256 (default), p384, rsa2048, rsa2048-pss, ed25519, ed25519ph
//!   --identity ID          keyless SAN: an email, or a URI if it has "://" (default dev@ivpol.test)
//!   --issuer URL           keyless OIDC issuer (default https://issuer.ivpol.test)
//!   --attest TYPE          also push a `.att` attestation with this predicate type and `{}`
//!   --bundle               also push a Sigstore bundle v0.3 referrer (cosign v3 style)
//!   --no-tlog              no Rekor entry (key-based only)
//!   --notary               sign with the generator's Notary CA instead (a JWS envelope,
//!                          P-256 leaf); writes notary-root.pem
//!   --cose                 with --notary: a COSE envelope
//!   --sbom                 with --notary: also attach a CycloneDX SBOM referrer
//!                          (artifactType sbom/cyclone-dx), signed the same way
//!   --out DIR              where to write keys and roots (default ./ivpol-signing)

use ivpol_tests::fixtures::{sha256, Pusher, OCI_MANIFEST};
use ivpol_tests::sign::notary::{
    attach_referrer, Format, NotaryCa, NotaryLeaf, NotaryOpts, NotarySigner,
};
use ivpol_tests::sign::{
    oci, AttOpts, BundleOpts, Content, CtLog, Fulcio, Identity, KeyKind, Rekor, SignOpts, Signer,
    TrustedRoot, Window,
};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn usage() -> ExitCode {
    eprintln!(
        "usage: sign-image HOST:PORT/REPO:TAG [--push] [--keyless] [--key KIND] [--identity ID] \
         [--issuer URL] [--attest TYPE] [--bundle] [--no-tlog] [--notary [--cose] [--sbom]] [--out DIR]"
    );
    ExitCode::FAILURE
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(target) = args.first().filter(|a| !a.starts_with("--")) else {
        return usage();
    };
    let (mut push, mut keyless, mut bundle, mut tlog) = (false, false, false, true);
    let (mut notary, mut cose, mut sbom) = (false, false, false);
    let mut kind = KeyKind::P256;
    let mut identity = "dev@ivpol.test".to_string();
    let mut issuer = "https://issuer.ivpol.test".to_string();
    let mut attest: Option<String> = None;
    let mut out = PathBuf::from("ivpol-signing");
    let mut it = args[1..].iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().cloned();
        match a.as_str() {
            "--push" => push = true,
            "--keyless" => keyless = true,
            "--bundle" => bundle = true,
            "--no-tlog" => tlog = false,
            "--notary" => notary = true,
            "--cose" => cose = true,
            "--sbom" => sbom = true,
            "--key" => {
                let Some(k) =
                    value().and_then(|v| KeyKind::ALL.into_iter().find(|k| k.name() == v))
                else {
                    eprintln!("sign-image: --key takes one of p256, p384, rsa2048, rsa2048-pss, ed25519, ed25519ph");
                    return ExitCode::FAILURE;
                };
                kind = k;
            }
            "--identity" => match value() {
                Some(v) => identity = v,
                None => return usage(),
            },
            "--issuer" => match value() {
                Some(v) => issuer = v,
                None => return usage(),
            },
            "--attest" => match value() {
                Some(v) => attest = Some(v),
                None => return usage(),
            },
            "--out" => match value() {
                Some(v) => out = PathBuf::from(v),
                None => return usage(),
            },
            other => {
                eprintln!("sign-image: unknown option {other}");
                return usage();
            }
        }
    }
    let Some((addr, rest)) = target.split_once('/') else {
        eprintln!("sign-image: {target:?} has no registry host");
        return ExitCode::FAILURE;
    };
    let (repo, tag) = rest.rsplit_once(':').unwrap_or((rest, "latest"));
    let pusher = Pusher { addr, auth: None };
    let digest = if push {
        pusher.image(repo, tag, OCI_MANIFEST, "amd64")
    } else {
        match oci::get_manifest(&pusher, repo, tag) {
            Some((_, body)) => sha256(&body),
            None => {
                eprintln!("sign-image: {addr}/{repo}:{tag} is not in the registry (add --push)");
                return ExitCode::FAILURE;
            }
        }
    };
    if notary {
        return sign_notary(&pusher, repo, &digest, cose, sbom, &out);
    }

    let (ca, ct, rekor) = (Fulcio::new(), CtLog::default(), Rekor::new());
    let signer = if keyless {
        let id = if identity.contains("://") {
            Identity::Uri(identity.clone())
        } else {
            Identity::Email(identity.clone())
        };
        Signer::keyless(&ca.leaf(id, &issuer, Window::fulcio_at(ivpol_tests::sign::now())))
    } else {
        Signer::keyed(kind)
    };
    let mut opts = SignOpts::default();
    if tlog || keyless {
        opts = opts.rekor(&rekor);
    }
    let sig = signer.sign_image(&pusher, repo, &digest, &opts);
    println!("signed  {addr}/{repo}@{digest}");
    println!(
        "sig     {addr}/{}:{} ({})",
        sig.repo, sig.tag, sig.manifest_digest
    );
    if let Some(pt) = &attest {
        let att = signer.attest_image(
            &pusher,
            repo,
            &digest,
            &AttOpts::new(pt, serde_json::json!({})),
            &opts,
        );
        println!(
            "att     {addr}/{}:{} ({})",
            att.repo, att.tag, att.manifest_digest
        );
    }
    if bundle {
        let mut b = BundleOpts::new(Content::cosign_sign());
        if tlog || keyless {
            b = b.rekor(&rekor);
        }
        let r = signer.bundle_image(&pusher, repo, &digest, &b);
        println!(
            "bundle  {addr}/{repo}@{} (referrers index {addr}/{repo}:{})",
            r.referrer_digest, r.tag
        );
    }

    let mut files: Vec<(&str, String)> = vec![
        ("rekor.pub", rekor.public_pem()),
        (
            "trusted_root.json",
            TrustedRoot::of(&ca, &rekor, &ct).to_string_pretty(),
        ),
    ];
    if keyless {
        let leaf = signer.cert.as_ref().expect("keyless has a certificate");
        files.extend([
            ("fulcio-root.pem", ca.root_pem()),
            ("fulcio-chain.pem", ca.chain_pem()),
            ("leaf.pem", leaf.pem()),
            ("ctlog.pub", ct.public_pem()),
        ]);
    } else {
        files.extend([
            ("cosign.pub", signer.public_pem()),
            ("cosign.key", signer.key.private_pem()),
        ]);
    }
    if let Err(code) = write_files(&out, &files) {
        return code;
    }
    if keyless {
        println!("identity {identity} issuer {issuer}");
    }
    ExitCode::SUCCESS
}

/// Signs with the Notary CA (seed `ivpol-notary`, the root the examples
/// trust), optionally attaching a signed CycloneDX SBOM.
fn sign_notary(
    pusher: &Pusher,
    repo: &str,
    digest: &str,
    cose: bool,
    sbom: bool,
    out: &Path,
) -> ExitCode {
    let ca = NotaryCa::new("ivpol-notary");
    let t = ivpol_tests::sign::now();
    let leaf = ca.leaf(NotaryLeaf::new(
        KeyKind::P256,
        Window::new(t - 3600, t + 30 * 86400),
    ));
    let signer = NotarySigner::new(leaf);
    let opts = NotaryOpts::new(if cose { Format::Cose } else { Format::Jws });
    let addr = pusher.addr;
    let (sig, _) = signer.sign(pusher, repo, digest, &opts);
    println!("signed  {addr}/{repo}@{digest}");
    println!("notary  {addr}/{repo}@{sig}");
    if sbom {
        let doc = serde_json::json!({
            "bomFormat": "CycloneDX",
            "specVersion": "1.5",
            "components": [{"type": "application", "name": repo}],
        });
        let (sbom, _) = attach_referrer(
            pusher,
            repo,
            digest,
            "sbom/cyclone-dx",
            "application/vnd.cyclonedx+json",
            &doc,
        );
        let (sbom_sig, _) = signer.sign(pusher, repo, &sbom, &opts);
        println!("sbom    {addr}/{repo}@{sbom} (signed: {sbom_sig})");
    }
    match write_files(out, &[("notary-root.pem", ca.root_pem())]) {
        Ok(()) => ExitCode::SUCCESS,
        Err(code) => code,
    }
}

fn write_files(out: &Path, files: &[(&str, String)]) -> Result<(), ExitCode> {
    if let Err(e) = std::fs::create_dir_all(out) {
        eprintln!("sign-image: creating {}: {e}", out.display());
        return Err(ExitCode::FAILURE);
    }
    for (name, content) in files {
        let path = out.join(name);
        if let Err(e) = std::fs::write(&path, content) {
            eprintln!("sign-image: writing {}: {e}", path.display());
            return Err(ExitCode::FAILURE);
        }
        println!("wrote   {}", path.display());
    }
    Ok(())
}
