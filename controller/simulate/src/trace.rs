//! The simulator's input: worker clusters and the workloads submitted to them, read from a
//! YAML or CSV file (the format is documented in charts/baton/README.md, "Choosing
//! singleClusterPreemptionTimeout").
//!
//! YAML:
//! ```yaml
//! workers:
//!   - {name: worker-1, cpus: 64}
//! workloads:            # times in seconds
//!   - {name: train, arrival: 12.5, cpus: 8, pods: 2, priority: 1000, run: 600, stop: 30}
//!   - {name: etl-1, arrival: 0, cpus: 4, pods: 4, priority: 100, run: 900, stop: 5, cluster: worker-1}
//! ```
//! CSV: a `# workers: worker-1=64 worker-2=32` line, a header naming the columns `name,
//! arrival, cpus, pods, priority, run, stop` and optionally `cluster`, then one workload a
//! line. A workload with a `cluster` is submitted directly on that worker; the others go
//! through the manager.

use std::collections::HashSet;
use std::path::Path;

use serde::Deserialize;
use serde_saphyr::Spanned;

use super::events::Millis;

/// At most this many workers (a workload's clusters are kept in a 64-bit set).
pub const MAX_WORKERS: usize = 64;

#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    pub workers: Vec<WorkerSpec>,
    /// Sorted by arrival (ties keep the file's order).
    pub workloads: Vec<TraceWorkload>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct WorkerSpec {
    pub name: String,
    /// The worker's ClusterQueue quota, in milli-CPUs.
    pub cpu_milli: i64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TraceWorkload {
    pub name: String,
    pub arrival: Millis,
    /// Requests of all pods together, in milli-CPUs.
    pub cpu_milli: i64,
    pub pods: u32,
    pub priority: i32,
    /// How long it runs once started (restarted from scratch after an eviction).
    pub run: Millis,
    /// How long its pods take to stop once evicted (the grace period): it holds its quota
    /// until then.
    pub stop: Millis,
    /// Submitted directly on this worker (index into `workers`); `None`: through the manager.
    pub cluster: Option<usize>,
}

#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("cannot read trace {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("line {line}: field {field}: {message}")]
    Field {
        line: usize,
        field: String,
        message: String,
    },
    #[error("not a valid YAML trace: {0}")]
    Yaml(String),
    #[error("{0}")]
    Other(String),
}

fn field_error(line: usize, field: &str, message: impl Into<String>) -> TraceError {
    TraceError::Field {
        line,
        field: field.to_string(),
        message: message.into(),
    }
}

