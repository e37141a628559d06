//! One connection to the daemon: write a request line, read its answer.

use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader};
use tokio::net::{TcpStream, UnixStream};
use warden_protocol::{BridgeError, BridgeResponse};

use crate::daemon::lockfile::Lockfile;

/// The half a client reads answers from (TCP or the Unix socket).
pub(crate) type ReadHalf = BufReader<Box<dyn AsyncRead + Send + Unpin>>;

/// The half a client writes requests to.
pub(crate) type WriteHalf = Box<dyn AsyncWrite + Send + Unpin>;

/// A connection to the running daemon.
pub(crate) struct Client {
    reader: ReadHalf,
    writer: WriteHalf,
    /// The lockfile it was found by.
    pub(crate) lockfile: Lockfile,
    /// Where it is connected: the socket's path, or the TCP address.
    pub(crate) endpoint: String,
    /// Whether a request with the token has been answered on it: before
    /// that the daemon takes a first line of at most 1 MiB.
    proven: bool,
}

/// How long an answer is waited for before the CLI says it is waiting.
const WAIT_NOTICE: std::time::Duration = std::time::Duration::from_secs(10);

/// How often it says so again while the wait goes on.
const WAIT_NOTICE_AGAIN: std::time::Duration = std::time::Duration::from_secs(60);

/// The longest first line the daemon reads from a connection that has not
/// sent its token yet (`daemon::admission`).
const MAX_FIRST_LINE_BYTES: usize = 1024 * 1024;

/// Why a request got no result.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ClientError {
    /// The daemon answered with an error.
    #[error("{}", .0.message)]
    Bridge(BridgeError),
    /// The connection broke.
    #[error("lost the connection to the warden daemon ({0}); `warden status -v` shows whether it is still running")]
    Io(#[from] std::io::Error),
    /// The answer was not what the protocol says.
    #[error("the warden daemon answered something unexpected: {0}")]
    BadAnswer(String),
}

impl Client {
    /// Connects to the daemon the lockfile names: on its Unix socket when
    /// it has one (cheaper per request, see `daemon::unix_socket`), else —
    /// or when the socket cannot be reached — on its TCP port.
    pub(crate) async fn connect(lockfile: Lockfile) -> std::io::Result<Client> {
        if let Some(socket) = &lockfile.socket {
            match UnixStream::connect(socket).await.and_then(crate::unix_stream::split) {
                Ok((read, writer)) => {
                    let endpoint = socket.display().to_string();
                    return Ok(Client::of(Box::new(read), Box::new(writer), lockfile, endpoint));
                }
                Err(error) => {
                    tracing::debug!("the daemon's socket {} refused ({error}); trying TCP", socket.display())
                }
            }
        }
        let stream = TcpStream::connect(lockfile.address).await?;
        let _ = stream.set_nodelay(true);
        let (read, writer) = stream.into_split();
        let endpoint = lockfile.address.to_string();
        Ok(Client::of(Box::new(read), Box::new(writer), lockfile, endpoint))
    }

    fn of(read: Box<dyn AsyncRead + Send + Unpin>, writer: WriteHalf, lockfile: Lockfile, endpoint: String) -> Client {
        Client { reader: BufReader::new(read), writer, lockfile, endpoint, proven: false }
    }

    /// Sends `request` (an object with `op`) and waits for its answer.
    pub(crate) async fn request(&mut self, request: Value) -> Result<Box<RawValue>, ClientError> {
        self.request_noticed(request, &mut |_| {}).await
    }

    /// [`Client::request`], handing each notice line the daemon sends
    /// before the answer (a `call_tool` with `notices`) to `on_notice`.
    pub(crate) async fn request_noticed(
        &mut self,
        request: Value,
        on_notice: &mut (dyn FnMut(Value) + Send),
    ) -> Result<Box<RawValue>, ClientError> {
        self.request_stoppable(request, on_notice, std::future::pending()).await
    }

