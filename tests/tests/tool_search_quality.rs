//! Tool search's retrieval quality (issue 49): queries phrased as a
//! person asks for a task — not in the tools' own words — against the
//! tools of the reference everything, filesystem and memory servers, each
//! with the tool (or the tools, where two are equally right) it should
//! find. Goals: a right tool in the top 3 for 90% of the queries, first
//! for 70%.

use warden_tests::real_servers::{EVERYTHING, FILESYSTEM, MEMORY};
use warden_tests::{scratch_dir, server_table, start_running};

/// (query, the tools that answer it).
const QUERIES: [(&str, &[&str]); 44] = [
    ("open a text document and show me what it says", &["files__read_text_file", "files__read_file"]),
    ("what's inside notes.txt", &["files__read_text_file", "files__read_file"]),
    ("save this text to a new file", &["files__write_file"]),
    ("make a new folder called reports", &["files__create_directory"]),
    ("what files are in this folder", &["files__list_directory", "files__list_directory_with_sizes"]),
    ("how big is each file in the folder", &["files__list_directory_with_sizes"]),
    ("rename report.txt to final.txt", &["files__move_file"]),
    ("find all markdown files under the project", &["files__search_files"]),
    ("when was this file last changed", &["files__get_file_info"]),
    ("show the whole folder hierarchy as a tree", &["files__directory_tree"]),
    ("change one line in a config file", &["files__edit_file"]),
    ("which folders am I permitted to touch", &["files__list_allowed_directories"]),
    ("look at a picture file", &["files__read_media_file"]),
    ("compare three files at once", &["files__read_multiple_files"]),
    ("move a document to the archive folder", &["files__move_file"]),
    ("replace a word inside a source file", &["files__edit_file"]),
    ("create an empty directory for logs", &["files__create_directory"]),
    ("overwrite the readme with new text", &["files__write_file"]),
    (
        "remember that Alice works at Acme",
        &["memory__create_entities", "memory__add_observations", "memory__create_relations"],
    ),
    ("note a new fact about someone you already know", &["memory__add_observations"]),
    ("link Bob to his employer", &["memory__create_relations"]),
    ("forget everything about Carol", &["memory__delete_entities"]),
    ("drop one remembered detail about a person", &["memory__delete_observations"]),
    ("what do you know about Dave", &["memory__open_nodes", "memory__search_nodes"]),
    ("look up people in memory who mention chess", &["memory__search_nodes"]),
    ("dump the whole memory graph", &["memory__read_graph"]),
    ("store a new person in the knowledge base", &["memory__create_entities"]),
    ("undo the connection between two entities", &["memory__delete_relations"]),
    ("repeat back what I typed", &["everything__echo"]),
    ("add 17 and 25", &["everything__get-sum"]),
    ("show me the environment variables", &["everything__get-env"]),
    ("give me a small sample image", &["everything__get-tiny-image"]),
    ("compress a file with gzip", &["everything__gzip-file-as-resource"]),
    ("run a long task and report progress", &["everything__trigger-long-running-operation"]),
    ("start a deep research on a topic", &["everything__simulate-research-query"]),
    ("turn random logging on", &["everything__toggle-simulated-logging"]),
    ("which prompt templates are available", &["everything__list_prompts"]),
    ("fill in a prompt template with arguments", &["everything__get_prompt"]),
    ("what resources does the demo server offer", &["everything__list_resources"]),
    ("fetch a resource by its URI", &["everything__read_resource", "memory__read_resource"]),
    ("get a message with annotations", &["everything__get-annotated-message"]),
    ("return data along with its output schema", &["everything__get-structured-content"]),
    ("stop sending resource update notifications", &["everything__toggle-subscriber-updates"]),
    ("calculate the total of two values", &["everything__get-sum"]),
];

#[tokio::test]
async fn queries_as_people_ask_find_the_right_tool_in_the_top_three_nine_times_in_ten() {
    let root = scratch_dir("tool-search-quality");
    let memory_file = format!("env = {{ MEMORY_FILE_PATH = {:?} }}\n", root.join("memory.jsonl").display().to_string());
    let mut toml = server_table("files", FILESYSTEM.command(&[root.to_str().unwrap()]), "");
    toml += &server_table("everything", EVERYTHING.command(&[]), "");
    toml += &server_table("memory", MEMORY.command(&[]), &memory_file);
    let warden = start_running(&toml).await;
    let (mut first, mut top3, mut misses) = (0, 0, Vec::new());
    for (query, right) in QUERIES {
        let found: Vec<String> =
            warden.host().find_tools(query, 3).unwrap().into_iter().map(|tool| tool.name).collect();
        if found.first().is_some_and(|name| right.contains(&name.as_str())) {
            first += 1;
        }
        if found.iter().any(|name| right.contains(&name.as_str())) {
            top3 += 1;
        } else {
            misses.push(format!("{query:?} → {found:?} (wanted {right:?})"));
        }
    }
    let n = QUERIES.len();
    eprintln!("top-1 {first}/{n}, top-3 {top3}/{n}; misses:\n{}", misses.join("\n"));
    assert!(top3 * 10 >= n * 9, "top-3 {top3}/{n} is under 90%: {misses:#?}");
    assert!(first * 10 >= n * 7, "top-1 {first}/{n} is under 70%");
    warden.shutdown().await;
}
