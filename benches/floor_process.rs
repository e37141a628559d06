//! Floor processes: a bench's own binary started again as the cheapest
//! thing that does one job (echo lines, relay them to a server, relay
//! HTTP), so the bench can measure what any process on the path costs on
//! this machine, in the same run as what it compares.

/// Set (to a kind the bench knows): this bench's binary runs as one of its
/// floor processes instead of as the bench.
pub(crate) const FLOOR_PROCESS: &str = "WARDEN_BENCH_FLOOR_PROCESS";

/// Starts this bench's binary as the floor process `kind` (killed when
/// dropped); returns it and the line it printed first (where it listens).
pub(crate) async fn start_floor_process(kind: &str) -> (tokio::process::Child, String) {
    use tokio::io::AsyncBufReadExt as _;
    let mut child = tokio::process::Command::new(std::env::current_exe().expect("this bench's path"))
        .env(FLOOR_PROCESS, kind)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the floor process starts");
    let mut said = tokio::io::BufReader::new(child.stdout.take().expect("piped"));
    let mut address = String::new();
    said.read_line(&mut address).await.expect("the floor process names its address");
    (child, address.trim().to_string())
}
