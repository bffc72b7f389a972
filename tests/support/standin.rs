//! An `nvidia-smi` stand-in that costs CPU at every start, as a real one does (it loads and
//! initialises the driver library: tens of milliseconds of CPU a call), and none per sample in
//! its loop modes (`-lms`), as a real one pays none. Written in Perl: sh would fork `cat` and
//! `sleep` per sample, which a real driver loop does not, and Perl is in every Debian base.

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
