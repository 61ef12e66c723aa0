//! The deliberately wrong database rules of the differential's negative controls.

/// A deliberately wrong database rule, switched on only by the negative controls of the
/// differential (never by a trace): each must make the model diverge from PostgreSQL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum WrongRule {
    /// A plain `UPDATE … WHERE …` waits for a locked row before evaluating its WHERE.
    UpdateWaitsBeforeWhere,
    /// A REPEATABLE READ transaction reads the newest committed rows, not its snapshot.
    RepeatableReadReadsLatest,
    /// A statement waiting on a lock is dropped when its client disconnects.
    DisconnectDropsWaiter,
    /// A plain UPDATE that waited for a row lock and whose re-check failed releases the row
    /// at once (PostgreSQL keeps it locked until the transaction ends).
    FailedRecheckReleasesRow,
    /// The waiters of a released row lock proceed only in the order they queued (PostgreSQL
    /// lets a later waiter lock first).
    WaitersInQueueOrder,
}

/// The lock-protocol deviations a wrong rule switches on.
pub(crate) fn deviations(w: Option<WrongRule>) -> crate::protocol::Deviations {
    crate::protocol::Deviations {
        update_waits_before_where: w == Some(WrongRule::UpdateWaitsBeforeWhere),
        failed_recheck_releases_row: w == Some(WrongRule::FailedRecheckReleasesRow),
    }
}

impl WrongRule {
    /// Every wrong rule.
    pub const ALL: [WrongRule; 5] = [
        WrongRule::UpdateWaitsBeforeWhere,
        WrongRule::RepeatableReadReadsLatest,
        WrongRule::DisconnectDropsWaiter,
        WrongRule::FailedRecheckReleasesRow,
        WrongRule::WaitersInQueueOrder,
    ];

    /// The spelling on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            WrongRule::UpdateWaitsBeforeWhere => "update-waits-before-where",
            WrongRule::RepeatableReadReadsLatest => "repeatable-read-reads-latest",
            WrongRule::DisconnectDropsWaiter => "disconnect-drops-waiter",
            WrongRule::FailedRecheckReleasesRow => "failed-recheck-releases-row",
            WrongRule::WaitersInQueueOrder => "waiters-in-queue-order",
        }
    }
}

impl std::str::FromStr for WrongRule {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        WrongRule::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = WrongRule::ALL.iter().map(|r| r.as_str()).collect();
                format!(
                    "unknown wrong rule `{s}`; expected one of: {}",
                    names.join(", ")
                )
            })
    }
}
