//! The bench's one table, the machine figures under it, and the same
//! figures by name as JSON (`report.json`), with the request-path targets
//! (docs/performance.md) checked against this run.

use serde_json::{json, Value};

/// One scenario at one connection count.
pub struct Row {
    pub name: String,
    pub conns: usize,
    pub rps: f64,
    pub p50: f64,
    pub p99: f64,
    pub errors: usize,
    /// req/s as a fraction of the baseline's at the same connections:
    /// the median of the rounds' ratios.
    pub ratio: Option<f64>,
    /// Each round's ratio, in the order run.
    pub round_ratios: Vec<f64>,
}

#[derive(Default)]
pub struct Report {
    pub rows: Vec<Row>,
    /// The cold path at one connection, with the loopback registry and
    /// with the registry a fixed delay away.
    pub cold: crate::cold::Cold,
    pub cold_delayed: crate::cold::Cold,
    pub rss_mb: f64,
    pub peak_rss_mb: f64,
    /// The highest RSS sampled (every 50 ms) through the whole run, for
    /// the cached and the `--no-cache` server.
    pub sampled_peak_rss_mb: f64,
    /// The scenario that was running when the cached server's peak was sampled.
    pub sampled_peak_rss_phase: String,
    pub cold_sampled_peak_rss_mb: f64,
    /// The cached server's instances after the run: created, replaced
    /// (`--instance-max-calls`), and their linear memory in MB.
    pub instances_created: f64,
    pub instances_retired: f64,
    pub instance_memory_mb: f64,
    /// Time per request at 1 connection with cache hits, by work.
    pub scaling: Scaling,
    pub replicas: ReplicaCalls,
    /// Standalone verification natively and in the component, per case.
    pub native: Vec<crate::native::Timing>,
    pub instance_acquire_ms: f64,
    pub component_bytes: u64,
    pub startup_cold_ms: f64,
    pub startup_precompiled_ms: f64,
    /// The share of the CPU time the run wanted that the hypervisor took
    /// (`/proc/stat` steal); `None` off Linux.
    pub stolen: Option<f64>,
}

/// Registry requests of two replicas judging the same pod at once for the
/// first time, (first, second): sharing a store, and each alone.
#[derive(Default)]
pub struct ReplicaCalls {
    pub shared: (f64, f64),
    pub alone: (f64, f64),
    /// Signed images in the pod.
    pub images: usize,
}

impl ReplicaCalls {
    pub fn render(&self) -> String {
        format!(
            "two replicas judging a pod of {} signed images at once, registry requests per replica: {:.0} and {:.0} sharing a store (`--shared-cache`), {:.0} and {:.0} alone",
            self.images, self.shared.0, self.shared.1, self.alone.0, self.alone.1
        )
    }
}

/// Mean time per request (1 / req/s at one connection, cache hits) for
/// one container and one policy, ten containers, and ten policies.
#[derive(Default)]
pub struct Scaling {
    pub one_ms: f64,
    pub containers_ms: f64,
    pub policies_ms: f64,
    /// How many containers and policies the larger scenarios have.
    pub n: usize,
}

impl Scaling {
    /// The times of rounds of the three scenarios (one, containers,
    /// policies, in ms a request): the median time of the first, and the
    /// larger two as it plus the median of each round's difference to it.
    pub fn of_rounds(rounds: &[[f64; 3]], n: usize) -> Scaling {
        let one_ms = median(rounds.iter().map(|r| r[0]).collect());
        let above = |i: usize| median(rounds.iter().map(|r| r[i] - r[0]).collect());
        Scaling {
            one_ms,
            containers_ms: one_ms + above(1),
            policies_ms: one_ms + above(2),
            n,
        }
    }

    /// The cost of each container beyond the first, in microseconds.
    pub fn per_container_us(&self) -> f64 {
        (self.containers_ms - self.one_ms) * 1000.0 / (self.n.saturating_sub(1).max(1)) as f64
    }

    /// The cost of each matching policy beyond the first, in microseconds.
    pub fn per_policy_us(&self) -> f64 {
        (self.policies_ms - self.one_ms) * 1000.0 / (self.n.saturating_sub(1).max(1)) as f64
    }

    /// One line with the three times and the two increments.
    pub fn render(&self) -> String {
        format!(
            "time per request at 1 connection, cache hits: {:.3} ms for 1 container and 1 policy, {:.3} ms for {n} containers (+{:.1} µs per container), {:.3} ms for {n} policies (+{:.1} µs per policy)",
            self.one_ms, self.containers_ms, self.per_container_us(), self.policies_ms, self.per_policy_us(), n = self.n
        )
    }
}

/// The median of `values` (NaN when there are none).
pub(crate) fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

impl Report {
    fn row(&self, name: &str, conns: usize) -> Option<&Row> {
        self.rows
            .iter()
            .find(|r| r.name == name && r.conns == conns)
    }

    /// The p50 latency a scenario adds to the baseline's at `conns`.
    fn p50_above_baseline(&self, name: &str, conns: usize) -> f64 {
        match (self.row(name, conns), self.row(BASELINE, conns)) {
            (Some(r), Some(b)) => r.p50 - b.p50,
            _ => f64::NAN,
        }
    }

