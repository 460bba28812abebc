# Thin recipes over cargo and xtask. `just --list` shows them.

# Serve the sample policies on 127.0.0.1:9443 (plain HTTP).
serve *ARGS:
    cargo run --release -- serve {{ARGS}}

# Every test, end-to-end ones included (installs what the tests need).
test *ARGS:
    cargo xtask test {{ARGS}}

# Only the end-to-end tests against the real binary (the root's, then
# oracles/'s). Without the oracles `cargo xtask oracles` installs, the
# fixture cross-checks are skipped, and said so; `cargo xtask test` never
# skips them.
e2e:
    #!/usr/bin/env bash
    set -euo pipefail
    cargo build -p ivpol-host
    if [ -n "${IVPOL_OPENSSL:-}" ] && [ -n "${IVPOL_SIGSTORE_PYTHON:-}" ]; then
        cargo test -p ivpol-tests
    else
        echo 'just e2e: skipping the fixture cross-checks: no oracles (run eval "$(cargo xtask oracles)" first to include them)' >&2
        cargo test -p ivpol-tests -- --skip fixtures_crosscheck
    fi
    # The oracles linked in as crates (oracles/, a workspace of its own):
    # nothing to install; built into the same target dir.
    CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}" cargo test --manifest-path oracles/Cargo.toml

# Format everything (the oracles' workspace too).
fmt:
    cargo fmt --all
    cargo fmt --all --manifest-path oracles/Cargo.toml

# rustfmt check and clippy -D warnings.
lint:
    cargo xtask lint
