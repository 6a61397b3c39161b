//! The job kinds' CRDs and the demo's training runtime on the sandbox's clusters, for the
//! demo with JobSets, TrainJobs or RayJobs (`--kind`) or `--integrations`.

use std::path::Path;

use crate::harness::sandbox::Sandbox;

/// Installs the job kinds' CRDs (JobSet, Kubeflow Trainer, KubeRay; read from `crds`, see
/// [`crate::harness::integrations`]) on the manager and every worker, and the demo's
/// ClusterTrainingRuntime ([`super::kinds::training_runtime`]) on each: the workers build
/// TrainJobs' JobSets from it, the manager reads their pod sets from it.
pub fn install(sandbox: &Sandbox, crds: &Path) -> anyhow::Result<()> {
    let crds = crate::harness::integrations::load_crds(crds)?;
    sandbox.install_integrations(&crds)?;
    let runtime = super::kinds::training_runtime(super::jobs::GRACE_SECONDS);
    for cluster in std::iter::once(&sandbox.manager).chain(&sandbox.workers) {
        cluster.apply_object(
            "trainer.kubeflow.org",
            "v1alpha1",
            "clustertrainingruntimes",
            runtime.clone(),
        )?;
    }
    Ok(())
}
