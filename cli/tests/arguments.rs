//! Arguments that would be silently ignored are refused instead, naming both sides: a run
//! must never look as if it honoured a flag it did not read.

mod common;
use common::leaselab;

#[test]
fn arguments_that_do_not_apply_are_refused_not_ignored() {
    for (args, names) in [
        (
            &["diff", "traces/F4.trace", "--gen", "3"][..],
            ["[FILES]...", "--gen <N>"],
        ),
        (
            &["diff", "traces/F4.trace", "--fence", "off"],
            ["[FILES]...", "--fence"],
        ),
        (
            &["diff", "traces/F4.trace", "--driver", "turmoil"],
            ["[FILES]...", "--driver"],
        ),
        (
            &["diff", "--gen", "3", "--holders", "3"],
            ["--gen <N>", "--holders"],
        ),
        (
            &["diff", "--gen", "3", "--sim-seeds", "0..2"],
            ["--gen <N>", "--sim-seeds"],
        ),
        (
            &["diff", "traces/F4.trace", "--seed", "4"],
            ["[FILES]...", "--seed"],
        ),
        (
            &["diff", "--sim-seeds", "0..1", "--steps", "5"],
            ["--sim-seeds", "--steps"],
        ),
        (
            &[
                "check",
                "--serve",
                "127.0.0.1:3000",
                "--trace-out",
                "x.trace",
            ],
            ["--serve <ADDR>", "--trace-out"],
        ),
    ] {
        let (code, out) = leaselab(args);
        assert_eq!(code, 2, "{args:?}: {out}");
        assert!(out.contains("cannot be used with"), "{args:?}: {out}");
        for n in names {
            assert!(out.contains(n), "{args:?} should name {n}: {out}");
        }
    }
}
