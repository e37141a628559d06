//! goose's `config.yaml` rewritten for `warden install`: the extensions
//! Warden took are removed, one `warden` stdio extension added, the rest
//! (goose's own settings, its built-in extensions) kept in their order.
//! YAML comments are not kept by the emitter; the backup has them.

use anyhow::{anyhow, Context as _};
use yaml_rust2::yaml::Hash;
use yaml_rust2::{Yaml, YamlEmitter, YamlLoader};

use super::entry::{WardenEntry, ENTRY_NAME};

/// The goose timeout for the Warden extension, in seconds (goose's default).
const TIMEOUT_SECS: i64 = 300;

/// `text` with `moved` taken out of `extensions` and Warden put in.
pub(crate) fn with_warden(text: &str, moved: &[String], entry: &WardenEntry) -> anyhow::Result<String> {
    let mut documents = YamlLoader::load_from_str(text).context("goose's config is not valid YAML")?;
    let mut root = match documents.pop() {
        Some(Yaml::Hash(root)) => root,
        None | Some(Yaml::Null) => Hash::new(),
        Some(_) => return Err(anyhow!("goose's config is not a map of settings")),
    };
    let key = Yaml::String("extensions".into());
    let extensions = root.entry(key).or_insert_with(|| Yaml::Hash(Hash::new()));
    let Yaml::Hash(extensions) = extensions else { return Err(anyhow!("`extensions` in goose's config is not a map")) };
    extensions.retain(|name, _| !name.as_str().is_some_and(|name| moved.iter().any(|moved| moved == name)));
    let (command, args) = entry.command();
    let mut warden = Hash::new();
    let mut put = |key: &str, value: Yaml| warden.insert(Yaml::String(key.into()), value);
    put("name", Yaml::String(ENTRY_NAME.into()));
    put("type", Yaml::String("stdio".into()));
    put("cmd", Yaml::String(command));
    put("args", Yaml::Array(args.into_iter().map(Yaml::String).collect()));
    put("enabled", Yaml::Boolean(true));
    put("envs", Yaml::Hash(Hash::new()));
    put("timeout", Yaml::Integer(TIMEOUT_SECS));
    extensions.insert(Yaml::String(ENTRY_NAME.into()), Yaml::Hash(warden));
    let mut out = String::new();
    YamlEmitter::new(&mut out).dump(&Yaml::Hash(root)).context("writing goose's config")?;
    let out = out.strip_prefix("---\n").unwrap_or(&out);
    Ok(format!("{out}\n"))
}
