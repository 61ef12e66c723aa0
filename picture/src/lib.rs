//! # leaselab-picture
//!
//! Pictures of one run for a learner: who held which token when (by the database clock and by
//! the holder's own clock), where a pause landed, which write was stale and why the resource
//! kept or refused it. Everything is derived from a recorded [`History`](leaselab_model::History),
//! its configuration and the checkers' [`Report`](leaselab_checkers::Report) — a lab case, a
//! simulation run, a replayed trace and a PostgreSQL run draw the same way.
//!
//! - [`story`]: the run's key facts (holdings, pauses, writes, the violating pair), once.
//! - [`key`]: which of those facts a short picture shows, most telling first.
//! - [`timeline`]: a terminal picture, one lane per holder, at most 12 lines.
//! - [`mermaid`]: a Mermaid `sequenceDiagram` (like the source's figure 26-2).
//! - [`html`]: one self-contained offline HTML page with lanes on a time axis.
//! - [`explain`]: the run in plain words, with the safeguard that would have stopped it.
//! - [`lesson`]: the `LEASELAB_FENCE` switch of the invariant tests and the exercise map.
//!
//! ## Environment
//!
//! - `LEASELAB_FENCE=MODE` (`off`, `check-then-write`, `row`, `strict`, `scope-upsert`,
//!   `scope`): the fence the invariant tests of `checkers/tests/properties.rs` and
//!   `sim/tests/sim.rs` run against ([`lesson::fence_under_test`]); unset, the scope fence.

#![warn(missing_docs, unreachable_pub)]

pub mod explain;
pub mod html;
pub mod key;
pub mod lesson;
pub mod mermaid;
pub mod story;
pub mod timeline;

pub use story::Story;
