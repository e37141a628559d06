//! `$BROWSER` for the OAuth tests: `warden-test-browser URL` follows the
//! URL's redirects as a browser would and appends what it visited to the
//! file `$WARDEN_TEST_BROWSER_LOG`, when set.

use std::io::Write as _;

fn main() {
    let url = std::env::args().nth(1).expect("usage: warden-test-browser URL");
    let outcome = warden_tests::browser::follow(&url);
    let line = match &outcome {
        Ok(visited) => visited.iter().map(|(url, status)| format!("{status} {url}")).collect::<Vec<_>>().join("\n"),
        Err(error) => format!("error: {error}"),
    };
    if let Some(log) = std::env::var_os("WARDEN_TEST_BROWSER_LOG") {
        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(log).expect("the browser log opens");
        writeln!(file, "{line}").expect("the browser log is writable");
    }
    if outcome.is_err() {
        eprintln!("{line}");
        std::process::exit(1);
    }
}
