//! A Unix stream that waits only for what it reads, not for room to write.
//!
//! tokio registers every socket for reading and writing at once, and on a
//! Unix stream socket that is a wake-up too many per message: each time
//! the peer reads something we wrote, the kernel tells our epoll that
//! there is room to write again (`unix_write_space`), whether or not we
//! asked, and a worker parked in `epoll_wait` wakes for nothing. TCP tells
//! only a writer that once found its buffer full. On two cores, with a
//! client, the daemon and a server taking turns, that spurious wake-up is
//! a context switch on every call: `perf record -e sched:sched_wakeup`
//! under the bridge bench counted twice as many wake-ups from
//! `unix_write_space` as from data arriving.
//!
//! So the read half is registered for reading alone, and the write half
//! writes straight to the non-blocking socket. Only when a write finds the
//! socket's buffer full (a large answer to a slow reader) does the write
//! half register, on a duplicate of the descriptor, for room to write, and
//! it stays registered from then on: a connection that carries large
//! answers pays the wake-ups, not every call on every connection.
//!
//! Dropping the write half shuts the socket down for writing, as tokio's
//! own halves do, so the peer reads the end of the stream.

use std::io::{Read as _, Write as _};
use std::net::Shutdown;
use std::os::unix::net::UnixStream as StdUnixStream;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};

/// Splits `stream` into halves that are woken only by what they wait for.
pub(crate) fn split(stream: tokio::net::UnixStream) -> std::io::Result<(ReadHalf, WriteHalf)> {
    let stream = stream.into_std()?;
    let writer = stream.try_clone()?;
    let reader = register(stream, Interest::READABLE)?;
    Ok((ReadHalf(reader), WriteHalf(Writer::Direct(writer))))
}

/// `stream`, registered with the runtime for `interest` alone.
fn register(stream: StdUnixStream, interest: Interest) -> std::io::Result<AsyncFd<StdUnixStream>> {
    // SAFETY: a std `UnixStream` owns its descriptor: open, the same one
    // for as long as the stream lives, and what `as_raw_fd` returns.
    Ok(unsafe { AsyncFd::register_with_interest(stream, interest) }?)
}

/// The reading half: registered for reading only.
pub(crate) struct ReadHalf(AsyncFd<StdUnixStream>);

/// The writing half: writes directly until the socket is first full.
pub(crate) struct WriteHalf(Writer);

enum Writer {
    /// Not registered with the runtime: every write so far found room.
    Direct(StdUnixStream),
    /// Registered for room to write, since a write found none.
    Registered(AsyncFd<StdUnixStream>),
    /// Lost while registering (the runtime refused it); writes fail.
    Gone,
}

impl AsyncRead for ReadHalf {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        loop {
            let mut guard = ready!(self.0.poll_read_ready(cx))?;
            let unfilled = buf.initialize_unfilled();
            match guard.try_io(|stream| stream.get_ref().read(unfilled)) {
                Ok(read) => {
                    let read = read?;
                    buf.advance(read);
                    return Poll::Ready(Ok(()));
                }
                Err(_would_block) => continue,
            }
        }
    }
}

impl AsyncWrite for WriteHalf {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<std::io::Result<usize>> {
        loop {
            match &mut self.0 {
                Writer::Direct(stream) => match stream.write(data) {
                    Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {
                        let Writer::Direct(stream) = std::mem::replace(&mut self.0, Writer::Gone) else {
                            unreachable!("matched above")
                        };
                        self.0 = Writer::Registered(register(stream, Interest::WRITABLE)?);
                    }
                    written => return Poll::Ready(written),
                },
                Writer::Registered(stream) => {
                    let mut guard = ready!(stream.poll_write_ready(cx))?;
                    if let Ok(written) = guard.try_io(|stream| stream.get_ref().write(data)) {
                        return Poll::Ready(written);
                    }
                }
                Writer::Gone => return Poll::Ready(Err(std::io::ErrorKind::BrokenPipe.into())),
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(self.stream().map_or(Ok(()), |stream| stream.shutdown(Shutdown::Write)))
    }
}

impl WriteHalf {
    fn stream(&self) -> Option<&StdUnixStream> {
        match &self.0 {
            Writer::Direct(stream) => Some(stream),
            Writer::Registered(stream) => Some(stream.get_ref()),
            Writer::Gone => None,
        }
    }
}

impl Drop for WriteHalf {
    fn drop(&mut self) {
        if let Some(stream) = self.stream() {
            let _ = stream.shutdown(Shutdown::Write);
        }
    }
}

#[cfg(test)]
mod tests;
