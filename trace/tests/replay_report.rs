//! One report format for every comparison: what `replay` prints about a trace that no longer
//! reproduces (the first diverging step with both outcomes, how many more followed, a changed
//! verdict on a line of its own), and the same words for a differential run.

use leaselab_checkers::{Check, Report, Violation};
use leaselab_model::Outcome;
use leaselab_trace::compare::{Comparison, Divergence, Judged, Sides};

fn divergence(seq: u64) -> Divergence {
    Divergence {
        line: format!("{seq} t=0 local=0 holder-a write … => accepted"),
        seq,
        reference: Outcome::Accepted,
        candidate: Outcome::Rejected,
    }
}

fn report(divergences: Vec<Divergence>, violated: bool, expected: &[Check]) -> Comparison {
    let violations = if violated {
        vec![Violation {
            check: Check::I3,
            message: "tokens went down".into(),
            events: vec![1, 2],
        }]
    } else {
        Vec::new()
    };
    Comparison {
        steps: 9,
        divergences,
        judged: Some(Judged {
            expected: expected.to_vec(),
            report: Report {
                violations,
                ..Default::default()
            },
        }),
        ..Comparison::new(Sides::REPLAY)
    }
}

#[test]
fn a_clean_replay_is_one_line() {
    let r = report(Vec::new(), true, &[Check::I3]);
    assert!(r.ok());
    assert_eq!(r.describe(), "ok (9 steps, verdict I3)");
    assert_eq!(
        report(Vec::new(), false, &[]).describe(),
        "ok (9 steps, verdict ok)"
    );
}

#[test]
fn one_divergence_is_named_without_a_count_of_more() {
    let r = report(vec![divergence(4)], true, &[Check::I3]);
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
        &[Check::I3],
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
    let r = report(vec![divergence(4)], false, &[Check::I3]);
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

#[test]
fn a_differential_run_uses_the_same_words_for_its_sides_and_the_final_state() {
    let mut c = Comparison::new(Sides::DIFF);
    c.steps = 3;
    c.final_state = Some(Vec::new());
    assert_eq!(c.describe(), "ok (3 steps, final state equal)");
    c.final_state = Some(vec!["floors: model [], postgres [1]".into()]);
    assert!(!c.ok());
    assert_eq!(
        c.describe(),
        "FINAL STATE DIFFERS:\n    floors: model [], postgres [1]"
    );
    c.final_state = None;
    c.divergences = vec![divergence(2)];
    assert!(c
        .describe()
        .starts_with("DIVERGED at step #2: postgres `accepted`, model `rejected`"));
}
