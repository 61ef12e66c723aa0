//! # leaselab-fuzz-targets
//!
//! What each fuzz target in `fuzz/` checks, as ordinary functions: the cargo-fuzz binaries
//! call [`model_ops::fuzz`], [`trace_parse::fuzz`], [`model_vs_threaded::fuzz`] and
//! [`sim_plan::fuzz`], and so does `tests/corpus.rs`, which replays every committed corpus
//! file on stable — CI exercises the targets without nightly or libFuzzer.
//!
//! Each target's input type implements [`arbitrary::Arbitrary`] by reading bytes one at a time
//! (so every byte string is some input, and a mutated byte changes one decision) and has an
//! `encode` that writes an input back as bytes, which seeds the corpora from the lab cases,
//! the committed traces and the simulation's seeds (`cargo run -p leaselab-fuzz-targets
//! --example seed_corpora`).
//!
//! A finding is a panic: a check that fails panics with what it saw, and so does any panic in
//! the code under test. [`run`](model_ops::run)-style functions return the finding instead, for
//! tests that assert a check can fire.

#![warn(missing_docs, unreachable_pub)]

pub mod bytes;
pub mod history_parse;
pub mod model_ops;
pub mod model_vs_threaded;
pub mod sim_plan;
pub mod trace_parse;

/// What a target found: which property failed and the evidence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding(pub String);

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The names of the targets, as directories under `fuzz/corpus/` and binaries in `fuzz/`.
pub const TARGETS: [&str; 5] = [
    "model_ops",
    "trace_parse",
    "model_vs_threaded",
    "sim_plan",
    "history_parse",
];

/// Runs `target` on `data` the way its fuzz binary does (panics on a finding).
pub fn fuzz(target: &str, data: &[u8]) {
    match target {
        "model_ops" => model_ops::fuzz(data),
        "trace_parse" => trace_parse::fuzz(data),
        "model_vs_threaded" => model_vs_threaded::fuzz(data),
        "sim_plan" => sim_plan::fuzz(data),
        "history_parse" => history_parse::fuzz(data),
        other => panic!("no fuzz target `{other}`; the targets are {TARGETS:?}"),
    }
}