    /// [`Client::request_noticed`] for a request a person may stop: when
    /// `stop` completes first (Ctrl-C), the daemon is asked to cancel the
    /// request (`cancel`), and its answer is returned — `cancelled`, or
    /// its result if it finished first.
    pub(crate) async fn request_stoppable(
        &mut self,
        mut request: Value,
        on_notice: &mut (dyn FnMut(Value) + Send),
        stop: impl std::future::Future<Output = ()>,
    ) -> Result<Box<RawValue>, ClientError> {
        request["token"] = Value::String(self.lockfile.token.clone());
        if request.get("id").is_none() {
            request["id"] = Value::from(1);
        }
        let cancel = serde_json::json!({"op": "cancel", "request": request["id"], "token": self.lockfile.token});
        let mut line = request.to_string();
        line.push('\n');
        if !self.proven && line.len() > MAX_FIRST_LINE_BYTES {
            // A large first request would be refused: prove the token first.
            Box::pin(self.request(serde_json::json!({"op": "ping"}))).await?;
        }
        self.writer.write_all(line.as_bytes()).await?;
        tokio::pin!(stop);
        let mut stopping = false;
        let mut answer = String::new();
        loop {
            answer.clear();
            let read = {
                let read = read_answer(&mut self.reader, self.lockfile.pid, &mut answer);
                tokio::pin!(read);
                loop {
                    tokio::select! {
                        read = &mut read => break read?,
                        () = &mut stop, if !stopping => {
                            // The answer still comes on this connection, after
                            // the daemon stopped the request (or it finished).
                            stopping = true;
                            self.writer.write_all(format!("{cancel}\n").as_bytes()).await?;
                        }
                    }
                }
            };
            if read == 0 {
                return Err(ClientError::Io(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "it closed the connection without answering",
                )));
            }
            // A notice line has `notice` and no `ok`; an answer has `ok`.
            match serde_json::from_str::<Value>(&answer) {
                Ok(mut line) if line.get("ok").is_none() && line.get("notice").is_some() => {
                    on_notice(line["notice"].take())
                }
                _ => break,
            }
        }
        let answer = BridgeResponse::parse(&answer).map_err(|error| ClientError::BadAnswer(error.to_string()))?;
        self.proven = true;
        answer.into_result().map_err(ClientError::Bridge)
    }

    /// Turns the connection into an MCP session (the `mcp` op) and returns
    /// its two halves: MCP messages, one per line, both ways.
    pub(crate) async fn into_mcp(
        mut self,
        agent: Option<&str>,
        server: Option<&str>,
    ) -> Result<(ReadHalf, WriteHalf), ClientError> {
        self.request(serde_json::json!({"op": "mcp", "agent": agent, "server": server})).await?;
        Ok((self.reader, self.writer))
    }

    /// Like [`Client::request`], decoding the result as `T`.
    pub(crate) async fn request_as<T: DeserializeOwned>(&mut self, request: Value) -> Result<T, ClientError> {
        let result = self.request(request).await?;
        serde_json::from_str(result.get()).map_err(|error| ClientError::BadAnswer(error.to_string()))
    }
}

/// Reads one answer line. Nothing waits silently: a wait past
/// [`WAIT_NOTICE`] says, on stderr, what is awaited and how to stop.
async fn read_answer(reader: &mut ReadHalf, pid: u32, answer: &mut String) -> std::io::Result<usize> {
    let read = reader.read_line(answer);
    tokio::pin!(read);
    let mut notice = tokio::time::interval_at(tokio::time::Instant::now() + WAIT_NOTICE, WAIT_NOTICE_AGAIN);
    loop {
        tokio::select! {
            read = &mut read => return read,
            _ = notice.tick() => eprintln!(
                "still waiting for the warden daemon (pid {pid}) to answer: the call may be running, or waiting for \
                 a person — an approval, or a question its server asked, here or on another node of a cluster \
                 (`warden pending` lists both); Ctrl-C stops waiting"
            ),
        }
    }
}
