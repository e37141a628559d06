use super::*;

#[test]
fn known_digests() {
    assert_eq!(sha256_hex(b""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    assert_eq!(sha256_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

#[test]
fn the_json_digest_is_the_digest_of_the_json_text() {
    let value = serde_json::json!({"path": "/tmp/x", "n": [1, 2.5, null], "s": "é\"\n"});
    assert_eq!(sha256_json_hex(&value), sha256_hex(&serde_json::to_vec(&value).unwrap()));
}
