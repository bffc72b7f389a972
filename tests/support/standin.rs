//! An `nvidia-smi` stand-in that costs CPU at every start, as a real one does (it loads and
//! initialises the driver library: tens of milliseconds of CPU a call), and none per sample in
//! its loop modes (`-lms`), as a real one pays none. Written in Perl: sh would fork `cat` and
//! `sleep` per sample, which a real driver loop does not, and Perl is in every Debian base.

use std::path::PathBuf;
use std::time::Duration;

use super::{GpuShim, Sshd, capture};

impl Sshd {
    pub fn shim_costly_nvidia_smi(&self, shim: &GpuShim<'_>, cost: Duration) {
        let gpu = self.write_data("query_gpu.txt", &capture(shim.query_gpu).with_header());
        let apps = self.write_data("apps.txt", &capture(shim.apps).with_header());
        self.write_script(
            "nvidia-smi",
            &format!(
                r#"#!/usr/bin/perl
use strict;
my $t0 = (times)[0];
while ((times)[0] - $t0 < {cost}) {{}}
my $args = join(' ', @ARGV);
sub slurp {{ open(my $f, '<', $_[0]) or die "$_[0]: $!"; local $/; return <$f>; }}
my $what = $args =~ /--query-gpu=/ ? '{gpu}' : $args =~ /--query-compute-apps=/ ? '{apps}' : '';
if ($what eq '') {{ print STDERR "stand-in nvidia-smi: unexpected arguments: $args\n"; exit 9; }}
my $text = slurp($what);
$| = 1;
if ($args =~ /-lms (\d+)/) {{
    my $every = $1 / 1000;
    while (1) {{ print $text; select(undef, undef, undef, $every); }}
}}
print $text;
"#,
                cost = cost.as_secs_f64(),
                gpu = gpu.display(),
                apps = apps.display()
            ),
        );
    }
}

impl Sshd {
    /// Puts a shell script on this host's PATH as `name`.
    pub fn shim_script(&self, name: &str, script: &str) {
        self.write_script(name, script);
    }
}

impl Sshd {
    /// A stand-in `squeue` for a `[[slurm]]` cluster's login node: the lines of
    /// `squeue.txt` (fields split by `|`, in `rigwatch::probe::squeue::FIELDS` order) printed
    /// with the separator rigwatch asked for in `-O`; while the file `hang` exists it never
    /// answers, and while `delay` exists it answers after the seconds it holds. Returns (the
    /// data file, the hang file).
    pub fn shim_cluster_squeue(&self, lab: &super::Lab, lines: &str) -> (PathBuf, PathBuf) {
        let data = lab.path("squeue.txt");
        std::fs::write(&data, lines).expect("squeue data");
        let hang = lab.path("hang");
        self.write_script(
            "squeue",
            &format!(
                "#!/bin/sh\nfor a in \"$@\"; do case \"$a\" in JobID:*) f=\"$a\";; esac; done\n\
                 s=${{f#JobID:}}; s=${{s%%,*}}\n\
                 [ -e '{hang}' ] && exec sleep 347\n\
                 [ -e '{delay}' ] && sleep \"$(cat '{delay}')\"\n\
                 while IFS= read -r line; do printf '%s%s\\n' \"$(printf '%s' \"$line\" | sed \"s/|/$s/g\")\" \"$s\"; done < '{data}'\n",
                hang = hang.display(),
                delay = lab.path("delay").display(),
                data = data.display()
            ),
        );
        (data, hang)
    }
}
