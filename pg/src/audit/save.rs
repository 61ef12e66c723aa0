//! What an audit search found, saved: the failing run as a trace (its schedule in the
//! trace's setup, so that `--replay` runs exactly it) and its psql scripts beside it, under a
//! name no earlier audit's failure has.

use super::Failure;
use leaselab_model::Config;
use leaselab_trace::TraceFileError;

/// A spec file's name without `.toml`: what names its failures.
pub fn spec_stem(file: &str) -> String {
    std::path::Path::new(file)
        .file_stem()
        .map_or_else(|| "spec".to_string(), |s| s.to_string_lossy().into_owned())
}

/// `base`, or `base-2`, `base-3`, … — the first whose trace (`.trace`) and scripts (`.psql`)
/// `out` does not hold yet: a second audit never replaces what an earlier one found.
pub fn unused_name(out: &std::path::Path, base: &str) -> String {
    let taken =
        |n: &str| out.join(format!("{n}.trace")).exists() || out.join(format!("{n}.psql")).exists();
    std::iter::once(base.to_string())
        .chain((2u64..).map(|k| format!("{base}-{k}")))
        .find(|n| !taken(n))
        .unwrap_or_else(|| base.to_string())
}

fn cannot_write(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> TraceFileError + '_ {
    move |error| TraceFileError::Write {
        path: path.display().to_string(),
        error,
    }
}

/// Writes the psql scripts of a failure into `dir` (emptied first).
pub fn write_scripts(
    dir: &std::path::Path,
    files: &crate::spec::psql::Files,
) -> Result<(), TraceFileError> {
    let _ = std::fs::remove_dir_all(dir);
    for (name, text) in files {
        let p = dir.join(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).map_err(cannot_write(parent))?;
        }
        std::fs::write(&p, text).map_err(cannot_write(&p))?;
    }
    Ok(())
}

/// Saves what an audit search of `spec` (drawn from `seed`) found: the shrunk schedule's
/// failing run as `out/audit-<spec>-<seed>.trace` (the schedule itself in its setup, so that
/// `--replay` runs exactly it) and its psql scripts beside it; the trace's path.
pub(super) fn save_found(
    spec: &crate::spec::Spec,
    client: leaselab_gen::Service,
    found: &leaselab_gen::search::Found<Failure>,
    seed: u64,
    out: &std::path::Path,
) -> Result<std::path::PathBuf, TraceFileError> {
    let f = &found.failure;
    let name = unused_name(out, &format!("audit-{}-{seed}", spec_stem(&spec.file)));
    let scripts = crate::spec::psql::scripts(
        spec,
        &f.history,
        &f.pauses,
        &format!("{name}: a history of `leaselab audit {}`", spec.file),
    );
    // Its configuration is not written: a spec's statements read none of it.
    let mut t = leaselab_trace::Trace::new(&name, Config::default(), f.history.clone());
    t.seed = seed;
    t.spec = Some(spec.file.clone());
    t.setup = found.minimal.setup_lines();
    // How the client took the intents: a replay must take them the same way.
    if client.aim != leaselab_gen::Aim::Uniform {
        t.setup.push(format!("{}{}", super::AIM, client.aim.name()));
    }
    if client.second_conn {
        t.setup.push(super::LEASE_CONNS_2.to_string());
    }
    t.title = format!(
        "audit of {}: a generated schedule, shrunk",
        std::path::Path::new(&spec.file)
            .file_name()
            .map_or(spec.file.clone(), |f| f.to_string_lossy().into_owned())
    );
    t.expect = f.report.verdict();
    std::fs::create_dir_all(out).map_err(cannot_write(out))?;
    let file = out.join(format!("{name}.trace"));
    t.save(&file)?;
    write_scripts(&out.join(format!("{name}.psql")), &scripts)?;
    Ok(file)
}
