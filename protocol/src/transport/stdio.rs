//! The stdio transport: a child process, JSON lines on its stdin and stdout.
//!
//! Each connection runs four tasks: a writer for what does not fit in the
//! pipe at once (see `stdin_writer`: most lines are written straight from
//! `send`), a reader (stdout lines → events), a stderr drain (lines →
//! `tracing` and a bounded tail) and a keeper that owns the process and
//! reports its exit.
//!
//! The child runs in its own process group so that Warden can stop the whole
//! tree (`npx` starts a shell that starts node). Closing is polite first:
//! close stdin, wait; SIGTERM the group, wait; SIGKILL the group. Should
//! Warden itself go away without closing — a panic, a dropped runtime — a
//! drop guard kills the group, and on Linux the child also gets SIGKILL from
//! the kernel when its parent thread dies.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::BufReader;
use tokio::process::{Child, Command};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::stderr_budget::{StderrBudget, Verdict};
use super::{
    frame_to_event, line_to_event, taken, AnswerTaker, Backlog, ConnectFuture, Connection, Connector, EventSink,
    StderrTail, TransportError, TransportEvent,
};
use crate::framing::{Frame, LineReader, DEFAULT_MAX_MESSAGE_BYTES};

/// How to start one stdio server.
#[derive(Debug, Clone)]
pub struct StdioSpec {
    /// The server's name in Warden, for logs.
    pub server: String,
    /// The program.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment variables (on top of the inherited ones).
    pub env: BTreeMap<String, String>,
    /// Start from Warden's environment (true) or an empty one (false).
    pub inherit_env: bool,
    /// With `inherit_env` false: Warden's variables passed anyway.
    pub pass_env: Vec<String>,
    /// Working directory; Warden's own when `None`.
    pub cwd: Option<PathBuf>,
    /// The largest line accepted from the server.
    pub max_message_bytes: usize,
    /// How long to wait after closing stdin before SIGTERM.
    pub stdin_grace: Duration,
    /// How long to wait after SIGTERM before SIGKILL.
    pub term_grace: Duration,
}

impl StdioSpec {
    /// A spec with default limits and grace periods.
    pub fn new(server: impl Into<String>, command: impl Into<String>, args: Vec<String>) -> Self {
        StdioSpec {
            server: server.into(),
            command: command.into(),
            args,
            env: BTreeMap::new(),
            inherit_env: true,
            pass_env: Vec::new(),
            cwd: None,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            stdin_grace: Duration::from_millis(1000),
            term_grace: Duration::from_millis(2000),
        }
    }
}

/// Starts a stdio server process per connection.
#[derive(Debug, Clone)]
pub struct StdioConnector {
    spec: Arc<StdioSpec>,
}

impl StdioConnector {
    /// A connector for `spec`.
    pub fn new(spec: StdioSpec) -> Self {
        StdioConnector { spec: Arc::new(spec) }
    }
}

impl Connector for StdioConnector {
    fn connect(&self, sink: EventSink) -> ConnectFuture {
        self.connect_paced(sink, Backlog::unlimited(), None)
    }

    fn connect_paced(
        &self,
        sink: EventSink,
        backlog: Arc<Backlog>,
        taker: Option<Arc<dyn AnswerTaker>>,
    ) -> ConnectFuture {
        let spec = self.spec.clone();
        Box::pin(async move { spawn(&spec, Delivery { sink, backlog, taker }) })
    }

    fn identity(&self) -> Option<String> {
        let spec = &self.spec;
        Some(format!("stdio {:?} {:?} in {:?}", spec.command, spec.args, spec.cwd))
    }
}

/// Where the stdout reader's lines go, and when it pauses.
struct Delivery {
    sink: EventSink,
    backlog: Arc<Backlog>,
    taker: Option<Arc<dyn AnswerTaker>>,
}

