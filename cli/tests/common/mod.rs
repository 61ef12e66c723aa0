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

/// Whether a browser test can run; with `LEASELAB_REQUIRE_CHROMIUM=1` (CI) its absence fails,
/// otherwise `test` is listed in the skip log as not run.
#[allow(dead_code)]
pub fn chromium(test: &str) -> Option<&'static str> {
    for c in ["chromium", "chromium-browser"] {
        if Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return Some(c);
        }
    }
    let msg = "chromium not found: install the Debian package `chromium`";
    println!("{msg}");
    assert!(std::env::var("LEASELAB_REQUIRE_CHROMIUM").is_err(), "{msg}");
    if let Ok(log) = std::env::var("LEASELAB_SKIP_LOG") {
        use std::io::Write as _;
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
        {
            let _ = writeln!(f, "{test}: skipped, {msg}");
        }
    }
    None
}

/// Runs headless Chromium on `page` (a file or an address) and returns what it printed;
/// `profile` names its own profile folder: tests run in parallel, and a second Chromium on a
/// profile in use hands its work to the first and prints nothing.
#[allow(dead_code)]
pub fn headless(browser: &str, page: &str, profile: &str, extra: &[&str]) -> String {
    let dir =
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("chromium-profile-{profile}"));
    let o = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", dir.display()))
        .args(extra)
        .arg(page)
        .output()
        .expect("chromium runs");
    String::from_utf8_lossy(&o.stdout).to_string()
}
