//! The job kinds' CRDs as their projects ship them (`shared/integrations/crds/`: JobSet,
//! Kubeflow Trainer's TrainJob and runtimes, KubeRay's RayJob and RayCluster), for clusters
//! that serve them. The testbed runs stand-ins for their controllers wherever they are
//! installed (e2e/README.md, "Job kinds: JobSet, TrainJob and RayJob").

use std::path::{Path, PathBuf};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

/// Errors reading the integration CRDs.
#[derive(Debug, thiserror::Error)]
pub enum IntegrationsError {
    #[error("cannot read {path} (set BATON_SHARED_DIR to the shared/ directory)")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} holds no CustomResourceDefinition: {message}")]
    Parse { path: String, message: String },
    #[error("no CRDs in {0} (set BATON_SHARED_DIR to the shared/ directory)")]
    Empty(String),
}

/// `shared/` (`BATON_SHARED_DIR`, else next to the workspace).
pub fn shared_dir() -> PathBuf {
    std::env::var_os("BATON_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared"))
}

/// `shared/integrations/crds/`.
pub fn crds_dir() -> PathBuf {
    shared_dir().join("integrations").join("crds")
}

/// `shared/integrations/examples/`.
pub fn examples_dir() -> PathBuf {
    shared_dir().join("integrations").join("examples")
}

/// Every CRD in the `.yaml` files of `dir`, in file-name order.
pub fn load_crds(dir: &Path) -> Result<Vec<CustomResourceDefinition>, IntegrationsError> {
    let read = |path: &Path| {
        std::fs::read_to_string(path).map_err(|source| IntegrationsError::Read {
            path: path.display().to_string(),
            source,
        })
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|source| IntegrationsError::Read {
            path: dir.display().to_string(),
            source,
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let parse_err = |message: String| IntegrationsError::Parse {
            path: path.display().to_string(),
            message,
        };
        let docs: Vec<serde_json::Value> =
            serde_saphyr::from_multiple(&read(&path)?).map_err(|e| parse_err(e.to_string()))?;
        for doc in docs
            .into_iter()
            .filter(|d| d["kind"] == "CustomResourceDefinition")
        {
            out.push(serde_json::from_value(doc).map_err(|e| parse_err(e.to_string()))?);
        }
    }
    if out.is_empty() {
        return Err(IntegrationsError::Empty(dir.display().to_string()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shared_crds_are_the_three_kinds_and_their_helpers() {
        let crds = load_crds(&crds_dir()).unwrap();
        let mut names: Vec<String> = crds
            .iter()
            .filter_map(|c| c.metadata.name.clone())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "clustertrainingruntimes.trainer.kubeflow.org",
                "jobsets.jobset.x-k8s.io",
                "rayclusters.ray.io",
                "rayjobs.ray.io",
                "trainingruntimes.trainer.kubeflow.org",
                "trainjobs.trainer.kubeflow.org",
            ]
        );
    }

    #[test]
    fn a_directory_without_crds_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            load_crds(dir.path()),
            Err(IntegrationsError::Empty(_))
        ));
    }
}
