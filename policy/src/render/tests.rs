use serde_json::json;

use super::*;

/// A 1×1 PNG: 96 base64 characters, 70 bytes decoded.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// `%PDF-1.4 hello`: 14 bytes, one `=` of padding.
const PDF: &str = "JVBERi0xLjQgaGVsbG8=";

// --- truncate ---

#[test]
fn text_at_the_limit_is_returned_untouched() {
    let text = "a".repeat(200);
    let pointer = text.as_ptr();
    let result = truncate(text, 200);
    assert_eq!(result, "a".repeat(200));
    assert_eq!(result.as_ptr(), pointer, "same allocation, no copy");
}

#[test]
fn one_byte_over_cuts_and_says_how_much() {
    // The marker is sized for "201 of 201" (40 bytes), leaving 160 bytes of text.
    let result = truncate("a".repeat(201), 200);
    assert_eq!(result, format!("{}\n[truncated: 41 of 201 bytes not shown]", "a".repeat(160)));
    assert!(result.len() <= 200);
}

#[test]
fn a_two_byte_character_on_the_cut_is_left_out_whole() {
    // Byte 160 falls inside "é" (bytes 159..161).
    let text = format!("{}é{}", "a".repeat(159), "b".repeat(100));
    let result = truncate(text, 200);
    assert_eq!(result, format!("{}\n[truncated: 102 of 261 bytes not shown]", "a".repeat(159)));
}

#[test]
fn a_four_byte_character_on_the_cut_is_left_out_whole() {
    // Byte 160 falls inside "𝄞" (bytes 158..162).
    let text = format!("{}𝄞{}", "a".repeat(158), "b".repeat(100));
    let result = truncate(text, 200);
    assert_eq!(result, format!("{}\n[truncated: 104 of 262 bytes not shown]", "a".repeat(158)));
}

#[test]
fn a_limit_smaller_than_the_marker_still_shows_the_marker() {
    assert_eq!(truncate("hello world".to_string(), 5), "\n[truncated: 11 of 11 bytes not shown]");
}

#[test]
fn ten_megabytes_shrink_to_the_default_limit() {
    let text = "héllo wörld 𝄞 ".repeat(10 * 1024 * 1024 / 19 + 1);
    let total = text.len();
    assert!(total > 10 * 1024 * 1024);
    let result = truncate(text.clone(), DEFAULT_OUTPUT_LIMIT);

    assert!(result.len() <= DEFAULT_OUTPUT_LIMIT, "{}", result.len());
    assert!(result.capacity() <= DEFAULT_OUTPUT_LIMIT, "does not pin the 10 MB buffer");
    let (kept, marker) = result.rsplit_once('\n').unwrap();
    assert!(text.starts_with(kept));
    assert!(kept.len() > DEFAULT_OUTPUT_LIMIT - 60, "only the marker's room is given up");
    assert_eq!(marker, format!("[truncated: {} of {total} bytes not shown]", total - kept.len()));
}

// --- render_call_result ---

#[test]
fn text_blocks_are_shown_as_is_one_per_line() {
    let result = json!({"content": [
        {"type": "text", "text": "first"},
        {"type": "text", "text": "second\nline"}
    ]});
    let rendered = render_call_result(&result);
    assert_eq!(rendered, RenderedResult { text: "first\nsecond\nline".to_string(), is_error: false });
}

#[test]
fn images_and_audio_are_summarised_never_dumped() {
    let result = json!({"content": [
        {"type": "text", "text": "Here is the chart:"},
        {"type": "image", "data": PNG, "mimeType": "image/png"},
        {"type": "audio", "data": "UklGRldBVkUx", "mimeType": "audio/wav"}
    ]});
    assert_eq!(
        render_call_result(&result).text,
        "Here is the chart:\n[image image/png: ~70 bytes]\n[audio audio/wav: ~9 bytes]"
    );
}

#[test]
fn resource_links_show_uri_and_name() {
    let result = json!({"content": [
        {"type": "resource_link", "uri": "file:///project/src/main.rs", "name": "main.rs", "mimeType": "text/x-rust"},
        {"type": "resource_link", "uri": "file:///project/README.md"}
    ]});
    assert_eq!(
        render_call_result(&result).text,
        "[resource_link file:///project/src/main.rs (main.rs)]\n[resource_link file:///project/README.md]"
    );
}

