//! Warden's wrapper tools (`<server>__list_resources`, `__read_resource`,
//! `__list_prompts`, `__get_prompt`) against the pinned reference servers,
//! installed by `warden_tests::real_servers`, and the text a model reads from
//! them and from ordinary tools (`Warden::call_tool_text`): listings, resource
//! and prompt bodies, binary summaries, errors, and truncation at
//! `output_limit_bytes`. Real time, real processes, real npm packages.
//!
//! Facts about `@modelcontextprotocol/server-everything` pinned here (the
//! version in `real_servers::EVERYTHING`):
//!
//! * Its static resources are the files of its `dist/docs/` folder, at
//!   `demo://resource/static/document/<file>`; its two templates are
//!   `demo://resource/dynamic/{text,blob}/{resourceId}`.
//! * The dynamic resources end with the server's local time
//!   (`... created at 1:50:26 PM`), so their length moves with the clock:
//!   tests that pin a blob's size read the time's length just before and
//!   just after, and retry if an hour boundary changed it in between.
//! * `gzip-file-as-resource` with a `data:` URL makes a session resource
//!   whose blob is the same bytes every time (31 bytes for `hello world`).

use serde_json::{json, Value};
use warden_actors::{CallError, CallOptions, PrimitiveTool, Warden};
use warden_protocol::ContentBlock;
use warden_tests::real_servers::{everything_doc, start_everything, FILESYSTEM};
use warden_tests::{bins, model_text as text, scratch_dir, server_table, start_running};

/// The time a dynamic resource was made at: what follows `created at `.
fn created_at(text: &str) -> &str {
    let (_, time) = text.rsplit_once(" created at ").unwrap_or_else(|| panic!("no time in {text:?}"));
    assert!(time.contains(':') && !time.contains('\n'), "not a time: {time:?}");
    time
}

/// How long the server's clock reading is right now, in bytes.
async fn clock_len(warden: &Warden) -> usize {
    let read = text(warden, "everything__read_resource", json!({"uri": "demo://resource/dynamic/text/9"})).await;
    created_at(&read).len()
}

/// Runs `call` between two clock readings of the same length (so its own
/// reading had that length too) and returns its text and that length.
async fn with_clock_len(warden: &Warden, name: &str, arguments: Value) -> (String, usize) {
    for _ in 0..3 {
        let before = clock_len(warden).await;
        let rendered = text(warden, name, arguments.clone()).await;
        if clock_len(warden).await == before {
            return (rendered, before);
        }
    }
    panic!("the server's clock kept changing length");
}

#[tokio::test]
async fn a_server_with_resources_and_prompts_gets_four_read_only_wrappers() {
    let warden = start_everything("").await;
    // The server's own 13 names are pinned in real_servers.rs; here, that
    // the wrappers come on top of them, and exactly which (below).
    let own = warden.tools().iter().filter(|entry| entry.primitive_tool.is_none()).count();
    assert_eq!(own, 13);
    assert_eq!(warden.status()[0].tools, 17, "13 of the server's tools and 4 wrappers");

    let wrappers: Vec<(String, PrimitiveTool, String, Value)> = warden
        .tools()
        .into_iter()
        .filter_map(|entry| Some((entry.name, entry.primitive_tool?, entry.tool.name, entry.tool.input_schema)))
        .collect();
    let object = |properties: Value, required: &[&str]| {
        let mut schema = json!({"type": "object", "properties": properties});
        if !required.is_empty() {
            schema["required"] = json!(required);
        }
        schema
    };
    assert_eq!(
        wrappers,
        [
            (
                "everything__get_prompt".to_string(),
                PrimitiveTool::GetPrompt,
                "get_prompt".to_string(),
                object(
                    json!({
                        "name": {"type": "string", "description": "The prompt's name, as list_prompts shows it."},
                        "arguments": {
                            "type": "object",
                            "description": "The prompt's arguments, by name.",
                            "additionalProperties": {"type": "string"},
                        },
                    }),
                    &["name"],
                ),
            ),
            (
                "everything__list_prompts".to_string(),
                PrimitiveTool::ListPrompts,
                "list_prompts".to_string(),
                object(json!({}), &[])
            ),
            (
                "everything__list_resources".to_string(),
                PrimitiveTool::ListResources,
                "list_resources".to_string(),
                object(json!({}), &[]),
            ),
            (
                "everything__read_resource".to_string(),
                PrimitiveTool::ReadResource,
                "read_resource".to_string(),
                object(json!({"uri": {"type": "string", "description": "The resource's URI."}}), &["uri"]),
            ),
        ]
    );

    for entry in warden.tools().into_iter().filter(|entry| entry.primitive_tool.is_some()) {
        assert_eq!(entry.server, "everything");
        let annotations =
            entry.tool.annotations.as_ref().unwrap_or_else(|| panic!("{} has no annotations", entry.name));
        assert_eq!(
            (
                annotations.read_only_hint,
                annotations.destructive_hint,
                annotations.idempotent_hint,
                annotations.open_world_hint
            ),
            (Some(true), Some(false), Some(true), Some(false)),
            "{}",
            entry.name
        );
        let description = entry.tool.description.as_deref().unwrap_or_default();
        assert!(!description.is_empty(), "{} has no description", entry.name);
    }
    // The server's own tools are not wrappers.
    let own = warden.tools().into_iter().filter(|entry| entry.primitive_tool.is_none()).count();
    assert_eq!(own, 13);
    warden.shutdown().await;
}

