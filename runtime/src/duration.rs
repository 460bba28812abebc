//! Durations as the flags (and the kubelet's configuration) write them:
//! `30s`, `60m`, `1h30m`, `250ms`, or bare seconds.

use anyhow::{bail, Context, Result};
use k8s_openapi::jiff::SignedDuration;
use std::time::Duration;

/// `90s`, `60m`, `1h`, `500ms`, `1h30m` (jiff's friendly format, ISO 8601
/// `PT90S` too), or plain seconds. Negative durations and days are refused.
pub fn parse_duration(s: &str) -> Result<Duration> {
    let s = s.trim();
    // Plain seconds: jiff wants a unit, the flags have always taken none.
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        let Ok(secs) = s.parse::<u64>() else {
            bail!("{s:?} is too long");
        };
        return Ok(Duration::from_secs(secs));
    }
    let parsed: SignedDuration = s
        .parse()
        .with_context(|| format!("{s:?} is not a duration (like 30s, 60m or 1h)"))?;
    Duration::try_from(parsed).with_context(|| format!("{s:?} is negative"))
}

#[cfg(test)]
mod tests {
    use super::parse_duration;
    use std::time::Duration;

    #[test]
    fn durations_take_the_usual_units() {
        assert_eq!(parse_duration("30s").ok(), Some(Duration::from_secs(30)));
        assert_eq!(parse_duration("60m").ok(), Some(Duration::from_secs(3600)));
        assert_eq!(parse_duration("1h").ok(), Some(Duration::from_secs(3600)));
        assert_eq!(
            parse_duration("250ms").ok(),
            Some(Duration::from_millis(250))
        );
        assert_eq!(parse_duration("0").ok(), Some(Duration::ZERO));
        assert_eq!(
            parse_duration("1h30m").ok(),
            Some(Duration::from_secs(5400))
        );
        assert_eq!(
            parse_duration("1.5s").ok(),
            Some(Duration::from_millis(1500))
        );
        for (bad, why) in [
            ("", "is not a duration"),
            ("s", "is not a duration"),
            ("1d", "is not a duration"),
            ("-1s", "is negative"),
            ("1x", "is not a duration"),
            ("18446744073709551615h", "is not a duration"),
            ("99999999999999999999", "is too long"),
        ] {
            let e = parse_duration(bad).expect_err(bad).to_string();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
    }
}