#[test]
fn embedded_resources_show_their_text_or_a_blob_summary() {
    let result = json!({"content": [
        {"type": "resource", "resource": {"uri": "file:///notes.md", "mimeType": "text/markdown", "text": "# Notes"}},
        {"type": "resource", "resource": {"uri": "file:///report.pdf", "mimeType": "application/pdf", "blob": PDF}},
        {"type": "resource", "resource": {"uri": "file:///data.bin", "blob": "AAAA"}}
    ]});
    assert_eq!(
        render_call_result(&result).text,
        "# Notes\n[binary application/pdf: ~14 bytes] file:///report.pdf\n\
         [binary application/octet-stream: ~3 bytes] file:///data.bin"
    );
}

#[test]
fn unknown_and_malformed_blocks_leave_a_line() {
    let result = json!({"content": [
        {"type": "video", "data": "AAAA"},
        {"text": "no type"},
        {"type": "text"},
        {"type": "image", "data": 42},
        {"type": "resource"},
        {"type": "resource_link", "name": 7},
        "a bare string",
        17
    ]});
    assert_eq!(
        render_call_result(&result).text,
        "[video content omitted]\n[<no type> content omitted]\n<no text>\n[image <no mimeType>: ~0 bytes]\n\
         [resource <no uri>: no contents]\n[resource_link <no uri>]\na bare string\n[<no type> content omitted]"
    );
}

