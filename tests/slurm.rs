//! Against a real one-node Slurm (tests/support/slurm.rs): the cluster itself, the squeue
//! command rigwatch runs, and what it reads from it.

mod support;

use std::time::Duration;

use support::slurm::Slurm;

#[test]
fn a_real_cluster_runs_and_fails_a_job() {
    let slurm = Slurm::start();
    let failed = slurm.sbatch(&["-J", "fails", "--wrap", "exit 3"]);
    slurm.wait_for_state(&failed, "FAILED", Duration::from_secs(60));
    let exit = slurm.run(
        "squeue",
        &["-h", "-t", "all", "-j", &failed, "-O", "exit_code:|"],
    );
    // 22.05 prints the wait status: exit 3 is 3 << 8.
    assert_eq!(exit.trim(), "768|");
}
