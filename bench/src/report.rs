//! The bench's one table, and the machine figures under it.

/// One scenario at one connection count.
pub struct Row {
    pub name: String,
    pub conns: usize,
    pub rps: f64,
    pub p50: f64,
    pub p99: f64,
    pub errors: usize,
    /// req/s as a fraction of the baseline's at the same connections.
    pub ratio: Option<f64>,
}

#[derive(Default)]
pub struct Report {
    pub rows: Vec<Row>,
    pub cold_calls_per_request: f64,
    pub cold_p50_ms: f64,
    pub registry_rtt_ms: f64,
    pub rss_mb: f64,
    pub peak_rss_mb: f64,
    pub instance_acquire_ms: f64,
    pub component_bytes: u64,
    pub startup_cold_ms: f64,
    pub startup_precompiled_ms: f64,
}

impl Report {
    pub fn render(&self) -> String {
        let mut out = String::from(
            "| scenario | conns | req/s | p50 ms | p99 ms | req/s vs baseline |\n|---|---:|---:|---:|---:|---:|\n",
        );
        for r in &self.rows {
            let ratio = r
                .ratio
                .map_or("—".to_string(), |x| format!("{:.0}%", x * 100.0));
            out.push_str(&format!(
                "| {} | {} | {:.0} | {:.2} | {:.2} | {ratio} |\n",
                r.name, r.conns, r.rps, r.p50, r.p99
            ));
        }
        let registry_ms = self.cold_calls_per_request * self.registry_rtt_ms;
        out.push_str(&format!(
            "\n- cold validate at 1 connection: p50 {:.2} ms, {:.1} registry calls per request at {:.2} ms each (p50), so {:.2} ms above its registry round trips\n",
            self.cold_p50_ms,
            self.cold_calls_per_request,
            self.registry_rtt_ms,
            self.cold_p50_ms - registry_ms
        ));
        out.push_str(&format!(
            "- ivpol RSS after the load: {:.1} MB (peak {:.1} MB)\n",
            self.rss_mb, self.peak_rss_mb
        ));
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
        out
    }
}