#[test]
fn structured_content_is_added_unless_a_text_block_already_has_it() {
    let structured = json!({"temperature": 22.5, "conditions": "Partly cloudy"});
    let alone = json!({"content": [], "structuredContent": structured});
    // In the server's own order.
    assert_eq!(render_call_result(&alone).text, r#"{"temperature":22.5,"conditions":"Partly cloudy"}"#);

    // The same JSON, spaced and ordered differently, counts as the same.
    let echoed = json!({
        "content": [{"type": "text", "text": "{ \"conditions\": \"Partly cloudy\", \"temperature\": 22.5 }"}],
        "structuredContent": structured
    });
    assert_eq!(render_call_result(&echoed).text, "{ \"conditions\": \"Partly cloudy\", \"temperature\": 22.5 }");

    let different = json!({
        "content": [{"type": "text", "text": "It is mild."}],
        "structuredContent": structured
    });
    assert_eq!(
        render_call_result(&different).text,
        "It is mild.\n{\"temperature\":22.5,\"conditions\":\"Partly cloudy\"}"
    );
}

#[test]
fn errors_are_flagged_and_prefixed_once() {
    let result = json!({"content": [
        {"type": "text", "text": "file not found"},
        {"type": "text", "text": "check the path"}
    ], "isError": true});
    assert_eq!(
        render_call_result(&result),
        RenderedResult { text: "Error: file not found\ncheck the path".to_string(), is_error: true }
    );

    let already = json!({"content": [{"type": "text", "text": "Error: disk full"}], "isError": true});
    assert_eq!(render_call_result(&already).text, "Error: disk full");

    let silent = json!({"content": [], "isError": true});
    assert_eq!(render_call_result(&silent).text, "Error: the server gave no details");

    let not_a_bool = json!({"content": [{"type": "text", "text": "fine"}], "isError": "yes"});
    assert_eq!(render_call_result(&not_a_bool), RenderedResult { text: "fine".to_string(), is_error: false });
}

#[test]
fn empty_or_malformed_results_render_empty() {
    for result in [json!({"content": []}), json!({}), json!({"content": null}), json!("nonsense")] {
        assert_eq!(render_call_result(&result), RenderedResult { text: String::new(), is_error: false }, "{result}");
    }
}

// --- render_resource_read ---

#[test]
fn resource_reads_join_texts_and_summarise_blobs() {
    let result = json!({"contents": [
        {"uri": "file:///project/README.md", "mimeType": "text/markdown", "text": "# Project\nHello."},
        {"uri": "file:///project/logo.png", "mimeType": "image/png", "blob": PNG},
        {"uri": "file:///project/data.bin", "blob": PDF},
        {"uri": "file:///project/LICENSE", "text": "MIT"}
    ]});
    assert_eq!(
        render_resource_read(&result),
        "# Project\nHello.\n[binary image/png: ~70 bytes]\n[binary application/octet-stream: ~14 bytes]\nMIT"
    );
}

#[test]
fn resource_reads_are_lenient() {
    assert_eq!(render_resource_read(&json!({"contents": []})), "");
    assert_eq!(render_resource_read(&json!({})), "");
    assert_eq!(
        render_resource_read(&json!({"contents": [{"uri": "file:///empty"}]})),
        "[resource file:///empty: no contents]"
    );
    // Line-wrapped base64 (as some encoders write it) counts only the data.
    assert_eq!(
        render_resource_read(&json!({"contents": [{"blob": "AAAA\nAAAA\nAA==\n"}]})),
        "[binary application/octet-stream: ~7 bytes]"
    );
}

// --- render_resource_list ---

#[test]
fn resource_listings_show_metadata_then_templates_then_the_note() {
    let resources = [
        json!({"uri": "file:///project/README.md", "name": "README", "mimeType": "text/markdown", "size": 1024,
               "description": "Project overview"}),
        json!({"uri": "file:///project/logo.png", "name": "logo", "mimeType": "image/png"}),
        json!({"uri": "db://users", "name": "users", "size": 4096}),
        json!({"name": "nameless"}),
    ];
    let templates = [json!({"uriTemplate": "file:///logs/{date}.log", "name": "daily-log", "mimeType": "text/plain",
                            "description": "One day of logs"})];
    assert_eq!(
        render_resource_list(&resources, &templates, Some("listing capped at 1000 entries")),
        "- file:///project/README.md — README (text/markdown, 1024 bytes): Project overview\n\
         - file:///project/logo.png — logo (image/png)\n\
         - db://users — users (4096 bytes)\n\
         - <no uri> — nameless\n\
         Templates:\n\
         - file:///logs/{date}.log — daily-log (text/plain): One day of logs\n\
         listing capped at 1000 entries"
    );
}

#[test]
fn templates_alone_still_get_their_header() {
    let templates = [json!({"uriTemplate": "db://tables/{name}"})];
    assert_eq!(render_resource_list(&[], &templates, None), "Templates:\n- db://tables/{name} — <no name>");
}

#[test]
fn empty_listings_say_so() {
    assert_eq!(render_resource_list(&[], &[], None), "No resources.");
    assert_eq!(
        render_resource_list(&[], &[], Some("server is still starting")),
        "No resources.\nserver is still starting"
    );
}

// --- render_prompt_list ---

#[test]
fn prompts_show_argument_shapes_with_required_marked() {
    let prompts = [
        json!({"name": "code_review", "description": "Review code for quality", "arguments": [
            {"name": "code", "description": "The code to review", "required": true},
            {"name": "language", "required": false},
            {"name": "focus", "description": "What to look at"}
        ]}),
        json!({"name": "greeting"}),
        json!({"name": "summarize", "arguments": []}),
    ];
    assert_eq!(
        render_prompt_list(&prompts),
        "- code_review(code*, language, focus): Review code for quality\n\
         \x20   code: The code to review\n\
         \x20   focus: What to look at\n\
         - greeting()\n\
         - summarize()"
    );
}

#[test]
fn prompt_lists_are_lenient() {
    assert_eq!(render_prompt_list(&[]), "No prompts.");
    let odd = [json!({"arguments": [{"required": "yes"}, "nonsense"]})];
    assert_eq!(render_prompt_list(&odd), "- <no name>(<no name>, <no name>)");
}

// --- render_prompt ---

#[test]
fn prompts_render_as_tagged_messages() {
    let result = json!({
        "description": "Explain a chart",
        "messages": [
            {"role": "user", "content": {"type": "text", "text": "What does this chart show?"}},
            {"role": "assistant", "content": {"type": "image", "data": PNG, "mimeType": "image/png"}},
            {"role": "user", "content": {"type": "resource",
                "resource": {"uri": "file:///data.csv", "mimeType": "text/csv", "text": "month,sales\njan,10"}}}
        ]
    });
    assert_eq!(
        render_prompt(&result),
        "Explain a chart\n\n\
         [user] What does this chart show?\n\n\
         [assistant] [image image/png: ~70 bytes]\n\n\
         [user] month,sales\njan,10"
    );
}

#[test]
fn prompt_messages_may_hold_a_list_of_blocks() {
    let result = json!({"messages": [{"role": "user", "content": [
        {"type": "text", "text": "Compare these:"},
        {"type": "resource", "resource": {"uri": "file:///a.pdf", "mimeType": "application/pdf", "blob": PDF}}
    ]}]});
    assert_eq!(render_prompt(&result), "[user] Compare these:\n[binary application/pdf: ~14 bytes] file:///a.pdf");
}

#[test]
fn prompts_never_drop_a_part_silently() {
    let result = json!({"messages": [
        {"content": {"type": "text", "text": "who said this?"}},
        {"role": "user"},
        {"role": "assistant", "content": {"type": "video"}}
    ]});
    assert_eq!(
        render_prompt(&result),
        "[<no role>] who said this?\n\n[user] <no content>\n\n[assistant] [video content omitted]"
    );
    assert_eq!(render_prompt(&json!({"description": "Empty", "messages": []})), "Empty\n\nNo messages.");
    assert_eq!(render_prompt(&json!({})), "No messages.");
}
