//! What a model reads of a real server's output (`Warden::call_tool_text`):
//! images summarised while the host keeps them, and text cut at
//! `output_limit_bytes` with a marker, never inside a character. Against
//! the pinned server-everything, real time, real processes.

use serde_json::json;
use warden_protocol::ContentBlock;
use warden_tests::real_servers::{everything_doc, start_everything, EVERYTHING};
use warden_tests::{model_text as text, server_table, start_running};

/// The marker `truncate` ends a cut text with.
fn marker(cut: usize, total: usize) -> String {
    format!("\n[truncated: {cut} of {total} bytes not shown]")
}

/// What a model must see of `full` with an output limit of `limit` bytes,
/// worked out here rather than by calling Warden's own `truncate`.
fn cut_to(full: &str, limit: usize) -> String {
    let total = full.len();
    let mut keep = limit - marker(total, total).len();
    while !full.is_char_boundary(keep) {
        keep -= 1;
    }
    format!("{}{}", &full[..keep], marker(total - keep, total))
}

#[tokio::test]
async fn a_tool_image_is_summarised_for_the_model_and_kept_for_the_host() {
    let warden = start_everything("").await;
    let rendered = text(&warden, "everything__get-tiny-image", json!({})).await;
    assert_eq!(
        rendered,
        "Here's the image you requested:\n[image image/png: ~4033 bytes]\nThe image above is the MCP logo."
    );
    // The raw result still carries the image: 5380 base64 characters, two of
    // them padding, which decode to 5380 / 4 * 3 - 2 = 4033 bytes (Node's
    // own decoder agrees).
    let raw = warden.call_tool("everything__get-tiny-image", json!({})).await.unwrap();
    let ContentBlock::Other(image) = &raw.content[1] else { panic!("an image block: {raw:?}") };
    assert_eq!((image["type"].as_str(), image["mimeType"].as_str()), (Some("image"), Some("image/png")));
    let data = image["data"].as_str().unwrap();
    assert_eq!(data.len(), 5380);
    assert_eq!(data.trim_end_matches('=').len() * 3 / 4, 4033);
    warden.shutdown().await;
}

#[tokio::test]
async fn output_is_cut_at_the_configured_limit_with_a_marker() {
    // Padding makes get-env's answer long on any machine.
    // Leak detection is off: an `env` value counts as a secret, and this one
    // is meant to come back.
    let padding =
        format!("env = {{ WARDEN_PADDING = {:?} }}\ndefault_policy = {{ leaks = \"off\" }}\n", "x".repeat(3000));
    let toml = format!("output_limit_bytes = 1024\n{}", server_table("everything", EVERYTHING.command(&[]), &padding));
    let warden = start_running(&toml).await;

    // A tool: the model's text is cut, the host's raw result is not.
    let raw = warden.call_tool("everything__get-env", json!({})).await.unwrap().text();
    assert!(raw.len() > 3000 && raw.contains(&"x".repeat(3000)), "raw get-env is whole: {} bytes", raw.len());
    let rendered =
        warden.host().call_text("everything__get-env", json!({}), warden_actors::CallOptions::default()).await.unwrap();
    assert!(!rendered.is_error);
    assert!(rendered.text.len() <= 1024, "{} bytes", rendered.text.len());
    assert_eq!(rendered.text, cut_to(&raw, 1024));
    assert!(rendered.text.ends_with(&format!(" of {} bytes not shown]", raw.len())), "{}", rendered.text);

    // A wrapper: the text it answers is bounded even for `call_tool`.
    let uri = json!({"uri": "demo://resource/static/document/structure.md"});
    let structure = everything_doc("structure.md");
    assert_eq!(structure.len(), 12324);
    let read = text(&warden, "everything__read_resource", uri.clone()).await;
    assert_eq!(read.len(), 1024);
    assert!(read.ends_with("\n[truncated: 11344 of 12324 bytes not shown]"), "{read}");
    assert_eq!(read, format!("{}\n[truncated: 11344 of 12324 bytes not shown]", &structure[..980]));
    let raw_read = warden.call_tool("everything__read_resource", uri.clone()).await.unwrap();
    assert_eq!(raw_read.text(), read);
    warden.shutdown().await;

    // A limit that falls inside a `│` (3 bytes, 968..971): the cut keeps
    // whole characters, so the text is 2 bytes short of the limit.
    let toml = format!("output_limit_bytes = 1014\n{}", server_table("everything", EVERYTHING.command(&[]), ""));
    let warden = start_running(&toml).await;
    let read = text(&warden, "everything__read_resource", uri).await;
    assert_eq!(read, format!("{}\n[truncated: 11356 of 12324 bytes not shown]", &structure[..968]));
    assert_eq!(read.len(), 1012);
    assert_eq!(read, cut_to(&structure, 1014));
    warden.shutdown().await;
}