#[tokio::test]
async fn list_resources_shows_every_document_and_both_templates() {
    let warden = start_everything("").await;
    let listing = text(&warden, "everything__list_resources", json!({})).await;
    let documents = [
        "architecture.md",
        "extension.md",
        "features.md",
        "how-it-works.md",
        "instructions.md",
        "startup.md",
        "structure.md",
    ];
    let mut expected: Vec<String> = documents
        .iter()
        .map(|file| {
            format!(
                "- demo://resource/static/document/{file} — {file} (text/markdown): Static document file exposed from \
                 /docs: {file}"
            )
        })
        .collect();
    expected.push("Templates:".to_string());
    expected.push(
        "- demo://resource/dynamic/text/{resourceId} — Dynamic Text Resource (text/plain): Plaintext dynamic resource \
         fabricated from the {resourceId} variable, which must be an integer."
            .to_string(),
    );
    expected.push(
        "- demo://resource/dynamic/blob/{resourceId} — Dynamic Blob Resource (application/octet-stream): Binary \
         (base64) dynamic resource fabricated from the {resourceId} variable, which must be an integer."
            .to_string(),
    );
    assert_eq!(listing, expected.join("\n"));
    assert_eq!(
        listing.lines().nth(4),
        Some(
            "- demo://resource/static/document/instructions.md — instructions.md (text/markdown): Static document \
             file exposed from /docs: instructions.md"
        )
    );
    warden.shutdown().await;
}

#[tokio::test]
async fn read_resource_returns_text_as_the_server_sent_it() {
    let warden = start_everything("").await;
    let instructions =
        text(&warden, "everything__read_resource", json!({"uri": "demo://resource/static/document/instructions.md"}))
            .await;
    assert_eq!(instructions, everything_doc("instructions.md"));
    assert!(instructions.starts_with("# Everything Server – Server Instructions\n\nAudience: "), "{instructions}");
    assert_eq!(instructions.len(), 1579);

    let dynamic = text(&warden, "everything__read_resource", json!({"uri": "demo://resource/dynamic/text/1"})).await;
    let time = created_at(&dynamic);
    assert_eq!(dynamic, format!("Resource 1: This is a plaintext resource created at {time}"));
    warden.shutdown().await;
}

