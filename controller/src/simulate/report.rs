//! The comparison table across modes, as Markdown (printed and written) and CSV.

use super::metrics::Outcome;

const HEADERS: [&str; 11] = [
    "mode",
    "victims",
    "wasted victims",
    "high-priority preempting",
    "clusters preempting per high-priority (mean / max)",
    "high-priority wait p50 (s)",
    "high-priority wait p99 (s)",
    "low-priority wait p50 (s)",
    "low-priority wait p99 (s)",
    "utilisation",
    "unfinished",
];

fn row(o: &Outcome) -> [String; 11] {
    [
        o.mode.label(),
        o.victims.to_string(),
        o.wasted.to_string(),
        o.high_preempting.to_string(),
        format!(
            "{:.2} / {}",
            o.clusters_per_high_mean, o.clusters_per_high_max
        ),
        format!("{:.1}", o.high_wait.p50),
        format!("{:.1}", o.high_wait.p99),
        format!("{:.1}", o.low_wait.p50),
        format!("{:.1}", o.low_wait.p99),
        format!("{:.1}%", o.utilisation * 100.0),
        o.unfinished.to_string(),
    ]
}

/// A Markdown table, one row per run.
pub fn markdown(outcomes: &[Outcome]) -> String {
    let mut out = format!("| {} |\n|", HEADERS.join(" | "));
    for (i, _) in HEADERS.iter().enumerate() {
        out.push_str(if i == 0 { " --- |" } else { " ---: |" });
    }
    out.push('\n');
    for o in outcomes {
        out.push_str(&format!("| {} |\n", row(o).join(" | ")));
    }
    out
}

/// The same figures as CSV, unformatted.
pub fn csv(outcomes: &[Outcome]) -> String {
    let mut out = String::from(
        "mode,victims,wasted,high_preempting,clusters_per_high_mean,clusters_per_high_max,\
         high_p50_s,high_p99_s,low_p50_s,low_p99_s,utilisation,unfinished,makespan_s,events\n",
    );
    for o in outcomes {
        out.push_str(&format!(
            "{},{},{},{},{:.4},{},{:.3},{:.3},{:.3},{:.3},{:.4},{},{:.1},{}\n",
            o.mode.label(),
            o.victims,
            o.wasted,
            o.high_preempting,
            o.clusters_per_high_mean,
            o.clusters_per_high_max,
            o.high_wait.p50,
            o.high_wait.p99,
            o.low_wait.p50,
            o.low_wait.p99,
            o.utilisation,
            o.unfinished,
            o.makespan as f64 / 1000.0,
            o.events
        ));
    }
    out
}
