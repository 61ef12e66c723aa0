//! The committed state of both databases, read back for the differential's final comparison.

use super::error::*;
use super::state::*;
use crate::sql;
use leaselab_model::{
    Attempt, AttemptOutcome, Holder, LeaseName, LeaseRow, Part, PartRow, Scope, Token,
};

impl PgBackend {
    /// The committed state of both databases, for the final comparison with the model. A
    /// database that is down is restarted first: recovery keeps exactly what was committed.
    pub fn snapshot(&mut self) -> Result<leaselab_model::model::Snapshot, PgError> {
        for i in 0..2 {
            self.sides[i].boot_if_down()?;
        }
        let (la, _) = self.admin(0)?;
        let (ra, _) = self.admin(1)?;
        self.rt.block_on(async move {
            let q = |e| pe("snapshot", e);
            let mut snap = leaselab_model::model::Snapshot::default();
            for r in la
                .query(&format!("SELECT name, holder, token, {} FROM lease ORDER BY name", sql::expiry_us("expires_at")), &[])
                .await
                .map_err(q)?
            {
                let exp = ms_of_us(r.get(3)).map_err(|o| PgError::Data(format!("lease expiry: {o}")))?;
                let token: i64 = r.get(2);
                snap.leases.push((
                    LeaseName::new(r.get::<_, String>(0)),
                    LeaseRow {
                        holder: Holder::new(r.get::<_, String>(1)),
                        token: Token(token as u64),
                        expires_at: exp,
                    },
                ));
            }
            for r in ra.query("SELECT scope, max_token FROM fence_floor ORDER BY scope", &[]).await.map_err(q)? {
                let t: i64 = r.get(1);
                snap.floors.push((Scope::new(r.get::<_, String>(0)), Token(t as u64)));
            }
            for r in ra
                .query("SELECT scope, part, content, writer, token FROM report_part ORDER BY scope, part", &[])
                .await
                .map_err(q)?
            {
                let t: i64 = r.get(4);
                snap.parts.push((
                    Scope::new(r.get::<_, String>(0)),
                    Part::new(r.get::<_, String>(1)),
                    PartRow {
                        content: r.get(2),
                        writer: Holder::new(r.get::<_, String>(3)),
                        token: Token(t as u64),
                    },
                ));
            }
            for r in ra.query("SELECT key, content, writer, token FROM publish ORDER BY key", &[]).await.map_err(q)? {
                let t: i64 = r.get(3);
                snap.publishes.push((
                    r.get(0),
                    PartRow {
                        content: r.get(1),
                        writer: Holder::new(r.get::<_, String>(2)),
                        token: Token(t as u64),
                    },
                ));
            }
            for r in ra
                .query("SELECT scope, part, writer, token, accepted FROM write_attempt ORDER BY id", &[])
                .await
                .map_err(q)?
            {
                let t: i64 = r.get(3);
                let acc: bool = r.get(4);
                snap.attempts.push(Attempt {
                    scope: Scope::new(r.get::<_, String>(0)),
                    part: Part::new(r.get::<_, String>(1)),
                    writer: Holder::new(r.get::<_, String>(2)),
                    token: Token(t as u64),
                    outcome: if acc { AttemptOutcome::Accepted } else { AttemptOutcome::Rejected },
                });
            }
            snap.attempts.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
            Ok(snap)
        })
    }
}
