//! RSS sampled through the run, not only read at its end: a thread reads
//! `/proc/<pid>/status` of each server every 50 ms and keeps the highest,
//! with the scenario that was running when it was reached. Every sample
//! goes to `rss-timeline.csv` beside the report (time, scenario, pid, RSS,
//! threads), so that a peak can be placed in the run afterwards.
//!
//! A server whose RSS first passes [`SPIKE_MB`] gets its memory map saved
//! (`smaps-<pid>.txt` beside the report, from `/proc/<pid>/smaps`) at that
//! moment: the spikes this bench has seen are rare and vanished under a
//! profiler, so the map is kept when one happens.

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

const EVERY: Duration = Duration::from_millis(50);

/// Well above the 80 MB target and every ordinary run's peak.
pub const SPIKE_MB: f64 = 120.0;

pub struct Sampler {
    stop: Arc<AtomicBool>,
    phase: Arc<Mutex<String>>,
    thread: JoinHandle<Vec<Peak>>,
}

/// One server's highest sampled RSS, and the scenario running then.
#[derive(Debug, Clone, Default)]
pub struct Peak {
    pub mb: f64,
    pub phase: String,
}

impl Sampler {
    /// Starts sampling `pids`; memory maps of spikes and the timeline go
    /// into `dir`.
    pub fn start(pids: &[u32], dir: PathBuf) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let phase = Arc::new(Mutex::new(String::from("start")));
        let pids = pids.to_vec();
        let (flag, current) = (stop.clone(), phase.clone());
        let thread = std::thread::spawn(move || {
            let mut timeline = timeline(&dir);
            let start = std::time::Instant::now();
            let mut peaks = vec![Peak::default(); pids.len()];
            while !flag.load(Ordering::Relaxed) {
                let phase = current.lock().map(|p| p.clone()).unwrap_or_default();
                for (peak, pid) in peaks.iter_mut().zip(&pids) {
                    let mb = super::memory_mb(*pid, "VmRSS:");
                    if !mb.is_finite() {
                        continue;
                    }
                    if let Some(out) = timeline.as_mut() {
                        let threads = super::status_number(*pid, "Threads:");
                        let ms = start.elapsed().as_millis();
                        let _ = writeln!(out, "{ms},\"{phase}\",{pid},{mb:.1},{threads:.0}");
                    }
                    if mb > SPIKE_MB && peak.mb <= SPIKE_MB {
                        save_map(*pid, mb, &phase, &dir);
                    }
                    if mb > peak.mb {
                        *peak = Peak {
                            mb,
                            phase: phase.clone(),
                        };
                    }
                }
                std::thread::sleep(EVERY);
            }
            peaks
        });
        Sampler {
            stop,
            phase,
            thread,
        }
    }

    /// Names the scenario that runs from now on.
    pub fn phase(&self, name: impl Into<String>) {
        let name = name.into();
        // Progress on stderr: the run takes minutes, and a profiler can be
        // started on the phase it is meant for.
        eprintln!("bench: {name}");
        if let Ok(mut p) = self.phase.lock() {
            *p = name;
        }
    }

    /// The highest RSS of each pid, in the order given.
    pub fn stop(self) -> Vec<Peak> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}

/// `rss-timeline.csv` in `dir`, with its header; none if it cannot be made.
fn timeline(dir: &std::path::Path) -> Option<std::io::BufWriter<std::fs::File>> {
    std::fs::create_dir_all(dir).ok()?;
    let file = std::fs::File::create(dir.join("rss-timeline.csv")).ok()?;
    let mut out = std::io::BufWriter::new(file);
    writeln!(out, "ms,scenario,pid,rss_mb,threads").ok()?;
    Some(out)
}

fn save_map(pid: u32, mb: f64, phase: &str, dir: &std::path::Path) {
    let to = dir.join(format!("smaps-{pid}.txt"));
    let saved = std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::copy(format!("/proc/{pid}/smaps"), &to));
    match saved {
        Ok(_) => eprintln!(
            "bench: server {pid} at {mb:.0} MB RSS during {phase}; memory map saved to {}",
            to.display()
        ),
        Err(e) => eprintln!(
            "bench: server {pid} at {mb:.0} MB RSS during {phase}; memory map not saved: {e}"
        ),
    }
}
