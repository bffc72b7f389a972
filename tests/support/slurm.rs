//! A real one-node Slurm cluster per test: Debian's `munged`, `slurmctld` and `slurmd` (22.05),
//! run as root in the foreground with their own ports, munge socket and key, state, spool, pid
//! and log files under a temp dir, so tests and other clusters on the machine never meet. The
//! node is this machine (`hostname -s`) with its CPUs and two fake GPUs (`/dev/tty10-11`, the
//! way Slurm's own test suite fakes them). Without slurmdbd slurmctld refuses
//! `AccountingStorageTRES=gres/gpu` ("slurmdbd is required"), so `tres-alloc` never carries
//! the GPUs here and only `tres-per-node` shows them. Clients find
//! the cluster through `SLURM_CONF`. When the daemons cannot start the test fails with their
//! logs: a cluster test that skips proves nothing.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{Sshd, free_port, whoami};

/// How long the daemons get to bring the node up; on a loaded 2-core machine it takes ~2 s.
const START_LIMIT: Duration = Duration::from_secs(60);

pub struct Slurm {
    pub dir: tempfile::TempDir,
    pub conf: PathBuf,
    /// The node's name: this machine's short hostname, which slurmd must be started as.
    pub node: String,
    /// Where submitted jobs run and write their `slurm-N.out`.
    pub jobs: PathBuf,
    children: Vec<(&'static str, Child)>,
}

fn short_hostname() -> String {
    let out = Command::new("hostname")
        .arg("-s")
        .output()
        .expect("hostname -s");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn cpus() -> String {
    let out = Command::new("nproc").output().expect("nproc");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

impl Slurm {
    /// Starts munged, slurmctld and slurmd and waits (bounded) until `sinfo` shows the node
    /// idle; panics with every daemon's log when it does not.
    pub fn start() -> Slurm {
        Slurm::start_with_min_job_age(600)
    }

    /// As `start`, with ended jobs purged from the controller's memory after `secs` (Slurm
    /// purges in a background pass about once a minute): for jobs that leave the queue.
    pub fn start_with_min_job_age(secs: u32) -> Slurm {
        for program in [
            "/usr/sbin/munged",
            "/usr/sbin/slurmctld",
            "/usr/sbin/slurmd",
        ] {
            assert!(
                Path::new(program).exists(),
                "{program} is missing: apt-get install slurmctld slurmd slurm-client munge"
            );
        }
        assert_eq!(
            whoami(),
            "root",
            "slurmd runs jobs as their users: run as root"
        );
        // Short: the munge socket's path must fit a sockaddr_un (108 bytes).
        let dir = tempfile::Builder::new()
            .prefix("rw-slurm")
            .tempdir_in("/tmp")
            .expect("tempdir");
        let at = |name: &str| dir.path().join(name);
        for sub in ["state", "spool", "jobs"] {
            std::fs::create_dir_all(at(sub)).expect("slurm dirs");
        }
        let key: Vec<u8> = (0..1024).map(|_| fastrand::u8(..)).collect();
        std::fs::write(at("munge.key"), key).expect("munge key");
        chmod(&at("munge.key"), 0o600);
        let node = short_hostname();
        let conf = at("slurm.conf");
        std::fs::write(&conf, slurm_conf(dir.path(), &node, secs)).expect("slurm.conf");
        // The fake GPUs are two tty devices, as in Slurm's own test suite; a machine without them
        // (a bare container) gets them made, or the test says why it cannot run.
        for n in [10, 11] {
            let dev = format!("/dev/tty{n}");
            if !std::path::Path::new(&dev).exists() {
                let made = std::process::Command::new("mknod")
                    .args([dev.as_str(), "c", "4", &n.to_string()])
                    .status()
                    .is_ok_and(|s| s.success());
                assert!(
                    made,
                    "{dev} is missing and mknod could not make it: the test cluster's fake GPUs need it"
                );
            }
        }
        std::fs::write(
            at("gres.conf"),
            format!("NodeName={node} Name=gpu Type=fake File=/dev/tty[10-11]\n"),
        )
        .expect("gres.conf");
        let mut slurm = Slurm {
            jobs: at("jobs"),
            conf,
            node,
            children: Vec::new(),
            dir,
        };
        let sock = slurm.path("munge.sock");
        // --force: munged refuses a socket and key under a world-writable /tmp otherwise.
        slurm.spawn(
            "munged",
            Command::new("/usr/sbin/munged")
                .arg("-F")
                .arg("--force")
                .arg(format!("--socket={}", sock.display()))
                .arg(format!("--key-file={}", slurm.path("munge.key").display()))
                .arg(format!("--pid-file={}", slurm.path("munged.pid").display()))
                .arg(format!(
                    "--seed-file={}",
                    slurm.path("munged.seed").display()
                ))
                .arg(format!("--log-file={}", slurm.path("munged.log").display())),
        );
        slurm.wait("munge's socket", |_| sock.exists());
        // -i: ignore any saved state; -D: stay in the foreground so Drop can end them.
        slurm.spawn(
            "slurmctld",
            Command::new("/usr/sbin/slurmctld").args(["-D", "-i"]),
        );
        let node = slurm.node.clone();
        slurm.spawn(
            "slurmd",
            Command::new("/usr/sbin/slurmd").args(["-D", "-N", &node]),
        );
        slurm.wait("sinfo to show the node idle", |s| {
            s.output("sinfo", &["-h", "-N", "-o", "%T"]).trim() == "idle"
        });
        slurm
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn spawn(&mut self, name: &'static str, cmd: &mut Command) {
        let log = std::fs::File::create(self.path(&format!("{name}.out"))).expect("daemon log");
        let err = log.try_clone().expect("daemon log");
        let child = cmd
            .env("SLURM_CONF", &self.conf)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        self.children.push((name, child));
    }

    /// Polls `ready` until it holds; a daemon that exits or a wait past the limit fails the
    /// test with every log.
    fn wait(&mut self, what: &str, ready: impl Fn(&Slurm) -> bool) {
        let start = Instant::now();
        loop {
            // Exits first: a client asking a dead controller waits out its own timeouts.
            let exited = self.children.iter_mut().find_map(|(name, child)| {
                child
                    .try_wait()
                    .ok()
                    .flatten()
                    .map(|status| (*name, status))
            });
            if let Some((name, status)) = exited {
                panic!("{name} exited ({status}) before {what}:\n{}", self.logs());
            }
            if ready(self) {
                return;
            }
            assert!(
                start.elapsed() < START_LIMIT,
                "no {what} after {START_LIMIT:?}:\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Every daemon's log and console, for a failure message.
    pub fn logs(&self) -> String {
        [
            "munged.log",
            "munged.out",
            "slurmctld.log",
            "slurmctld.out",
            "slurmd.log",
            "slurmd.out",
        ]
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(self.path(f)).unwrap_or_default();
            format!("--- {f}\n{text}")
        })
        .collect()
    }

    /// A Slurm client command aimed at this cluster.
    pub fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.env("SLURM_CONF", &self.conf).current_dir(&self.jobs);
        cmd
    }

    /// What `program args` prints; empty when it fails (callers poll).
    pub fn output(&self, program: &str, args: &[&str]) -> String {
        self.command(program)
            .args(args)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    }

    /// Runs a client command that must succeed, and returns what it printed.
    pub fn run(&self, program: &str, args: &[&str]) -> String {
        let out = self
            .command(program)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
        assert!(
            out.status.success(),
            "{program} {args:?} failed: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            self.logs()
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Submits a batch job and returns its id.
    pub fn sbatch(&self, args: &[&str]) -> String {
        let mut all = vec!["--parsable"];
        all.extend_from_slice(args);
        let id = self.run("sbatch", &all).trim().to_string();
        assert!(id.chars().all(|c| c.is_ascii_digit()), "sbatch said {id:?}");
        id
    }

    /// The job's state word as the controller holds it (empty once purged).
    pub fn state(&self, id: &str) -> String {
        let out = self.output("squeue", &["-h", "-t", "all", "-j", id, "-O", "State:|"]);
        out.trim().trim_end_matches('|').to_string()
    }

    /// Waits (bounded) until job `id` is in `state`; panics with its history and the logs.
    pub fn wait_for_state(&self, id: &str, state: &str, limit: Duration) {
        let start = Instant::now();
        let mut seen = Vec::new();
        loop {
            let now = self.state(id);
            if now == state {
                return;
            }
            if seen.last() != Some(&now) {
                seen.push(now);
            }
            assert!(
                start.elapsed() < limit,
                "job {id} not {state} after {limit:?}; seen {seen:?}\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// Puts Slurm's clients (`squeue`, `scancel`, `scontrol`, `srun`, `sacct`) on `sshd`'s PATH, aimed at this
    /// cluster: a login shell on the loopback sshd has no SLURM_CONF of its own.
    pub fn shim_clients_on(&self, sshd: &Sshd) {
        for client in ["squeue", "scancel", "scontrol", "srun", "sacct"] {
            let path = sshd.bin.join(client);
            std::fs::write(
                &path,
                format!(
                    "#!/bin/sh\nSLURM_CONF='{}' exec /usr/bin/{client} \"$@\"\n",
                    self.conf.display()
                ),
            )
            .expect("slurm client shim");
            chmod(&path, 0o755);
        }
    }
}

fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

fn slurm_conf(dir: &Path, node: &str, min_job_age: u32) -> String {
    let d = dir.display();
    let (ctld, slurmd) = (free_port(), free_port());
    let cpus = cpus();
    format!(
        "ClusterName=rigwatch\nSlurmctldHost={node}\nSlurmUser=root\nSlurmdUser=root\n\
         SlurmctldPort={ctld}\nSlurmdPort={slurmd}\n\
         AuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket={d}/munge.sock\n\
         StateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool\n\
         SlurmctldPidFile={d}/slurmctld.pid\nSlurmdPidFile={d}/slurmd.pid\n\
         SlurmctldLogFile={d}/slurmctld.log\nSlurmdLogFile={d}/slurmd.log\n\
         ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n\
         SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n\
         AccountingStorageType=accounting_storage/none\n\
         JobAcctGatherType=jobacct_gather/none\n\
         JobCompType=jobcomp/filetxt\nJobCompLoc={d}/jobcomp.txt\n\
         MinJobAge={min_job_age}\nReturnToService=2\nMpiDefault=none\nKillWait=2\n\
         GresTypes=gpu\n\
         NodeName={node} CPUs={cpus} Gres=gpu:fake:2 State=UNKNOWN\n\
         PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n"
    )
}

impl Drop for Slurm {
    fn drop(&mut self) {
        // Jobs first, so no slurmstepd and no `sleep 300` outlives the cluster.
        let _ = self.command("scancel").args(["-u", &whoami()]).output();
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(5)
            && !self
                .output("squeue", &["-h", "-t", "running,completing", "-o", "%i"])
                .trim()
                .is_empty()
        {
            std::thread::sleep(Duration::from_millis(100));
        }
        for (_, child) in self.children.iter_mut().rev() {
            let _ = Command::new("kill").arg(child.id().to_string()).status();
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline && matches!(child.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
