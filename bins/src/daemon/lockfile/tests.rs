use std::os::unix::fs::PermissionsExt as _;

use super::*;

fn sample() -> Lockfile {
    Lockfile {
        pid: std::process::id(),
        address: "127.0.0.1:4000".parse().unwrap(),
        socket: Some("/home/me/.local/state/warden/daemon.sock".into()),
        started_at: 1_800_000_000,
        version: "0.1.0".into(),
        token: "ab".repeat(32),
        config: "/etc/warden.toml".into(),
    }
}

#[test]
fn it_is_written_private_and_read_back() {
    let dir = std::env::temp_dir().join(format!("warden-lockfile-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("daemon.json");
    let lockfile = sample();
    lockfile.write(&path).unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(Lockfile::read(&path), Some(lockfile.clone()));
    // Nothing but the lockfile is left: the temporary file was renamed.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);

    // Another daemon's lockfile is not removed; this one's is.
    Lockfile::remove_if_ours(&path, lockfile.pid + 1);
    assert!(path.exists());
    Lockfile::remove_if_ours(&path, lockfile.pid);
    assert!(!path.exists());

    // An older daemon's lockfile names no socket: it is read, TCP only.
    let mut older = serde_json::to_value(&lockfile).unwrap();
    older.as_object_mut().unwrap().remove("socket");
    std::fs::write(&path, older.to_string()).unwrap();
    assert_eq!(Lockfile::read(&path), Some(Lockfile { socket: None, ..lockfile }));

    std::fs::write(&path, "{half a lockf").unwrap();
    assert_eq!(Lockfile::read(&path), None, "an unreadable lockfile counts as none");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn the_token_never_reaches_a_log() {
    let text = format!("{:?}", sample());
    assert!(!text.contains("abab"), "{text}");
    assert!(text.contains("pid"), "{text}");
}

#[test]
fn this_process_is_alive_and_an_unused_pid_is_not() {
    assert!(pid_alive(std::process::id()));
    assert!(!pid_alive(u32::MAX));
}

#[test]
fn a_process_that_exited_and_waits_to_be_reaped_is_not_alive() {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    // Not reaped yet: it lingers as a zombie, which signal 0 still finds.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while pid_alive(pid) {
        assert!(std::time::Instant::now() < deadline, "an exited child still counts as alive");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(unsafe { libc::kill(pid as i32, 0) }, 0, "the zombie is still there to be found by signal 0");
    child.wait().unwrap();
}
