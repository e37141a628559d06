//! Step 4 of a call: policing what came back.
//!
//! Leak detection on the result: every string is scanned for the known
//! secrets and credential shapes; a hit is redacted in place
//! (`[REDACTED:<kind>]`), or the whole result withheld under
//! `leaks = "block"`. The common case — nothing found — walks the result as
//! it is, without converting it to a JSON tree.

use crate::audit::LeakNote;
use serde_json::Value;
use warden_policy::{LeakAction, LeakScanner, ResolvedPolicy};
use warden_protocol::{CallToolResult, ContentBlock};

/// Leak detection on a result with `scanner` (the config's, or one for
/// the OAuth tokens found in it): secrets redacted in place, or the whole
/// result withheld under `leaks = "block"`.
pub(crate) fn police_result(
    scanner: &LeakScanner,
    policy: &ResolvedPolicy,
    name: &str,
    result: CallToolResult,
    leaks_found: &mut Vec<LeakNote>,
) -> CallToolResult {
    if policy.leaks.value == LeakAction::Off {
        return result;
    }
    if !holds_a_secret(scanner, &result) {
        return result;
    }
    let mut value = Value::from(result);
    let leaks = scanner.redact_json(&mut value);
    let action = if policy.leaks.value == LeakAction::Block { "withheld" } else { "redacted" };
    leaks_found.extend(leaks.iter().map(|leak| LeakNote {
        kind: leak.kind.clone(),
        pointer: leak.path.clone(),
        action,
    }));
    let mut kinds: Vec<String> = leaks.into_iter().map(|leak| leak.kind).collect();
    kinds.sort();
    kinds.dedup();
    if policy.leaks.value == LeakAction::Block {
        tracing::warn!(tool = %name, kinds = ?kinds, "result withheld: it contained secrets");
        return CallToolResult::error(format!(
            "Warden withheld the result of '{name}': it contained {} (leaks = \"block\" for this tool).",
            kinds.join(", ")
        ));
    }
    tracing::warn!(tool = %name, kinds = ?kinds, "secrets redacted from a result");
    serde_json::from_value(value).unwrap_or_else(|_| result_fallback(name, &kinds))
}

/// Whether any string of `result` holds a secret. Walks the result as it
/// is (the common case finds nothing and must stay cheap: no conversion to
/// a JSON tree, no allocation beyond the scanner's own).
fn holds_a_secret(scanner: &LeakScanner, result: &CallToolResult) -> bool {
    let in_map = |map: &serde_json::Map<String, Value>| {
        map.iter().any(|(key, value)| !scanner.find_in_text(key).is_empty() || !scanner.find_in_json(value).is_empty())
    };
    result.content.iter().any(|block| match block {
        ContentBlock::Text { text, extra, .. } => !scanner.find_in_text(text).is_empty() || in_map(extra),
        ContentBlock::Other(map) => in_map(map),
    }) || result.structured_content.as_ref().is_some_and(|value| !scanner.find_in_json(value).is_empty())
        || in_map(&result.extra)
}

/// A redacted result that no longer parses (a server's odd extra members)
/// is not handed over unredacted.
fn result_fallback(name: &str, kinds: &[String]) -> CallToolResult {
    CallToolResult::error(format!(
        "Warden withheld the result of '{name}': it contained {} and could not be redacted in place.",
        kinds.join(", ")
    ))
}