/// Reads a trace file: CSV when its name ends in `.csv`, YAML otherwise.
pub fn load(path: &Path) -> Result<Trace, TraceError> {
    let text = std::fs::read_to_string(path).map_err(|source| TraceError::Read {
        path: path.display().to_string(),
        source,
    })?;
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
    {
        parse_csv(&text)
    } else {
        parse_yaml(&text)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct YamlTrace {
    workers: Vec<YamlWorker>,
    #[serde(default)]
    workloads: Vec<YamlWorkload>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct YamlWorker {
    name: Spanned<String>,
    cpus: Spanned<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct YamlWorkload {
    name: Spanned<String>,
    arrival: Spanned<f64>,
    cpus: Spanned<f64>,
    #[serde(default)]
    pods: Option<Spanned<u32>>,
    #[serde(default)]
    priority: Option<Spanned<i32>>,
    run: Spanned<f64>,
    #[serde(default)]
    stop: Option<Spanned<f64>>,
    #[serde(default)]
    cluster: Option<Spanned<String>>,
}

fn line_of<T>(s: &Spanned<T>) -> usize {
    s.referenced.line() as usize
}

/// Parses a YAML trace.
pub fn parse_yaml(text: &str) -> Result<Trace, TraceError> {
    let raw: YamlTrace =
        serde_saphyr::from_str(text).map_err(|e| TraceError::Yaml(e.to_string()))?;
    let workers = raw
        .workers
        .iter()
        .map(|w| {
            Ok(WorkerSpec {
                name: w.name.value.clone(),
                cpu_milli: milli_cpus(w.cpus.value, line_of(&w.cpus), "cpus")?,
            })
        })
        .collect::<Result<Vec<_>, TraceError>>()?;
    let lines: Vec<usize> = raw.workers.iter().map(|w| line_of(&w.name)).collect();
    check_workers(&workers, &lines)?;
    let mut names = HashSet::new();
    let mut workloads = Vec::with_capacity(raw.workloads.len());
    for w in &raw.workloads {
        let line = line_of(&w.name);
        let cluster = match &w.cluster {
            None => None,
            Some(c) => Some(cluster_index(&workers, &c.value, line_of(c))?),
        };
        let workload = TraceWorkload {
            name: w.name.value.clone(),
            arrival: seconds(w.arrival.value, line_of(&w.arrival), "arrival")?,
            cpu_milli: milli_cpus(w.cpus.value, line_of(&w.cpus), "cpus")?,
            pods: w.pods.as_ref().map(|p| p.value).unwrap_or(1),
            priority: w.priority.as_ref().map(|p| p.value).unwrap_or(0),
            run: seconds(w.run.value, line_of(&w.run), "run")?,
            stop: match &w.stop {
                Some(s) => seconds(s.value, line_of(s), "stop")?,
                None => 0,
            },
            cluster,
        };
        let pods_line = w.pods.as_ref().map(line_of).unwrap_or(line);
        check_workload(&workload, &workers, line, pods_line, &mut names)?;
        workloads.push(workload);
    }
    Ok(finish(workers, workloads))
}

const COLUMNS: [&str; 8] = [
    "name", "arrival", "cpus", "pods", "priority", "run", "stop", "cluster",
];

/// Parses a CSV trace.
pub fn parse_csv(text: &str) -> Result<Trace, TraceError> {
    let mut workers: Option<Vec<WorkerSpec>> = None;
    let mut header: Option<Vec<Option<usize>>> = None;
    let mut names = HashSet::new();
    let mut workloads = Vec::new();
    for (i, raw_line) in text.lines().enumerate() {
        let line = i + 1;
        let trimmed = raw_line.trim();
        if trimmed.is_empty() {
            continue;
        }
        if let Some(comment) = trimmed.strip_prefix('#') {
            if let Some(list) = comment.trim().strip_prefix("workers:") {
                let parsed = parse_worker_list(list, line)?;
                check_workers(&parsed, &vec![line; parsed.len()])?;
                workers = Some(parsed);
            }
            continue;
        }
        let cells: Vec<&str> = trimmed.split(',').map(str::trim).collect();
        let Some(columns) = &header else {
            header = Some(parse_header(&cells, line)?);
            continue;
        };
        let Some(workers) = &workers else {
            return Err(field_error(
                line,
                "workers",
                "a `# workers: NAME=CPUS ...` line must come before the workloads",
            ));
        };
        let row = CsvRow {
            cells,
            columns,
            line,
        };
        let workload = row.workload(workers)?;
        check_workload(&workload, workers, line, line, &mut names)?;
        workloads.push(workload);
    }
    let workers = workers.ok_or_else(|| {
        TraceError::Other("the CSV trace has no `# workers: NAME=CPUS ...` line".to_string())
    })?;
    Ok(finish(workers, workloads))
}

/// A workload line of a CSV trace, read through the header's `columns` (the cell of each
/// of [`COLUMNS`], if the header names it).
struct CsvRow<'a> {
    cells: Vec<&'a str>,
    columns: &'a [Option<usize>],
    line: usize,
}

impl<'a> CsvRow<'a> {
    /// The workload the line describes (not yet checked against the others and the workers'
    /// size: `check_workload`).
    fn workload(&self, workers: &[WorkerSpec]) -> Result<TraceWorkload, TraceError> {
        let line = self.line;
        let pods = self.whole(3)?.unwrap_or(1);
        let priority = self.whole(4)?.unwrap_or(0);
        let cluster = match self.cell(7) {
            None => None,
            Some(c) => Some(cluster_index(workers, c, line)?),
        };
        Ok(TraceWorkload {
            name: self.required(0)?.to_string(),
            arrival: seconds(self.number(1)?, line, "arrival")?,
            cpu_milli: milli_cpus(self.number(2)?, line, "cpus")?,
            pods,
            priority,
            run: seconds(self.number(5)?, line, "run")?,
            stop: match self.cell(6) {
                None => 0,
                Some(_) => seconds(self.number(6)?, line, "stop")?,
            },
            cluster,
        })
    }

    /// The cell of `COLUMNS[field]`; `None` when the header lacks the column or the cell is
    /// empty.
    fn cell(&self, field: usize) -> Option<&'a str> {
        self.columns[field]
            .and_then(|c| self.cells.get(c).copied())
            .filter(|c| !c.is_empty())
    }

    fn required(&self, field: usize) -> Result<&'a str, TraceError> {
        self.cell(field)
            .ok_or_else(|| field_error(self.line, COLUMNS[field], "missing value"))
    }

    fn number(&self, field: usize) -> Result<f64, TraceError> {
        let text = self.required(field)?;
        text.parse::<f64>().map_err(|_| {
            field_error(
                self.line,
                COLUMNS[field],
                format!("{text:?} is not a number"),
            )
        })
    }

    /// An optional whole number; `None` when the cell is absent or empty.
    fn whole<T: std::str::FromStr>(&self, field: usize) -> Result<Option<T>, TraceError> {
        let Some(text) = self.cell(field) else {
            return Ok(None);
        };
        text.parse::<T>().map(Some).map_err(|_| {
            field_error(
                self.line,
                COLUMNS[field],
                format!("{text:?} is not a whole number"),
            )
        })
    }
}

fn parse_header(cells: &[&str], line: usize) -> Result<Vec<Option<usize>>, TraceError> {
    let mut columns = vec![None; COLUMNS.len()];
    for (i, cell) in cells.iter().enumerate() {
        let Some(field) = COLUMNS.iter().position(|c| c.eq_ignore_ascii_case(cell)) else {
            return Err(field_error(
                line,
                cell,
                format!("unknown column; the columns are {}", COLUMNS.join(", ")),
            ));
        };
        columns[field] = Some(i);
    }
    for required in [0, 1, 2, 5] {
        if columns[required].is_none() {
            return Err(field_error(
                line,
                COLUMNS[required],
                "the header lacks this column",
            ));
        }
    }
    Ok(columns)
}

fn parse_worker_list(list: &str, line: usize) -> Result<Vec<WorkerSpec>, TraceError> {
    list.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .map(|item| {
            let (name, cpus) = item.split_once('=').ok_or_else(|| {
                field_error(line, "workers", format!("{item:?} is not NAME=CPUS"))
            })?;
            let value: f64 = cpus.parse().map_err(|_| {
                field_error(line, "workers", format!("{cpus:?} is not a number of CPUs"))
            })?;
            Ok(WorkerSpec {
                name: name.to_string(),
                cpu_milli: milli_cpus(value, line, "workers")?,
            })
        })
        .collect()
}

fn milli_cpus(value: f64, line: usize, field: &str) -> Result<i64, TraceError> {
    if !value.is_finite() || value <= 0.0 || value > 1e9 {
        return Err(field_error(
            line,
            field,
            format!("{value} must be a positive number of CPUs"),
        ));
    }
    Ok((value * 1000.0).round().max(1.0) as i64)
}

fn seconds(value: f64, line: usize, field: &str) -> Result<Millis, TraceError> {
    if !value.is_finite() || !(0.0..=1e12).contains(&value) {
        return Err(field_error(
            line,
            field,
            format!("{value} must be a number of seconds ≥ 0"),
        ));
    }
    Ok((value * 1000.0).round() as Millis)
}

fn cluster_index(workers: &[WorkerSpec], name: &str, line: usize) -> Result<usize, TraceError> {
    workers
        .iter()
        .position(|w| w.name == name)
        .ok_or_else(|| field_error(line, "cluster", format!("no worker is named {name:?}")))
}

fn check_workers(workers: &[WorkerSpec], lines: &[usize]) -> Result<(), TraceError> {
    if workers.is_empty() {
        return Err(TraceError::Other("the trace names no workers".to_string()));
    }
    if workers.len() > MAX_WORKERS {
        return Err(TraceError::Other(format!(
            "{} workers: at most {MAX_WORKERS} are supported",
            workers.len()
        )));
    }
    let mut seen = HashSet::new();
    for (w, line) in workers.iter().zip(lines) {
        if w.name.is_empty() || !seen.insert(w.name.as_str()) {
            return Err(field_error(
                *line,
                "name",
                format!("worker name {:?} is empty or repeated", w.name),
            ));
        }
    }
    Ok(())
}

fn check_workload(
    w: &TraceWorkload,
    workers: &[WorkerSpec],
    line: usize,
    pods_line: usize,
    names: &mut HashSet<String>,
) -> Result<(), TraceError> {
    if w.name.is_empty() || !names.insert(w.name.clone()) {
        return Err(field_error(
            line,
            "name",
            format!("workload name {:?} is empty or repeated", w.name),
        ));
    }
    if w.pods == 0 {
        return Err(field_error(pods_line, "pods", "must be at least 1"));
    }
    let room = match w.cluster {
        Some(c) => workers[c].cpu_milli,
        None => workers.iter().map(|w| w.cpu_milli).max().unwrap_or(0),
    };
    if w.cpu_milli > room {
        return Err(field_error(
            line,
            "cpus",
            format!(
                "{} CPUs fit on no worker (the largest it may use has {})",
                w.cpu_milli as f64 / 1000.0,
                room as f64 / 1000.0
            ),
        ));
    }
    Ok(())
}

fn finish(workers: Vec<WorkerSpec>, mut workloads: Vec<TraceWorkload>) -> Trace {
    workloads.sort_by_key(|w| w.arrival);
    Trace { workers, workloads }
}

/// Writes the trace as CSV (the generator's output, so a run can be repeated or edited).
pub fn to_csv(trace: &Trace) -> String {
    let mut out = String::from("# workers:");
    for w in &trace.workers {
        out.push_str(&format!(" {}={}", w.name, w.cpu_milli as f64 / 1000.0));
    }
    out.push_str("\nname,arrival,cpus,pods,priority,run,stop,cluster\n");
    for w in &trace.workloads {
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{}\n",
            w.name,
            w.arrival as f64 / 1000.0,
            w.cpu_milli as f64 / 1000.0,
            w.pods,
            w.priority,
            w.run as f64 / 1000.0,
            w.stop as f64 / 1000.0,
            w.cluster
                .map(|c| trace.workers[c].name.as_str())
                .unwrap_or("")
        ));
    }
    out
}

#[cfg(test)]
mod tests;
