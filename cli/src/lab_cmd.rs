//! `leaselab lab`: its arguments, and the cases' output, tables and traces as the command
//! prints and writes them.

use crate::args::{BackendArg, Exit};
use crate::lab;
use leaselab_model::FenceMode;
use std::path::PathBuf;

/// `leaselab lab`'s arguments.
#[derive(clap::Args, Debug)]
pub struct LabArgs {
    /// Run one case only (e.g. F4).
    #[arg(long)]
    pub case: Option<String>,
    /// Replace the scope fence in the cases that use it: scope, strict, scope-upsert, row, check-then-write, off.
    #[arg(long)]
    pub fence: Option<FenceMode>,
    /// Write each run's trace to DIR/<name>.trace.
    #[arg(long, value_name = "DIR")]
    pub trace_out: Option<PathBuf>,
    /// Print table 26-1 from the outcomes this run observed.
    #[arg(long)]
    pub table: bool,
    /// Where the cases run.
    #[arg(long, value_enum, default_value_t = BackendArg::Model)]
    pub backend: BackendArg,
    /// Where the throwaway clusters live (`--backend pg`), and the histories F4's and F5's
    /// real processes record (DIR/records/F4, DIR/records/F5).
    #[arg(long, default_value = "target/leaselab-pg", value_name = "DIR")]
    pub pg_dir: PathBuf,
    /// Also run the cases beyond the sources (X1–X7).
    #[arg(long)]
    pub beyond: bool,
}

/// Runs `leaselab lab` as its arguments say, on the model or on PostgreSQL.
pub fn main(a: LabArgs) -> Exit {
    let LabArgs {
        case,
        fence,
        trace_out,
        table,
        backend,
        pg_dir,
        beyond,
    } = a;
    let pg = match backend {
        BackendArg::Model => None,
        BackendArg::Pg => match leaselab_pg::PgBackend::throwaway(&pg_dir) {
            Ok(p) => Some(p),
            Err(e) => {
                eprintln!("leaselab lab: {e}");
                return Exit::Usage;
            }
        },
    };
    let real = std::env::current_exe().ok().map(|exe| lab::RealProcs {
        exe,
        records: pg_dir.join("records"),
    });
    run_lab(case.as_deref(), beyond, fence, trace_out, table, pg, real)
}

fn run_lab(
    case: Option<&str>,
    beyond: bool,
    fence: Option<FenceMode>,
    out: Option<PathBuf>,
    table: bool,
    pg: Option<leaselab_pg::PgBackend>,
    real: Option<lab::RealProcs>,
) -> Exit {
    if pg.is_some() {
        println!("BACKEND postgres: the source SQL on two throwaway clusters (lease26, res26), virtual now()\n");
    }
    let res = match lab::run_select(case, beyond, fence, pg, real) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("leaselab lab: {e}");
            return Exit::Usage;
        }
    };
    print!("{}", res.text);
    if table {
        println!();
        print!("{}", lab::table::render(&res.observed));
    }
    if let Some(dir) = out {
        if let Err(e) = std::fs::create_dir_all(&dir) {
            eprintln!("leaselab lab: cannot create {}: {e}", dir.display());
            return Exit::Usage;
        }
        for r in &res.runs {
            let path = dir.join(format!("{}.trace", r.trace.name));
            if let Err(e) = r.trace.save(&path) {
                eprintln!("leaselab lab: {e}");
                return Exit::Usage;
            }
        }
        println!("wrote {} traces to {}", res.runs.len(), dir.display());
    }
    if res.failed > 0 {
        Exit::Violation
    } else if res.interrupted {
        Exit::Interrupted
    } else {
        Exit::Clean
    }
}