    fn ratio(&self, name: &str, conns: usize) -> f64 {
        self.row(name, conns)
            .and_then(|r| r.ratio)
            .unwrap_or(f64::NAN)
    }

    /// The highest RSS seen through the run, sampled or the kernel's peak.
    fn peak_rss(&self) -> f64 {
        self.sampled_peak_rss_mb
            .max(self.cold_sampled_peak_rss_mb)
            .max(self.peak_rss_mb)
    }

    /// The request path's targets: (name, measured, target, met).
    pub fn targets(&self) -> Vec<Check> {
        vec![
            at_least("validate_cache_hit_64_ratio", self.ratio(HIT, 64), 0.50),
            at_least("mutate_64_ratio", self.ratio(MUTATE, 64), 0.60),
            at_most(
                "validate_cache_hit_1_p50_above_baseline_ms",
                self.p50_above_baseline(HIT, 1),
                0.1,
            ),
            at_most("component_mb", self.component_bytes as f64 / 1e6, 3.0),
            at_most("cold_above_chain_ms", self.cold.above_chain_ms(), 1.0),
            at_most(
                "cold_delayed_above_chain_ms",
                self.cold_delayed.above_chain_ms(),
                1.0,
            ),
            at_most("peak_rss_mb", self.peak_rss(), 80.0),
            at_most("per_container_us", self.scaling.per_container_us(), 5.0),
            at_most("per_policy_us", self.scaling.per_policy_us(), 10.0),
            at_most("wasm_native_ratio", self.worst_ratio(), 1.5),
        ]
    }

    /// The floors every run must hold (docs/performance.md), below the
    /// targets: (name, measured, floor, met).
    pub fn floors(&self) -> Vec<Check> {
        vec![
            at_least("validate_cache_hit_64_ratio", self.ratio(HIT, 64), 0.30),
            at_most("per_policy_us", self.scaling.per_policy_us(), 15.0),
            at_most("per_container_us", self.scaling.per_container_us(), 8.0),
            at_most("component_mb", self.component_bytes as f64 / 1e6, 4.5),
            at_most("cold_above_chain_ms", self.cold.above_chain_ms(), 2.0),
            at_most(
                "cold_delayed_above_chain_ms",
                self.cold_delayed.above_chain_ms(),
                2.0,
            ),
            at_most("peak_rss_mb", self.peak_rss(), 80.0),
        ]
    }

    /// The largest component/native time ratio over the cases.
    fn worst_ratio(&self) -> f64 {
        self.native
            .iter()
            .map(|t| t.ratio())
            .fold(f64::NAN, f64::max)
    }

