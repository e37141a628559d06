//! `${VAR}` in config values: the environment's value, a default, or a
//! VS Code input — read at load time, so secrets stay in the environment
//! rather than in the file.

/// Replaces `${VAR}` with the variable's value, and `${VAR:-default}`
/// with its value or, when it is unset or empty, `default` (as Claude
/// Code's `.mcp.json` writes it); `$${` is a literal `${`.
pub(crate) fn expand(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        if let Some(after) = rest.strip_prefix("$${") {
            out.push_str("${");
            rest = after;
        } else if let Some(after) = rest.strip_prefix("${") {
            let end = after.find('}').ok_or_else(|| format!("`${{` without a closing `}}` in \"{text}\""))?;
            if let Some(id) = after[..end].strip_prefix("input:") {
                let [exact, snake] = input_variables(id);
                let value = lookup(&exact).or_else(|| lookup(&snake)).ok_or_else(|| {
                    format!("`${{input:{id}}}` is a VS Code input, which Warden reads from the environment: set `{snake}` (or `{exact}`) before starting Warden")
                })?;
                out.push_str(&value);
                rest = &after[end + 1..];
                continue;
            }
            let (name, default) = match after[..end].split_once(":-") {
                Some((name, default)) => (name, Some(default)),
                None => (&after[..end], None),
            };
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(format!("`${{{name}}}` is not a valid variable name (letters, digits and '_')"));
            }
            let value = match (default, lookup(name).filter(|value| default.is_none() || !value.is_empty())) {
                (_, Some(value)) => value,
                (Some(default), None) => default.to_string(),
                (None, None) => return Err(format!(
                    "environment variable `{name}` is not set; set it before starting Warden, write `${{{name}:-default}}` for a fallback, or `$${{` for a literal `${{`"
                )),
            };
            out.push_str(&value);
            rest = &after[end + 1..];
        } else {
            out.push('$');
            rest = &rest[1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// The environment variable names `${input:ID}` may be read from.
pub(crate) fn input_variables(id: &str) -> [String; 2] {
    let snake: String =
        id.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect();
    [id.to_string(), snake]
}
