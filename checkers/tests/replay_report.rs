//! What `replay` prints about a trace that no longer reproduces: the first diverging step with
//! both outcomes, how many more followed, and a changed verdict on a line of its own.

use leaselab_checkers::replay::ReplayReport;
use leaselab_checkers::{Check, Report, Violation};
use leaselab_model::replay::Divergence;
use leaselab_model::Outcome;

fn divergence(seq: u64) -> Divergence {
    Divergence {
        line: format!("{seq} t=0 local=0 holder-a write … => accepted"),
        seq,
        recorded: Outcome::Accepted,
        replayed: Outcome::Rejected,
    }
}

fn report(divergences: Vec<Divergence>, violated: bool, expected: &[&str]) -> ReplayReport {
    let violations = if violated {
        vec![Violation {
            check: Check::I3,
            message: "tokens went down".into(),
            events: vec![1, 2],
        }]
    } else {
        Vec::new()
    };
    ReplayReport {
        divergences,
        report: Report {
            violations,
            sometimes: Default::default(),
        },
        expected: expected.iter().map(|s| s.to_string()).collect(),
        steps: 9,
    }
}

#[test]
fn a_clean_replay_is_one_line() {
    let r = report(Vec::new(), true, &["I3"]);
    assert!(r.ok());
    assert_eq!(r.describe(), "ok (9 steps, verdict I3)");
    assert_eq!(
        report(Vec::new(), false, &[]).describe(),
        "ok (9 steps, verdict ok)"
    );
}

#[test]
fn one_divergence_is_named_without_a_count_of_more() {
    let r = report(vec![divergence(4)], true, &["I3"]);
    assert!(!r.ok());
    assert_eq!(
        r.describe(),
        "DIVERGED at step #4: recorded `accepted`, replayed `rejected`\n    step: 4 t=0 local=0 holder-a write … => accepted"
    );
}

#[test]
fn later_divergences_are_counted() {
    let r = report(
        vec![divergence(4), divergence(6), divergence(7)],
        true,
        &["I3"],
    );
    assert!(
        r.describe()
            .ends_with("\n    (2 more diverging steps after it)"),
        "{}",
        r.describe()
    );
}

#[test]
fn a_changed_verdict_follows_the_divergence_on_its_own_line() {
    let r = report(vec![divergence(4)], false, &["I3"]);
    let d = r.describe();
    assert!(
        d.contains("holder-a write … => accepted\n    UNEXPECTED VERDICT: expected=I3 actual=ok"),
        "{d}"
    );
    let r = report(Vec::new(), true, &[]);
    assert_eq!(
        r.describe(),
        "UNEXPECTED VERDICT: expected=ok actual=I3\n      I3 violated: tokens went down"
    );
}
