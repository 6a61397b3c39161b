//! `baton crds`: the generated CRDs, printed or written to files.

use std::io::Write;
use std::path::Path;

use anyhow::Context;

/// Prints all CRDs as one YAML stream to `out`.
pub fn print(out: &mut impl Write) -> anyhow::Result<()> {
    let crds = baton_crds::generate::all_crds()?;
    out.write_all(baton_crds::generate::to_yaml_stream(&crds)?.as_bytes())?;
    Ok(())
}

/// Writes one `<group>_<plural>.yaml` per CRD into `dir` (created if missing).
pub fn write_files(dir: &Path) -> anyhow::Result<Vec<std::path::PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut written = Vec::new();
    for crd in baton_crds::generate::all_crds()? {
        let path = dir.join(baton_crds::generate::file_name(&crd));
        let yaml = format!("---\n{}", baton_crds::generate::to_yaml(&crd)?);
        std::fs::write(&path, yaml).with_context(|| format!("cannot write {}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}
