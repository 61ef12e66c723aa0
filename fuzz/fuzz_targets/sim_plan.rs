#![no_main]
//! `sim_plan`: see leaselab_fuzz_targets::sim_plan. `cargo test` replays this target's corpus through
//! the same function on stable.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    leaselab_fuzz_targets::sim_plan::fuzz(data);
});