#[tokio::test]
async fn read_resource_summarises_a_blob_with_its_decoded_size() {
    let warden = start_everything("").await;
    // The template's blob: base64 of `Resource 1: This is a base64 blob
    // created at <time>`, 45 bytes and the time. The contents say
    // text/plain (the template's listing says application/octet-stream).
    let (summary, time_len) =
        with_clock_len(&warden, "everything__read_resource", json!({"uri": "demo://resource/dynamic/blob/1"})).await;
    assert_eq!("Resource 1: This is a base64 blob created at ".len(), 45);
    assert_eq!(summary, format!("[binary text/plain: ~{} bytes]", 45 + time_len));

    // A blob whose bytes never change: `hello world`, gzipped into a session
    // resource (10 bytes of header, 13 of deflate, 8 of trailer).
    let gzip = json!({"name": "hello.gz", "data": "data:text/plain;base64,aGVsbG8gd29ybGQ=", "outputType": "resource"});
    let raw = warden.call_tool("everything__gzip-file-as-resource", gzip.clone()).await.unwrap();
    let [ContentBlock::Other(block)] = raw.content.as_slice() else { panic!("one resource block: {raw:?}") };
    assert_eq!(block["resource"]["blob"], "H4sIAAAAAAAAA8tIzcnJVyjPL8pJAQCFEUoNCwAAAA==");
    // 44 base64 characters, two of them padding: 11 * 3 - 2 = 31 bytes.
    let rendered = text(&warden, "everything__gzip-file-as-resource", gzip).await;
    assert_eq!(rendered, "[binary application/gzip: ~31 bytes] demo://resource/session/hello.gz");
    let read = text(&warden, "everything__read_resource", json!({"uri": "demo://resource/session/hello.gz"})).await;
    assert_eq!(read, "[binary application/gzip: ~31 bytes]");
    // The listing asks the server every time, so the new resource is there.
    let listing = text(&warden, "everything__list_resources", json!({})).await;
    assert!(
        listing.contains("\n- demo://resource/session/hello.gz — hello.gz (application/gzip)\nTemplates:\n"),
        "{listing}"
    );
    warden.shutdown().await;
}

#[tokio::test]
async fn list_prompts_marks_required_arguments_and_shows_empty_ones() {
    let warden = start_everything("").await;
    let listing = text(&warden, "everything__list_prompts", json!({})).await;
    // `state` has no description line: the server lists none for it (its
    // zod `.describe()` sits inside `.optional()`).
    assert_eq!(
        listing,
        "- simple-prompt(): A prompt with no arguments\n\
         - args-prompt(city*, state): A prompt with two arguments, one required and one optional\n    \
         city: Name of the city\n\
         - completable-prompt(department*, name*): First argument choice narrows values for second argument.\n    \
         department: Choose the department.\n    \
         name: Choose a team member to lead the selected department.\n\
         - resource-prompt(resourceType*, resourceId*): A prompt that includes an embedded resource reference\n    \
         resourceType: Type of resource to fetch\n    \
         resourceId: ID of the text resource to fetch"
    );
    warden.shutdown().await;
}

#[tokio::test]
async fn get_prompt_substitutes_arguments_and_keeps_embedded_resources() {
    let warden = start_everything("").await;
    let get = |name: &str, arguments: Value| json!({"name": name, "arguments": arguments});
    assert_eq!(
        text(&warden, "everything__get_prompt", get("args-prompt", json!({"city": "Paris", "state": "Texas"}))).await,
        "[user] What's weather in Paris, Texas?"
    );
    assert_eq!(
        text(&warden, "everything__get_prompt", get("args-prompt", json!({"city": "Lyon"}))).await,
        "[user] What's weather in Lyon?"
    );
    assert_eq!(
        text(&warden, "everything__get_prompt", json!({"name": "simple-prompt"})).await,
        "[user] This is a simple prompt without arguments."
    );
    assert_eq!(
        text(
            &warden,
            "everything__get_prompt",
            get("completable-prompt", json!({"department": "Sales", "name": "Eve"}))
        )
        .await,
        "[user] Please promote Eve to the head of the Sales team."
    );

    // The embedded text resource is shown, as its own message.
    let with_text = text(
        &warden,
        "everything__get_prompt",
        get("resource-prompt", json!({"resourceType": "Text", "resourceId": "2"})),
    )
    .await;
    let time = created_at(&with_text);
    assert_eq!(
        with_text,
        format!(
            "[user] This prompt includes the Text resource with id: 2. Please analyze the following resource:\n\n\
             [user] Resource 2: This is a plaintext resource created at {time}"
        )
    );

    // The embedded blob is summarised with its URI; a number is sent as the
    // string MCP prompt arguments must be.
    let (with_blob, time_len) = with_clock_len(
        &warden,
        "everything__get_prompt",
        get("resource-prompt", json!({"resourceType": "Blob", "resourceId": 3})),
    )
    .await;
    assert_eq!(
        with_blob,
        format!(
            "[user] This prompt includes the Blob resource with id: 3. Please analyze the following resource:\n\n\
             [user] [binary text/plain: ~{} bytes] demo://resource/dynamic/blob/3",
            45 + time_len
        )
    );
    warden.shutdown().await;
}

