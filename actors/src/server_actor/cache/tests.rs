use serde_json::json;

use super::*;

fn raw(value: Value) -> Box<RawValue> {
    serde_json::value::to_raw_value(&value).unwrap()
}

fn answer(
    cache: &mut ResultCache,
    method: &'static str,
    params: Value,
    caller: Option<&str>,
    now: Instant,
) -> Option<Value> {
    let caller: Option<Arc<str>> = caller.map(Arc::from);
    let found = cache.answer(method, raw(params).get(), caller.as_ref(), now)?;
    Some(serde_json::from_str(found.get()).unwrap())
}

fn keep(
    cache: &mut ResultCache,
    method: &'static str,
    params: Value,
    caller: Option<&str>,
    result: Value,
    now: Instant,
) {
    let caller: Option<Arc<str>> = caller.map(Arc::from);
    let ticket = cache.ticket(method).expect("cacheable");
    cache.keep(ticket, method, raw(params).get(), caller.as_ref(), &raw(result), now);
}

fn list(ttl: Value, scope: &str) -> Value {
    json!({"resultType": "complete", "resources": [{"uri": "note://a", "name": "a"}], "ttlMs": ttl, "cacheScope": scope})
}

#[test]
fn a_public_answer_is_given_to_everyone_until_its_time_runs_out_with_the_time_left() {
    let mut cache = ResultCache::default();
    let start = Instant::now();
    keep(&mut cache, "resources/list", json!({}), Some("alice"), list(json!(10_000), "public"), start);
    let later = start + Duration::from_millis(4_000);
    for caller in [Some("alice"), Some("bob"), None] {
        let found = answer(&mut cache, "resources/list", json!({"_meta": {"progressToken": 3}}), caller, later);
        let found = found.unwrap_or_else(|| panic!("{caller:?} is given the public answer"));
        assert_eq!(found["resources"][0]["uri"], "note://a");
        assert_eq!(found["ttlMs"], 6_000, "the time left, not the server's whole ttl");
    }
    assert_eq!(answer(&mut cache, "resources/list", json!({"cursor": "p2"}), None, later), None, "another page");
    assert_eq!(answer(&mut cache, "resources/list", json!({}), None, start + Duration::from_secs(10)), None, "stale");
}

#[test]
fn a_private_answer_or_one_without_a_scope_is_given_only_to_whom_it_was_fetched_for() {
    let mut cache = ResultCache::default();
    let now = Instant::now();
    keep(
        &mut cache,
        "prompts/list",
        json!({}),
        Some("alice"),
        json!({"prompts": [], "ttlMs": 60_000, "cacheScope": "private"}),
        now,
    );
    keep(&mut cache, "resources/read", json!({"uri": "note://a"}), None, json!({"contents": [], "ttlMs": 60_000}), now);
    assert!(answer(&mut cache, "prompts/list", json!({}), Some("alice"), now).is_some());
    assert_eq!(answer(&mut cache, "prompts/list", json!({}), Some("bob"), now), None);
    assert_eq!(answer(&mut cache, "prompts/list", json!({}), None, now), None, "nor to the host");
    assert!(answer(&mut cache, "resources/read", json!({"uri": "note://a"}), None, now).is_some());
    assert_eq!(answer(&mut cache, "resources/read", json!({"uri": "note://a"}), Some("alice"), now), None);
    assert_eq!(answer(&mut cache, "resources/read", json!({"uri": "note://b"}), None, now), None, "another URI");
}

#[test]
fn nothing_is_kept_without_a_positive_ttl_or_for_a_method_that_is_not_cacheable() {
    let mut cache = ResultCache::default();
    let now = Instant::now();
    for ttl in [json!(0), json!(null), json!("soon"), json!(-5)] {
        keep(&mut cache, "resources/list", json!({}), None, list(ttl.clone(), "public"), now);
        assert_eq!(answer(&mut cache, "resources/list", json!({}), None, now), None, "ttlMs {ttl}");
    }
    assert_eq!(cache.ticket("tools/call"), None);
    assert_eq!(cache.ticket("prompts/get"), None);
    keep(&mut cache, "resources/read", json!({}), None, json!({"contents": [], "ttlMs": 5_000}), now);
    assert!(cache.entries.is_empty(), "a read without a URI is not kept");
}

