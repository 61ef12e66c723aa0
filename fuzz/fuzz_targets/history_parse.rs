#![no_main]
//! `history_parse`: see leaselab_fuzz_targets::history_parse. `cargo test` replays this target's corpus through
//! the same function on stable.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    leaselab_fuzz_targets::history_parse::fuzz(data);
});
