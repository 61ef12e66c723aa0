//! What the tests that run the `leaselab` binary share: the repository root, and one run of
//! the binary there with its exit status and everything it printed.

use std::path::PathBuf;
use std::process::Command;

/// The repository root (commands name `traces/…` relative to it).
#[allow(dead_code)] // not every test file runs in the root
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Runs `leaselab ARGS` in the repository root: exit status (-1 if killed) and stdout
/// followed by stderr.
#[allow(dead_code)] // not every test file runs in the root
pub fn leaselab(args: &[&str]) -> (i32, String) {
    leaselab_in(&root(), args)
}

/// Runs `leaselab ARGS` in `dir`.
#[allow(dead_code)]
pub fn leaselab_in(dir: &std::path::Path, args: &[&str]) -> (i32, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("runs");
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.code().unwrap_or(-1), out)
}

/// Runs `leaselab ARGS` where the test runs: exit status (`None` if killed), and stdout and
/// stderr apart (for tests that say which of the two a line belongs on).
#[allow(dead_code)]
pub fn leaselab_apart(args: &[&str]) -> (Option<i32>, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .args(args)
        .output()
        .expect("runs");
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}