#[test]
fn a_ttl_beyond_a_day_is_held_to_a_day() {
    let mut cache = ResultCache::default();
    let now = Instant::now();
    keep(&mut cache, "resources/list", json!({}), None, list(json!(1e15), "public"), now);
    let found = answer(&mut cache, "resources/list", json!({}), None, now).unwrap();
    assert_eq!(found["ttlMs"], MAX_TTL.as_millis() as u64);
}

#[test]
fn what_the_server_announces_drops_what_changed_and_no_more() {
    let mut cache = ResultCache::default();
    let now = Instant::now();
    let fresh = |key: &str| json!({key: [], "contents": [], "ttlMs": 60_000, "cacheScope": "public"});
    keep(&mut cache, "resources/list", json!({}), None, fresh("resources"), now);
    keep(&mut cache, "resources/templates/list", json!({}), None, fresh("resourceTemplates"), now);
    keep(&mut cache, "prompts/list", json!({}), None, fresh("prompts"), now);
    keep(&mut cache, "resources/read", json!({"uri": "note://a"}), None, fresh("x"), now);
    keep(&mut cache, "resources/read", json!({"uri": "note://b"}), None, fresh("x"), now);

    cache.notified("notifications/resources/updated", Some(&json!({"uri": "note://a"})));
    assert_eq!(answer(&mut cache, "resources/read", json!({"uri": "note://a"}), None, now), None);
    assert!(answer(&mut cache, "resources/read", json!({"uri": "note://b"}), None, now).is_some());

    cache.notified("notifications/resources/list_changed", None);
    assert_eq!(answer(&mut cache, "resources/list", json!({}), None, now), None);
    assert_eq!(answer(&mut cache, "resources/templates/list", json!({}), None, now), None);
    assert!(answer(&mut cache, "prompts/list", json!({}), None, now).is_some());

    cache.notified("notifications/prompts/list_changed", None);
    assert_eq!(answer(&mut cache, "prompts/list", json!({}), None, now), None);
    cache.clear();
    assert!(cache.entries.is_empty());
}

#[test]
fn an_answer_fetched_across_a_drop_is_not_kept() {
    let mut cache = ResultCache::default();
    let now = Instant::now();
    let ticket = cache.ticket("resources/list").unwrap();
    cache.notified("notifications/resources/list_changed", None);
    cache.keep(ticket, "resources/list", raw(json!({})).get(), None, &raw(list(json!(60_000), "public")), now);
    assert_eq!(answer(&mut cache, "resources/list", json!({}), None, now), None, "it may be the old list");
}

#[test]
fn a_changed_scope_leaves_one_entry_and_a_full_cache_drops_the_nearest_end() {
    let mut cache = ResultCache::default();
    let now = Instant::now();
    keep(&mut cache, "resources/list", json!({}), None, list(json!(60_000), "private"), now);
    keep(&mut cache, "resources/list", json!({}), None, list(json!(60_000), "public"), now);
    assert_eq!(cache.entries.len(), 1, "the private entry went when the answer became public");

    for number in 0..MAX_ENTRIES as u64 {
        let result = json!({"contents": [], "ttlMs": 100_000 + number});
        keep(&mut cache, "resources/read", json!({"uri": format!("note://{number}")}), None, result, now);
    }
    assert_eq!(cache.entries.len(), MAX_ENTRIES);
    assert_eq!(answer(&mut cache, "resources/list", json!({}), None, now), None, "the nearest end went first");
    assert!(answer(&mut cache, "resources/read", json!({"uri": "note://0"}), None, now).is_some());
}
