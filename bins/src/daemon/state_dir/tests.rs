use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt as _;

use super::*;

fn dir_with(vars: &[(&str, &str)]) -> Result<PathBuf, StateDirError> {
    let lookup = |name: &str| vars.iter().find(|(key, _)| *key == name).map(|(_, value)| OsString::from(value));
    StateDir::from_vars(lookup).map(|state| state.path().to_path_buf())
}

#[test]
fn warden_home_wins_then_xdg_state_home_then_home() {
    let all = [("WARDEN_HOME", "/w"), ("XDG_STATE_HOME", "/x"), ("HOME", "/h")];
    assert_eq!(dir_with(&all).unwrap(), Path::new("/w"));
    assert_eq!(dir_with(&all[1..]).unwrap(), Path::new("/x/warden"));
    assert_eq!(dir_with(&all[2..]).unwrap(), Path::new("/h/.local/state/warden"));
    // Empty means unset, as XDG says.
    assert_eq!(
        dir_with(&[("WARDEN_HOME", ""), ("XDG_STATE_HOME", ""), ("HOME", "/h")]).unwrap(),
        Path::new("/h/.local/state/warden")
    );
    assert_eq!(
        dir_with(&[]).unwrap_err().to_string(),
        "cannot tell where Warden keeps its state: set WARDEN_HOME (or XDG_STATE_HOME, or HOME)"
    );
}

#[test]
fn the_directory_is_created_private() {
    let root = std::env::temp_dir().join(format!("warden-state-dir-test-{}", std::process::id()));
    let state = StateDir { dir: root.join("a/b") };
    state.create().unwrap();
    let mode = std::fs::metadata(state.path()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    assert_eq!(state.lockfile(), root.join("a/b/daemon.json"));
    std::fs::remove_dir_all(root).unwrap();
}
