//! A server on the pinned Python SDK serving Streamable HTTP, started on a
//! free loopback port for one test and killed when dropped (a failing test
//! leaves nothing running).

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::real_servers::{python_script, python_server_command};

/// The running server.
pub struct PythonHttpServer {
    child: Child,
    /// Its MCP endpoint, `http://127.0.0.1:<port>/mcp`.
    pub url: String,
}

impl PythonHttpServer {
    /// Starts `tests/python/<script>` with `args` and then a free port, and
    /// waits (up to 60 s) until uvicorn says it listens. A port another
    /// test took between our look and uvicorn's bind is given up for
    /// another one (up to three tries): the scripts need their port before
    /// they listen (the OAuth server names itself by it), so port 0 would
    /// not do.
    pub async fn start(script: &str, args: &[&str]) -> PythonHttpServer {
        let mut said = String::new();
        for _ in 0..3 {
            let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            match PythonHttpServer::start_on(script, args, port).await {
                Ok(server) => return server,
                Err(stderr) if stderr.contains("address already in use") => said = stderr,
                Err(stderr) => panic!("the Python server exited before listening:\n{stderr}"),
            }
        }
        panic!("three free ports were each taken before the Python server could bind them:\n{said}");
    }

    /// Starts it on `port`; what it said on stderr if it exits first.
    async fn start_on(script: &str, args: &[&str], port: u16) -> Result<PythonHttpServer, String> {
        let (python, mut command_args) = python_server_command(&python_script(script));
        command_args.extend(args.iter().map(ToString::to_string));
        command_args.push(port.to_string());
        let mut child = Command::new(python)
            .args(&command_args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("python starts");
        // uvicorn says so on stderr once it listens; the rest of stderr is
        // its request log, drained so the pipe never fills.
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut seen = Vec::new();
        let listening = async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if line.contains(&format!("Uvicorn running on http://127.0.0.1:{port}")) {
                    return true;
                }
                seen.push(line);
            }
            false
        };
        let listened =
            tokio::time::timeout(Duration::from_secs(60), listening).await.expect("the Python server listens in time");
        if !listened {
            return Err(seen.join("\n"));
        }
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(PythonHttpServer { child, url: format!("http://127.0.0.1:{port}/mcp") })
    }

    /// Kills it and waits for it.
    pub async fn stop(mut self) {
        self.child.kill().await.expect("the server is killed");
    }
}
