//! The command line: options, their parsing and the checks that refuse
//! combinations which would silently test nothing.

use super::*;

/// The command-line options; see the crate documentation.
#[derive(Debug)]
pub(crate) struct Options {
    pub(crate) tools: Vec<String>,
    pub(crate) page_size: Option<usize>,
    pub(crate) protocol_version: Option<String>,
    pub(crate) duplicate_tools: Vec<String>,
    pub(crate) extra_tools: Vec<String>,
    pub(crate) startup_delay: Option<Duration>,
    pub(crate) exit_at_start: Option<i32>,
    pub(crate) ignore_stdin_eof: bool,
    pub(crate) ignore_sigterm: bool,
    pub(crate) list_changed_after_initialized: bool,
    pub(crate) no_tools_capability: bool,
    pub(crate) hang_initialize: bool,
    pub(crate) garbage_at_start: bool,
    pub(crate) request_during_initialize: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            tools: DEFAULT_TOOLS.iter().map(ToString::to_string).collect(),
            page_size: None,
            protocol_version: None,
            duplicate_tools: Vec::new(),
            extra_tools: Vec::new(),
            startup_delay: None,
            exit_at_start: None,
            ignore_stdin_eof: false,
            ignore_sigterm: false,
            list_changed_after_initialized: false,
            no_tools_capability: false,
            hang_initialize: false,
            garbage_at_start: false,
            request_during_initialize: false,
        }
    }
}

/// Parses the command line, or prints the usage and exits: a test that passes
/// a wrong option should fail loudly at start, not run with a default.
pub(crate) fn parse_command_line() -> Options {
    match parse_args(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("{SERVER_NAME}: {message}\n{USAGE}");
            std::process::exit(2);
        }
    }
}

pub(crate) fn parse_args(args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut options = Options::default();
    let mut args = args;
    while let Some(arg) = args.next() {
        // Accept both `--flag value` and `--flag=value`.
        let (flag, inline_value) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag.to_owned(), Some(value.to_owned())),
            _ => (arg, None),
        };
        let mut value = || take_value(&flag, inline_value.clone(), &mut args);
        match flag.as_str() {
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            "--tools" => options.tools = split_list(&value()?),
            "--page-size" => options.page_size = Some(parse_number(&flag, &value()?)?),
            "--protocol-version" => options.protocol_version = Some(value()?),
            "--duplicate-tool" => options.duplicate_tools.push(value()?),
            "--extra-tool" => options.extra_tools.push(value()?),
            "--startup-delay-ms" => {
                options.startup_delay = Some(Duration::from_millis(parse_number(&flag, &value()?)?));
            }
            "--exit-at-start" => options.exit_at_start = Some(parse_number(&flag, &value()?)?),
            _ => {
                let switch = switch_for(&mut options, &flag).ok_or_else(|| format!("unknown option {flag}"))?;
                if inline_value.is_some() {
                    return Err(format!("{flag} takes no value"));
                }
                *switch = true;
            }
        }
    }
    validate(&options)?;
    Ok(options)
}

/// The boolean field that the on/off option `flag` sets, if it is one.
pub(crate) fn switch_for<'a>(options: &'a mut Options, flag: &str) -> Option<&'a mut bool> {
    Some(match flag {
        "--ignore-stdin-eof" => &mut options.ignore_stdin_eof,
        "--ignore-sigterm" => &mut options.ignore_sigterm,
        "--list-changed-after-initialized" => &mut options.list_changed_after_initialized,
        "--no-tools-capability" => &mut options.no_tools_capability,
        "--hang-initialize" => &mut options.hang_initialize,
        "--garbage-at-start" => &mut options.garbage_at_start,
        "--request-during-initialize" => &mut options.request_during_initialize,
        _ => return None,
    })
}

pub(crate) fn take_value(
    flag: &str,
    inline_value: Option<String>,
    args: &mut impl Iterator<Item = String>,
) -> Result<String, String> {
    inline_value.or_else(|| args.next()).ok_or_else(|| format!("{flag} needs a value"))
}

pub(crate) fn parse_number<T: std::str::FromStr>(flag: &str, text: &str) -> Result<T, String> {
    text.parse().map_err(|_| format!("{flag}: `{text}` is not a valid number"))
}

pub(crate) fn split_list(text: &str) -> Vec<String> {
    text.split(',').map(str::trim).filter(|name| !name.is_empty()).map(str::to_owned).collect()
}

/// Tools served only when `--tools` names them.
pub(crate) const OPTIONAL_TOOLS: [&str; 6] = ["cancellations", "progress", "meta", "record", "record_safe", "mischief"];

pub(crate) fn is_builtin_tool(name: &str) -> bool {
    name == LATE_TOOL || DEFAULT_TOOLS.contains(&name) || OPTIONAL_TOOLS.contains(&name)
}

/// Rejects option combinations that would silently test nothing.
pub(crate) fn validate(options: &Options) -> Result<(), String> {
    if options.page_size == Some(0) {
        return Err("--page-size must be at least 1".into());
    }
    if let Some(name) = options.tools.iter().find(|name| !is_builtin_tool(name)) {
        return Err(format!("--tools: no built-in tool is called `{name}` (use --extra-tool)"));
    }
    if let Some(name) = options.extra_tools.iter().find(|name| name.is_empty() || is_builtin_tool(name)) {
        return Err(format!("--extra-tool `{name}` is empty or collides with a built-in tool"));
    }
    let can_be_listed =
        |name: &String| name == LATE_TOOL || options.tools.contains(name) || options.extra_tools.contains(name);
    if let Some(name) = options.duplicate_tools.iter().find(|name| !can_be_listed(name)) {
        return Err(format!("--duplicate-tool `{name}` is not a served tool"));
    }
    Ok(())
}
