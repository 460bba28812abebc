//! The decision line, written straight from its fields.
//!
//! `serve` writes one decision line per admission request (target
//! `ivpol::decision`). tracing's formatters write each field through
//! layers of `core::fmt` (the text format's field visitors, the JSON
//! format's serde adaptor over `fmt::Write`): 5.5% of the server's CPU at
//! a cache hit (docs/performance.md). [`DecisionLine`] writes the same
//! bytes directly for the plain values a decision line holds (strings,
//! booleans, numbers, text), and hands every other event, and any decision
//! event it cannot write byte for byte (colours, a span around it, a field
//! it does not know), to tracing's own formatter. A test holds the two to
//! the same bytes.

use std::fmt::{self, Write as _};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// The target whose events are written here.
const TARGET: &str = "ivpol::decision";

/// tracing's event formatter `inner`, with the decision line written
/// directly in the same format (text, or flattened JSON).
pub(super) struct DecisionLine<F> {
    inner: F,
    json: bool,
}

impl<F> DecisionLine<F> {
    /// Over tracing's text format (`Format<Full>`).
    pub(super) fn text(inner: F) -> Self {
        DecisionLine { inner, json: false }
    }

    /// Over tracing's JSON format with the event's fields flattened.
    pub(super) fn json(inner: F) -> Self {
        DecisionLine { inner, json: true }
    }
}

impl<S, N, F> FormatEvent<S, N> for DecisionLine<F>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
    F: FormatEvent<S, N>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let meta = event.metadata();
        let plain = meta.target() == TARGET
            && meta.level() == &tracing::Level::INFO
            && !writer.has_ansi_escapes()
            && writer.sanitizes_ansi_escapes()
            && event.parent().is_none()
            && ctx.lookup_current().is_none();
        if plain {
            if let Some(line) = written(event, self.json) {
                return writer.write_str(&line);
            }
        }
        self.inner.format_event(ctx, writer, event)
    }
}

/// The event's whole line, or none when a field is not one this writes
/// exactly as tracing would.
fn written(event: &Event<'_>, json: bool) -> Option<String> {
    let mut line = String::with_capacity(512);
    if json {
        // The timestamp is plain ASCII: a JSON string as it is.
        line.push_str("{\"timestamp\":\"");
        if !super::timestamp::now(&mut line) {
            return None;
        }
        line.push_str("\",\"level\":\"INFO\"");
        let mut fields = JsonFields {
            line,
            refused: false,
        };
        event.record(&mut fields);
        let JsonFields { mut line, refused } = fields;
        if refused {
            return None;
        }
        line.push_str(",\"target\":");
        json_str(&mut line, TARGET);
        line.push_str("}\n");
        Some(line)
    } else {
        if !super::timestamp::now(&mut line) {
            return None;
        }
        line.push_str("  INFO ");
        line.push_str(TARGET);
        line.push_str(": ");
        let mut fields = TextFields {
            line,
            first: true,
            refused: false,
        };
        event.record(&mut fields);
        let TextFields {
            mut line, refused, ..
        } = fields;
        if refused {
            return None;
        }
        line.push('\n');
        Some(line)
    }
}

/// The text format's fields: `message` bare, then ` name=value` with
/// values in their `Debug` form, as tracing's default field visitor.
struct TextFields {
    line: String,
    first: bool,
    refused: bool,
}

impl TextFields {
    fn pad(&mut self) {
        if !std::mem::take(&mut self.first) {
            self.line.push(' ');
        }
    }

    /// ` name=`, before a field's value.
    fn key(&mut self, name: &str) {
        self.pad();
        self.line.push_str(name);
        self.line.push('=');
    }
}

impl Visit for TextFields {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            return self.record_debug(field, &format_args!("{value}"));
        }
        if !plain_name(field.name()) {
            self.refused = true;
            return;
        }
        self.key(field.name());
        if is_plain(value) {
            // What `str`'s `Debug` writes for printable ASCII without
            // quotes or backslashes.
            self.line.push('"');
            self.line.push_str(value);
            self.line.push('"');
        } else {
            let _ = write!(self.line, "{value:?}");
        }
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        if !plain_name(field.name()) {
            self.refused = true;
            return;
        }
        // What `bool`'s `Debug` writes, without the formatter.
        self.key(field.name());
        self.line.push_str(if value { "true" } else { "false" });
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        match debug_f64(value, &mut ryu::Buffer::new()) {
            Some(text) if plain_name(field.name()) => {
                self.key(field.name());
                self.line.push_str(text);
            }
            _ => self.record_debug(field, &value),
        }
    }

    fn record_error(&mut self, _: &Field, _: &(dyn std::error::Error + 'static)) {
        self.refused = true;
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let name = field.name();
        if !plain_name(name) {
            self.refused = true;
            return;
        }
        if name == "message" {
            self.pad();
            // tracing escapes terminal controls in the message; a message
            // that has one is left to it.
            let start = self.line.len();
            let _ = write!(self.line, "{value:?}");
            if self.line[start..].chars().any(escaped_in_messages) {
                self.refused = true;
            }
        } else {
            self.key(name);
            let _ = write!(self.line, "{value:?}");
        }
    }
}

