//! What to type next: the kubectl commands printed once the controllers (and the demo) are
//! up. Pure text, so it is tested as text.

use std::path::Path;

/// After `--controllers`: how to submit a Workload and follow it.
pub fn try_it(dir: &Path, workers: usize) -> Vec<String> {
    let d = dir.display();
    let mut out = vec![
        "Try it (in another terminal):".to_string(),
        format!("  export KUBECONFIG={d}/manager.kubeconfig"),
        format!("  kubectl apply -f {d}/workload.yaml        # job-1: 2 CPUs, LocalQueue user-queue, namespace default"),
        "  kubectl get kwl                              # ADMITTED once a worker admits it".to_string(),
        "  kubectl describe kwl job-1                   # events: dispatched, admitted on a worker, replicas removed".to_string(),
        format!("  kubectl apply -f {d}/job.yaml             # sample-job: a batch/v1 Job for MultiKueue, 2 pods of 1 CPU"),
        "  kubectl get jobs,kwl                         # its status mirrored from the worker that runs it".to_string(),
    ];
    if workers > 0 {
        out.push(format!(
            "  kubectl --kubeconfig {d}/worker-1.kubeconfig get kwl -A   # a replica"
        ));
    }
    out.extend(common(dir, workers));
    out
}

/// The demo's object: its kind (`JobSet`) and that kind's `kubectl get` name (`jobsets`).
pub struct DemoObject<'a> {
    pub kind: &'a str,
    pub resource: &'a str,
}

/// After the demo: where to look at what just happened. `winner` is the worker the demo's
/// object runs on; `job` its `namespace/name`; `workload` its Workload's name.
pub fn look_around(
    dir: &Path,
    workers: usize,
    winner: &str,
    job: &str,
    workload: &str,
    object: DemoObject<'_>,
) -> Vec<String> {
    let DemoObject { kind, resource } = object;
    let d = dir.display();
    let (namespace, name) = job.split_once('/').unwrap_or(("default", job));
    let w = format!("kubectl --kubeconfig {d}/{winner}.kubeconfig");
    let mut out = vec![
        "Look around (in another terminal):".to_string(),
        format!("  export KUBECONFIG={d}/manager.kubeconfig"),
        format!(
            "  kubectl get {resource},kwl -n {namespace}                 # the {kind} (status mirrored from {winner}) and its Workload"
        ),
        format!(
            "  kubectl describe kwl -n {namespace} {workload}   # the manager's events: gate opened, admitted, replicas removed"
        ),
        format!(
            "  {w} get {resource},pods,kwl -n {namespace}   # the copy of {name} and its pods; the victims suspended, their Workloads evicted"
        ),
        format!("  {w} describe kwl -n {namespace} {workload}"),
    ];
    out.extend(common(dir, workers));
    out
}

fn common(dir: &Path, workers: usize) -> Vec<String> {
    let d = dir.display();
    let workers_log = match workers {
        0 => String::new(),
        1 => format!(", {d}/worker-1.log"),
        n => format!(", {d}/worker-1.log … {d}/worker-{n}.log"),
    };
    vec![
        "  kubectl get mkc                              # worker connections".to_string(),
        "  kubectl describe ac                          # the MultiKueue check: Active".to_string(),
        "  kubectl get cq,lq -A -o wide                 # pending and admitted counts".to_string(),
        format!("Controller logs: {d}/manager.log{workers_log}"),
        "Press Ctrl-C to stop the sandbox and its controllers.".to_string(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn look_around_points_at_the_winner_and_the_preemptor() {
        let text = look_around(
            Path::new("/tmp/d"),
            3,
            "worker-2",
            "demo/train-llm",
            "job-train-llm-1a2b3",
            DemoObject {
                kind: "Job",
                resource: "jobs",
            },
        )
        .join("\n");
        for expected in [
            "export KUBECONFIG=/tmp/d/manager.kubeconfig",
            "kubectl get jobs,kwl -n demo ",
            "# the Job (status mirrored from worker-2)",
            "kubectl describe kwl -n demo job-train-llm-1a2b3",
            "kubectl --kubeconfig /tmp/d/worker-2.kubeconfig get jobs,pods,kwl -n demo",
            "the copy of train-llm",
            "kubectl get cq,lq -A -o wide",
            "kubectl describe ac ",
            "/tmp/d/worker-1.log … /tmp/d/worker-3.log",
        ] {
            assert!(text.contains(expected), "{expected:?} in\n{text}");
        }
    }

    #[test]
    fn look_around_names_the_demos_kind() {
        let text = look_around(
            Path::new("/tmp/d"),
            3,
            "worker-1",
            "demo/train-llm",
            "jobset-train-llm-1a2b3",
            DemoObject {
                kind: "JobSet",
                resource: "jobsets",
            },
        )
        .join("\n");
        assert!(text.contains("kubectl get jobsets,kwl -n demo"), "{text}");
        assert!(
            text.contains("# the JobSet (status mirrored from worker-1)"),
            "{text}"
        );
        assert!(!text.contains("the Job "), "{text}");
    }

    #[test]
    fn try_it_applies_the_sample() {
        let text = try_it(Path::new("/tmp/d"), 1).join("\n");
        assert!(
            text.contains("kubectl apply -f /tmp/d/workload.yaml"),
            "{text}"
        );
        assert!(text.contains("kubectl apply -f /tmp/d/job.yaml"), "{text}");
        assert!(
            text.contains("Controller logs: /tmp/d/manager.log, /tmp/d/worker-1.log"),
            "{text}"
        );
    }
}
