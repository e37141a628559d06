//! A browser for the OAuth tests: GET a URL, follow its redirects (as a
//! person's browser does when the authorization server approves at once)
//! until a page answers, and say what was visited. Plain HTTP on loopback
//! only — what the test authorization server and Warden's redirect
//! listener speak.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::Duration;

/// Visits `url` and every `Location` after it (at most 10); returns each
/// URL visited with its status, the last being the page that answered.
pub fn follow(url: &str) -> Result<Vec<(String, u16)>, String> {
    let mut visited = Vec::new();
    let mut next = url.to_string();
    for _ in 0..10 {
        let (status, location) = get(&next)?;
        visited.push((next.clone(), status));
        match location {
            Some(location) if (300..400).contains(&status) => next = location,
            _ => return Ok(visited),
        }
    }
    Err(format!("more than 10 redirects from {url}"))
}

/// One GET: the status and the `Location` header.
fn get(url: &str) -> Result<(u16, Option<String>), String> {
    let parsed = url::Url::parse(url).map_err(|e| format!("{url}: {e}"))?;
    if parsed.scheme() != "http" {
        return Err(format!("the test browser speaks plain http only, not {url}"));
    }
    let host = parsed.host_str().ok_or("no host")?.to_string();
    let port = parsed.port_or_known_default().unwrap_or(80);
    let mut path = parsed.path().to_string();
    if let Some(query) = parsed.query() {
        path = format!("{path}?{query}");
    }
    let mut stream = TcpStream::connect((host.as_str(), port)).map_err(|e| format!("cannot reach {url}: {e}"))?;
    stream.set_read_timeout(Some(Duration::from_secs(30))).ok();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\nAccept: text/html\r\n\r\n")
        .map_err(|e| e.to_string())?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).map_err(|e| format!("reading {url}: {e}"))?;
    let text = String::from_utf8_lossy(&response);
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("no HTTP status from {url}"))?;
    let location = text
        .lines()
        .take_while(|line| !line.is_empty())
        .find_map(|line| line.split_once(':').filter(|(name, _)| name.eq_ignore_ascii_case("location")))
        .map(|(_, value)| value.trim().to_string());
    Ok((status, location))
}

/// A person at a browser for [`Authorizer::login`](warden_actors::Authorizer::login):
/// progress goes to stderr, and the authorization URL is followed (on a
/// thread of its own, as a browser runs beside the login).
pub struct Person;

impl warden_actors::LoginUi for Person {
    fn say(&self, line: &str) {
        eprintln!("login: {line}");
    }

    fn open(&self, url: &str) {
        let url = url.to_string();
        std::thread::spawn(move || {
            if let Err(error) = follow(&url) {
                eprintln!("browser: {error}");
            }
        });
    }
}
