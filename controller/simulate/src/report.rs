//! The comparison table across modes, as Markdown (printed and written) and CSV.

use super::metrics::{Outcome, WasteCause};

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
    out.push_str(&waste_markdown(outcomes));
    out.push_str(&low_waits_markdown(outcomes));
    out
}

/// Wasted victims by cause (see `WasteCause`), one row per run.
fn waste_markdown(outcomes: &[Outcome]) -> String {
    let mut out = String::from("\nWasted victims by cause:\n\n| mode | wasted |");
    for cause in WasteCause::ALL {
        out.push_str(&format!(" {} |", cause.label()));
    }
    out.push_str(" fit elsewhere while victims here stopped |\n| --- | ---: |");
    out.push_str(&" ---: |".repeat(WasteCause::ALL.len() + 1));
    out.push('\n');
    for o in outcomes {
        out.push_str(&format!("| {} | {} |", o.mode.label(), o.wasted));
        for cause in WasteCause::ALL {
            out.push_str(&format!(" {} |", o.waste.count(cause)));
        }
        out.push_str(&format!(" {} |\n", o.waste.fit_elsewhere_victims_stopping));
    }
    out
}

/// Low-priority waits split by where the workload was submitted.
fn low_waits_markdown(outcomes: &[Outcome]) -> String {
    let mut out = String::from(
        "\nLow-priority wait (s), submitted on a worker / through the manager:\n\n\
         | mode | local p50 | local p99 | dispatched p50 | dispatched p99 |\n\
         | --- | ---: | ---: | ---: | ---: |\n",
    );
    for o in outcomes {
        out.push_str(&format!(
            "| {} | {:.1} | {:.1} | {:.1} | {:.1} |\n",
            o.mode.label(),
            o.low_local_wait.p50,
            o.low_local_wait.p99,
            o.low_dispatched_wait.p50,
            o.low_dispatched_wait.p99
        ));
    }
    out
}

/// The same figures as CSV, unformatted.
pub fn csv(outcomes: &[Outcome]) -> String {
    let mut out = String::from(
        "mode,victims,wasted,high_preempting,clusters_per_high_mean,clusters_per_high_max,\
         high_p50_s,high_p99_s,low_p50_s,low_p99_s,utilisation,unfinished,makespan_s,events,",
    );
    for cause in WasteCause::ALL {
        out.push_str(cause.column());
        out.push(',');
    }
    out.push_str("wasted_fit_elsewhere_victims_stopping,low_local_p99_s,low_dispatched_p99_s\n");
    for o in outcomes {
        let causes: Vec<String> = WasteCause::ALL
            .iter()
            .map(|c| o.waste.count(*c).to_string())
            .collect();
        out.push_str(&format!(
            "{},{},{},{},{:.4},{},{:.3},{:.3},{:.3},{:.3},{:.4},{},{:.1},{},{},{},{:.3},{:.3}\n",
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
            o.events,
            causes.join(","),
            o.waste.fit_elsewhere_victims_stopping,
            o.low_local_wait.p99,
            o.low_dispatched_wait.p99
        ));
    }
    out
}

/// One row per workload and run: where its time went (for a closer look at the waits).
pub fn workloads_csv(outcomes: &[Outcome]) -> String {
    let mut out = String::from("mode,workload,priority,local,ran_on,wait_s,finished_s\n");
    for o in outcomes {
        let label = o.mode.label();
        for (i, s) in o.stats.iter().enumerate() {
            let secs =
                |ms: Option<u64>| ms.map_or(String::new(), |v| format!("{:.3}", v as f64 / 1000.0));
            out.push_str(&format!(
                "{label},{i},{},{},{},{},{}\n",
                s.priority,
                s.local,
                s.ran_on,
                secs(s.admitted.map(|a| a - s.arrival)),
                secs(s.finished)
            ));
        }
    }
    out
}
