//! The jobs pane's keys in a real terminal, on a real one-node Slurm (reached through a loopback
//! sshd login node) and the real kubectl against the fake API server: Enter opens a job's own
//! detail, `l` runs the scheduler's log command (the job's StdOut as `scontrol show job` names
//! it, followed in `less` on the login node; `kubectl logs -f` of the Job's newest pod, through a
//! stand-in kubectl that records its argv), and `/` filters the jobs, not the boxes.

mod support;

use std::time::Duration;

use support::kube::FakeKube;
use support::slurm::Slurm;
use support::tmux::Tmux;

#[test]
fn enter_opens_a_jobs_detail_and_l_runs_its_schedulers_log_command() {
    let slurm = Slurm::start();
    let mut lab = support::Lab::new();
    let login = lab.start_host("login");
    slurm.shim_clients_on(&login);
    let id = slurm.sbatch(&[
        "-J",
        "train-e2e",
        "--wrap",
        "i=0; while [ $i -lt 600 ]; do echo JOBLINE-$i; i=$((i+1)); sleep 1; done",
    ]);
    slurm.wait_for_state(&id, "RUNNING", Duration::from_secs(30));
    let kube = FakeKube::start(&["running-pvc"]);
    // kubectl for the dashboard: the real one for its reads; `logs` recorded and answered.
    let bin = lab.path("standin-bin");
    std::fs::create_dir_all(&bin).expect("bin");
    let argv_log = lab.path("kubectl-argv");
    std::fs::write(
        bin.join("kubectl"),
        format!(
            "#!/bin/sh\ncase \" $* \" in *' logs '*) echo \"$*\" >> '{}'; \
             echo KLOGS-FOLLOWING; exec sleep 600;; esac\nexec /usr/bin/kubectl \"$@\"\n",
            argv_log.display()
        ),
    )
    .expect("kubectl stand-in");
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(bin.join("kubectl"), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
    }
    let clusters = format!(
        "[[slurm]]\nname = \"hpc\"\n{}\nnames = [\"train-*\"]\n\n{}\n",
        lab.host_entry(&login),
        kube.entry("lab", "")
    );
    let config = lab.fleet("fleet.toml", &clusters, &[]);
    let command = format!(
        "env -u SSH_AUTH_SOCK -u KUBECONFIG HOME={} PATH={}:$PATH XDG_STATE_HOME={} {} \
         --config {}; echo RIGWATCH-EXITED-$?; sleep 60",
        kube.home().display(),
        bin.display(),
        lab.path("state").display(),
        env!("CARGO_BIN_EXE_rigwatch"),
        config.display()
    );
    let tmux = Tmux::start("jobkeys", &command);
    tmux.wait_for("both clusters' jobs", Duration::from_secs(40), |s| {
        s.contains(&format!("hpc/{id}")) && s.contains("lab/")
    });

    // Tab to the jobs pane, keep hpc's jobs: Enter opens the Slurm job's own detail.
    tmux.keys(&["Tab", "/", "h", "p", "c", "Enter"]);
    tmux.wait_for("the jobs filtered", Duration::from_secs(10), |s| {
        s.contains("match /hpc") && !s.contains("lab/")
    });
    tmux.keys(&["Enter"]);
    tmux.wait_for("the Slurm job's detail", Duration::from_secs(10), |s| {
        s.contains(&format!("Slurm job {id} on hpc")) && s.contains("T cancels the job (scancel)")
    });
    // l: the job's output file on the login node, followed.
    tmux.keys(&["l"]);
    let screen = tmux.wait_for("the job's output in less", Duration::from_secs(20), |s| {
        s.contains("JOBLINE-") && s.contains("Waiting for data")
    });
    assert!(!screen.contains("KLOGS"), "{screen}");
    tmux.keys(&["C-c"]);
    std::thread::sleep(Duration::from_millis(300));
    tmux.keys(&["q"]);
    tmux.wait_for("back from the login node", Duration::from_secs(15), |s| {
        s.contains(&format!("back from ssh (Slurm job {id} on hpc)"))
    });

    // The Kubernetes Job: Esc to the overview, filter the jobs to lab's, Enter, then l.
    tmux.escape_closing(&format!("Slurm job {id} on hpc"));
    tmux.keys(&["/"]);
    tmux.wait_for("the filter prompt", Duration::from_secs(10), |s| {
        s.contains("filter jobs /hpc")
    });
    tmux.keys(&["C-h", "C-h", "C-h", "l", "a", "b", "Enter"]);
    tmux.wait_for("lab's jobs only", Duration::from_secs(10), |s| {
        s.contains("match /lab") && !s.contains(&format!("hpc/{id}"))
    });
    tmux.keys(&["Enter"]);
    tmux.wait_for(
        "the Kubernetes Job's detail",
        Duration::from_secs(10),
        |s| s.contains("Kubernetes Job") && s.contains("on lab") && s.contains("── Pods"),
    );
    tmux.keys(&["l"]);
    tmux.wait_for("kubectl logs", Duration::from_secs(15), |s| {
        s.contains("KLOGS-FOLLOWING") && s.contains("rigwatch: kubectl --context=fake")
    });
    let argv = std::fs::read_to_string(&argv_log).expect("kubectl argv");
    assert!(
        argv.contains("--context=fake")
            && argv.contains(&format!("--kubeconfig={}", kube.kubeconfig().display()))
            && argv.contains("--namespace=ml")
            && argv.contains("logs -f "),
        "{argv}"
    );
    tmux.keys(&["C-c"]);
    tmux.wait_for("kubectl ended", Duration::from_secs(15), |s| {
        s.contains("press Enter to go back")
    });
    tmux.keys(&["Enter"]);
    tmux.wait_for("the dashboard back", Duration::from_secs(15), |s| {
        s.contains("kubectl (Kubernetes Job")
    });
    tmux.keys(&["q"]);
    let screen = tmux.wait_for("exit", Duration::from_secs(15), |s| {
        s.contains("RIGWATCH-EXITED-")
    });
    assert!(screen.contains("RIGWATCH-EXITED-0"), "{screen}");
}
