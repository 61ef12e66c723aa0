//! turmoil driver (below)
pub fn run(setup: crate::Setup) -> crate::SimRun { crate::fast::FastSim::new(setup).run() }