fn spawn(spec: &Arc<StdioSpec>, delivery: Delivery) -> Result<Connection, TransportError> {
    let Delivery { sink, backlog, taker } = delivery;
    let mut command = Command::new(&spec.command);
    if !spec.inherit_env {
        command.env_clear();
        for name in &spec.pass_env {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
    }
    command
        .args(&spec.args)
        .envs(&spec.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .process_group(0);
    if let Some(cwd) = &spec.cwd {
        command.current_dir(cwd);
    }
    #[cfg(target_os = "linux")]
    // SAFETY: prctl and setrlimit are async-signal-safe and touch no memory
    // of the parent.
    unsafe {
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            super::fd_limit::restore_open_file_limit();
            Ok(())
        });
    }
    let mut child =
        command.spawn().map_err(|source| TransportError::Spawn { command: spec.command.clone(), source })?;
    let pid = child.id();
    let group = GroupGuard(pid.map(|pid| pid as libc::pid_t));
    let stdin = child.stdin.take().expect("stdin is piped");
    let stdout = child.stdout.take().expect("stdout is piped");
    let stderr = child.stderr.take().expect("stderr is piped");

    let (stop_writer_tx, stop_writer_rx) = oneshot::channel();
    let (close_tx, close_rx) = oneshot::channel::<()>();

    let (outbound, writer) = super::stdin_writer::spawn(stdin, stop_writer_rx);
    let reader =
        tokio::spawn(read_messages(stdout, spec.max_message_bytes, Delivery { sink: sink.clone(), backlog, taker }));
    let tail = StderrTail::default();
    let stderr = tokio::spawn(drain_stderr(stderr, spec.server.clone(), tail.clone()));
    let keeper = tokio::spawn(keep(
        child,
        group,
        Keep { stop_writer: stop_writer_tx, writer, reader, stderr, close: close_rx, sink, spec: spec.clone() },
    ));

    let closer = Box::pin(async move {
        let _ = close_tx.send(());
        let _ = keeper.await;
    });
    Ok(Connection::new(Box::new(outbound), closer, tail).with_pid(pid))
}

/// The most lines delivered as one [`TransportEvent::Batch`]: enough that a
/// burst of answers costs a handful of messages, few enough that the first
/// of them is not held back long.
const MAX_BATCH: usize = 64;

/// Turns stdout lines into events. Lines that are already buffered when one
/// is read go out together as one [`TransportEvent::Batch`]. Nothing more
/// is read while the backlog is full. An answer the taker takes is not an
/// event at all.
async fn read_messages(stdout: tokio::process::ChildStdout, max: usize, delivery: Delivery) {
    let Delivery { sink, backlog, taker } = delivery;
    let mut lines = LineReader::new(BufReader::with_capacity(64 * 1024, stdout), max);
    let mut batch = Batch::new(&sink);
    loop {
        backlog.room().await;
        let mut next = lines.next_frame().await;
        loop {
            match next {
                // The line's buffer goes back to the reader for the next
                // one: an answer then costs no allocation to read.
                Ok(Some(Frame::Line(line))) => {
                    if !taken(taker.as_deref(), &line) {
                        batch.push(line_to_event(&line));
                    }
                    lines.recycle(line);
                }
                Ok(Some(frame)) => batch.push(frame_to_event(frame)),
                Ok(None) => return batch.deliver(),
                Err(error) => {
                    batch.push(TransportEvent::Malformed { problem: format!("reading stdout failed: {error}") });
                    return batch.deliver();
                }
            }
            if batch.len() == MAX_BATCH {
                break;
            }
            match lines.ready_frame() {
                Some(ready) => next = ready,
                None => break,
            }
        }
        batch.deliver();
    }
}

/// Events on their way to the sink: one alone as itself, more as a batch.
struct Batch<'a> {
    sink: &'a EventSink,
    events: Vec<TransportEvent>,
}

impl<'a> Batch<'a> {
    fn new(sink: &'a EventSink) -> Self {
        Batch { sink, events: Vec::new() }
    }

    fn len(&self) -> usize {
        self.events.len()
    }

    fn push(&mut self, event: TransportEvent) {
        self.events.push(event);
    }

    fn deliver(&mut self) {
        match self.events.len() {
            0 => {}
            1 => (self.sink)(self.events.pop().expect("one event")),
            _ => (self.sink)(TransportEvent::Batch(std::mem::take(&mut self.events))),
        }
    }
}

/// Sends each stderr line to `tracing` under the server's name, within the
/// server's [`StderrBudget`], and keeps the last few. stderr is the
/// server's log, never a sign of failure.
async fn drain_stderr(stderr: tokio::process::ChildStderr, server: String, tail: StderrTail) {
    let mut lines = LineReader::new(BufReader::new(stderr), 64 * 1024);
    let mut budget = StderrBudget::new(Instant::now());
    let report = |suppressed: u64| {
        tracing::warn!(
            target: "warden::server_stderr",
            server = %server,
            "… {suppressed} more lines from '{server}' in the last {} s were not logged (the last {} are kept for \
             its status)",
            StderrBudget::WINDOW.as_secs(),
            StderrTail::LINES,
        );
    };
    loop {
        let summary_due = budget.summary_due();
        let frame = tokio::select! {
            frame = lines.next_frame() => frame,
            () = sleep_until_some(summary_due) => {
                if let Some(suppressed) = budget.close(Instant::now()) {
                    report(suppressed);
                }
                continue;
            }
        };
        let Ok(Some(frame)) = frame else { break };
        let line = match frame {
            Frame::Line(line) => line,
            other => format!("{other:?}"),
        };
        let (closed, verdict) = budget.admit(line.len(), Instant::now());
        if let Some(suppressed) = closed {
            report(suppressed);
        }
        if verdict == Verdict::Log {
            tracing::info!(target: "warden::server_stderr", server = %server, "{line}");
        }
        tail.push(&line);
    }
    if let Some(suppressed) = budget.close(Instant::now()) {
        report(suppressed);
    }
}

