//! JUnit XML, the report format CI systems read (`ivpol test -o junit`):
//! `<testsuites>` of `<testsuite>`s of `<testcase>`s, each passed, failed
//! (`<failure>`), skipped (`<skipped>`) or in error (`<error>`). Written by
//! hand: the subset is small, and every text goes through [`escape`] or
//! [`escape_text`].

use std::fmt::Write;

/// One `<testsuite>`.
pub struct Suite {
    pub name: String,
    pub cases: Vec<Case>,
}

/// One `<testcase>`.
pub struct Case {
    pub classname: String,
    pub name: String,
    pub outcome: CaseOutcome,
}

pub enum CaseOutcome {
    Passed,
    /// An expectation that did not hold: `message` is the short reason,
    /// `text` the details.
    Failed {
        message: String,
        text: String,
    },
    /// Not run.
    Skipped {
        message: String,
    },
    /// The case could not run at all.
    Error {
        message: String,
    },
}

#[derive(Default, Clone, Copy)]
struct Tally {
    tests: usize,
    failures: usize,
    errors: usize,
    skipped: usize,
}

impl Tally {
    fn of<'a>(cases: impl IntoIterator<Item = &'a Case>) -> Tally {
        let mut t = Tally::default();
        for c in cases {
            t.tests += 1;
            match c.outcome {
                CaseOutcome::Passed => {}
                CaseOutcome::Failed { .. } => t.failures += 1,
                CaseOutcome::Skipped { .. } => t.skipped += 1,
                CaseOutcome::Error { .. } => t.errors += 1,
            }
        }
        t
    }

    fn attributes(self) -> String {
        format!(
            "tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\"",
            self.tests, self.failures, self.errors, self.skipped
        )
    }
}

/// The document for `suites`, named `name`.
pub fn render(name: &str, suites: &[Suite]) -> String {
    let all = Tally::of(suites.iter().flat_map(|s| &s.cases));
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"{}\" {}>",
        escape(name),
        all.attributes()
    );
    for s in suites {
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" {}>",
            escape(&s.name),
            Tally::of(&s.cases).attributes()
        );
        for c in &s.cases {
            let _ = write!(
                out,
                "    <testcase classname=\"{}\" name=\"{}\"",
                escape(&c.classname),
                escape(&c.name)
            );
            match &c.outcome {
                CaseOutcome::Passed => out.push_str("/>\n"),
                CaseOutcome::Failed { message, text } => {
                    let _ = writeln!(
                        out,
                        ">\n      <failure message=\"{}\">{}</failure>\n    </testcase>",
                        escape(message),
                        escape_text(text)
                    );
                }
                CaseOutcome::Skipped { message } => {
                    let _ = writeln!(
                        out,
                        ">\n      <skipped message=\"{}\"/>\n    </testcase>",
                        escape(message)
                    );
                }
                CaseOutcome::Error { message } => {
                    let _ = writeln!(
                        out,
                        ">\n      <error message=\"{}\"/>\n    </testcase>",
                        escape(message)
                    );
                }
            }
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

/// `s` as an XML 1.0 attribute value: the five special characters as
/// entities, line breaks and tabs as character references (an attribute
/// would otherwise turn them into spaces), and characters XML 1.0 cannot
/// hold at all (other control characters, as in ANSI colour codes) as
/// U+FFFD.
pub(crate) fn escape(s: &str) -> String {
    escape_with(s, false)
}

/// `s` as element text: as [`escape`], with line breaks and tabs kept.
pub(crate) fn escape_text(s: &str) -> String {
    escape_with(s, true)
}

fn escape_with(s: &str, keep_whitespace: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' | '\r' | '\t' if keep_whitespace => out.push(c),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' => out.push_str("&#9;"),
            c if allowed(c) => out.push(c),
            _ => out.push('\u{FFFD}'),
        }
    }
    out
}

/// XML 1.0's `Char` production (tab, line feed and carriage return are
/// handled before).
fn allowed(c: char) -> bool {
    matches!(c, '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_and_forbidden_characters_are_escaped() {
        assert_eq!(
            escape("a<b>&\"c'\n\u{1b}[31m é"),
            "a&lt;b&gt;&amp;&quot;c&apos;&#10;\u{FFFD}[31m é"
        );
        assert_eq!(escape_text("a\n&#10;\tb"), "a\n&amp;#10;\tb");
    }

    #[test]
    fn counts_per_suite_and_in_total() {
        let case = |outcome| Case {
            classname: "p".into(),
            name: "v1/Pod/default/x".into(),
            outcome,
        };
        let xml = render(
            "ivpol test",
            &[Suite {
                name: "t<1>".into(),
                cases: vec![
                    case(CaseOutcome::Passed),
                    case(CaseOutcome::Failed {
                        message: "Want pass, got fail".into(),
                        text: "m".into(),
                    }),
                    case(CaseOutcome::Skipped {
                        message: "n".into(),
                    }),
                ],
            }],
        );
        assert!(xml.contains(
            "<testsuites name=\"ivpol test\" tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"1\">"
        ));
        assert!(xml.contains("<testsuite name=\"t&lt;1&gt;\" tests=\"3\""));
        assert!(xml.contains("<failure message=\"Want pass, got fail\">m</failure>"));
        assert!(xml.ends_with("</testsuite>\n</testsuites>\n"));
    }
}
