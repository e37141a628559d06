//! `warden audit`: the daemon's record of calls, read back.
//!
//! Reads `audit.jsonl` and its rotated files in the state directory,
//! oldest first, so the output is in the order calls ended; `warden
//! cluster audit` reads every node's records from the cluster's stream. Filters by age
//! (`--since`) and tool (`--tool`, a name or glob). A line that is not a
//! record (a file cut short by a crash) is skipped and counted, not fatal:
//! the rest of the record still matters.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use warden_policy::ToolPatterns;

use super::UsageError;
use crate::cli::Common;
use crate::daemon::state_dir::StateDir;

pub(super) fn run(since: Option<&str>, tool: Option<&str>, json: bool) -> anyhow::Result<ExitCode> {
    let filter = Filter::of(since, tool)?;
    let state = StateDir::from_env()?;
    let mut records = Vec::new();
    let mut unreadable = 0;
    for path in files(state.audit_log()) {
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        for line in text.lines().filter(|line| !line.trim().is_empty()) {
            match serde_json::from_str::<Value>(line) {
                Ok(record) if record["time"].is_number() => records.push(record),
                _ => unreadable += 1,
            }
        }
    }
    if unreadable > 0 {
        eprintln!("warning: {unreadable} line(s) of the audit log are not records (a file cut short?); skipped");
    }
    let kept_in = format!("the daemon keeps them in {}", state.audit_log().display());
    filter.print(records, json, &kept_in)
}

/// `warden cluster audit`: every node's records, from the cluster's stream.
pub(super) async fn cluster(since: Option<&str>, tool: Option<&str>, common: &Common) -> anyhow::Result<ExitCode> {
    let filter = Filter::of(since, tool)?;
    let (_, config) = super::load(common)?;
    let Some(cluster) = &config.cluster else {
        return Err(
            UsageError("this config has no [cluster]: `warden audit` reads this daemon's own record".into()).into()
        );
    };
    let records = warden_cluster::read_audit(cluster, filter.oldest).await?;
    filter.print(records, common.json, "every node sends its records to the cluster's stream in NATS")
}

/// What `--since` and `--tool` keep.
struct Filter<'a> {
    since: Option<&'a str>,
    tool: Option<&'a str>,
    /// Seconds since the epoch; `None`: all.
    oldest: Option<f64>,
    tools: Option<ToolPatterns>,
}

impl<'a> Filter<'a> {
    fn of(since: Option<&'a str>, tool: Option<&'a str>) -> anyhow::Result<Filter<'a>> {
        let oldest = match since {
            Some(age) => {
                let age = parse_age(age).ok_or_else(|| {
                    UsageError(format!("--since takes an age such as 90s, 15m, 1h or 2d, not '{age}'"))
                })?;
                Some(now() - age.as_secs_f64())
            }
            None => None,
        };
        let tools = match tool {
            Some(glob) => Some(
                ToolPatterns::new(&[glob.to_string()])
                    .map_err(|error| UsageError(format!("--tool '{glob}' is not a name or glob: {error}")))?,
            ),
            None => None,
        };
        Ok(Filter { since, tool, oldest, tools })
    }

    /// Prints the records it keeps; `kept_in` says where records are kept
    /// when there is none.
    fn print(&self, mut records: Vec<Value>, json: bool, kept_in: &str) -> anyhow::Result<ExitCode> {
        records.retain(|record| {
            record["time"].as_f64().unwrap_or(0.0) >= self.oldest.unwrap_or(f64::MIN)
                && self.tools.as_ref().is_none_or(|tools| tools.matches(record["tool"].as_str().unwrap_or("")))
        });
        if json {
            println!("{}", serde_json::to_string_pretty(&records)?);
        } else if records.is_empty() {
            println!("no calls recorded{} ({kept_in})", scope(self.since, self.tool));
        } else {
            records.iter().for_each(|record| print!("{}", text(record)));
        }
        Ok(ExitCode::SUCCESS)
    }
}

/// ` in the last 1h for files__*`, as the filters say.
fn scope(since: Option<&str>, tool: Option<&str>) -> String {
    let mut scope = String::new();
    if let Some(since) = since {
        let _ = write!(scope, " in the last {since}");
    }
    if let Some(tool) = tool {
        let _ = write!(scope, " for {tool}");
    }
    scope
}

