//! Glob patterns for `matchImageReferences[].glob`, with the semantics of
//! gobwas/glob compiled without separators (how Kyverno compiles them), and
//! the helper that decides which string a glob is matched against.
//!
//! # Syntax (from gobwas/glob `syntax/lexer/lexer.go`, `syntax/ast/parser.go`)
//!
//! * `*` and `**` match any run of characters, `/` included (no separators).
//! * `?` matches exactly one character.
//! * `[abc]` / `[!abc]` match one character in / not in the list; `[a-z]` /
//!   `[!a-z]` one character in / not in the inclusive range. A bracket holds
//!   either one list or one range: `[a-z0-9]` is an error. Inside brackets
//!   every character is literal (`\` still escapes); `-` forms a range only
//!   right after the first character. `[]` and `[!]` are errors.
//! * `{a,b,c}` alternatives, nestable; an alternative may be empty. An
//!   unclosed `{` is accepted as if closed at the end (gobwas does this).
//! * `\x` is a literal `x`; a trailing lone `\` is dropped (gobwas does this).
//! * `]`, and `,`/`}` outside braces, are literal characters.
//! * Matching is on whole strings, by Unicode scalar value, case-sensitive.
//!
//! Deliberate divergences from gobwas/glob v0.2.3 (the version kyverno's
//! `go.mod` pins):
//! * it treats a NUL character as end of input in odd, position-dependent
//!   ways; we reject patterns containing NUL;
//! * its matcher optimiser has known false negatives for some alternatives
//!   combined with wildcards (gobwas/glob issues #50, #62, #66, e.g.
//!   `{a,}{a,}a` does not match `a`); we implement the intended
//!   whole-string regular-language semantics instead of those bugs.
//!
//! # What Kyverno matches against
//!
//! kyverno `pkg/cel/compiler/compiler.go` compiles with `glob.Compile(glob)`
//! (no separators) and `pkg/cel/compiler/image.go` calls `Match(image)`.
//! In `pkg/image/verification/evaluator/policy.go`:
//! * `Evaluate` (validation, and which images `images.*` exposes) matches
//!   the image string exactly as extracted from the resource: `nginx` is
//!   matched as `nginx`, so `docker.io/*` does not match it;
//! * `MutateDigest` matches `ImageInfo.String()` (e.g. `docker.io/nginx:latest`,
//!   our `ImageRef`'s `Display`).
//!
//! Likewise `pkg/cel/libs/imageverify/impl.go` matches the string passed to
//! `verifyImageSignatures` & co. as is. [`image_matches_glob`] implements the
//! validation rule (raw string); mutate callers pass the `Display` form.
//!
//! # Matching algorithm
//!
//! The pattern is compiled to a small NFA program and run as a set-of-states
//! simulation, so matching costs O(len(text) × len(pattern)) with no
//! backtracking, whatever the pattern (`*a*a*a*a*b` included).

/// Why a pattern does not compile. `Display` uses gobwas/glob's wording.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GlobError {
    /// An unclosed `[`.
    #[error("unexpected end of input")]
    UnexpectedEnd,
    /// A range not followed by `]`, e.g. `[a-z0-9]`.
    #[error("expected close range character")]
    ExpectedRangeClose,
    /// `[]` or `[!]`.
    #[error("could not parse range")]
    EmptyRange,
    /// `[z-a]`.
    #[error("hi character '{hi}' should be greater than lo '{lo}'")]
    InvertedRange {
        /// The range's first character.
        lo: char,
        /// The range's last character, below `lo`.
        hi: char,
    },
    /// NUL in the pattern (see the module docs).
    #[error("glob pattern must not contain a NUL character")]
    Nul,
}

/// A compiled glob pattern.
#[derive(Debug, Clone)]
pub struct Glob {
    pattern: String,
    program: Vec<Inst>,
}

