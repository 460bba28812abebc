//! The validation nearly every image-verifying policy writes, run without
//! the interpreter:
//!
//! ```text
//! images.containers.map(i, verifyImageSignatures(i, [attestors.cosign])).all(n, n > 0)
//! ```
//!
//! cel-rust spends more on this expression's comprehensions, list literal
//! and argument conversions than the verification-cache hit it leads to
//! costs. [`AllSigned::recognise`] matches exactly this shape (any list
//! name, loop variable names and attestors, any whitespace) in the
//! source; anything else, comments included, is left to the interpreter.
//! [`AllSigned::eval`] then does what the interpreter does: verify every
//! image of the list in order, stop at the first error with the same
//! error, and answer whether every count is positive.

use super::verify_lib::{ImageVerifier, VERIFY_IMAGE_SIGNATURES};
use cel::ExecutionError;

/// Lists longer than this are left to the interpreter, which charges them
/// to the expression's cost limit. Far below where that limit would bite
/// (about 15 units of cost per image against 1,000,000).
pub const MAX_IMAGES: usize = 1000;

/// A recognised `images.<list>.map(x, verifyImageSignatures(x,
/// [attestors.<a>, ...])).all(y, y > 0)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllSigned {
    /// The `images` list it iterates.
    pub list: String,
    /// The attestors named, in order.
    pub attestors: Vec<String>,
}

impl AllSigned {
    /// The shape in `source`, if that is all `source` is.
    pub fn recognise(source: &str) -> Option<AllSigned> {
        let text: String = source.chars().filter(|c| !c.is_whitespace()).collect();
        let rest = text.strip_prefix("images.")?;
        let (list, rest) = ident(rest)?;
        let rest = rest.strip_prefix(".map(")?;
        let (item, rest) = ident(rest)?;
        // A loop variable named like a variable the call reads would shadow it.
        if matches!(item, "images" | "attestors") {
            return None;
        }
        let rest = rest.strip_prefix(',')?;
        let rest = rest
            .strip_prefix(VERIFY_IMAGE_SIGNATURES)?
            .strip_prefix('(')?;
        let rest = rest.strip_prefix(item)?.strip_prefix(",[")?;
        let (attestors, rest) = attestor_list(rest)?;
        let rest = rest.strip_prefix("])).all(")?;
        let (count, rest) = ident(rest)?;
        let rest = rest.strip_prefix(',')?.strip_prefix(count)?;
        (rest == ">0)").then(|| AllSigned {
            list: list.to_string(),
            attestors,
        })
    }

    /// Verifies each of `images` with the attestors, in order, as the
    /// interpreter would: the first error ends it and is the expression's
    /// error; otherwise whether every image verified with at least one.
    pub fn eval(
        &self,
        images: &[String],
        verifier: &dyn ImageVerifier,
    ) -> Result<bool, ExecutionError> {
        let mut all = true;
        for image in images {
            let count = verifier
                .verify_image_signatures(image, &self.attestors)
                .map_err(|e| ExecutionError::function_error(VERIFY_IMAGE_SIGNATURES, e))?;
            all &= count > 0;
        }
        Ok(all)
    }
}

/// `attestors.<a>(,attestors.<b>)*`: the names, and what follows.
fn attestor_list(mut rest: &str) -> Option<(Vec<String>, &str)> {
    let mut names = Vec::new();
    loop {
        let (name, after) = ident(rest.strip_prefix("attestors.")?)?;
        names.push(name.to_string());
        match after.strip_prefix(',') {
            Some(more) => rest = more,
            None => return Some((names, after)),
        }
    }
}

/// A CEL identifier at the start of `s` (not a reserved word), and the rest.
fn ident(s: &str) -> Option<(&str, &str)> {
    let end = s
        .char_indices()
        .find(|&(i, c)| !(c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit())))
        .map_or(s.len(), |(i, _)| i);
    let (name, rest) = s.split_at(end);
    let reserved = matches!(
        name,
        "" | "true"
            | "false"
            | "null"
            | "in"
            | "as"
            | "break"
            | "const"
            | "continue"
            | "else"
            | "for"
            | "function"
            | "if"
            | "import"
            | "let"
            | "loop"
            | "package"
            | "namespace"
            | "return"
            | "var"
            | "void"
            | "while"
    );
    (!reserved).then_some((name, rest))
}

#[cfg(test)]
mod tests;
