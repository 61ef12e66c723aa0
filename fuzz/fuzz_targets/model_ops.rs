#![no_main]
//! `model_ops`: see leaselab_fuzz_targets::model_ops. `cargo test` replays this target's corpus through
//! the same function on stable.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    leaselab_fuzz_targets::model_ops::fuzz(data);
});
