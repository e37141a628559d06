use super::*;

#[test]
fn only_one_holder_at_a_time_and_dropping_releases_it() {
    let dir = std::env::temp_dir().join(format!("warden-pid-lock-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("daemon.pid.lock");
    assert!(!is_held(&path));
    let mut first = try_lock(&path).unwrap().expect("the lock is free");
    first.record_pid();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), format!("{}\n", std::process::id()));
    // flock belongs to the open file, so a second open conflicts even here.
    assert!(try_lock(&path).unwrap().is_none());
    assert!(is_held(&path));
    drop(first);
    assert!(!is_held(&path));
    std::fs::remove_dir_all(dir).unwrap();
}