/// One NFA instruction; the program counter is an index into the program.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Inst {
    /// Consume one character satisfying the class, then go to pc + 1.
    Char(Class),
    /// Consume any character and stay, or move on to pc + 1 for free.
    Star,
    /// Continue at every listed pc (alternatives).
    Fork(Vec<usize>),
    /// Continue at the given pc.
    Jump(usize),
    /// Accept if the input is exhausted here.
    Match,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Class {
    Literal(char),
    Any,
    List { chars: Vec<char>, negated: bool },
    Range { lo: char, hi: char, negated: bool },
}

impl Class {
    fn matches(&self, c: char) -> bool {
        match self {
            Class::Literal(l) => *l == c,
            Class::Any => true,
            Class::List { chars, negated } => chars.contains(&c) != *negated,
            Class::Range { lo, hi, negated } => (*lo..=*hi).contains(&c) != *negated,
        }
    }
}

/// An open `{`: its `Fork` and the jumps that must land after its `}`.
struct OpenBrace {
    fork: usize,
    exits: Vec<usize>,
}

impl Glob {
    /// Compile `pattern`, rejecting what gobwas/glob rejects.
    pub fn compile(pattern: &str) -> Result<Glob, GlobError> {
        if pattern.contains('\0') {
            return Err(GlobError::Nul);
        }
        let chars: Vec<char> = pattern.chars().collect();
        let mut program = Vec::new();
        // Braces are tracked on an explicit stack, so nesting depth cannot
        // exhaust the call stack.
        let mut braces: Vec<OpenBrace> = Vec::new();
        let mut i = 0;
        while let Some(&c) = chars.get(i) {
            let in_braces = !braces.is_empty();
            match c {
                '{' => {
                    i += 1;
                    braces.push(OpenBrace {
                        fork: program.len(),
                        exits: Vec::new(),
                    });
                    program.push(Inst::Fork(vec![program.len() + 1]));
                }
                ',' if in_braces => {
                    i += 1;
                    if let Some(open) = braces.last_mut() {
                        open.exits.push(program.len());
                        program.push(Inst::Jump(usize::MAX));
                        let next = program.len();
                        if let Some(Inst::Fork(targets)) = program.get_mut(open.fork) {
                            targets.push(next);
                        }
                    }
                }
                '}' if in_braces => {
                    i += 1;
                    if let Some(open) = braces.pop() {
                        close_brace(&mut program, open);
                    }
                }
                '[' => {
                    let (class, next) = parse_bracket(&chars, i + 1)?;
                    program.push(Inst::Char(class));
                    i = next;
                }
                '?' => {
                    i += 1;
                    program.push(Inst::Char(Class::Any));
                }
                '*' => {
                    // `*`, `**` and longer runs all mean "any sequence" without
                    // separators. Only a run is collapsed: a Star ending a
                    // brace alternative must not absorb one after the `}`.
                    while chars.get(i) == Some(&'*') {
                        i += 1;
                    }
                    program.push(Inst::Star);
                }
                _ => {
                    i = push_text(&chars, i, in_braces, &mut program);
                }
            }
        }
        // gobwas accepts unclosed braces: close them at the end.
        while let Some(open) = braces.pop() {
            close_brace(&mut program, open);
        }
        program.push(Inst::Match);
        Ok(Glob {
            pattern: pattern.to_string(),
            program,
        })
    }

    /// The source pattern.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// Whether the whole of `s` matches.
    pub fn matches(&self, s: &str) -> bool {
        let n = self.program.len();
        let mut seen = vec![usize::MAX; n];
        let mut current = Vec::with_capacity(n);
        let mut next = Vec::with_capacity(n);
        let mut stack = Vec::with_capacity(n);
        let mut step = 0;
        self.add(0, step, &mut seen, &mut current, &mut stack);
        for c in s.chars() {
            if current.is_empty() {
                return false;
            }
            step += 1;
            next.clear();
            for &pc in &current {
                match self.program.get(pc) {
                    Some(Inst::Char(class)) if class.matches(c) => {
                        self.add(pc + 1, step, &mut seen, &mut next, &mut stack);
                    }
                    Some(Inst::Star) => self.add(pc, step, &mut seen, &mut next, &mut stack),
                    _ => {}
                }
            }
            std::mem::swap(&mut current, &mut next);
        }
        current
            .iter()
            .any(|&pc| matches!(self.program.get(pc), Some(Inst::Match)))
    }

