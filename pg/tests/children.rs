//! The registry of children, in a process of its own: closing it is for the whole process.

use leaselab_pg::children::{self, Reach, SpawnError};
use leaselab_pg::watchdog::Order;
use std::process::Command;

fn alive(pid: u32) -> bool {
    // A zombie (killed, not yet reaped) counts as gone.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| !rest.starts_with('Z')))
        .unwrap_or(false)
}

/// An abandoning command's [`children::kill_all`] kills a listed helper with everything it
/// started (its process group) and a listed holder; after it, no child starts — one started
/// then would be on no list and, if the process ends before its watchdog entry is written, in
/// no cleanup script either: a holder that outlives the run.
#[test]
fn kill_all_reaches_every_listed_child_and_then_nothing_starts() {
    // A helper that starts a grandchild, as `runuser` starts `initdb`.
    let mut helper = Command::new("sh");
    helper.args(["-c", "sleep 300 & echo $!; wait"]);
    helper.stdout(std::process::Stdio::piped());
    let mut helper = children::spawn(&mut helper, Reach::Group, Order::Helper).expect("starts");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(helper.stdout.take().expect("piped")),
        &mut line,
    )
    .expect("the grandchild's pid");
    let grandchild: u32 = line.trim().parse().expect("a pid");
    let mut holder = Command::new("sleep");
    holder.arg("300");
    let mut holder = children::spawn(&mut holder, Reach::Process, Order::Holder).expect("starts");
    assert!(children::listed(helper.id()) && children::listed(holder.id()));
    assert!(alive(grandchild));

    children::kill_all();
    let _ = helper.wait();
    let _ = holder.wait();
    let t = std::time::Instant::now();
    while alive(grandchild) && t.elapsed() < std::time::Duration::from_secs(10) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        !alive(grandchild),
        "the helper's own child outlived kill_all"
    );
    assert!(!children::listed(helper.id()) && !children::listed(holder.id()));

    let mut late = Command::new("/bin/true");
    match children::spawn(&mut late, Reach::Process, Order::Holder) {
        Err(SpawnError::Closed) => {}
        Err(e) => panic!("another error: {e}"),
        Ok(mut c) => {
            let _ = c.kill();
            let _ = c.wait();
            panic!("a child started after kill_all");
        }
    }
    // A holder process as the experiments start it gets the same answer, in words.
    let e = leaselab_pg::real::HolderProc::spawn(Command::new("/bin/true"))
        .err()
        .expect("refused");
    assert!(e.to_string().contains("abandoned"), "{e}");
}
