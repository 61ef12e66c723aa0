#![no_main]
//! `model_vs_threaded`: see leaselab_fuzz_targets::model_vs_threaded. `cargo test` replays this target's corpus through
//! the same function on stable.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    leaselab_fuzz_targets::model_vs_threaded::fuzz(data);
});