    /// Add `pc` and everything reachable from it without consuming input to
    /// `list`, each state once per step (`seen` holds the last step it was
    /// added in).
    fn add(
        &self,
        pc: usize,
        step: usize,
        seen: &mut [usize],
        list: &mut Vec<usize>,
        stack: &mut Vec<usize>,
    ) {
        stack.push(pc);
        while let Some(pc) = stack.pop() {
            let Some(mark) = seen.get_mut(pc) else {
                continue;
            };
            if *mark == step {
                continue;
            }
            *mark = step;
            match self.program.get(pc) {
                Some(Inst::Jump(to)) => stack.push(*to),
                Some(Inst::Fork(targets)) => stack.extend(targets.iter().copied()),
                Some(Inst::Star) => {
                    list.push(pc);
                    stack.push(pc + 1);
                }
                Some(Inst::Char(_) | Inst::Match) => list.push(pc),
                None => {}
            }
        }
    }
}

/// Point every alternative's exit jump past the closing brace.
fn close_brace(program: &mut [Inst], open: OpenBrace) {
    let end = program.len();
    for exit in open.exits {
        if let Some(slot) = program.get_mut(exit) {
            *slot = Inst::Jump(end);
        }
    }
}

/// Emit literal characters from `start` up to the next special character;
/// returns the index after them.
fn push_text(chars: &[char], start: usize, in_braces: bool, program: &mut Vec<Inst>) -> usize {
    let mut i = start;
    while let Some(&c) = chars.get(i) {
        match c {
            '\\' => {
                // A trailing lone backslash is dropped, as gobwas does.
                if let Some(&escaped) = chars.get(i + 1) {
                    program.push(Inst::Char(Class::Literal(escaped)));
                }
                i += 2;
            }
            '*' | '?' | '[' | '{' => break,
            ',' | '}' if in_braces => break,
            _ => {
                program.push(Inst::Char(Class::Literal(c)));
                i += 1;
            }
        }
    }
    i.min(chars.len())
}

/// Parse a bracket expression whose `[` is just before `start`; returns the
/// class and the index after the closing `]`.
fn parse_bracket(chars: &[char], start: usize) -> Result<(Class, usize), GlobError> {
    let mut i = start;
    let mut negated = false;
    if chars.get(i) == Some(&'!') {
        negated = true;
        i += 1;
    }
    let Some(&first) = chars.get(i) else {
        return Err(GlobError::UnexpectedEnd);
    };
    // gobwas: any first character followed by '-' starts a range, even
    // `\`, `]` or `!` (the latter only after a leading `!`).
    if chars.get(i + 1) == Some(&'-') {
        let Some(&hi) = chars.get(i + 2) else {
            return Err(GlobError::UnexpectedEnd);
        };
        match chars.get(i + 3) {
            None => return Err(GlobError::UnexpectedEnd),
            Some(']') => {}
            Some(_) => return Err(GlobError::ExpectedRangeClose),
        }
        if hi < first {
            return Err(GlobError::InvertedRange { lo: first, hi });
        }
        return Ok((
            Class::Range {
                lo: first,
                hi,
                negated,
            },
            i + 4,
        ));
    }
    let mut list = Vec::new();
    while let Some(&c) = chars.get(i) {
        match c {
            ']' => {
                if list.is_empty() {
                    return Err(GlobError::EmptyRange);
                }
                return Ok((
                    Class::List {
                        chars: list,
                        negated,
                    },
                    i + 1,
                ));
            }
            '\\' => {
                if let Some(&escaped) = chars.get(i + 1) {
                    list.push(escaped);
                }
                i += 2;
            }
            _ => {
                list.push(c);
                i += 1;
            }
        }
    }
    Err(GlobError::UnexpectedEnd)
}

