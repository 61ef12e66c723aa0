//! Typed names so a token is never confused with a TTL and a holder never with a scope
//! (C-CUSTOM-TYPE). All are plain strings or integers on the wire and in traces.

use std::fmt;
use std::sync::Arc;

/// A fencing token: strictly increasing per lease, handed out on every acquire (I2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Token(pub u64);

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

macro_rules! name_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        ///
        /// Shared (`Arc<str>`): names are cloned into every event of a history, so a clone is
        /// a reference-count increment, not an allocation.
        #[derive(Clone, Debug)]
        pub struct $name(Arc<str>);

        // Hashes the text, as equality compares it (the pointer test is only a shortcut).
        impl std::hash::Hash for $name {
            fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
                self.0.hash(h)
            }
        }

        // Names in a run are clones of a few shared strings, so most comparisons are of a name
        // with itself: a pointer test answers those without touching the bytes. The order is
        // still the text's, so every map iterates the same way whatever shared what.
        impl PartialEq for $name {
            fn eq(&self, o: &Self) -> bool {
                Arc::ptr_eq(&self.0, &o.0) || self.0 == o.0
            }
        }
        impl Eq for $name {}
        impl PartialOrd for $name {
            fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
                Some(self.cmp(o))
            }
        }
        impl Ord for $name {
            fn cmp(&self, o: &Self) -> std::cmp::Ordering {
                if Arc::ptr_eq(&self.0, &o.0) {
                    std::cmp::Ordering::Equal
                } else {
                    self.0.cmp(&o.0)
                }
            }
        }

        impl $name {
            /// Wraps a string.
            pub fn new(s: impl AsRef<str>) -> Self {
                Self(Arc::from(s.as_ref()))
            }
            /// The name as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                Self::new(s)
            }
        }
    };
}

name_type!(
    /// Who holds (or wants) a lease: `holder-a`, `holder-b`.
    Holder
);
name_type!(
    /// A lease row's primary key: `report-job`.
    LeaseName
);
name_type!(
    /// The unit the fence protects: `daily-report`. One floor row per scope.
    Scope
);
name_type!(
    /// A row inside a scope: `summary`, `detail`.
    Part
);
name_type!(
    /// A database connection (a PostgreSQL session). Blocking, transactions and `await` are
    /// per connection, exactly as in PostgreSQL.
    ConnId
);

/// Holder names by index: `holder-a`, `holder-b`, … (`holder-26` and on past the alphabet).
/// The simulation, the holder schedules and the fuzz targets name their holders this one way.
pub fn holder_name(i: usize) -> String {
    let letters = b"abcdefghijklmnopqrstuvwxyz";
    match letters.get(i) {
        Some(c) => format!("holder-{}", *c as char),
        None => format!("holder-{i}"),
    }
}

/// The parameters the sources use, so cases and tests say what they mean.
pub mod defaults {
    /// The lease every source experiment competes for.
    pub const LEASE: &str = "report-job";
    /// The scope the report job writes.
    pub const SCOPE: &str = "daily-report";
    /// First part of the scope.
    pub const SUMMARY: &str = "summary";
    /// Second part of the scope.
    pub const DETAIL: &str = "detail";
    /// First holder.
    pub const HOLDER_A: &str = "holder-a";
    /// Second holder.
    pub const HOLDER_B: &str = "holder-b";
    /// F4's TTL.
    pub const TTL_MS: u64 = 1500;
    /// F4's renew period (about TTL/4).
    pub const RENEW_MS: u64 = 400;
    /// The local safety margin subtracted from the TTL for the local deadline.
    pub const MARGIN_MS: u64 = 300;
}