#[tokio::test]
async fn servers_that_claim_only_tools_get_no_wrappers() {
    let root = scratch_dir("wrappers-fs");
    let mut toml = server_table("files", FILESYSTEM.command(&[root.to_str().unwrap()]), "");
    toml.push_str(&format!("[servers.test]\ncommand = {:?}\n", bins::test_server().display().to_string()));
    let warden = start_running(&toml).await;
    let counts: Vec<(String, usize)> = warden.status().into_iter().map(|s| (s.name, s.tools)).collect();
    assert_eq!(counts, [("files".to_string(), 14), ("test".to_string(), 14)]);
    let tools = warden.tools();
    assert!(
        tools.iter().all(|entry| entry.primitive_tool.is_none()),
        "{:?}",
        tools.iter().map(|e| &e.name).collect::<Vec<_>>()
    );
    for suffix in ["__list_resources", "__read_resource", "__list_prompts", "__get_prompt"] {
        assert!(!tools.iter().any(|entry| entry.name.ends_with(suffix)), "a {suffix} wrapper was registered");
    }
    let error = warden.call_tool("files__list_resources", json!({})).await.unwrap_err();
    assert_eq!(error, CallError::UnknownTool { name: "files__list_resources".to_string() });
    warden.shutdown().await;
}

#[tokio::test]
async fn wrapper_misuse_and_unknown_names_are_explained() {
    let warden = start_everything("").await;

    // Missing or mistyped arguments: a failed tool result the model reads.
    for arguments in [json!({}), json!({"uri": 42})] {
        let rendered = warden
            .host()
            .call_text("everything__read_resource", arguments.clone(), CallOptions::default())
            .await
            .unwrap();
        assert!(rendered.is_error, "{arguments}");
        assert_eq!(rendered.text, "Error: read_resource needs `uri`, the resource's URI as a string");
        let raw = warden.call_tool("everything__read_resource", arguments).await.unwrap();
        assert!(raw.is_error());
        assert_eq!(raw.text(), "read_resource needs `uri`, the resource's URI as a string");
    }
    let rendered = warden.host().call_text("everything__get_prompt", json!({}), CallOptions::default()).await.unwrap();
    assert_eq!(
        (rendered.is_error, rendered.text.as_str()),
        (true, "Error: get_prompt needs `name`, the prompt's name as a string")
    );
    let rendered = warden
        .host()
        .call_text(
            "everything__get_prompt",
            json!({"name": "args-prompt", "arguments": "Paris"}),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(
        (rendered.is_error, rendered.text.as_str()),
        (true, "Error: get_prompt's `arguments` must be an object of strings")
    );

    // What the server refuses is a tool error the model reads, with the
    // server's own words and JSON-RPC code.
    let refusals = [
        (
            "everything__read_resource",
            json!({"uri": "demo://nope"}),
            "Error: read_resource failed: MCP error -32602: Resource demo://nope not found (JSON-RPC error -32602)",
        ),
        (
            // A URI that matches a template but not its rules fails in the server's handler.
            "everything__read_resource",
            json!({"uri": "demo://resource/dynamic/text/0"}),
            "Error: read_resource failed: Unknown resource: demo://resource/dynamic/text/0 (JSON-RPC error -32603)",
        ),
        (
            "everything__get_prompt",
            json!({"name": "nope"}),
            "Error: get_prompt failed: MCP error -32602: Prompt nope not found (JSON-RPC error -32602)",
        ),
        (
            "everything__get_prompt",
            json!({"name": "args-prompt"}),
            "Error: get_prompt failed: MCP error -32602: Invalid arguments for prompt args-prompt: Invalid input: \
             expected string, received undefined at city (JSON-RPC error -32602)",
        ),
    ];
    for (name, arguments, expected) in refusals {
        let rendered =
            warden.host().call_text(name, arguments, CallOptions::default()).await.expect("a refusal is a tool result");
        assert_eq!((rendered.is_error, rendered.text.as_str()), (true, expected));
    }
    // The server is still fine afterwards.
    assert_eq!(
        text(&warden, "everything__get_prompt", json!({"name": "simple-prompt"})).await,
        "[user] This is a simple prompt without arguments."
    );
    warden.shutdown().await;
}
