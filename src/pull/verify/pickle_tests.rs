use super::*;

fn run(bytes: &[u8]) -> Result<Pickle, Problem> {
    walk(&mut &bytes[..])
}

fn reason(bytes: &[u8]) -> String {
    match run(bytes) {
        Err(Problem::Corrupt(r)) => r,
        Err(other) => panic!("expected Corrupt, got {other:?}"),
        Ok(_) => panic!("expected Corrupt, got a clean walk"),
    }
}

#[test]
fn finds_persistent_ids_through_the_memo() {
    // (('storage', torch.FloatStorage, '0', 'cpu', 6) twice; the second from the memo),
    // as torch's pickler writes it, inside a list.
    let mut p = b"\x80\x02]((X\x07\x00\x00\x00storageq\x00ctorch\nFloatStorage\nq\x01".to_vec();
    p.extend_from_slice(b"X\x01\x00\x00\x000q\x02X\x03\x00\x00\x00cpuq\x03K\x06tQ");
    p.extend_from_slice(b"(h\x00h\x01h\x02h\x03\x8a\x02\x00\x01tQe.");
    let walked = run(&p).expect("clean pickle");
    assert_eq!(walked.protocol, Some(2));
    let ids: Vec<&Value> = walked.persistent_ids.iter().map(|p| &*p.id).collect();
    let expect = |numel| {
        Value::Tuple(vec![
            Rc::new(Value::Str("storage".into())),
            Rc::new(Value::Global("torch.FloatStorage".into())),
            Rc::new(Value::Str("0".into())),
            Rc::new(Value::Str("cpu".into())),
            Rc::new(Value::Int(numel)),
        ])
    };
    assert_eq!(ids, vec![&expect(6), &expect(256)]);
}

#[test]
fn damage_is_located() {
    assert_eq!(
        reason(b"\x80\x02N"),
        "file ends inside the pickle (no STOP)"
    );
    assert_eq!(reason(b"\x80\x02."), "byte 2: STOP with an empty stack");
    assert_eq!(reason(b"\x80\x02N.N"), "byte 3: STOP is not the last byte");
    assert_eq!(
        reason(b"\x80\x02N\xff."),
        "byte 3 (opcode 0xff): unknown opcode"
    );
    assert_eq!(
        reason(b"\x80\x02R."),
        "byte 2 (opcode 0x52): stack underflow"
    );
    assert_eq!(
        reason(b"\x80\x020."),
        "byte 2 (opcode 0x30): no MARK to pop to"
    );
    assert_eq!(
        reason(b"\x80\x02(NNNd."),
        "byte 6 (opcode 0x64): odd number of items for a dict"
    );
    assert_eq!(
        reason(b"\x80\x02Nt."),
        "byte 3 (opcode 0x74): no MARK to pop to"
    );
    assert_eq!(
        reason(b"\x80\x02h\x07."),
        "byte 2 (opcode 0x68): memo key 7 was never stored"
    );
    assert_eq!(
        reason(b"\x80\x02X\xff\xff\x00\x00ab"),
        "byte 2 (opcode 0x58): file ends inside a 65535-byte pickle string"
    );
    assert_eq!(reason(b"\x80\x09N."), "byte 0: unknown pickle protocol 9");
}

#[test]
fn long1_sign_extends() {
    assert_eq!(long1(&[]), Value::Int(0));
    assert_eq!(long1(&[0xff]), Value::Int(-1));
    assert_eq!(long1(&[0x00, 0x01]), Value::Int(256));
    assert_eq!(long1(&[0; 9]), Value::Opaque);
}
