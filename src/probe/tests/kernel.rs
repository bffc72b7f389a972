//! Kernel log lines; no capture exists, so every case here is hand-written from the formats
//! drivers and kernels are documented to print.

use crate::probe::*;

#[test]
fn xid_with_and_without_pid_handwritten() {
    let text = "[  812.123456] NVRM: Xid (PCI:0000:3b:00): 79, pid=2231, name=python, GPU has \
                fallen off the bus.\n\
                Nov 22 14:41:24 box kernel: NVRM: Xid (PCI:0000:00:1e): 13, Graphics SM Warp \
                Exception on (GPC 0, TPC 0, SM 0): Out Of Range Address\n\
                [  900.000001] NVRM: Xid (PCI:0000:3b:00): 48, pid='<unknown>', name=<unknown>, \
                An uncorrectable double bit error (DBE) has been detected on GPU in the \
                framebuffer at partition 0, subpartition 0.\n\
                [  901.0] eth0: link up\n";
    let ev = parse_kernel_log(text).expect("parses");
    assert_eq!(ev.len(), 3);
    let KernelEvent::Xid {
        stamp,
        pci,
        xid,
        pid,
        process,
        message,
    } = &ev[0]
    else {
        unreachable!("first event is an Xid")
    };
    assert_eq!(
        (stamp.as_str(), pci.as_str(), *xid),
        ("[  812.123456]", "0000:3b:00", 79)
    );
    assert_eq!((*pid, process.as_deref()), (Some(2231), Some("python")));
    assert_eq!(message, "GPU has fallen off the bus.");
    let KernelEvent::Xid {
        stamp,
        xid,
        pid,
        message,
        ..
    } = &ev[1]
    else {
        unreachable!("second event is an Xid")
    };
    assert_eq!(
        (stamp.as_str(), *xid, *pid),
        ("Nov 22 14:41:24 box kernel:", 13, None)
    );
    assert!(message.starts_with("Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0)"));
    let KernelEvent::Xid {
        xid, pid, process, ..
    } = &ev[2]
    else {
        unreachable!("third event is an Xid")
    };
    assert_eq!((*xid, *pid, process.as_deref()), (48, None, None));
}

#[test]
fn oom_kills_box_and_cgroup_handwritten() {
    let text = "[ 100.5] Out of memory: Kill process 4242 (python) score 912 or sacrifice child\n\
                [ 100.6] Out of memory: Killed process 4242 (python) total-vm:90000000kB, \
                anon-rss:64000000kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:130000kB \
                oom_score_adj:0\n\
                [ 200.0] Memory cgroup out of memory: Killed process 77 (pt_main_thread) \
                total-vm:1kB, anon-rss:2kB, file-rss:0kB\n";
    let ev = parse_kernel_log(text).expect("parses");
    let want = [
        KernelEvent::OomKill {
            stamp: "[ 100.6]".into(),
            pid: 4242,
            process: "python".into(),
            cgroup: false,
            anon_rss_kib: Some(64_000_000),
        },
        KernelEvent::OomKill {
            stamp: "[ 200.0]".into(),
            pid: 77,
            process: "pt_main_thread".into(),
            cgroup: true,
            anon_rss_kib: Some(2),
        },
    ];
    assert_eq!(ev, want);
}

#[test]
fn malformed_event_lines_name_their_line_handwritten() {
    let err =
        parse_kernel_log("ok\n\nNVRM: Xid (PCI:0000:3b:00): seventy-nine, x").expect_err("bad");
    assert_eq!((err.probe, err.line), ("kernel log", 3));
    assert!(parse_kernel_log("Killed process x (y)").is_err());
}
