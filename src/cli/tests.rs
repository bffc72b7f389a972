//! Tests of `cli`, beside it so the module reads in one sitting.

use super::one_line;

#[test]
fn an_error_that_already_says_its_source_says_it_once() {
    let e = color_eyre::Report::new(crate::pull::PullError::Link {
        host: "box".into(),
        stage: "opening SFTP",
        source: crate::transport::TransportError::Ssh("no SFTP subsystem".into()),
    });
    let line = one_line(&e);
    assert_eq!(line.matches("no SFTP subsystem").count(), 1, "{line}");
    assert!(line.starts_with("box: opening SFTP"), "{line}");
    // A wrapper that does not repeat its source still shows it.
    let wrapped =
        color_eyre::Report::new(std::io::Error::other("disk gone")).wrap_err("reading the ledger");
    assert_eq!(one_line(&wrapped), "reading the ledger: disk gone");
}