/// The rotated files, oldest first, then the current one.
fn files(current: PathBuf) -> Vec<PathBuf> {
    let numbered = |n: u32| PathBuf::from(format!("{}.{n}", current.display()));
    let mut rotated: Vec<PathBuf> = (1..1000).map(numbered).take_while(|path| path.exists()).collect();
    rotated.reverse();
    rotated.push(current);
    rotated
}

fn now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |since| since.as_secs_f64())
}

/// `90s`, `15m`, `1h`, `2d` (a bare number is seconds).
fn parse_age(text: &str) -> Option<Duration> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| c.is_ascii_alphabetic()) {
        Some(at) => text.split_at(at),
        None => (text, "s"),
    };
    let number: f64 = number.trim().parse().ok().filter(|n: &f64| n.is_finite() && *n >= 0.0)?;
    let seconds = match unit {
        "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        "d" => 86400.0,
        _ => return None,
    };
    Some(Duration::from_secs_f64(number * seconds))
}

/// One record for people: when, what, how it ended, who decided, leaks.
fn text(record: &Value) -> String {
    let mut out = String::new();
    let mut who = match (record["agent"].as_str(), record["via"].as_str()) {
        (Some(agent), Some(via)) => format!("agent {agent} via {via}"),
        (Some(agent), None) => format!("agent {agent}"),
        (None, Some(via)) => via.to_string(),
        (None, None) => "the host".to_string(),
    };
    // The cluster's stream says which node the call entered at.
    if let Some(node) = record["node"].as_str() {
        who.push_str(&format!(", on node {node}"));
    }
    let _ = writeln!(
        out,
        "{}  {}  {}  {:.1} ms  {}  ({who})",
        utc(record["time"].as_f64().unwrap_or(0.0)),
        record["tool"].as_str().unwrap_or("?"),
        record["outcome"].as_str().unwrap_or("?"),
        record["duration_ms"].as_f64().unwrap_or(0.0),
        decision(&record["decision"]),
    );
    for leak in record["leaks"].as_array().into_iter().flatten() {
        let _ = writeln!(
            out,
            "    {} secret ({}) at {}",
            leak["action"].as_str().unwrap_or("?"),
            leak["kind"].as_str().unwrap_or("?"),
            leak["pointer"].as_str().filter(|pointer| !pointer.is_empty()).unwrap_or("(text)")
        );
    }
    if let Some(error) = record["error"].as_str() {
        let _ = writeln!(out, "    {error}");
    }
    out
}

/// The decision in words.
fn decision(decision: &Value) -> String {
    let field = |name: &str| decision[name].as_str().unwrap_or("?").to_string();
    match decision["kind"].as_str().unwrap_or("none") {
        "not_needed" => "no approval needed".into(),
        "auto" => format!("auto-approved ({})", field("why")),
        "grant" => format!("by grant {}", decision["grant"]),
        "approved" => match decision["grant"].as_u64() {
            Some(grant) => format!("approved by {} (grant {grant})", field("by")),
            None => format!("approved by {}", field("by")),
        },
        "denied" => format!("denied by {}: {}", field("by"), field("reason")),
        "timed_out" => format!("approval timed out after {} s", decision["after_secs"]),
        "no_approver" => "needed approval, nobody to give it".into(),
        "blocked" => "blocked: a secret in the arguments".into(),
        _ => "no decision".into(),
    }
}

/// `2026-12-02 16:53:51` (UTC) from Unix seconds.
fn utc(seconds: f64) -> String {
    let seconds = seconds.max(0.0) as i64;
    let (days, rest) = (seconds.div_euclid(86400), seconds.rem_euclid(86400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}", rest / 3600, rest % 3600 / 60, rest % 60)
}

#[cfg(test)]
mod tests {
    #[test]
    fn ages_and_times_read_as_people_write_them() {
        assert_eq!(super::parse_age("90s").map(|age| age.as_secs()), Some(90));
        assert_eq!(super::parse_age("15m").map(|age| age.as_secs()), Some(900));
        assert_eq!(super::parse_age("2d").map(|age| age.as_secs()), Some(172_800));
        assert_eq!(super::parse_age("1w"), None);
        assert_eq!(super::utc(0.0), "1970-01-01 00:00:00");
        assert_eq!(super::utc(1_796_229_231.0), "2026-12-02 16:33:51");
        assert_eq!(super::utc(951_782_400.0), "2000-02-29 00:00:00");
    }
}
