//! The process's plumbing: stdin lines in, one writer thread for stdout,
//! SIGTERM, `--exit-at-start`, and the loop that serves until stdin closes.

use super::*;

/// `--exit-at-start`: a start-up failure with a recognisable stderr tail.
pub(crate) fn exit_at_start(code: i32) -> ! {
    eprintln!("{SERVER_NAME} {SERVER_VERSION} starting");
    eprintln!("about to exit with code {code} (--exit-at-start)");
    eprintln!("fatal: exiting at start as asked");
    std::process::exit(code);
}

/// Exits with code 0 on SIGTERM, or just logs it with `--ignore-sigterm`,
/// so that tests can check that Warden escalates to SIGKILL.
pub(crate) fn watch_sigterm(ignore: bool) {
    let mut sigterm = signal(SignalKind::terminate()).expect("cannot install a SIGTERM handler");
    tokio::spawn(async move {
        while sigterm.recv().await.is_some() {
            if ignore {
                log!("got SIGTERM; ignoring it (--ignore-sigterm)");
            } else {
                log!("got SIGTERM; exiting with code 0");
                std::process::exit(0);
            }
        }
    });
}

/// Reads stdin lines until EOF and hands them over; the channel closes at EOF.
///
/// A plain thread with blocking reads keeps us independent of tokio's
/// `io-std` feature, which the workspace does not enable.
pub(crate) fn start_stdin_reader() -> mpsc::UnboundedReceiver<String> {
    let (lines, receiver) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut buffer = Vec::new();
        loop {
            buffer.clear();
            match stdin.read_until(b'\n', &mut buffer) {
                Ok(0) => break,
                Ok(_) => {
                    let line = String::from_utf8_lossy(&buffer).trim().to_owned();
                    if !line.is_empty() && lines.send(line).is_err() {
                        break;
                    }
                }
                Err(error) => {
                    log!("cannot read stdin: {error}");
                    break;
                }
            }
        }
    });
    receiver
}

/// A message for the stdout writer thread.
pub(crate) enum Output {
    /// One line, written with a trailing newline and flushed.
    Line(String),
    /// Bytes that need not be UTF-8, written likewise.
    Bytes(Vec<u8>),
    /// Close stdout (the process lives on).
    Close,
    /// Everything has been written; the thread should end.
    Stop,
}

/// Starts the only thread that writes to stdout. Everything goes through its
/// channel, which keeps lines whole and in the order they were sent.
pub(crate) fn start_stdout_writer() -> (std_mpsc::Sender<Output>, std::thread::JoinHandle<()>) {
    let (output, receiver) = std_mpsc::channel();
    let writer = std::thread::spawn(move || {
        let mut stdout = std::io::stdout().lock();
        for message in receiver {
            let written = match message {
                Output::Line(line) => writeln!(stdout, "{line}"),
                Output::Bytes(bytes) => stdout.write_all(&bytes).and_then(|()| stdout.write_all(b"\n")),
                Output::Close => {
                    let _ = stdout.flush();
                    drop(stdout);
                    // SAFETY: fd 1 is this process's stdout, written by no one else from now on.
                    unsafe { libc::close(1) };
                    break;
                }
                Output::Stop => break,
            };
            if let Err(error) = written.and_then(|()| stdout.flush()) {
                log!("cannot write to stdout ({error}); dropping further output");
                break;
            }
        }
    });
    (output, writer)
}

/// Handles stdin until EOF, then waits for the running calls to finish.
pub(crate) async fn serve(server: &Arc<Server>, mut lines: mpsc::UnboundedReceiver<String>) {
    let mut tasks = JoinSet::new();
    loop {
        tokio::select! {
            line = lines.recv() => match line {
                Some(line) => handle_line(server, &mut tasks, &line),
                None => break,
            },
            // Reap finished tasks as we go, so the set does not keep growing.
            Some(ended) = tasks.join_next(), if !tasks.is_empty() => report_task_end(ended),
        }
    }
    log!("stdin closed");
    // Nothing can answer our own requests any more: fail them now rather than
    // waiting forever.
    server.abandon_client_requests();
    if server.options.ignore_stdin_eof {
        log!("staying alive until killed (--ignore-stdin-eof)");
        std::future::pending::<()>().await;
    }
    while let Some(ended) = tasks.join_next().await {
        report_task_end(ended);
    }
}

pub(crate) fn report_task_end(ended: Result<(), tokio::task::JoinError>) {
    if let Err(error) = ended {
        log!("a request task failed: {error}");
    }
}
