//! `kyverno.time`: `time.now()`, `time.truncate(timestamp, duration)` and
//! `time.toCron(timestamp)`, with Go's `time` semantics.

use super::{add_each, no_overload};
use cel::{Context, ExecutionError, Value};
use chrono::{DateTime, Datelike, FixedOffset, Timelike};

/// Seconds from Go's zero time (0001-01-01 UTC), which `Truncate` counts
/// multiples from, to the Unix epoch.
const ZERO_TO_UNIX_SECONDS: i128 = 62_135_596_800;

pub(super) fn register(ctx: &mut Context<'_, '_>) {
    add_each(ctx, &["time.now"], now);
    add_each(ctx, &["time.truncate"], |t: Value, d: Value| {
        match (&t, &d) {
            (Value::Timestamp(t), Value::Duration(d)) => Ok(Value::Timestamp(truncate(t, d))),
            _ => Err(no_overload("time.truncate", &[&t, &d])),
        }
    });
    add_each(ctx, &["time.toCron"], |t: Value| match &t {
        Value::Timestamp(t) => Ok(Value::String(to_cron(t).into())),
        _ => Err(no_overload("time.toCron", &[&t])),
    });
}

/// The wall clock (the host's, in the component), in UTC.
fn now() -> Result<Value, ExecutionError> {
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(|e| ExecutionError::function_error("time.now", e))?;
    let secs = i64::try_from(since_epoch.as_secs()).unwrap_or(i64::MAX);
    let now = DateTime::from_timestamp(secs, since_epoch.subsec_nanos())
        .ok_or_else(|| ExecutionError::function_error("time.now", "the clock is out of range"))?;
    Ok(Value::Timestamp(now.fixed_offset()))
}

/// Go's `Time.Truncate`: `t` rounded down to a multiple of `d` since the
/// zero time; `t` itself for `d <= 0`.
fn truncate(t: &DateTime<FixedOffset>, d: &chrono::Duration) -> DateTime<FixedOffset> {
    let Some(step) = d.num_nanoseconds().filter(|n| *n > 0) else {
        return *t;
    };
    let since_zero = (i128::from(t.timestamp()) + ZERO_TO_UNIX_SECONDS) * 1_000_000_000
        + i128::from(t.timestamp_subsec_nanos());
    let excess = since_zero.rem_euclid(i128::from(step));
    // `excess` < `step`, which fits an i64.
    *t - chrono::Duration::nanoseconds(excess as i64)
}

/// `minute hour day month weekday` of `t` in its own offset, weekday 0
/// for Sunday: Kyverno's cron line.
fn to_cron(t: &DateTime<FixedOffset>) -> String {
    format!(
        "{} {} {} {} {}",
        t.minute(),
        t.hour(),
        t.day(),
        t.month(),
        t.weekday().num_days_from_sunday()
    )
}
