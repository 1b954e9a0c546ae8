//! The one table `make bench` prints: each measurement, its peer or
//! baseline from the same run, the ratio, the goal and whether it is met.

use std::fmt::Write;
use std::path::Path;
use std::time::Duration;

/// Whether a row meets its goal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Met,
    Missed,
    /// Context only: no goal.
    Info,
}

#[derive(Debug, Clone)]
pub struct Row {
    pub measure: String,
    pub ours: String,
    pub peer: String,
    pub ratio: String,
    pub goal: String,
    pub verdict: Verdict,
}

impl Row {
    pub fn new(measure: impl Into<String>, ours: impl Into<String>) -> Self {
        Self {
            measure: measure.into(),
            ours: ours.into(),
            peer: String::new(),
            ratio: String::new(),
            goal: String::new(),
            verdict: Verdict::Info,
        }
    }

    pub fn peer(mut self, peer: impl Into<String>) -> Self {
        self.peer = peer.into();
        self
    }

    pub fn ratio(mut self, ratio: f64) -> Self {
        self.ratio = format!("{ratio:.2}×");
        self
    }

    pub fn goal(mut self, goal: impl Into<String>, met: bool) -> Self {
        self.goal = goal.into();
        self.verdict = if met { Verdict::Met } else { Verdict::Missed };
        self
    }
}

/// A section heading and its rows.
pub struct Section {
    pub title: String,
    pub rows: Vec<Row>,
}

pub fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

pub fn us(ns: f64) -> String {
    if ns >= 1e3 {
        format!("{:.2} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

pub fn mb(bytes: u64) -> String {
    format!("{:.2} MB", bytes as f64 / 1e6)
}

/// A markdown table (readable in a terminal, pastable into docs/benchmarks.md).
pub fn render(sections: &[Section]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "| measure | ours | peer / baseline | ratio | goal | |");
    let _ = writeln!(out, "|---|---|---|---|---|---|");
    for section in sections {
        let _ = writeln!(out, "| **{}** | | | | | |", section.title);
        for r in &section.rows {
            let verdict = match r.verdict {
                Verdict::Met => "met",
                Verdict::Missed => "**missed**",
                Verdict::Info => "",
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} |",
                r.measure, r.ours, r.peer, r.ratio, r.goal, verdict
            );
        }
    }
    out
}

/// Criterion's point estimate (ns) of the median for `id` under `target`,
/// e.g. `warm_decision/authz`.
pub fn criterion_median_ns(target: &Path, id: &str) -> Option<f64> {
    let path = target.join("criterion").join(id).join("new/estimates.json");
    let text = std::fs::read_to_string(path).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v["median"]["point_estimate"].as_f64()
}
