//! `warden service install|uninstall [--user]`: Warden as a systemd
//! service — `warden serve` in the foreground (systemd supervises it, the
//! journal keeps its log), never exiting for idleness, restarted on
//! failure but not for the two exits a restart cannot fix (2: the config
//! is invalid; 3: the listen address is taken), reloaded by SIGHUP.
//!
//! Hardening: `NoNewPrivileges`, a umask that keeps new files private, and
//! a state directory systemd creates `0700` for it (`StateDirectory`, which
//! for a `--user` unit is `~/.local/state/warden` — where the CLI looks
//! anyway). A system unit also gets `ProtectSystem=full` (`/usr`, `/etc`,
//! `/boot` read-only), a private `/tmp`, and runs as the user who installed
//! it (`$SUDO_USER`): stdio servers act for a person and need their files.
//! `strict` would make home directories read-only too, which breaks file
//! servers; tighten it with `ReadWritePaths=` if yours write elsewhere.
//!
//! Where systemd is not running (no `/run/systemd/system`: a container,
//! another init) nothing is written: the unit is printed, with where it
//! would go.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, Context as _};

use crate::clients::files;

/// The unit's name.
const UNIT: &str = "warden.service";

/// Whether systemd manages this machine.
fn systemd_running() -> bool {
    Path::new("/run/systemd/system").is_dir()
}

/// Where the unit goes.
fn unit_path(user: bool) -> anyhow::Result<PathBuf> {
    if !user {
        return Ok(PathBuf::from("/etc/systemd/system").join(UNIT));
    }
    let env = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty()).map(PathBuf::from);
    let config = env("XDG_CONFIG_HOME")
        .or_else(|| env("HOME").map(|home| home.join(".config")))
        .ok_or_else(|| anyhow!("cannot tell where user units go: set HOME"))?;
    Ok(config.join("systemd/user").join(UNIT))
}

/// One word of a command line as systemd reads it: quoted, `%` doubled.
fn quoted(word: &str) -> String {
    format!("\"{}\"", word.replace('\\', "\\\\").replace('"', "\\\"").replace('%', "%%"))
}

/// The unit for `program` serving `config`.
pub(crate) fn unit(program: &Path, config: &Path, user: bool, run_as: Option<&str>) -> String {
    let exec = [program.display().to_string(), "serve".into(), "--config".into(), config.display().to_string()]
        .iter()
        .map(|word| quoted(word))
        .collect::<Vec<_>>()
        .join(" ");
    let mut text = format!(
        "# Written by `warden service install`; `warden service uninstall` removes it.\n\
         [Unit]\n\
         Description=Warden: supervised, policed MCP servers\n\
         After=network-online.target\n\
         Wants=network-online.target\n\
         \n\
         [Service]\n\
         Type=exec\n\
         ExecStart={exec} --no-idle-exit\n\
         ExecReload=/bin/kill -HUP $MAINPID\n\
         Restart=on-failure\n\
         RestartSec=2s\n\
         # 2: the config is invalid; 3: the listen address is taken. A restart fixes neither.\n\
         RestartPreventExitStatus=2 3\n\
         StateDirectory=warden\n\
         StateDirectoryMode=0700\n\
         Environment=WARDEN_HOME=%S/warden\n\
         UMask=0077\n\
         NoNewPrivileges=yes\n"
    );
    if !user {
        text += "ProtectSystem=full\nPrivateTmp=yes\n";
        if let Some(name) = run_as {
            text += &format!("User={name}\n");
        }
    }
    let target = if user { "default.target" } else { "multi-user.target" };
    text + &format!("\n[Install]\nWantedBy={target}\n")
}

/// `systemctl [--user] ARGS`, said before it runs.
fn systemctl(user: bool, args: &[&str]) -> anyhow::Result<()> {
    let mut command = std::process::Command::new("systemctl");
    if user {
        command.arg("--user");
    }
    command.args(args);
    println!("$ systemctl{} {}", if user { " --user" } else { "" }, args.join(" "));
    let status = command.status().context("cannot run systemctl")?;
    if !status.success() {
        return Err(anyhow!("systemctl {} failed ({status})", args.join(" ")));
    }
    Ok(())
}

pub(super) fn install(user: bool, config: Option<&Path>, dry_run: bool) -> anyhow::Result<ExitCode> {
    let config = match warden_config::WardenConfig::discover(config)? {
        warden_config::Discovered::Loaded { path, .. } => path,
        nothing => return Err(crate::commands::UsageError(nothing.notice().unwrap_or_default()).into()),
    };
    let program = std::env::current_exe().context("cannot tell where this warden program is")?;
    let run_as = std::env::var("SUDO_USER").or_else(|_| std::env::var("USER")).ok();
    let text = unit(&program, &config, user, run_as.as_deref());
    let path = unit_path(user)?;
    if dry_run || !systemd_running() {
        if !dry_run {
            eprintln!(
                "systemd is not running on this machine (no /run/systemd/system), so nothing was installed; this is \
                 the unit, for {}:",
                path.display()
            );
        }
        print!("{text}");
        return Ok(if dry_run { ExitCode::SUCCESS } else { ExitCode::FAILURE });
    }
    files::write(&path, &text)?;
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o644))?;
    println!("wrote {}", path.display());
    systemctl(user, &["daemon-reload"])?;
    systemctl(user, &["enable", "--now", UNIT])?;
    let status = if user { "systemctl --user status warden" } else { "systemctl status warden" };
    println!(
        "Warden runs as a service: `{status}`, its log: `journalctl {}-u warden`",
        if user { "--user " } else { "" }
    );
    if !user {
        println!(
            "the CLI reaches it with WARDEN_HOME=/var/lib/warden (as {})",
            run_as.as_deref().unwrap_or("its user")
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) fn uninstall(user: bool) -> anyhow::Result<ExitCode> {
    let path = unit_path(user)?;
    if !path.exists() {
        println!("no Warden unit at {}; nothing to remove", path.display());
        return Ok(ExitCode::SUCCESS);
    }
    if systemd_running() {
        systemctl(user, &["disable", "--now", UNIT])?;
    }
    std::fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
    println!("removed {}", path.display());
    if systemd_running() {
        systemctl(user, &["daemon-reload"])?;
    }
    Ok(ExitCode::SUCCESS)
}
