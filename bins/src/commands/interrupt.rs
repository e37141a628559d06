//! Ctrl-C during `warden call`: the call is cancelled, not abandoned.
//!
//! Without a handler, SIGINT ends the process and the daemon finishes the
//! call behind a client that is gone (its effects happen anyway, and an
//! approval it waits for stays listed). With one, the command asks for the
//! call to be cancelled — in the daemon and at its server — says so, and
//! exits 130 as shells expect of an interrupted command.

/// The exit code of a command a person stopped with Ctrl-C (128 + SIGINT,
/// as shells report it).
pub(super) const INTERRUPTED: u8 = 130;

/// Completes at the first Ctrl-C, having said what happens next. Listening
/// starts when this is called (not when the future is first polled), so
/// from then on the signal no longer ends the process: the call is
/// cancelled in the daemon (and upstream) instead of left running behind a
/// client that is gone.
pub(super) fn interrupted() -> impl std::future::Future<Output = ()> {
    let signal = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt());
    async move {
        let Ok(mut signal) = signal else { return std::future::pending().await };
        if signal.recv().await.is_none() {
            return std::future::pending().await;
        }
        eprintln!("\nCtrl-C: cancelling the call (its server is told to stop)");
    }
}
