# Thin recipes over cargo and xtask. `just --list` shows them.

# Serve the sample policies on 127.0.0.1:9443 (plain HTTP).
serve *ARGS:
    cargo run --release -- serve {{ARGS}}

# Every test, end-to-end ones included (installs what the tests need).
test *ARGS:
    cargo xtask test {{ARGS}}

# Only the end-to-end tests against the real binary.
e2e:
    cargo build -p ivpol-host
    cargo test -p ivpol-tests

# Format everything.
fmt:
    cargo fmt --all

# rustfmt check and clippy -D warnings.
lint:
    cargo xtask lint
