//! `kyverno.random`: `random()` (eight characters of `[0-9a-z]`) and
//! `random(pattern)`, a string the regular expression `pattern` matches
//! (also `random.random`), generated as Kyverno's goregen does: each
//! class member equally likely, unbounded repetitions at most 10 more than
//! their minimum.
//!
//! Not for secrets: the generator is seeded from the standard library's
//! per-process random hash keys, as Kyverno's is from `math/rand`.

use super::{add_each, charge_bytes, string_arg, MAX_OUTPUT_BYTES};
use cel::extractors::Arguments;
use cel::{Context, ExecutionError, Value};
use regex_syntax::hir::{Class, Hir, HirKind};
use std::sync::Arc;

/// goregen's `MaxUnboundedRepeatCount`.
const MAX_UNBOUNDED_REPEAT: u32 = 10;

/// The pattern of `random()` without one.
const DEFAULT_PATTERN: &str = "[0-9a-z]{8}";

pub(super) fn register(ctx: &mut Context<'_, '_>) {
    add_each(
        ctx,
        &["random", "random.random"],
        |Arguments(args): Arguments| {
            let pattern = match args.as_slice() {
                [] => DEFAULT_PATTERN,
                [p] => string_arg("random", p)?,
                more => {
                    return Err(super::no_overload(
                        "random",
                        &more.iter().collect::<Vec<_>>(),
                    ));
                }
            };
            random(pattern)
        },
    );
}

fn random(pattern: &str) -> Result<Value, ExecutionError> {
    let failed = |e: String| ExecutionError::function_error("random", e);
    let hir = regex_syntax::Parser::new()
        .parse(pattern)
        .map_err(|e| failed(e.to_string()))?;
    let mut out = String::new();
    generate(&hir, &mut Rng::seeded(), &mut out).map_err(failed)?;
    charge_bytes(out.len())?;
    Ok(Value::String(Arc::new(out)))
}

/// Appends to `out` a string `hir` matches.
fn generate(hir: &Hir, rng: &mut Rng, out: &mut String) -> Result<(), String> {
    if out.len() > MAX_OUTPUT_BYTES {
        return Err(format!(
            "the result is larger than {MAX_OUTPUT_BYTES} bytes"
        ));
    }
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => {}
        HirKind::Literal(lit) => out.push_str(&String::from_utf8_lossy(&lit.0)),
        HirKind::Class(Class::Unicode(class)) => {
            let ranges: Vec<(u32, u32)> = class
                .ranges()
                .iter()
                .map(|r| (r.start() as u32, r.end() as u32))
                .collect();
            out.push(pick(&ranges, rng).ok_or("the pattern has an empty class")?);
        }
        HirKind::Class(Class::Bytes(class)) => {
            // Only ASCII bytes make text; a byte class is cut to them.
            let ranges: Vec<(u32, u32)> = class
                .ranges()
                .iter()
                .filter(|r| r.start() < 0x80)
                .map(|r| (u32::from(r.start()), u32::from(r.end().min(0x7f))))
                .collect();
            out.push(pick(&ranges, rng).ok_or("the pattern has no ASCII class member")?);
        }
        HirKind::Repetition(rep) => {
            let max = rep
                .max
                .unwrap_or(rep.min.saturating_add(MAX_UNBOUNDED_REPEAT));
            let count = rep.min + rng.below(u64::from(max - rep.min) + 1) as u32;
            for _ in 0..count {
                generate(&rep.sub, rng, out)?;
            }
        }
        HirKind::Capture(capture) => generate(&capture.sub, rng, out)?,
        HirKind::Concat(parts) => {
            for part in parts {
                generate(part, rng, out)?;
            }
        }
        HirKind::Alternation(choices) => {
            let choice = rng.below(choices.len() as u64) as usize;
            generate(&choices[choice], rng, out)?;
        }
    }
    Ok(())
}

/// One character of `ranges` (inclusive, sorted), each equally likely;
/// `None` for no character. Surrogates are not characters: one drawn in
/// their block is redrawn.
fn pick(ranges: &[(u32, u32)], rng: &mut Rng) -> Option<char> {
    let total: u64 = ranges.iter().map(|(a, b)| u64::from(b - a) + 1).sum();
    if total == 0 {
        return None;
    }
    for _ in 0..64 {
        let mut n = rng.below(total);
        for (a, b) in ranges {
            let size = u64::from(b - a) + 1;
            if n < size {
                if let Some(c) = char::from_u32(a + n as u32) {
                    return Some(c);
                }
                break;
            }
            n -= size;
        }
    }
    char::from_u32(ranges[0].0)
}

/// splitmix64: small, fast and good enough for strings nobody relies on
/// being unpredictable.
struct Rng(u64);

impl Rng {
    fn seeded() -> Rng {
        use std::hash::{BuildHasher, Hasher};
        // Each RandomState has fresh keys: the process's random seed,
        // advanced per call.
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u8(0);
        Rng(h.finish())
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n`, `n > 0`.
    fn below(&mut self, n: u64) -> u64 {
        // The modulo bias is below 2^-40 for the counts used here.
        self.next() % n.max(1)
    }
}
