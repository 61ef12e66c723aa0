//! What the tests that run the `leaselab` binary share: the repository root, and one run of
//! the binary there with its exit status and everything it printed.

use std::path::PathBuf;
use std::process::Command;

/// The repository root (commands name `traces/…` relative to it).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Runs `leaselab ARGS` in the repository root: exit status (-1 if killed) and stdout
/// followed by stderr.
pub fn leaselab(args: &[&str]) -> (i32, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .current_dir(root())
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
