//! `[[kaggle]]`: what loads, the defaults, and each mistake named with file:line:col.

use std::path::Path;
use std::time::Duration;

use crate::config::fleet::parse;

fn err(text: &str) -> String {
    match parse(Path::new("fleet.toml"), text) {
        Ok(_) => panic!("expected an error for {text:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_full_entry_and_the_defaults() {
    let text = r#"
[[kaggle]]
name = "kaggle"
kernels = ["alice/train-llama", "alice/eval_run.v2"]
period_secs = 120
gpu = true
kaggle = "/opt/kaggle/bin/kaggle"
[kaggle.pull]
paths = ["/kaggle/working/ckpt", "/kaggle/working/*.csv"]
dest = "/tmp/results/{host}"

[[kaggle]]
name = "other"
kernels = ["bob/abcde"]
"#;
    let fleet = parse(Path::new("fleet.toml"), text).expect("loads");
    let k = &fleet.kaggle[0];
    assert_eq!(k.kernels, ["alice/train-llama", "alice/eval_run.v2"]);
    assert_eq!(k.period, Duration::from_secs(120));
    assert_eq!(k.gpu, Some(true));
    assert_eq!(k.program, Path::new("/opt/kaggle/bin/kaggle"));
    let pull = k.pull.as_ref().expect("pull");
    assert_eq!(pull.dest, Path::new("/tmp/results/kaggle"));
    let o = &fleet.kaggle[1];
    assert_eq!(o.period, Duration::from_secs(300));
    assert_eq!((o.gpu, o.program.as_path()), (None, Path::new("kaggle")));
}

#[test]
fn each_mistake_is_named_where_it_was_written() {
    let e = err("[[kaggle]]\nname = \"k\"\nkernels = [\"alice\"]\n");
    assert!(
        e.contains("fleet.toml:3:") && e.contains("must be owner/slug"),
        "{e}"
    );
    let e = err("[[kaggle]]\nname = \"k\"\nkernels = [\"alice/abc\"]\n");
    assert!(e.contains("at least five characters"), "{e}");
    let e = err("[[kaggle]]\nname = \"k\"\nkernels = [\"a/b c d e\"]\n");
    assert!(e.contains("must be owner/slug"), "{e}");
    let e = err("[[kaggle]]\nname = \"k\"\nkernels = []\n");
    assert!(
        e.contains("fleet.toml:2:") && e.contains("kernels is empty"),
        "{e}"
    );
    let e = err("[[kaggle]]\nname = \"k\"\nkernels = [\"a/abcde\", \"a/abcde\"]\n");
    assert!(e.contains("listed twice"), "{e}");
    let e = err("[[kaggle]]\nname = \"k\"\nkernels = [\"a/abcde\"]\nperiod_secs = 5\n");
    assert!(e.contains("kaggle.period_secs = 5 is out of range"), "{e}");
    let e = err(
        "[[kaggle]]\nname = \"k\"\nkernels = [\"a/abcde\"]\n[kaggle.pull]\npaths = [\"/kaggle/temp/x\"]\ndest = \"/tmp/r\"\n",
    );
    assert!(
        e.contains("fleet.toml:4:") && e.contains("not under /kaggle/working"),
        "{e}"
    );
    let e = err(
        "[[host]]\nname = \"k\"\nssh = \"k\"\n[[kaggle]]\nname = \"k\"\nkernels = [\"a/abcde\"]\n",
    );
    assert!(e.contains("duplicate name \"k\""), "{e}");
    let e = err("[[kaggle]]\nname = \"k\"\nkernels = [\"a/abcde\"]\ntoken = \"x\"\n");
    assert!(e.contains("token"), "{e}");
}