/// Whether an image, as written in the resource, is selected by `glob` in
/// Kyverno's validation path (see the module docs: no normalisation). For the
/// mutate path pass the `ImageRef` `Display` string instead.
pub fn image_matches_glob(glob: &Glob, image: &str) -> bool {
    glob.matches(image)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(p: &str) -> Glob {
        match Glob::compile(p) {
            Ok(g) => g,
            Err(e) => panic!("{p:?} should compile: {e}"),
        }
    }

    fn yes(p: &str, s: &str) {
        assert!(g(p).matches(s), "{p:?} should match {s:?}");
    }

    fn no(p: &str, s: &str) {
        assert!(!g(p).matches(s), "{p:?} should not match {s:?}");
    }

    fn bad(p: &str) -> GlobError {
        match Glob::compile(p) {
            Ok(_) => panic!("{p:?} should not compile"),
            Err(e) => e,
        }
    }

    #[test]
    fn literals_match_whole_string() {
        yes("nginx", "nginx");
        no("nginx", "nginx:1");
        no("nginx", "xnginx");
        no("nginx", "NGINX");
        yes("", "");
        no("", "a");
    }

    #[test]
    fn star_and_super_cross_slashes() {
        yes("*", "");
        yes("*", "ghcr.io/a/b:c");
        yes("**", "ghcr.io/a/b:c");
        yes("ghcr.io/*", "ghcr.io/kyverno/test:v1");
        yes("ghcr.io/**", "ghcr.io/kyverno/test:v1");
        yes("*/kyverno/*", "ghcr.io/kyverno/test");
        yes("***", "abc");
        no("ghcr.io/*", "docker.io/ghcr.io");
        no("*.io", "ghcr.io/x");
        yes("a*b*c", "aXbYc");
        yes("a*b*c", "abc");
        no("a*b*c", "acb");
    }

    #[test]
    fn single() {
        yes("a?c", "abc");
        yes("a?c", "a/c");
        yes("a?c", "aéc");
        no("a?c", "ac");
        no("a?c", "abbc");
        yes("??", "ab");
        no("??", "a");
    }

    #[test]
    fn lists() {
        yes("[abc]", "b");
        no("[abc]", "d");
        no("[abc]", "ab");
        no("[abc]", "");
        yes("[!abc]", "d");
        no("[!abc]", "a");
        no("[!abc]", "");
        // Only the first character can start a range; later '-' is literal.
        yes("[ab-z]", "-");
        no("[ab-z]", "c");
        yes("[-a]", "-");
        // Everything is literal inside brackets except `\` and `]`.
        yes("[*?{]", "*");
        no("[*?{]", "x");
        yes("[a\\]b]", "]");
        yes("[\\!a]", "!");
        yes("[!!]", "a");
        no("[!!]", "!");
    }

    #[test]
    fn ranges() {
        yes("[a-z]", "m");
        yes("[a-z]", "a");
        yes("[a-z]", "z");
        no("[a-z]", "A");
        yes("[!a-z]", "A");
        no("[!a-z]", "q");
        yes("v[0-9].[0-9]", "v1.2");
        yes("[a-a]", "a");
        // Quirks: any first character before '-' starts a range.
        yes("[]-a]", "^");
        yes("[!!-#]", "$");
        no("[!!-#]", "\"");
    }

    #[test]
    fn bad_brackets() {
        assert_eq!(bad("[abc"), GlobError::UnexpectedEnd);
        assert_eq!(bad("["), GlobError::UnexpectedEnd);
        assert_eq!(bad("[!"), GlobError::UnexpectedEnd);
        assert_eq!(bad("[a-"), GlobError::UnexpectedEnd);
        assert_eq!(bad("[a-z"), GlobError::UnexpectedEnd);
        assert_eq!(bad("[a-z0-9]"), GlobError::ExpectedRangeClose);
        assert_eq!(bad("[]"), GlobError::EmptyRange);
        assert_eq!(bad("[!]"), GlobError::EmptyRange);
        assert_eq!(bad("[z-a]"), GlobError::InvertedRange { lo: 'z', hi: 'a' });
        assert_eq!(
            bad("[z-a]").to_string(),
            "hi character 'a' should be greater than lo 'z'"
        );
        assert_eq!(bad("x[").to_string(), "unexpected end of input");
        assert_eq!(bad("a\0b"), GlobError::Nul);
    }

    #[test]
    fn alternatives() {
        yes("{a,b,c}", "b");
        no("{a,b,c}", "d");
        no("{a,b,c}", "ab");
        yes("ghcr.io/{kyverno,sigstore}/*", "ghcr.io/sigstore/cosign");
        no("ghcr.io/{kyverno,sigstore}/*", "ghcr.io/other/cosign");
        yes("x{,y}", "x");
        yes("x{,y}", "xy");
        yes("x{}", "x");
        no("x{}", "xy");
        yes("{a,ab}c", "abc");
        yes("{a,ab}c", "ac");
        // gobwas v0.2.3 gets these wrong (issues #62, #66); we do not.
        yes("{a,}{a,}a", "a");
        yes(
            "{**/daxing,daxing}/**/*dev*.yaml",
            "playground/daxing/generated/dev.yaml",
        );
        // A star inside an alternative and one after it stay distinct.
        yes("{a,*}*", "ab");
        yes("{a,*}*", "a");
        no("{a,b*}c", "bd");
    }

    #[test]
    fn nested_and_unclosed_alternatives() {
        yes("{a,{b,c}d}", "cd");
        yes("{a,{b,c}d}", "a");
        no("{a,{b,c}d}", "c");
        yes("{a,{b,{c,e}}}f", "ef");
        // Unclosed braces are closed at the end, as gobwas does.
        yes("{a,b", "b");
        yes("x{a,{b,c", "xc");
        no("{a,b", "{a,b");
        // Deep nesting is fine (no recursion).
        let deep = format!("{}a{}", "{".repeat(5000), "}".repeat(5000));
        yes(&deep, "a");
    }

    #[test]
    fn literal_punctuation_outside_braces() {
        yes("a,b", "a,b");
        yes("a}b", "a}b");
        yes("a]b", "a]b");
        yes("{x,a}b}", "ab}");
    }

    #[test]
    fn escapes() {
        yes("a\\*b", "a*b");
        no("a\\*b", "axb");
        yes("\\[x]", "[x]");
        yes("{a\\,b,c}", "a,b");
        no("{a\\,b,c}", "a");
        yes("a\\\\b", "a\\b");
        // A trailing lone backslash is dropped.
        yes("abc\\", "abc");
        no("abc\\", "abc\\");
    }

    #[test]
    fn unicode_is_per_character() {
        yes("caf?", "café");
        yes("[é]", "é");
        yes("[à-ü]", "é");
    }

    #[test]
    fn no_exponential_blowup() {
        let pattern = format!("{}b", "*a".repeat(30));
        let text = "a".repeat(5000);
        no(&pattern, &text);
        let nested = format!("{}b", "{a,*a}".repeat(30));
        no(&nested, &text);
        yes(&pattern, &format!("{text}b"));
    }

    #[test]
    fn pattern_accessor() {
        assert_eq!(g("ghcr.io/*").pattern(), "ghcr.io/*");
    }

    #[test]
    fn image_glob_uses_the_raw_string() {
        let hub = g("docker.io/*");
        assert!(!image_matches_glob(&hub, "nginx"));
        assert!(image_matches_glob(&hub, "docker.io/nginx:latest"));
        let any_nginx = g("*nginx*");
        assert!(image_matches_glob(&any_nginx, "nginx"));
        assert!(!image_matches_glob(&g("index.docker.io/*"), "nginx"));
    }
}
