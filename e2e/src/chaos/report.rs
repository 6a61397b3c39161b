//! What a run prints.

use std::collections::BTreeMap;
use std::fmt;

use super::check::Outcome;
use super::figures::Figures;
use super::log::Millis;
use super::plan::Scale;

pub struct Report {
    pub seed: u64,
    pub scale: Scale,
    pub workers: usize,
    /// How long the run took, setup excluded.
    pub duration: Millis,
    pub figures: Figures,
    pub outcome: Outcome,
    /// API errors injected, by status code.
    pub injected: BTreeMap<u16, u64>,
    /// Where the process logs and the event log were kept, if anywhere.
    pub kept: Option<std::path::PathBuf>,
}

impl Report {
    pub fn passed(&self) -> bool {
        self.outcome.violations.is_empty()
    }
}

fn secs(ms: Millis) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

fn opt_secs(ms: Option<Millis>) -> String {
    ms.map(secs).unwrap_or_else(|| "n/a".into())
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (g, m, s) = (&self.figures, &self.outcome.measures, &self.scale);
        writeln!(
            f,
            "baton-chaos: seed {} — 1 manager + {} workers ({} CPUs each), {} active + up to {} drain, ran {}",
            self.seed,
            self.workers,
            s.worker_cpus,
            secs(s.active),
            secs(s.drain),
            secs(self.duration)
        )?;
        writeln!(
            f,
            "  singleClusterPreemptionTimeout {}, workerLostTimeout {}",
            secs(s.preemption_timeout),
            secs(s.worker_lost_timeout)
        )?;
        writeln!(
            f,
            "workloads: submitted {}, admitted {}, finished {}, deleted {}, pending at the end with every worker full {}",
            g.submitted, g.admitted, g.finished, g.deleted, m.pending_at_end
        )?;
        writeln!(f, "faults injected:")?;
        for (kind, n) in &g.faults {
            writeln!(f, "  {kind}: {n}")?;
        }
        let total: u64 = self.injected.values().sum();
        let codes: Vec<String> = self
            .injected
            .iter()
            .map(|(c, n)| format!("{c}: {n}"))
            .collect();
        writeln!(f, "  API errors answered: {total} ({})", codes.join(", "))?;
        writeln!(
            f,
            "gate openings: {}, baton passes by timeout: {} (smallest gap {})",
            m.gate_openings,
            m.baton_passes,
            opt_secs(m.min_baton_gap)
        )?;
        writeln!(
            f,
            "high priority: {} submitted, {} admitted; time to admit p50 {}, p99 {}",
            g.high_submitted,
            g.high_admitted,
            opt_secs(g.high_admit_p50),
            opt_secs(g.high_admit_p99)
        )?;
        writeln!(
            f,
            "worst recovery after a manager restart: {}",
            g.worst_manager_recovery
                .map(|(took, at)| format!("{} (restart at {})", secs(took), secs(at)))
                .unwrap_or_else(|| "n/a".into())
        )?;
        writeln!(
            f,
            "worst recovery after a worker outage: {}{}",
            g.worst_worker_recovery
                .map(|(took, w, at)| format!("{} (worker-{w}, back at {})", secs(took), secs(at)))
                .unwrap_or_else(|| "n/a".into()),
            if g.outages_without_action > 0 {
                format!(
                    "; {} outage(s) with no manager action after",
                    g.outages_without_action
                )
            } else {
                String::new()
            }
        )?;
        writeln!(
            f,
            "manager lost its connection to a worker: {} times ({} while the worker's API was up)",
            g.disconnects, g.disconnects_while_online
        )?;
        writeln!(
            f,
            "double admission (loser removal in flight): {} times, longest {} ({} not excused by downtime; window {})",
            m.double_admissions,
            secs(m.max_double_admission),
            secs(m.max_double_admission_unexcused),
            secs(super::check::LOSER_REMOVAL_WINDOW)
        )?;
        writeln!(
            f,
            "evictions checked against the preemptor's gate: {} ({} with the preemptor unseen)",
            m.evictions_checked, m.evictions_unverified
        )?;
        if g.recorder_missed > 0 {
            writeln!(
                f,
                "WARNING: the recorder missed {} changes; evidence is incomplete",
                g.recorder_missed
            )?;
        }
        writeln!(f, "violations: {}", self.outcome.violations.len())?;
        for v in &self.outcome.violations {
            writeln!(f, "  {v}")?;
        }
        if let Some(dir) = &self.kept {
            writeln!(f, "logs kept in {}", dir.display())?;
        }
        Ok(())
    }
}