/// Sleeps until `at`, or forever when there is nothing to wait for.
async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

struct Keep {
    stop_writer: oneshot::Sender<()>,
    writer: JoinHandle<Option<String>>,
    reader: JoinHandle<()>,
    stderr: JoinHandle<()>,
    close: oneshot::Receiver<()>,
    sink: EventSink,
    spec: Arc<StdioSpec>,
}

/// Owns the process: waits for it to exit, or closes it when asked (or when
/// the connection is dropped), then reports [`TransportEvent::Closed`] after
/// the last stdout line has been delivered.
async fn keep(mut child: Child, mut group: GroupGuard, keep: Keep) {
    let Keep { stop_writer, mut writer, mut reader, stderr, close, sink, spec } = keep;
    let mut write_error = None;
    let mut output_closed = false;
    let (status, closed_by_warden) = tokio::select! {
        status = child.wait() => (status, false),
        _ = close => {
            let _ = stop_writer.send(());
            (shut_down(&mut child, &group, &spec).await, true)
        }
        Ok(Some(error)) = &mut writer => {
            // Usually the process just died: prefer its exit status as the
            // reason. One that lives on without reading is no use: end it.
            match tokio::time::timeout(Duration::from_millis(500), child.wait()).await {
                Ok(status) => (status, false),
                Err(_) => {
                    write_error = Some(error);
                    group.kill(libc::SIGKILL);
                    (child.wait().await, false)
                }
            }
        }
        _ = &mut reader => {
            // Its stdout ended. Usually the process is exiting; one that
            // lives on can answer nothing more: end it, so it is restarted
            // (and not left running, unheard).
            match tokio::time::timeout(Duration::from_millis(500), child.wait()).await {
                Ok(status) => (status, false),
                Err(_) => {
                    output_closed = true;
                    let _ = stop_writer.send(());
                    (shut_down(&mut child, &group, &spec).await, false)
                }
            }
        }
    };
    // The leader is gone; anything it left behind in its group goes too.
    group.kill(libc::SIGKILL);
    group.disarm();
    writer.abort();
    // Deliver the last stdout lines (and keep the last stderr lines) before
    // saying the connection closed. A process that exited has closed its
    // pipes, unless a grandchild still holds them: do not wait forever.
    let reading = (!reader.is_finished()).then_some(reader);
    for mut task in reading.into_iter().chain([stderr]) {
        if tokio::time::timeout(Duration::from_millis(500), &mut task).await.is_err() {
            task.abort();
        }
    }
    let reason = match (closed_by_warden, status) {
        (true, _) => "closed by Warden".to_string(),
        (false, _) if output_closed => {
            "it closed its stdout but went on running (Warden stopped it: it could answer nothing more)".to_string()
        }
        (false, _) if write_error.is_some() => write_error.unwrap_or_default(),
        (false, Ok(status)) => describe_exit(status),
        (false, Err(error)) => format!("waiting for the process failed: {error}"),
    };
    sink(TransportEvent::Closed { reason });
}

async fn shut_down(child: &mut Child, group: &GroupGuard, spec: &StdioSpec) -> std::io::Result<ExitStatus> {
    if let Ok(status) = tokio::time::timeout(spec.stdin_grace, child.wait()).await {
        return status;
    }
    tracing::debug!(server = %spec.server, "server did not exit after stdin closed; sending SIGTERM");
    group.kill(libc::SIGTERM);
    if let Ok(status) = tokio::time::timeout(spec.term_grace, child.wait()).await {
        return status;
    }
    tracing::warn!(server = %spec.server, "server ignored SIGTERM; sending SIGKILL");
    group.kill(libc::SIGKILL);
    child.wait().await
}

fn describe_exit(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("the server process exited with code {code}"),
        (None, Some(signal)) => format!("the server process was killed by signal {signal}"),
        (None, None) => format!("the server process exited ({status})"),
    }
}

/// Kills the child's process group when dropped, unless disarmed after the
/// group was already cleaned up.
struct GroupGuard(Option<libc::pid_t>);

impl GroupGuard {
    fn kill(&self, signal: libc::c_int) {
        if let Some(pgid) = self.0 {
            // SAFETY: killpg only sends a signal; ESRCH (group gone) is fine.
            unsafe {
                libc::killpg(pgid, signal);
            }
        }
    }

    fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill(libc::SIGKILL);
    }
}