/// The JSON format's flattened fields: `,"name":value` in the order they
/// were recorded, as tracing-serde's map visitor writes them.
struct JsonFields {
    line: String,
    refused: bool,
}

impl JsonFields {
    fn key(&mut self, field: &Field) {
        self.line.push(',');
        json_str(&mut self.line, field.name());
        self.line.push(':');
    }
}

impl Visit for JsonFields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.key(field);
        json_str(&mut self.line, value);
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.key(field);
        self.line.push_str(if value { "true" } else { "false" });
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.key(field);
        json_value(&mut self.line, &value);
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.key(field);
        json_value(&mut self.line, &value);
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.key(field);
        json_value(&mut self.line, &value);
    }

    fn record_error(&mut self, _: &Field, _: &(dyn std::error::Error + 'static)) {
        self.refused = true;
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.key(field);
        json_str(&mut self.line, &format!("{value:?}"));
    }
}

/// What `f64`'s `Debug` writes for `value`, without `core::fmt`'s float
/// formatting, where ryu writes the same: both write the shortest digits
/// that read back as `value`, and between 1e-4 and 1e9 (a duration in
/// milliseconds of up to eleven days) neither writes an exponent; a test
/// compares the two. None elsewhere: far above that (1e15 is one such
/// place) a double can lie exactly halfway between two shortest candidates,
/// and the two break the tie differently.
fn debug_f64(value: f64, buf: &mut ryu::Buffer) -> Option<&str> {
    if !(1e-4..1e9).contains(&value.abs()) {
        return None;
    }
    let text = buf.format_finite(value);
    (!text.contains(['e', 'E'])).then_some(text)
}

/// A field name the text format writes as it is (tracing strips `r#` and
/// skips `log.` fields).
fn plain_name(name: &str) -> bool {
    !name.starts_with("r#") && !name.starts_with("log.")
}

/// Whether `s` is written by `str`'s `Debug` as itself between quotes.
fn is_plain(s: &str) -> bool {
    s.bytes()
        .all(|b| (b' '..=b'~').contains(&b) && b != b'"' && b != b'\\')
}

/// The characters tracing writes escaped in a text message.
fn escaped_in_messages(c: char) -> bool {
    matches!(
        c,
        '\x1b' | '\x07' | '\x08' | '\x0c' | '\x7f' | '\u{80}'..='\u{9f}'
    )
}

/// `s` as a JSON string, escaped as serde_json escapes it.
fn json_str(line: &mut String, s: &str) {
    if s.bytes().all(|b| b >= b' ' && b != b'"' && b != b'\\') {
        line.push('"');
        line.push_str(s);
        line.push('"');
    } else {
        json_value(line, s);
    }
}