    /// Every figure by name, for `report.json`.
    pub fn to_json(&self) -> Value {
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|r| {
                json!({
                    "scenario": r.name, "conns": r.conns, "rps": r.rps,
                    "p50_ms": r.p50, "p99_ms": r.p99, "errors": r.errors,
                    "ratio_to_baseline": r.ratio, "round_ratios": r.round_ratios,
                })
            })
            .collect();
        json!({
            "rows": rows,
            "cold": self.cold.to_json(),
            "cold_delayed": self.cold_delayed.to_json(),
            "rss_after_mb": self.rss_mb,
            "vmhwm_mb": self.peak_rss_mb,
            "sampled_peak_rss_mb": self.sampled_peak_rss_mb,
            "sampled_peak_rss_phase": self.sampled_peak_rss_phase,
            "cold_sampled_peak_rss_mb": self.cold_sampled_peak_rss_mb,
            "component_bytes": self.component_bytes,
            "startup_cold_ms": self.startup_cold_ms,
            "startup_precompiled_ms": self.startup_precompiled_ms,
            "instance_acquire_ms": self.instance_acquire_ms,
            "stolen_cpu_share": self.stolen,
            "instances_created": self.instances_created,
            "instances_retired": self.instances_retired,
            "instance_memory_mb": self.instance_memory_mb,
            "replicas": {
                "shared": [self.replicas.shared.0, self.replicas.shared.1],
                "alone": [self.replicas.alone.0, self.replicas.alone.1],
                "images": self.replicas.images,
            },
            "scaling": {
                "one_container_one_policy_ms": self.scaling.one_ms,
                "containers_ms": self.scaling.containers_ms,
                "policies_ms": self.scaling.policies_ms,
                "n": self.scaling.n,
                "per_container_us": self.scaling.per_container_us(),
                "per_policy_us": self.scaling.per_policy_us(),
            },
            "wasm_vs_native": self.native.iter().map(|t| json!({
                "case": t.case, "native_us": t.native_us, "wasm_us": t.wasm_us, "ratio": t.ratio(),
            })).collect::<Vec<_>>(),
            "targets": checks_json(self.targets(), "target"),
            "floors": checks_json(self.floors(), "floor"),
        })
    }

    pub fn render(&self) -> String {
        let mut out = String::from(
            "| scenario | conns | req/s | p50 ms | p99 ms | req/s vs baseline (median of rounds) | rounds |\n|---|---:|---:|---:|---:|---:|---:|\n",
        );
        for r in &self.rows {
            let percent = |x: f64| format!("{:.0}%", x * 100.0);
            let ratio = r.ratio.map_or("—".to_string(), percent);
            let range = match (
                r.round_ratios.iter().copied().reduce(f64::min),
                r.round_ratios.iter().copied().reduce(f64::max),
            ) {
                (Some(lo), Some(hi)) => format!("{}–{}", percent(lo), percent(hi)),
                _ => "—".to_string(),
            };
            out.push_str(&format!(
                "| {} | {} | {:.0} | {:.2} | {:.2} | {ratio} | {range} |\n",
                r.name, r.conns, r.rps, r.p50, r.p99
            ));
        }
        out.push('\n');
        for cold in [&self.cold, &self.cold_delayed] {
            out.push_str(&format!("- {}\n", cold.render()));
        }
        out.push_str(&format!(
            "- ivpol RSS after the load: {:.1} MB (VmHWM {:.1} MB); highest sampled during the run: {:.1} MB (during {}), {:.1} MB for the --no-cache server\n",
            self.rss_mb, self.peak_rss_mb, self.sampled_peak_rss_mb, self.sampled_peak_rss_phase, self.cold_sampled_peak_rss_mb
        ));
        out.push_str(&format!(
            "- instances: {:.0} created, {:.0} replaced; their linear memory at the end: {:.1} MB\n",
            self.instances_created, self.instances_retired, self.instance_memory_mb
        ));
        out.push_str(&format!("- {}\n", self.scaling.render()));
        out.push_str(&format!("- {}\n", self.replicas.render()));
        out.push_str(&format!(
            "- component: {:.1} MB\n",
            self.component_bytes as f64 / 1e6
        ));
        out.push_str(&format!(
            "- start-up to listening: {:.0} ms compiling the component, {:.0} ms precompiled\n",
            self.startup_cold_ms, self.startup_precompiled_ms
        ));
        out.push_str(&format!(
            "- instance acquire (mean over the run): {:.3} ms\n",
            self.instance_acquire_ms
        ));
        if let Some(stolen) = self.stolen {
            out.push_str(&format!(
                "- CPU time stolen by the hypervisor: {:.0}% of what the run wanted (`/proc/stat` steal: the run's times are longer for it)\n",
                stolen * 100.0
            ));
        }
        for t in &self.native {
            out.push_str(&format!(
                "- verification `{}`: {:.0} µs native, {:.0} µs in the component ({:.2}×)\n",
                t.case,
                t.native_us,
                t.wasm_us,
                t.ratio()
            ));
        }
        out.push_str(&checks_table(self.targets(), "target"));
        out.push_str(&checks_table(self.floors(), "floor"));
        out
    }
}

/// A figure checked against a limit: (name, measured, limit, met).
pub type Check = (&'static str, f64, f64, bool);

fn at_most(name: &'static str, got: f64, limit: f64) -> Check {
    (name, got, limit, got <= limit)
}

fn at_least(name: &'static str, got: f64, limit: f64) -> Check {
    (name, got, limit, got >= limit)
}

/// `checks` as JSON objects, the limit under `limit_name`.
fn checks_json(checks: Vec<Check>, limit_name: &str) -> Vec<Value> {
    checks
        .into_iter()
        .map(|(name, got, limit, met)| json!({"name": name, "measured": got, limit_name: limit, "met": met}))
        .collect()
}

/// `checks` as a Markdown table, the limit's column headed `limit_name`.
fn checks_table(checks: Vec<Check>, limit_name: &str) -> String {
    let mut out = format!("\n| {limit_name} | measured | limit | met |\n|---|---:|---:|---|\n");
    for (name, got, limit, met) in checks {
        let met = if met { "yes" } else { "no" };
        out.push_str(&format!("| {name} | {got:.3} | {limit} | {met} |\n"));
    }
    out
}

/// Scenario names the targets refer to.
pub const BASELINE: &str = "no-op hyper webhook (baseline)";
pub const HIT: &str = "validate, cache hit";
pub const MUTATE: &str = "mutate, nothing to pin";
pub const COLD: &str = "validate cold (cosign key)";

#[cfg(test)]
mod tests {
    use super::*;

    /// A round that ran slow throughout moves the base time, not the
    /// increments; an odd round out does not move the medians.
    #[test]
    fn increments_are_medians_of_each_rounds_differences() {
        let rounds = [
            [0.100, 0.190, 0.280],
            [0.150, 0.240, 0.330],
            [0.110, 0.200, 0.290],
            [0.105, 0.500, 0.295],
        ];
        let s = Scaling::of_rounds(&rounds, 10);
        assert!((s.one_ms - 0.1075).abs() < 1e-9, "{}", s.one_ms);
        assert!(
            (s.per_container_us() - 10.0).abs() < 1e-6,
            "{}",
            s.per_container_us()
        );
        assert!(
            (s.per_policy_us() - 20.0).abs() < 1e-6,
            "{}",
            s.per_policy_us()
        );
        assert!(median(Vec::new()).is_nan());
    }
}
