//! The classic Prometheus text format (0.0.4), for a scraper that does not
//! ask for OpenMetrics.
//!
//! `prometheus-client` encodes OpenMetrics, which Prometheus scrapes (it
//! asks for it in `Accept`). Other readers — `promtool check metrics`,
//! older agents, `curl` in a shell script — read the older text format,
//! where a counter's `# HELP` and `# TYPE` name the sample (`x_total`), not
//! the family (`x`), and there is no `# EOF`. The two differ only there,
//! so the OpenMetrics text is renamed line by line rather than encoded a
//! second way.

/// What `GET /metrics` answers a request that does not accept OpenMetrics.
pub(crate) const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// `openmetrics` in the classic text format.
pub(crate) fn from_openmetrics(openmetrics: &str) -> String {
    let counters: Vec<&str> =
        openmetrics.lines().filter_map(|line| line.strip_prefix("# TYPE ")?.strip_suffix(" counter")).collect();
    let mut text = String::with_capacity(openmetrics.len() + 16 * counters.len());
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let renamed = ["# HELP ", "# TYPE "].iter().find_map(|prefix| {
            let rest = line.strip_prefix(prefix)?;
            let (name, tail) = rest.split_once(' ')?;
            counters.contains(&name).then(|| format!("{prefix}{name}_total {tail}"))
        });
        text.push_str(renamed.as_deref().unwrap_or(line));
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    #[test]
    fn counters_are_named_by_their_samples_and_eof_goes() {
        let openmetrics = "# HELP a_calls Calls.\n# TYPE a_calls counter\na_calls_total{x=\"1\"} 2\n\
                           # HELP a_up Up.\n# TYPE a_up gauge\na_up 1\n# EOF\n";
        assert_eq!(
            super::from_openmetrics(openmetrics),
            "# HELP a_calls_total Calls.\n# TYPE a_calls_total counter\na_calls_total{x=\"1\"} 2\n\
             # HELP a_up Up.\n# TYPE a_up gauge\na_up 1\n"
        );
    }
}