/// `value` as serde_json writes it.
fn json_value<T: serde::Serialize + ?Sized>(line: &mut String, value: &T) {
    match serde_json::to_string(value) {
        Ok(text) => line.push_str(&text),
        Err(_) => line.push_str("null"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::sync::{Arc, Mutex};
    use tracing_subscriber::fmt::MakeWriter;

    /// Where ryu writes a float, it writes what `Debug` does: random bit
    /// patterns over the whole range, and decimal values around the
    /// bounds and of durations in milliseconds.
    #[test]
    fn floats_are_written_as_debug_writes_them() {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut buf = ryu::Buffer::new();
        let mut written = 0;
        let around = [
            1e-4,
            1e9,
            0.1,
            1.0,
            0.3,
            999_999_999.999_999_9,
            0.000_099_999,
        ];
        let values = (0..400_000).map(|i| match i % 4 {
            0 => f64::from_bits(next()),
            1 => (next() % 100_000_000) as f64 / 1e6,
            2 => f64::from_bits(next() % (1u64 << 62)) % 1e9,
            _ => around[i % around.len()] * (1.0 + (next() % 3) as f64 * f64::EPSILON),
        });
        for value in values.chain(around) {
            if let Some(text) = debug_f64(value, &mut buf) {
                assert_eq!(text, format!("{value:?}"), "{}", value.to_bits());
                written += 1;
            }
        }
        assert!(written > 150_000, "{written}");
    }

    /// Collects what a subscriber writes.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("lock").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Captured {
        type Writer = Captured;
        fn make_writer(&'a self) -> Captured {
            self.clone()
        }
    }

    impl Captured {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().expect("lock").clone()).expect("utf-8")
        }
    }

    /// Decision events with every kind of value a decision line holds,
    /// plain and in need of escapes.
    fn log_decisions() {
        for (name, why) in [
            ("web", ""),
            ("quote\"back\\slash", "line\nbreak\ttab"),
            ("ünïcödé ✓", "\u{1b}[31mred\u{7f} \u{85} \u{1}"),
        ] {
            let policies = serde_json::json!([{"policy": name, "message": why}]).to_string();
            tracing::info!(
                target: "ivpol::decision",
                uid = "705ab4f5-6393-11e8-b7cc-42010a800002",
                route = "ivpol",
                namespace = name,
                allowed = why.is_empty(),
                duration_ms = 0.25f64,
                count = 3u64,
                delta = -2i64,
                policies = %policies,
                error = why,
                "decision"
            );
        }
        tracing::info!(target: "ivpol::decision", huge = f64::NAN, "decision");
        tracing::info!(target: "ivpol::decision", "\u{1b}[31m");
        tracing::info!(target: "ivpol::decision", r#type = "raw", "decision");
        tracing::warn!(target: "ivpol::decision", "warned");
        tracing::info!(target: "ivpol::other", a = "b", "other");
        let span = tracing::info_span!("outer", k = 1);
        span.in_scope(|| tracing::info!(target: "ivpol::decision", a = "b", "decision"));
    }

    /// The lines, without their timestamps (the part before the first
    /// space in text, the first field in JSON).
    fn timeless(text: &str, json: bool) -> Vec<String> {
        text.lines()
            .map(|l| match json {
                true => {
                    let rest = l.split_once(",\"level\"").expect("a level").1;
                    format!("{{{rest}")
                }
                false => l.split_once(' ').expect("a timestamp").1.to_string(),
            })
            .collect()
    }

    /// What tracing's own formatter is left to write: a marker, so that
    /// the test sees which lines were written here.
    struct LeftToTracing;

    impl<S, N> FormatEvent<S, N> for LeftToTracing
    where
        S: Subscriber + for<'a> LookupSpan<'a>,
        N: for<'a> FormatFields<'a> + 'static,
    {
        fn format_event(
            &self,
            _: &FmtContext<'_, S, N>,
            mut writer: Writer<'_>,
            _: &Event<'_>,
        ) -> fmt::Result {
            writeln!(writer, "left to tracing")
        }
    }

    /// The lines of `log_decisions` in tracing's format (`json` or text),
    /// and as [`DecisionLine`] writes them with [`LeftToTracing`].
    fn captured(json: bool) -> (String, String) {
        let (theirs, ours) = (Captured::default(), Captured::default());
        let logs = |out: &Captured| {
            tracing_subscriber::fmt()
                .with_ansi(false)
                .with_writer(out.clone())
        };
        let (theirs_dispatch, ours_dispatch) = match json {
            false => (
                tracing::Dispatch::new(logs(&theirs).finish()),
                tracing::Dispatch::new(
                    logs(&ours)
                        .event_format(DecisionLine::text(LeftToTracing))
                        .finish(),
                ),
            ),
            true => (
                tracing::Dispatch::new(logs(&theirs).json().flatten_event(true).finish()),
                tracing::Dispatch::new(
                    logs(&ours)
                        .json()
                        .flatten_event(true)
                        .event_format(DecisionLine::json(LeftToTracing))
                        .finish(),
                ),
            ),
        };
        tracing::dispatcher::with_default(&theirs_dispatch, log_decisions);
        tracing::dispatcher::with_default(&ours_dispatch, log_decisions);
        (theirs.text(), ours.text())
    }

    #[test]
    fn decision_lines_are_the_bytes_tracing_writes() {
        for json in [false, true] {
            let (theirs, ours) = captured(json);
            let (theirs, ours) = (timeless(&theirs, json), ours.lines().collect::<Vec<_>>());
            assert_eq!(ours.len(), theirs.len(), "{ours:#?}");
            // Written here: the decisions, NaN and a raw identifier among
            // their fields; left to tracing: another level, another target,
            // a span, and in text a message tracing escapes.
            let left: Vec<usize> = (0..ours.len())
                .filter(|&i| ours[i] == "left to tracing")
                .collect();
            let expected: &[usize] = match json {
                false => &[4, 6, 7, 8],
                true => &[6, 7, 8],
            };
            assert_eq!(left, expected, "json: {json}: {ours:#?}");
            for (i, line) in ours.iter().enumerate().filter(|(i, _)| !left.contains(i)) {
                let timeless = timeless(line, json);
                assert_eq!(timeless[0], theirs[i], "json: {json}");
            }
        }
    }

    #[test]
    fn timestamps_are_tracing_s() {
        for json in [false, true] {
            let ours = captured(json).1;
            let first = ours.lines().next().expect("a line");
            let time = match json {
                true => first[14..].split('"').next().expect("a timestamp"),
                false => first.split(' ').next().expect("a timestamp"),
            };
            // RFC 3339 in UTC with microseconds, as tracing's SystemTime.
            assert_eq!(time.len(), 27, "{time}");
            assert!(time.ends_with('Z') && time.as_bytes()[10] == b'T', "{time}");
        }
    }
}
