use super::*;

#[test]
fn shifting_keeps_the_newest_files_under_their_numbers() {
    let dir = std::env::temp_dir().join(format!("warden-log-shift-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("daemon.log");
    for round in 0..5 {
        std::fs::write(&log, format!("round {round}")).unwrap();
        shift(&log, 3);
    }
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
    assert_eq!(read("daemon.log"), None);
    assert_eq!(read("daemon.log.1").as_deref(), Some("round 4"));
    assert_eq!(read("daemon.log.2").as_deref(), Some("round 3"));
    assert_eq!(read("daemon.log.3").as_deref(), Some("round 2"));
    assert_eq!(read("daemon.log.4"), None, "no more than three are kept");
    let _ = std::fs::remove_dir_all(&dir);
}
