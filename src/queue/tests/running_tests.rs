use super::super::{QueueInvocation, parse_queue_lenient, queue_invocation, running_cell};

const QUEUE: &str = "\
configs/abl/abl_base.yaml recon 20
configs/abl/abl_lr3.yaml recon 20
# configs/abl/abl_drop.yaml recon 20
configs/abl/abl_wd.yaml recon 20
configs/abl/train.yaml recon 20
";

#[test]
fn cfg_path_argument_names_the_cell() {
    let q = parse_queue_lenient(QUEUE, "q.txt");
    let cases = [
        ("python train.py --config configs/abl/abl_lr3.yaml", Some(1)),
        (
            "1234 python -u train.py --config=configs/abl/abl_wd.yaml --seed 0",
            Some(2),
        ),
        (
            "python train.py --config /root/proj/configs/abl/abl_base.yaml",
            Some(0),
        ),
        (
            "python train.py --config './configs/abl/abl_lr3.yaml'",
            Some(1),
        ),
        ("python train.py --config-name abl_wd", Some(2)),
        (
            "torchrun --nproc_per_node=8 train.py cfg=/data/other/abl_base.yml",
            Some(0),
        ),
    ];
    for (cmd, want) in cases {
        assert_eq!(running_cell(&q, Some(cmd), None), want, "{cmd}");
    }
}

#[test]
fn scripts_and_queue_runner_never_name_a_cell() {
    let q = parse_queue_lenient(QUEUE, "q.txt");
    // `train.py` is the script, not the cell `train`; `4` is where the queue started.
    assert_eq!(
        running_cell(&q, Some("python train.py --lr 3e-4"), None),
        None
    );
    assert_eq!(
        running_cell(&q, Some("bash run_queue.sh queue.txt 4"), None),
        None
    );
    // But the cell `train` is found by its cfg path.
    assert_eq!(
        running_cell(
            &q,
            Some("python train.py --config configs/abl/train.yaml"),
            None
        ),
        Some(3)
    );
}

#[test]
fn newest_log_is_the_fallback_and_the_cmdline_wins() {
    let q = parse_queue_lenient(QUEUE, "q.txt");
    let log = Some("/root/proj/logs/abl_wd.log");
    assert_eq!(
        running_cell(&q, Some("bash run_queue.sh queue.txt 1"), log),
        Some(2)
    );
    assert_eq!(running_cell(&q, None, log), Some(2));
    assert_eq!(running_cell(&q, None, Some("abl_base.log")), Some(0));
    assert_eq!(
        running_cell(
            &q,
            Some("python train.py --config configs/abl/abl_lr3.yaml"),
            log
        ),
        Some(1)
    );
    assert_eq!(running_cell(&q, None, Some("logs/unrelated.log")), None);
    assert_eq!(running_cell(&q, None, None), None);
}

#[test]
fn colliding_names_are_ambiguous_unless_the_path_decides() {
    let q = parse_queue_lenient("a/x.yaml det 5\nb/x.yaml seg 5\n", "q.txt");
    assert_eq!(
        running_cell(&q, Some("python t.py --config b/x.yaml"), None),
        Some(1)
    );
    assert_eq!(
        running_cell(&q, Some("python t.py --config-name x"), None),
        None
    );
    assert_eq!(running_cell(&q, None, Some("x.log")), None);
}

#[test]
fn queue_invocation_reads_file_and_start_index() {
    assert_eq!(
        queue_invocation("bash run_queue.sh queue_a.txt 4"),
        Some(QueueInvocation {
            queue_file: "queue_a.txt".into(),
            start_index: Some(4)
        })
    );
    assert_eq!(
        queue_invocation("987 /bin/bash /shared/run_queue.v2.sh /shared/q/queue_b.txt"),
        Some(QueueInvocation {
            queue_file: "/shared/q/queue_b.txt".into(),
            start_index: None
        })
    );
    assert_eq!(queue_invocation("python train.py --config a.yaml"), None);
    assert_eq!(queue_invocation("bash run_queue.sh"), None);
}
