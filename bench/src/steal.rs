//! What the hypervisor took from this machine during the run: the CPU
//! time `/proc/stat` counts as stolen, as a share of the machine's busy
//! and stolen time together. On a crowded host a fifth of a run's CPU
//! time went this way, and the run's times are longer for it; the share
//! tells such a run from a slower build.

/// The machine's CPU counters at one moment, in clock ticks.
pub struct CpuTimes {
    /// user, nice, system, irq and softirq.
    busy: u64,
    steal: u64,
}

impl CpuTimes {
    /// Now; `None` where `/proc/stat` has no `cpu` line (not Linux).
    pub fn now() -> Option<CpuTimes> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        parse(stat.lines().next()?)
    }

    /// The share stolen from `before` (a reading that may have failed) to
    /// now.
    pub fn stolen_since_then(before: Option<CpuTimes>) -> Option<f64> {
        Some(CpuTimes::now()?.stolen_since(&before?))
    }

    /// The share of the CPU time wanted since `earlier` that was stolen.
    pub fn stolen_since(&self, earlier: &CpuTimes) -> f64 {
        let busy = self.busy.saturating_sub(earlier.busy);
        let steal = self.steal.saturating_sub(earlier.steal);
        steal as f64 / (busy + steal).max(1) as f64
    }
}

/// The aggregate line: `cpu user nice system idle iowait irq softirq steal ...`.
fn parse(line: &str) -> Option<CpuTimes> {
    let mut fields = line.split_whitespace();
    if fields.next()? != "cpu" {
        return None;
    }
    let n: Vec<u64> = fields
        .take(8)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    let [user, nice, system, _idle, _iowait, irq, softirq, steal] = n[..] else {
        return None;
    };
    Some(CpuTimes {
        busy: user + nice + system + irq + softirq,
        steal,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steal_is_a_share_of_the_time_wanted() {
        let a = parse("cpu  100 0 50 900 5 0 10 40 0 0").unwrap();
        let b = parse("cpu  200 0 100 1900 5 0 10 90 0 0").unwrap();
        // 150 ticks on the CPU, 50 stolen: a quarter of the 200 wanted.
        assert!((b.stolen_since(&a) - 0.25).abs() < 1e-9);
        assert_eq!(a.stolen_since(&a), 0.0);
    }

    #[test]
    fn a_line_that_is_not_the_aggregate_is_refused() {
        assert!(parse("cpu0 1 2 3 4 5 6 7 8").is_none());
        assert!(parse("cpu 1 2 3").is_none());
        assert!(parse("cpu 1 2 x 4 5 6 7 8").is_none());
    }
}
